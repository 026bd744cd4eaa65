package cli

import (
	"bufio"
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
)

// TestUI starts demiurge ui on a store, follows the link it prints, reads
// the list of worlds, is refused without the token, and stops on the
// command's context (Ctrl-C).
func TestUI(t *testing.T) {
	t.Parallel()
	dir := counterStore(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	var errOut strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, []string{"--store", dir, "ui"}, stdio{in: strings.NewReader(""), out: pw, err: &errOut},
			func(string) string { return "" })
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	var link string
	for sc.Scan() && link == "" {
		link = regexp.MustCompile(`http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{64}`).FindString(sc.Text())
	}
	if link == "" {
		t.Fatalf("no link printed; stderr %q", errOut.String())
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	base := strings.TrimSuffix(link[:strings.Index(link, "?")], "/")

	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("without the token: %d; want 403", resp.StatusCode)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	resp, err = c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `href="/w/main"`) || resp.Request.URL.RawQuery != "" {
		t.Errorf("the link: %d at %s:\n%s", resp.StatusCode, resp.Request.URL, b)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after Ctrl-C; stderr %q", code, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("demiurge ui still runs after Ctrl-C")
	}
}

func TestUIAddr(t *testing.T) {
	t.Parallel()
	dir := counterStore(t)
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:80", "127.0.0.1"} {
		r := run(t, nil, "", "--store", dir, "ui", "--addr", addr)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--addr: ui: not a loopback HOST:PORT") {
			t.Errorf("--addr %s: exit %d, stderr %q; want a usage error", addr, r.code, r.stderr)
		}
	}
}

// TestUILive: demiurge ui beside a demiurge run that holds the store at
// its prompt, two processes: the page shows the chat's first turn, and the
// event stream of its timeline sends the second turn as run writes it.
func TestUILive(t *testing.T) {
	model := llmtest.NewServerFunc(func(r llmtest.Request) llmtest.Turn {
		return llmtest.Turn{Text: fmt.Sprintf("answer %d", r.Seq+1)}
	})
	defer model.Close()
	storeDir := filepath.Join(t.TempDir(), "store")
	env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + model.URL, storeEnv + "="}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inW.Close()
	run := startDemiurge(t, "run", inR, env, "--store", storeDir, "run", filepath.Join("..", "examples", "demiurge"), "--model", "gpt-test")
	inR.Close()
	fmt.Fprintln(inW, "first question")
	run.expect(false, "answer 1")

	view := startDemiurge(t, "ui", nil, env, "--store", storeDir, "ui")
	linkRE := `http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{64}`
	view.expect(false, linkRE)
	link := regexp.MustCompile(linkRE).FindString(view.stdout())
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	get := func(url string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", url, resp.Status)
		}
		return resp
	}
	resp := get(link)
	resp.Body.Close()
	base := strings.TrimSuffix(link[:strings.Index(link, "?")], "/")
	resp = get(base + "/w/main")
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	events := regexp.MustCompile(`data-events="([^"]+)"`).FindSubmatch(page)
	if !strings.Contains(string(page), "first question") || !strings.Contains(string(page), "answer 1") || events == nil {
		t.Fatalf("the timeline beside the writer:\n%s", page)
	}

	view.expect(true, fmt.Sprintf("ui: reading store .* through process %d, which writes it", run.cmd.Process.Pid))

	stream := get(base + html.UnescapeString(string(events[1])))
	defer stream.Body.Close()
	fmt.Fprintln(inW, "second question")
	sc := bufio.NewScanner(stream.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var event strings.Builder
	for sc.Scan() {
		event.WriteString(sc.Text() + "\n")
		if sc.Text() == "" && strings.Contains(event.String(), "answer 2") {
			break
		}
		if sc.Text() == "" {
			event.Reset()
		}
	}
	if ev := event.String(); !strings.HasPrefix(ev, "event: timeline\n") || !strings.Contains(ev, "second question") {
		t.Fatalf("no timeline event with the second turn (%v); the last event:\n%s", sc.Err(), ev)
	}
}

// TestUIApprove: beside a demiurge run on a pipe whose turn waits for the
// approval of a call, the Approve button of demiurge ui (a POST with the
// page's form token) hands the decision to run, which journals it as it
// does demiurge approve's and goes on with the turn; with no run, the
// page says which command answers.
func TestUIApprove(t *testing.T) {
	model := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.txt", "content": "from the view\n"}`}}},
		{Text: "Wrote a.txt."},
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "b.txt", "content": "later\n"}`}}},
	}})
	defer model.Close()
	storeDir := filepath.Join(t.TempDir(), "store")
	env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + model.URL, storeEnv + "="}
	manifest := filepath.Join("..", "examples", "demiurge")
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inW.Close()
	run := startDemiurge(t, "run", inR, env, "--store", storeDir, "run", manifest, "--model", "gpt-test", "--require-approval", "workspace_write")
	inR.Close()
	fmt.Fprintln(inW, "Write a.txt.")
	run.expect(false, "waits for approval: demiurge approve")

	view := startDemiurge(t, "ui", nil, env, "--store", storeDir, "ui")
	linkRE := `http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{64}`
	view.expect(false, linkRE)
	link := regexp.MustCompile(linkRE).FindString(view.stdout())
	base := strings.TrimSuffix(link[:strings.Index(link, "?")], "/")
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path string, form url.Values) (int, string, http.Header) {
		t.Helper()
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, _ := http.NewRequestWithContext(t.Context(), method, path, body)
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", base)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, html.UnescapeString(string(b)), resp.Header
	}
	do(http.MethodGet, link, nil)
	_, page, _ := do(http.MethodGet, base+"/w/main", nil)
	token := regexp.MustCompile(`name="form_token" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	call := regexp.MustCompile(`name="call" value="([^"]+)"`).FindStringSubmatch(page)
	if token == nil || call == nil || !strings.Contains(page, ">Approve</button>") {
		t.Fatalf("the timeline shows no Approve button:\n%s", page)
	}
	form := url.Values{"form_token": {token[1]}, "chat": {"main"}, "call": {call[1]}, "decision": {"approve"}}
	code, _, h := do(http.MethodPost, base+"/w/main/decide", form)
	if code != http.StatusSeeOther || !strings.Contains(h.Get("Location"), "decided="+call[1]) || !strings.Contains(h.Get("Location"), "at=") {
		t.Fatalf("Approve: %d to %q; want 303 back to the timeline, saying where it was journaled", code, h.Get("Location"))
	}
	run.expect(false, "Wrote a.txt.")
	run.expect(false, fmt.Sprintf(`workspace_write approved from another process \(pid %d\)`, view.cmd.Process.Pid))

	// With run gone, the page says which command answers.
	fmt.Fprintln(inW, "Write b.txt.")
	run.expect(false, "(?s)Write b.txt.*waits for approval: demiurge approve")
	inW.Close()
	run.wait()
	_, page, _ = do(http.MethodGet, base+"/w/main", nil)
	call = regexp.MustCompile(`name="call" value="([^"]+)"`).FindStringSubmatch(page)
	if call == nil {
		t.Fatalf("no call waits in the page:\n%s", page)
	}
	form.Set("call", call[1])
	code, page, _ = do(http.MethodPost, base+"/w/main/decide", form)
	absManifest, _ := filepath.Abs(manifest)
	if want := "no process runs world main now to go on with the turn: demiurge approve " + absManifest + " " + call[1] + " --world main --chat main journals the decision"; code != http.StatusConflict || !strings.Contains(page, want) {
		t.Errorf("Approve with no run: %d; want 409 saying %q:\n%.3000s", code, want, page)
	}
}
