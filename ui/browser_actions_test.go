package ui_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/ui"
	"github.com/demiurge-dev/demiurge/world"
)

// countingSource counts the reads a view makes of its store: a request
// the view serves reads it, one it refuses does not.
type countingSource struct {
	ui.Source
	reads atomic.Int64
}

func (c *countingSource) Read(ctx context.Context, world string, from uint64, fn func(journal.Record) error) error {
	c.reads.Add(1)
	return c.Source.Read(ctx, world, from, fn)
}

func (c *countingSource) Get(ctx context.Context, r cas.Ref) ([]byte, error) {
	c.reads.Add(1)
	return c.Source.Get(ctx, r)
}

// TestBrowserCrossOrigin: a page on another port of 127.0.0.1 (the
// cookie's SameSite does not tell ports apart, so the browser sends it)
// asks the view, once the user has opened it, to run a replay (a GET, a
// fetch, an image, a form) and to approve a call (a form): the view
// serves none of it, and nothing runs.
func TestBrowserCrossOrigin(t *testing.T) {
	st := world.NewMemoryStorage()
	importAs(t.Context(), t, st, sessionsDir+"/demo", "demo")
	src := &countingSource{Source: parts(st)}
	var decided atomic.Int64
	s := serveWith(t, ui.Options{Source: src, Reducers: registry(),
		Decide: func(context.Context, ui.Decision) (ui.DecisionResult, error) {
			decided.Add(1)
			return ui.DecisionResult{}, nil
		}})
	view := "http://" + s.Host()

	// The other page, served on another port of the same host.
	evil := `<!doctype html><html><body><h1>another page</h1>
<iframe name="sink" style="display:none"></iframe>
<form id="replay" method="post" action="VIEW/w/demo/replay" target="sink"><input name="genesis" value="1"><input name="form_token" value="guess"></form>
<form id="decide" method="post" action="VIEW/w/demo/decide" target="sink"><input name="chat" value="main"><input name="call" value="call_1"><input name="decision" value="approve"></form>
<script>
fetch("VIEW/w/demo/replay?run=1&genesis=1", {credentials: "include", mode: "no-cors"}).catch(() => {});
new Image().src = "VIEW/w/demo/replay?run=1";
document.getElementById("replay").submit();
setTimeout(() => document.getElementById("decide").submit(), 300);
setTimeout(() => { document.title = "done"; }, 1500);
</script></body></html>`
	evil = strings.ReplaceAll(evil, "VIEW", view)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	other := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, evil)
	})}
	go other.Serve(ln)
	t.Cleanup(func() { other.Close() })

	ctx := browse(t, 1280, 900)
	do(t, ctx, "open the link", chromedp.Navigate(s.URL()), chromedp.WaitVisible(chromedp.CSS(".cards")))
	before := src.reads.Load()
	do(t, ctx, "open the other page", chromedp.Navigate("http://"+ln.Addr().String()+"/"))
	waitFor(t, ctx, "the other page's requests", `document.title === "done"`)
	if n := src.reads.Load() - before; n != 0 {
		t.Errorf("the view read its store %d times for the other page's requests; want none served", n)
	}
	if n := decided.Load(); n != 0 {
		t.Errorf("the other page's form decided %d calls; want none", n)
	}
	// The view's own page still runs a replay, from its form.
	do(t, ctx, "open the replay page", chromedp.Navigate(view+"/w/demo/replay"), chromedp.WaitVisible(chromedp.CSS("#run-replay")))
	do(t, ctx, "run replay", chromedp.Click(chromedp.CSS("#run-replay")), chromedp.WaitVisible(chromedp.CSS("#replay-ok")))
}

// recordingHandler keeps the messages logged to it.
type recordingHandler struct {
	mu   sync.Mutex
	msgs []string
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, r.Message)
	return nil
}
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

// TestBrowserApprove: a call that waits for approval shows Approve and
// Deny buttons in the timeline; Approve sends the decision to the
// process that runs the world (here the test's agent, as demiurge run
// does it for the view's command), which journals it and goes on with
// the turn; the page says so and shows the call run and the answer. A
// denial with a reason goes the same way. The chat filter shows one
// chat's turns.
func TestBrowserApprove(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.txt", "content": "approved\n"}`}}},
		{Text: "Wrote a.txt."},
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "b.txt", "content": "denied\n"}`}}},
		{Text: "Did not write b.txt."},
	}})
	t.Cleanup(srv.Close)
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL}
	st := world.NewMemoryStorage()
	w, err := agent.Open(t.Context(), "../examples/demiurge", agent.WithStorage(st), agent.WithWorld("w"),
		agent.WithModel(agent.Model{Name: "gpt-test"}),
		agent.WithEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	turns := make(chan error, 4)
	// decide is what the command line's Decide does for the view: hand
	// the decision to the process that runs the world, and say where it
	// was journaled; that process goes on with the turn.
	decide := func(ctx context.Context, d ui.Decision) (ui.DecisionResult, error) {
		journaled := make(chan ui.DecisionResult, 1)
		go func() {
			var err error
			for e, eerr := range w.Chat(d.Chat).Decide(context.Background(), d.Call, agent.Decision{Approve: d.Approve, Reason: d.Reason}) {
				if ad, ok := e.(agent.ApprovalDecided); ok {
					journaled <- ui.DecisionResult{Tool: ad.Tool, Seq: ad.Seq}
				}
				if eerr != nil {
					err = eerr
				}
			}
			turns <- err
		}()
		select {
		case res := <-journaled:
			return res, nil
		case err := <-turns:
			return ui.DecisionResult{}, fmt.Errorf("not decided: %v", err)
		case <-ctx.Done():
			return ui.DecisionResult{}, ctx.Err()
		}
	}
	send := func(chat, text string) {
		for _, err := range w.Chat(chat, agent.RequireApproval("workspace_write")).Send(t.Context(), text) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	send("main", "Write a.txt.") // ends waiting for approval: nobody here asks
	logs := &recordingHandler{}
	manifest := func(world string) string { return map[string]string{"w": "/home/me/my agent"}[world] }
	s := serveWith(t, ui.Options{Source: parts(st), Reducers: registry(), Decide: decide, Log: slog.New(logs), Manifest: manifest})
	view := "http://" + s.Host()
	ctx := browse(t, 1280, 900)
	do(t, ctx, "open the link", chromedp.Navigate(s.URL()), chromedp.WaitVisible(chromedp.CSS(".cards")))
	if status := eval[string](t, ctx, `document.querySelector(".card .worldstatus").textContent`); status != "waiting for approval" {
		t.Errorf("the world's card says %q; want waiting for approval", status)
	}
	do(t, ctx, "open the world", chromedp.Navigate(view+"/w/w"), chromedp.WaitVisible(chromedp.CSS(`.call[data-status="approval"] button.approve`)))
	waitFor(t, ctx, "the event stream", `document.getElementById("live").textContent.startsWith("live")`)
	// The command for a terminal names the world's manifest, not MANIFEST.
	if hint := eval[string](t, ctx, `document.querySelector('.call[data-status="approval"] .ask p code').textContent`); !strings.HasPrefix(hint, "demiurge approve '/home/me/my agent' call_") {
		t.Errorf("the call's hint says %q; want the approve command with the world's manifest", hint)
	}
	do(t, ctx, "approve", chromedp.Click(chromedp.CSS(`.call[data-status="approval"] button.approve`)), chromedp.WaitVisible(chromedp.CSS("#decided")))
	if text := eval[string](t, ctx, `document.getElementById("decided").innerText`); !strings.Contains(text, "approved: journaled at #") {
		t.Errorf("after Approve the page says %q", text)
	}
	if err := <-turns; err != nil {
		t.Fatalf("the turn after the approval: %v", err)
	}
	waitFor(t, ctx, "the call run and the answer", `(() => { const c = document.querySelector('#timeline .call[data-tool="workspace_write"]');
		const a = document.querySelector("#timeline .turn.answer .assistant");
		return c !== null && a !== null && c.dataset.status === "ok" && c.innerText.includes("approved by the user") && a.innerText.includes("Wrote a.txt."); })()`)

	// Another chat's call, denied with a reason.
	send("side", "Write b.txt.")
	do(t, ctx, "open side's turns", chromedp.Navigate(view+"/w/w?chat=side"), chromedp.WaitVisible(chromedp.CSS(`.call[data-status="approval"] button.deny`)))
	if n := eval[int](t, ctx, `document.querySelectorAll("#timeline .turn").length`); n != 1 {
		t.Errorf("the chat filter shows %d turns; want side's one", n)
	}
	do(t, ctx, "deny", chromedp.SendKeys(chromedp.CSS(`.call[data-status="approval"] input[name="reason"]`), "not b"),
		chromedp.Click(chromedp.CSS(`.call[data-status="approval"] button.deny`)), chromedp.WaitVisible(chromedp.CSS("#decided")))
	if err := <-turns; err != nil {
		t.Fatalf("the turn after the denial: %v", err)
	}
	waitFor(t, ctx, "the denial", `(() => { const c = document.querySelector('#timeline .call[data-tool="workspace_write"]');
		return c !== null && c.dataset.status === "denied" && c.innerText.includes("denied by the user: not b"); })()`)
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if n := slices.Index(logs.msgs, "ui: decision"); n < 0 {
		t.Errorf("the view logged no decision: %q", logs.msgs)
	}
}
