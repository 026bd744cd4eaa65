package ui_test

import (
	"context"
	"errors"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/ui"
	"github.com/demiurge-dev/demiurge/world"
)

// get sends a GET to the server with the Host header host ("" for the
// server's own) and returns the status and body.
func get(t *testing.T, c *http.Client, s *ui.Server, host, path string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+s.Host()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// formTokenOf returns the form token in a page of the view.
func formTokenOf(t *testing.T, c *http.Client, s *ui.Server, path string) string {
	t.Helper()
	_, body, _ := get(t, c, s, "", path)
	m := regexp.MustCompile(`name="form_token" value="([0-9a-f]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no form token in %s:\n%.1000s", path, body)
	}
	return m[1]
}

// post sends a form to the server, as a page of the view does (with its
// Origin), and returns the status and body.
func post(t *testing.T, c *http.Client, s *ui.Server, path string, form url.Values) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+s.Host()+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://"+s.Host())
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// login follows the printed link once and returns a client with the
// cookie it set.
func login(t *testing.T, s *ui.Server) *http.Client {
	t.Helper()
	c := client(t)
	code, _, h := get(t, c, s, "", strings.TrimPrefix(s.URL(), "http://"+s.Host()))
	if code != http.StatusSeeOther || h.Get("Location") != "/" {
		t.Fatalf("the printed link: %d to %q; want 303 to /", code, h.Get("Location"))
	}
	return c
}

func TestListenLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0", "example.com:80", "8080"} {
		ln, err := ui.Listen(addr)
		if err == nil {
			ln.Close()
			t.Errorf("Listen(%q) listens on %s; want it refused", addr, ln.Addr())
			continue
		}
		if !errors.Is(err, ui.ErrBadAddr) {
			t.Errorf("Listen(%q): %v; want ErrBadAddr", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		ln, err := ui.Listen(addr)
		if err != nil {
			t.Errorf("Listen(%q): %v", addr, err)
			continue
		}
		if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
			t.Errorf("Listen(%q) listens on %s", addr, ip)
		}
		ln.Close()
	}
}

// TestRefused: without the token, with a wrong one, with a foreign Host
// (DNS rebinding: a page of another site that resolves its name to
// 127.0.0.1) or with a method that writes, every page and the event
// stream are refused; the printed link lets the browser in, and its
// cookie is HttpOnly and SameSite=Strict.
func TestRefused(t *testing.T) {
	st := world.NewMemoryStorage()
	importAs(t.Context(), t, st, sessionsDir+"/demo", "demo")
	s := serve(t, parts(st), registry())
	paths := []string{"/", "/w/demo", "/w/demo/events?after=0", "/w/demo/records", "/w/demo/r/1", "/w/demo/replay?run=1", "/static/app.js", "/nowhere"}
	anon := client(t)
	for _, p := range paths {
		if code, body, _ := get(t, anon, s, "", p); code != http.StatusForbidden || !strings.Contains(body, "no token") {
			t.Errorf("GET %s without the token: %d %q; want 403", p, code, body)
		}
		if code, _, _ := get(t, anon, s, "", p+sep(p)+"token=0123"); code != http.StatusForbidden {
			t.Errorf("GET %s with a wrong token: %d; want 403", p, code)
		}
	}
	// The link sets the cookie.
	c := client(t)
	code, _, h := get(t, c, s, "", strings.TrimPrefix(s.URL(), "http://"+s.Host()))
	if code != http.StatusSeeOther {
		t.Fatalf("the link: %d; want 303", code)
	}
	cookie := h.Get("Set-Cookie")
	for _, want := range []string{"HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(cookie, want) {
			t.Errorf("Set-Cookie %q lacks %s", cookie, want)
		}
	}
	_, port, _ := net.SplitHostPort(s.Host())
	for _, host := range []string{"evil.example:" + port, "evil.example", "localhost:" + port, "127.0.0.1:1", "[::1]:" + port} {
		for _, p := range paths {
			if code, body, _ := get(t, c, s, host, p); code != http.StatusForbidden || !strings.Contains(body, "not to Host") {
				t.Errorf("GET %s with Host %s: %d %q; want 403", p, host, code, body)
			}
		}
		// The token does not help.
		if code, _, _ := get(t, client(t), s, host, strings.TrimPrefix(s.URL(), "http://"+s.Host())); code != http.StatusForbidden {
			t.Errorf("the link with Host %s: %d; want 403", host, code)
		}
	}
	for _, p := range paths[:len(paths)-1] {
		if p == "/w/demo/events?after=0" {
			continue // a stream: below
		}
		if code, _, _ := get(t, c, s, "", p); code != http.StatusOK {
			t.Errorf("GET %s with the cookie: %d; want 200", p, code)
		}
	}
	for _, m := range []string{http.MethodPut, http.MethodDelete, http.MethodPatch} {
		req, _ := http.NewRequestWithContext(t.Context(), m, "http://"+s.Host()+"/w/demo/replay", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d; want 405", m, resp.StatusCode)
		}
	}
	// A form acts only with the token of the view's pages, and from them.
	token := formTokenOf(t, c, s, "/w/demo/replay")
	for _, tc := range []struct {
		name   string
		form   url.Values
		origin string
		want   string
	}{
		{"no form token", url.Values{}, "", "lacks this view's form token"},
		{"another token", url.Values{"form_token": {strings.Repeat("0", 64)}}, "", "lacks this view's form token"},
		{"the view's token", url.Values{"form_token": {strings.TrimPrefix(s.URL(), "http://"+s.Host()+"/?token=")}}, "", "lacks this view's form token"},
		{"another port's page", url.Values{"form_token": {token}}, "http://127.0.0.1:1", "a form sent from http://127.0.0.1:1"},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+s.Host()+"/w/demo/replay", strings.NewReader(tc.form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), tc.want) {
			t.Errorf("POST, %s: %d %q; want 403 saying %q", tc.name, resp.StatusCode, b, tc.want)
		}
	}
	// A request a page of another port makes (fetch, img) is refused,
	// even a GET; a link followed from it opens the page.
	for _, tc := range []struct {
		site, mode string
		code       int
	}{{"same-site", "no-cors", 403}, {"cross-site", "cors", 403}, {"same-site", "navigate", 200}, {"same-origin", "cors", 200}, {"none", "navigate", 200}} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+s.Host()+"/w/demo/replay", nil)
		req.Header.Set("Sec-Fetch-Site", tc.site)
		req.Header.Set("Sec-Fetch-Mode", tc.mode)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("GET with Sec-Fetch-Site %s, Sec-Fetch-Mode %s: %d; want %d", tc.site, tc.mode, resp.StatusCode, tc.code)
		}
	}
	// The event stream opens with the cookie.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.Host()+"/w/demo/events?after=0", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	buf := make([]byte, 64<<10)
	var got strings.Builder
	for !strings.Contains(got.String(), "\n\n") || !strings.Contains(got.String(), "event: timeline") {
		n, err := resp.Body.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			t.Fatalf("events: %v after %q", err, got.String())
		}
	}
	if !strings.Contains(got.String(), "id: 49\n") || !strings.Contains(got.String(), "data: ") {
		t.Errorf("the first event: %q", got.String()[:min(got.Len(), 400)])
	}
}

func sep(p string) string {
	if strings.Contains(p, "?") {
		return "&"
	}
	return "?"
}

// TestHeaders: pages allow only the view's own script and style, and a
// blob's raw bytes come as a download.
func TestHeaders(t *testing.T) {
	st := world.NewMemoryStorage()
	importAs(t.Context(), t, st, sessionsDir+"/demo", "demo")
	s := serve(t, parts(st), nil)
	c := login(t, s)
	_, body, h := get(t, c, s, "", "/w/demo")
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("CSP %q", csp)
	}
	if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "same-origin" {
		t.Errorf("headers %v", h)
	}
	i := strings.Index(body, `href="/blob/blake3:`)
	if i < 0 {
		t.Fatalf("the timeline links no blob:\n%s", body)
	}
	ref := body[i+len(`href="/blob/`) : i+len(`href="/blob/`)+len("blake3:")+64]
	code, _, h := get(t, c, s, "", "/blob/"+ref+"?raw=1")
	if code != http.StatusOK || h.Get("Content-Type") != "application/octet-stream" || !strings.HasPrefix(h.Get("Content-Disposition"), "attachment") {
		t.Errorf("raw blob: %d %v", code, h)
	}
}

// TestPages: each page of a recorded session renders, and a bad address
// says what is wrong.
func TestPages(t *testing.T) {
	st := sessionsStore(t)
	// A fork of workspace-edits after its first turn.
	if _, err := world.Fork(t.Context(), world.ForkOptions{Name: "edits-fork", From: "workspace-edits", At: 42, Reducers: registry(), Storage: st}); err != nil {
		t.Fatal(err)
	}
	// Forks of demo before its turn, and in the middle of it.
	for name, at := range map[string]uint64{"demo-start": 3, "demo-midturn": 8} {
		if _, err := world.Fork(t.Context(), world.ForkOptions{Name: name, From: "demo", At: at, Reducers: registry(), Storage: st}); err != nil {
			t.Fatal(err)
		}
	}
	s := serve(t, parts(st), registry())
	c := login(t, s)
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/", 200, `href="/w/workspace-edits"`},
		{"/w/workspace-edits", 200, "Make step 2 write tests first"},
		{"/w/workspace-edits", 200, `+2. Write tests first, then the code`},
		{"/w/demo", 200, `workspace_list --path notes`},
		{"/w/mcp", 200, "demo_echo"},
		// The sessions of the native providers: the model, the calls, the
		// answer, the cost.
		{"/w/claude", 200, "claude-sonnet-5"},
		{"/w/claude", 200, "introspect_schemas"},
		{"/w/claude", 200, "The manifest defines the chat reducer, its plans, the tools' effects and their grants."},
		{"/w/claude", 200, "$0.0"},
		{"/w/gemini", 200, "gemini-3.5-flash"},
		{"/w/gemini", 200, "The manifest defines the chat reducer, its plans, the tools' effects and their grants."},
		{"POST /w/claude/replay genesis=1", 200, "ok: 47 records replay to the same bytes"},
		{"POST /w/gemini/replay genesis=1", 200, "replay to the same bytes"},
		{"/w/demo/records", 200, "manifest"},
		{"/w/demo/records?from=40", 200, `href="r/49"`},
		{"/w/demo/r/2", 200, `href="/blob/blake3:`},
		{"/w/demo/replay", 200, "Run replay"},
		{"/w/demo/replay?run=1&genesis=1", 200, "Run replay"}, // a GET runs none
		{"POST /w/demo/replay genesis=1", 200, "ok: 49 records replay to the same bytes"},
		{"POST /w/v1-workspace-edits/replay", 200, "replay to the same bytes"},
		// Filters: a chat's turns, the failed ones.
		{"/w/demo?chat=main", 200, `Write a hello note and show it to me.`},
		{"/w/demo?chat=other", 200, "None of the 1 turn is of chat other"},
		{"/w/demo?failed=1", 200, "None of the 1 turn had a failure"},
		{"/w/demo", 200, `href="/w/demo?failed=1"`},
		{"/w/mcp?failed=1", 200, "demo_fail"},
		{"/w/edits-fork", 200, "forked here (#43) from world workspace-edits at #42: the turns above are workspace-edits's —"},
		{"/w/demo-start", 200, "forked here (#4) from world demo at #3 —"},
		{"/w/demo-midturn", 200, "forked here (#9) from world demo at #8: turn 1 of chat main above began in demo and goes on in this world —"},
		// A turn open in a fork that nothing runs: in progress, not "running".
		{"/w/demo-midturn", 200, "a turn is in progress"},
		{"/w/demo-midturn", 200, "in progress…"},
		{"POST /w/edits-fork/replay", 200, "ok: 43 records replay to the same bytes"},
		{"/w/nope", 404, "world nope has no records in store test store"},
		{"/w/bad%20name/records", 400, `world "bad name"`},
		{"/w/demo/r/0", 404, "its records are 1 to 49"},
		{"/w/demo/r/99", 404, "its records are 1 to 49"},
		{"/w/demo/records?from=x", 400, "want a seq"},
		{"/w/demo/records?from=50", 404, "world demo has no records from seq 50: its records are 1 to 49"},
		{"/blob/nope", 400, `blob "nope"`},
		{"/blob/blake3:" + strings.Repeat("0", 64), 404, "is not in store test store"},
		{"/w/demo/events?after=x", 400, "want the seq the page shows"},
	} {
		var code int
		var body string
		if rest, ok := strings.CutPrefix(tc.path, "POST "); ok {
			path, query, _ := strings.Cut(rest, " ")
			form, _ := url.ParseQuery(query)
			form.Set("form_token", formTokenOf(t, c, s, path))
			code, body, _ = post(t, c, s, path, form)
		} else {
			code, body, _ = get(t, c, s, "", tc.path)
		}
		// The want is in the page's HTML, or in its text.
		body = html.UnescapeString(body)
		text := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(body, "")
		if code != tc.code || !strings.Contains(body, tc.want) && !strings.Contains(text, tc.want) {
			t.Errorf("GET %s: %d, want %d with %q; got:\n%.2000s", tc.path, code, tc.code, tc.want, body)
		}
	}
}
