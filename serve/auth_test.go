package serve

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
)

// syncBuffer is a log's writer, safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAuth: with a token file, a request without a token, with a wrong
// one, a revoked one, or one of another world is refused, each saying
// why; a token of the world gets in; the health checks need none; the
// log names the token's id and never its secret, nor the message.
func TestAuth(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "tokens.json")
	good, gt, err := CreateToken(file, "web", []string{"main"})
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := CreateToken(file, "other", []string{"elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	revoked, rt, err := CreateToken(file, "gone", []string{"*"})
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v; want 0600", st.Mode().Perm())
	}
	if b, _ := os.ReadFile(file); bytes.Contains(b, []byte(good)) || bytes.Contains(b, []byte(strings.Split(good, "_")[2])) {
		t.Errorf("the token file holds a token:\n%s", b)
	}
	tokens, err := OpenTokenFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	e := newEnv(t, []llmtest.Turn{{Text: "hi there"}}, func(o *Options) {
		o.Tokens = tokens
		o.Log = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	bearer := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
	for _, tc := range []struct {
		name   string
		method string
		path   string
		body   any
		header []string
		status int
		code   string
		msg    string // in the error's message, if set
	}{
		{"no token", "GET", "/v1/worlds", nil, nil, 401, "missing_token", "no token"},
		// A token sent bare (curl -H "Authorization: dmt_…") is told what
		// it lacks, not that there is none.
		{"no Bearer before the token", "GET", "/v1/worlds", nil, []string{"Authorization", good}, 401, "missing_token", `lacks the scheme: send Authorization: Bearer TOKEN`},
		{"another scheme", "GET", "/v1/worlds", nil, []string{"Authorization", "Basic " + good}, 401, "missing_token", `takes bearer tokens, not Basic`},
		{"scheme in lower case (RFC 9110: case-insensitive)", "GET", "/v1/worlds", nil, []string{"Authorization", "bearer " + good}, 200, "", ""},
		{"wrong token", "GET", "/v1/worlds", nil, bearer("dmt_000000000000_nope"), 401, "invalid_token", ""},
		{"not a token", "GET", "/v1/worlds", nil, bearer("sk-abc"), 401, "invalid_token", ""},
		{"another world's token", "POST", "/v1/worlds/main/chats/c/messages", map[string]string{"text": "hello secret words"}, bearer(other), 403, "world_not_allowed", ""},
		{"another world's token, OpenAI", "POST", "/v1/responses", map[string]any{"model": "demiurge", "input": "hello secret words"}, bearer(other), 0, "", ""},
		{"health needs none", "GET", "/healthz", nil, nil, 200, "", ""},
		{"good token", "POST", "/v1/worlds/main/chats/c/messages", map[string]string{"text": "hello secret words"}, bearer(good), 200, "", ""},
	} {
		r, body := e.do(tc.method, tc.path, tc.body, tc.header...)
		if tc.status == 0 { // the token's one world is the default: main is refused, elsewhere is its
			if r.StatusCode != 403 && r.StatusCode != 200 {
				t.Errorf("%s: %d %s", tc.name, r.StatusCode, body)
			}
			continue
		}
		if r.StatusCode != tc.status || tc.code != "" && !strings.Contains(string(body), `"code":"`+tc.code+`"`) || !strings.Contains(string(body), tc.msg) {
			t.Errorf("%s: %d %s; want %d %s", tc.name, r.StatusCode, body, tc.status, tc.code)
		}
		if r.StatusCode == 401 && r.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: no WWW-Authenticate", tc.name)
		}
	}
	// The list shows only the token's worlds.
	r, body := e.do("GET", "/v1/worlds", nil, bearer(other)...)
	if r.StatusCode != 200 || strings.Contains(string(body), `"world":"main"`) {
		t.Errorf("another world's token lists: %s", body)
	}
	// A token revoked while the server runs is refused within a second.
	if r, _ := e.do("GET", "/v1/worlds", nil, bearer(revoked)...); r.StatusCode != 200 {
		t.Fatalf("before revoking: %d", r.StatusCode)
	}
	if _, err := RevokeToken(file, rt.ID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		r, _ := e.do("GET", "/v1/worlds", nil, bearer(revoked)...)
		if r.StatusCode == 401 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a revoked token still gets in after 5 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	log := logs.String()
	for _, secret := range []string{good, other, revoked, strings.Split(good, "_")[2], "hello secret words"} {
		if strings.Contains(log, secret) {
			t.Errorf("the log holds %q:\n%s", secret, log)
		}
	}
	if !strings.Contains(log, `"token":"`+gt.ID+`"`) {
		t.Errorf("the log does not name the token's id %s:\n%s", gt.ID, log)
	}
}

// TestLimits: an oversize body is refused with 413 and reaches nothing;
// a token over its rate gets 429 and Retry-After; a body not declared
// JSON is refused (a page of another site could post a form unasked); a
// page of an origin not configured is refused, one configured gets CORS
// headers; a server without tokens answers only loopback host names.
func TestLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(o *Options) {
		o.MaxBody = 1000
		o.Rate, o.Burst = 1, 3
		o.CORSOrigins = []string{"https://app.example.com"}
	})
	r, body := e.do("POST", "/v1/worlds/main/chats/c/messages", map[string]string{"text": strings.Repeat("x", 2000)})
	if r.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "body_too_large") {
		t.Errorf("an oversize body: %d %s", r.StatusCode, body)
	}
	req, _ := http.NewRequest("POST", e.url+"/v1/worlds/main/chats/c/messages", strings.NewReader("text=hi"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("a form: %d; want 415", resp.StatusCode)
	}
	if len(e.model.Requests()) != 0 {
		t.Errorf("a refused request reached the model")
	}
	// Origins.
	r, _ = e.do("GET", "/healthz", nil, "Origin", "https://evil.example")
	if r.StatusCode != 403 {
		t.Errorf("an unknown origin: %d; want 403", r.StatusCode)
	}
	req, _ = http.NewRequest("OPTIONS", e.url+"/v1/responses", nil)
	req.Header.Set("Origin", "https://app.example.com")
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Last-Event-ID") {
		t.Errorf("a preflight: %d %v", resp.StatusCode, resp.Header)
	}
	// DNS rebinding: a name that is not loopback's.
	req, _ = http.NewRequest("GET", e.url+"/v1/worlds", nil)
	req.Host = "attacker.example:80"
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("Host attacker.example: %d; want 403", resp.StatusCode)
	}
	// The rate: a burst of 3 (some spent above), then 429.
	limited := false
	for range 6 {
		r, _ := e.do("GET", "/v1/models", nil)
		if r.StatusCode == http.StatusTooManyRequests {
			limited = r.Header.Get("Retry-After") != ""
			break
		}
	}
	if !limited {
		t.Error("no 429 with Retry-After past the burst")
	}
}

// TestSlowClients: a client that sends its header a byte at a time (slow
// loris) is cut off at the header timeout; one that stops reading its
// stream is cut off at the write timeout, and the turn goes on.
func TestSlowClients(t *testing.T) {
	t.Parallel()
	model := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Text: strings.Repeat(strings.Repeat("x", 999)+" ", 300)}}})
	t.Cleanup(model.Close)
	e := newEnvModel(t, model, func(o *Options) {
		o.HeaderTimeout = 300 * time.Millisecond
		o.WriteTimeout = 300 * time.Millisecond
	})
	ln, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	// Small socket buffers: a client that stops reading fills them soon.
	go func() { done <- e.srv.Serve(ctx, smallBuffers{ln}) }()
	defer func() { cancel(); <-done }()
	addr := ln.Addr().String()

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	closed := false
	for _, b := range []byte("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ") {
		if _, err := c.Write([]byte{b}); err != nil {
			closed = true
			break
		}
		time.Sleep(50 * time.Millisecond)
		if time.Since(start) > 5*time.Second {
			break
		}
	}
	if !closed {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := io.ReadAll(c)
		closed = err == nil || !isTimeout(err)
	}
	if !closed || time.Since(start) > 5*time.Second {
		t.Errorf("a slow-loris client was not cut off (%s)", time.Since(start))
	}

	// A reader that stops reading: the server cuts it off; the turn ends.
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if tc, ok := c2.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	body := `{"text": "talk"}`
	_, _ = io.WriteString(c2, "POST /v1/worlds/main/chats/slow/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nContent-Type: application/json\r\nContent-Length: "+itoa(len(body))+"\r\n\r\n"+body)
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, b := e.do("GET", "/v1/worlds/main/chats/slow", nil)
		_, m := e.do("GET", "/metrics", nil)
		if r.StatusCode == 200 && strings.Contains(string(b), `"turn":null`) && strings.Contains(string(b), `"turns":1`) &&
			strings.Contains(string(m), "demiurge_serve_streams_open 0") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the turn of a client that stopped reading did not end, or its stream is still open: %s", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// What the client got stops short: the server cut it off.
	_ = c2.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, _ := io.ReadAll(c2)
	if bytes.Contains(got, []byte("event: turn_end")) || !bytes.Contains(got, []byte("event: text_delta")) {
		t.Errorf("a client that stopped reading got %d bytes, the turn's end included: it was not cut off", len(got))
	}
}

// smallBuffers is a listener whose connections have 8 KiB send buffers.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(8 << 10)
	}
	return c, err
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func itoa(n int) string { return strconv.Itoa(n) }
