package ui_test

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/agent/session"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// These tests drive the view in headless Chromium, as a person would use
// it: the recorded sessions, a session that grows while the page is open,
// and a replay that diverges. With -screenshots they take pictures of the
// main pages into a new temporary directory (the test's log names it);
// with -update-screenshots they write them over the ones the README shows
// (docs/ui-*.png), to commit.

var (
	screenshots       = flag.Bool("screenshots", false, "take screenshots of the main pages, into a new temporary directory that the log names")
	updateScreenshots = flag.Bool("update-screenshots", false, "take screenshots of the main pages and write them over the README's, ../docs/ui-*.png")
)

// takeShots reports whether the tests take screenshots.
func takeShots() bool { return *screenshots || *updateScreenshots }

// shotDir is where screenshots go: docs/ with -update-screenshots, else a
// directory made for this run.
var shotDir = sync.OnceValues(func() (string, error) {
	if *updateScreenshots {
		return filepath.Join("..", "docs"), nil
	}
	return os.MkdirTemp("", "demiurge-ui-screenshots-")
})

// requireChromium, set to 1 (as .ci/run does), makes a missing Chromium a
// failure instead of a skip.
const requireChromium = "DEMIURGE_REQUIRE_CHROMIUM"

// chromium returns the path of a Chromium or Chrome on PATH, or skips the
// test saying what to install.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "Chromium is not on PATH: the browser tests need it (Debian: apt-get install -y chromium)"
	if os.Getenv(requireChromium) == "1" {
		t.Fatalf("%s; %s=1 requires them to run", msg, requireChromium)
	}
	t.Skip(msg)
	return ""
}

// browse starts a headless Chromium with a window of the given size and
// returns a context for its tab; the test's end closes it.
func browse(t *testing.T, width, height int) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.NoSandbox,
		chromedp.WindowSize(width, height))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(cancelTab)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// do runs actions in the tab, failing the test with what was being done.
func do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// waitFor polls a JavaScript predicate until it holds.
func waitFor(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("waiting for %s (%s): %v\nthe page says:\n%s", what, js, err, pageText(ctx))
	}
}

func pageText(ctx context.Context) string {
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body.innerText"))
	if err != nil {
		return err.Error()
	}
	return s
}

// shot writes a screenshot of the whole page as ui-name.png in shotDir
// when the tests take screenshots.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if !takeShots() {
		return
	}
	b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dir, err := shotDir()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "ui-"+name+".png")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", path, len(b))
}

// follow follows the first link sel finds, as a click does, and waits for
// the new page to show an element next finds.
func follow(t *testing.T, ctx context.Context, sel, next string) {
	t.Helper()
	href := eval[string](t, ctx, fmt.Sprintf("document.querySelector(%q).href", sel))
	do(t, ctx, "follow "+sel, chromedp.Navigate(href), chromedp.WaitVisible(chromedp.CSS(next)))
}

// clip cuts s for a failure message.
func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// shownCall is what the timeline shows of a tool call.
type shownCall struct {
	Tool    string `json:"tool"`
	Status  string `json:"status"`
	Visible string `json:"visible"` // the result as the page shows it, unfolded
	Full    string `json:"full"`    // the whole result, folded or not
}

const shownCallsJS = `Array.from(document.querySelectorAll("#timeline .call"), c => {
	const shown = c.querySelector(":scope > pre.output");
	const whole = c.querySelector("details pre.output") || shown;
	return {tool: c.dataset.tool, status: c.dataset.status,
		visible: shown ? shown.innerText : "", full: whole ? whole.textContent : ""};
})`

// turnsOf reads a world's session as the timeline should show it.
func turnsOf(t *testing.T, st world.Storage, name string) []*session.Turn {
	t.Helper()
	r := session.NewReader(st.CAS())
	if err := st.Journal().Read(t.Context(), name, 1, r.Record); err != nil {
		t.Fatal(err)
	}
	return r.Turns()
}

// TestBrowserSessions opens the view of a store holding every recorded
// session: the page refuses a browser without the token, the printed link
// lets it in, and each session's timeline shows every tool call with its
// result.
func TestBrowserSessions(t *testing.T) {
	st := sessionsStore(t)
	s := serve(t, parts(st), registry())
	ctx := browse(t, 1280, 900)
	base := "http://" + s.Host()

	do(t, ctx, "open the view without the token", chromedp.Navigate(base+"/w/demo"))
	if text := pageText(ctx); !strings.Contains(text, "refused: no token") {
		t.Fatalf("without the token the page says:\n%s", text)
	}
	do(t, ctx, "open the link", chromedp.Navigate(s.URL()), chromedp.WaitVisible(chromedp.CSS(".cards")))
	if u := eval[string](t, ctx, "location.href"); u != base+"/" {
		t.Errorf("after the link the address is %s; want %s/ (the token moved to a cookie)", u, base)
	}
	if js := eval[string](t, ctx, "document.cookie"); js != "" {
		t.Errorf("the page's script reads the cookie %q; want it HttpOnly", js)
	}
	names := sessionNames(t)
	// The world last active first.
	byActivity := slices.Clone(names)
	last := map[string]uint64{}
	for _, n := range names {
		sum, err := session.Summarize(t.Context(), st.Journal(), st.CAS(), n)
		if err != nil {
			t.Fatal(err)
		}
		last[n] = sum.LastActivityNS
	}
	slices.SortStableFunc(byActivity, func(a, b string) int { return cmp.Compare(last[b], last[a]) })
	worlds := eval[[]string](t, ctx, `Array.from(document.querySelectorAll(".card h2 a"), a => a.textContent)`)
	if strings.Join(worlds, " ") != strings.Join(byActivity, " ") {
		t.Errorf("the list shows worlds %q; want them by last activity, %q", worlds, byActivity)
	}
	// Each agent world says where it stands and how many failures it had.
	type card struct {
		World    string `json:"world"`
		Status   string `json:"status"`
		Failures string `json:"failures"`
	}
	cards := eval[[]card](t, ctx, `Array.from(document.querySelectorAll(".card"), c => ({world: c.querySelector("h2 a").textContent,
		status: (c.querySelector(".worldstatus") || {}).textContent || "", failures: (c.querySelector(".failures") || {}).textContent || ""}))`)
	for _, c := range cards {
		var turns, calls int
		for _, tu := range turnsOf(t, st, c.World) {
			bad := tu.Outcome == "failed" || tu.Outcome == "stopped"
			for _, r := range tu.Rounds {
				for _, call := range r.Calls {
					if call.Status == "error" || call.Status == "timeout" || call.Rejected {
						calls++
						bad = true
					}
				}
			}
			if bad {
				turns++
			}
		}
		want := "no failures"
		if turns+calls > 0 {
			want = fmt.Sprintf("%d failed turn", turns) + map[bool]string{true: "", false: "s"}[turns == 1] + ", " +
				fmt.Sprintf("%d failed tool call", calls) + map[bool]string{true: "", false: "s"}[calls == 1]
		}
		if c.Status != "ok" || c.Failures != want {
			t.Errorf("world %s's card says %q, %q; want ok, %q", c.World, c.Status, c.Failures, want)
		}
	}
	shot(t, ctx, "worlds") // the worlds page, before a link leaves it
	// The failures' link shows the failed turns alone.
	follow(t, ctx, `.card .failures a[href="/w/mcp?failed=1"]`, "#timeline .summary")
	if shown := eval[[]shownCall](t, ctx, shownCallsJS); len(shown) == 0 || !slices.ContainsFunc(shown, func(c shownCall) bool { return c.Status == "error" }) {
		t.Errorf("the failed turns of mcp show calls %+v; want the failed one among them", shown)
	}
	if !eval[bool](t, ctx, `document.querySelector("#filter-failed").getAttribute("aria-current") === "true"`) {
		t.Error("the filter does not say it shows failures only")
	}

	for _, name := range names {
		do(t, ctx, "open "+name, chromedp.Navigate(base+"/w/"+name), chromedp.WaitVisible(chromedp.CSS("#timeline .summary")))
		shown := eval[[]shownCall](t, ctx, shownCallsJS)
		var want []*session.ToolCall
		for _, tu := range turnsOf(t, st, name) {
			for _, r := range tu.Rounds {
				want = append(want, r.Calls...)
			}
		}
		if len(want) == 0 || len(shown) != len(want) {
			t.Errorf("%s: the timeline shows %d tool calls; want %d", name, len(shown), len(want))
			continue
		}
		for i, c := range want {
			got := shown[i]
			out := strings.TrimRight(c.Output, "\n")
			first, _, _ := strings.Cut(out, "\n")
			first = strings.TrimSpace(first[:min(len(first), 100)])
			if got.Tool != c.Tool || got.Status != c.Status || got.Full != out || !strings.Contains(got.Visible, first) {
				t.Errorf("%s: call %d shows %s %s with %q (in full %q); want %s %s with the result %q",
					name, i+1, got.Tool, got.Status, clip(got.Visible), clip(got.Full), c.Tool, c.Status, clip(out))
			}
		}
	}

	do(t, ctx, "open the demo", chromedp.Navigate(base+"/w/demo"), chromedp.WaitVisible(chromedp.CSS("#timeline .call")))
	text := pageText(ctx)
	for _, want := range []string{"Write a hello note and show it to me.", "workspace_list --path notes", "+This note was written by the Demiurge agent.", "answer"} {
		if !strings.Contains(text, want) {
			t.Errorf("the demo's timeline lacks %q:\n%s", want, text)
		}
	}
	shot(t, ctx, "timeline")
	follow(t, ctx, `.call[data-tool="workspace_write"] a.seq`, "pre.json a.ref")
	if text := pageText(ctx); !strings.Contains(text, "Record 23") || !strings.Contains(text, `"intent": "blake3:`) {
		t.Errorf("the receipt's page says:\n%s", text)
	}
	follow(t, ctx, "pre.json a.ref", "pre.json")
	if text := pageText(ctx); !strings.Contains(text, "Blob") || !strings.Contains(text, "bytes") {
		t.Errorf("the blob page says:\n%s", text)
	}

	if takeShots() {
		do(t, ctx, "look as a phone does", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile),
			chromedp.Navigate(base+"/w/demo"), chromedp.WaitVisible(chromedp.CSS("#timeline .call")))
		if w := eval[int](t, ctx, "document.documentElement.scrollWidth"); w > 390 {
			t.Errorf("on a phone the page is %dpx wide; want it to fit 390px", w)
		}
		shot(t, ctx, "phone")
	}
}

// TestBrowserLive opens the timeline of a world that an agent in this
// process writes to a store directory (its model and its user answering
// when the test says so), read as demiurge ui reads one, through the
// writer's socket (store.OpenLive): the turn, the bash call with its result and workspace
// change, a call waiting for approval and the user's denial, and the
// answer appear as they land, without a reload.
func TestBrowserLive(t *testing.T) {
	gate := make(chan llmtest.Turn)
	srv := llmtest.NewServerFunc(func(r llmtest.Request) llmtest.Turn {
		select {
		case turn := <-gate:
			return turn
		case <-time.After(time.Minute):
			return llmtest.Turn{Status: 500}
		}
	})
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL}
	deny := make(chan string)
	approver := func(ctx context.Context, req agent.ApprovalRequested) (agent.Decision, bool) {
		if req.Tool == "bash" {
			return agent.Decision{Approve: true}, true
		}
		select {
		case why := <-deny:
			return agent.Decision{Reason: why}, true
		case <-ctx.Done():
			return agent.Decision{}, false
		}
	}
	w, err := agent.Open(t.Context(), "../examples/demiurge", agent.WithDir(dir), agent.WithWorld("live"),
		agent.WithModel(agent.Model{Name: "gpt-test"}), agent.WithApprover(approver),
		agent.WithEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })

	// The view reads the store as demiurge ui does: through the process
	// that writes it (here this one, over the store's socket).
	l, err := store.OpenLive(t.Context(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	s := serve(t, l, registry())
	ctx := browse(t, 1280, 900)
	do(t, ctx, "open the link", chromedp.Navigate(s.URL()), chromedp.WaitVisible(chromedp.CSS(".cards")))
	if l.Writer() == 0 {
		t.Error("the view reads the store's file, not through the process that writes it")
	}
	do(t, ctx, "open the live world", chromedp.Navigate("http://"+s.Host()+"/w/live"), chromedp.WaitVisible(chromedp.CSS("#timeline .summary")))
	// A mark that a reload would lose.
	eval[bool](t, ctx, "window.stayed = true")
	waitFor(t, ctx, "the event stream", `document.getElementById("live").textContent.startsWith("live")`)

	turnDone := make(chan error, 1)
	go func() {
		var err error
		for _, e := range w.Chat("main", agent.RequireApproval("workspace_remove")).Send(context.Background(), "Greet the world in live.txt.") {
			if e != nil {
				err = e
			}
		}
		turnDone <- err
	}()
	waitFor(t, ctx, "the user's message", `document.querySelector("#timeline .user") && document.querySelector("#timeline .user").innerText.includes("Greet the world in live.txt.")`)
	waitFor(t, ctx, "the turn running", `document.querySelector("#timeline .turn.running") !== null`)

	gate <- llmtest.Turn{Calls: []llmtest.Call{{Name: "bash", Arguments: `{"commands": "echo 'hello from the live test' > live.txt; cat live.txt"}`}}}
	waitFor(t, ctx, "the bash call's result", `(() => { const c = document.querySelector('#timeline .call[data-tool="bash"]');
		return c !== null && c.dataset.status === "ok" && c.innerText.includes("hello from the live test"); })()`)
	waitFor(t, ctx, "the file it wrote", `document.querySelector("#timeline .diff") !== null && document.querySelector("#timeline .diff").innerText.includes("live.txt")`)
	waitFor(t, ctx, "the bash call's approval", `document.querySelector('#timeline .call[data-tool="bash"] .approval').innerText.includes("approved by the user")`)

	gate <- llmtest.Turn{Calls: []llmtest.Call{{Name: "workspace_remove", Arguments: `{"path": "live.txt"}`}}}
	waitFor(t, ctx, "the call waiting for approval", `(() => { const c = document.querySelector('#timeline .call[data-tool="workspace_remove"]');
		return c !== null && c.dataset.status === "approval" && c.innerText.includes("waiting for approval"); })()`)
	shot(t, ctx, "live")
	deny <- "keep the greeting"
	waitFor(t, ctx, "the denial", `(() => { const c = document.querySelector('#timeline .call[data-tool="workspace_remove"]');
		return c.dataset.status === "denied" && c.innerText.includes("denied by the user: keep the greeting"); })()`)

	gate <- llmtest.Turn{Text: "live.txt now greets the world."}
	waitFor(t, ctx, "the answer", `document.querySelector("#timeline .turn.answer .assistant") !== null && document.querySelector("#timeline .turn.answer .assistant").innerText.includes("live.txt now greets the world.")`)
	if err := <-turnDone; err != nil {
		t.Fatalf("the turn: %v", err)
	}
	if !eval[bool](t, ctx, "window.stayed === true") {
		t.Error("the page reloaded to show the new records")
	}
}

// skewed is the chat reducer with a bug: it counts the next request's
// tokens twice. The journals were written without it.
type skewed struct{ reducer.Reducer }

func (s skewed) Step(c *reducer.Context, state, event schema.Value) (reducer.Output, error) {
	out, err := s.Reducer.Step(c, state, event)
	if m, ok := out.State.(*schema.Map); ok && err == nil {
		if n, ok := m.Get("tokens"); ok {
			if n, ok := n.(uint64); ok && n > 0 {
				out.State, out.Memo = m.With("tokens", 2*n), nil
			}
		}
	}
	return out, err
}

// TestBrowserDivergence runs replay from the page with a changed chat
// reducer: the page shows where the replay diverges, the journal's record
// and the replayed one side by side, and the states' difference by path.
func TestBrowserDivergence(t *testing.T) {
	base := registry()
	reg := reducer.NewRegistry()
	for _, name := range base.Names() {
		r, _ := base.Lookup(name)
		if name == demiurge.ModuleName {
			r = skewed{r}
		}
		reg.MustRegister(name, r)
	}
	st := world.NewMemoryStorage()
	importAs(t.Context(), t, st, filepath.Join(sessionsDir, "demo"), "demo")
	s := serve(t, parts(st), reg)
	ctx := browse(t, 1280, 900)
	do(t, ctx, "open the link", chromedp.Navigate(s.URL()), chromedp.WaitVisible(chromedp.CSS(".cards")))
	do(t, ctx, "open the replay page", chromedp.Navigate("http://"+s.Host()+"/w/demo/replay"), chromedp.WaitVisible(chromedp.CSS("#run-replay")))
	do(t, ctx, "run replay", chromedp.Click(chromedp.CSS("#run-replay")), chromedp.WaitVisible(chromedp.CSS("#divergence")))
	text := pageText(ctx)
	if !strings.Contains(text, "Replay diverges") || !strings.Contains(text, "At seq") {
		t.Errorf("the replay page says:\n%s", text)
	}
	type row struct {
		Left  string `json:"left"`
		Right string `json:"right"`
	}
	rows := eval[[]row](t, ctx, `Array.from(document.querySelectorAll("#divergence table.side tr.opchanged"), r => ({left: r.cells[1].innerText, right: r.cells[3].innerText}))`)
	var left, right string
	for _, r := range rows {
		if strings.Contains(r.Left, `"tokens"`) {
			left, right = r.Left, r.Right
		}
	}
	var n, m uint64
	if _, err := fmt.Sscanf(strings.TrimSpace(left), `"tokens": %d,`, &n); err != nil {
		t.Fatalf("no changed tokens line on the journal's side: %q (rows %+v)", left, rows)
	}
	if _, err := fmt.Sscanf(strings.TrimSpace(right), `"tokens": %d,`, &m); err != nil || m != 2*n {
		t.Errorf("the replayed side shows %q; want tokens %d", right, 2*n)
	}
	changes := eval[string](t, ctx, `document.querySelector("#divergence ul.changes").innerText`)
	if want := fmt.Sprintf("tokens: %d → %d", n, 2*n); !strings.Contains(changes, want) {
		t.Errorf("the changes say %q; want %q", changes, want)
	}
	shot(t, ctx, "replay")
	// The replayed state exists only in the replay: the page keeps it.
	follow(t, ctx, "#divergence td.r a.ref", "pre.json")
	if text := pageText(ctx); !strings.Contains(text, "the last replay that diverged") || !strings.Contains(text, fmt.Sprintf(`"tokens": %d,`, 2*n)) {
		t.Errorf("the replayed state's page says:\n%s", text)
	}
}
