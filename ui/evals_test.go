package ui_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/effects"
	evals "github.com/demiurge-dev/demiurge/eval"
	"github.com/demiurge-dev/demiurge/tools/workspace"
	"github.com/demiurge-dev/demiurge/ui"
	"github.com/demiurge-dev/demiurge/world"
)

// brokenWorkspace fails every workspace tool call, as a regression would.
type brokenWorkspace struct{}

func (brokenWorkspace) Run(context.Context, *effects.Call) effects.Receipt {
	return effects.Receipt{Status: effects.StatusError, Error: "the workspace is read-only"}
}

// evalRuns runs three cases of examples/evals from their cassettes twice
// in st, the second time with the workspace tools broken, and keeps both
// runs: "good" passes, "broken" fails write-note.
func evalRuns(t *testing.T, st world.Storage) evals.Runs {
	t.Helper()
	s, err := evals.Load("../examples/evals")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Filter([]string{"write-note", "count-todos", "refuse-key"}, nil); err != nil {
		t.Fatal(err)
	}
	runs := evals.Runs{Dir: t.TempDir()}
	for _, r := range []struct {
		id   string
		opts []agent.Option
	}{{"good", nil}, {"broken", []agent.Option{agent.WithAdapter(workspace.EffectCall, brokenWorkspace{})}}} {
		rep, err := evals.Run(t.Context(), s, evals.Options{Storage: st, Cassettes: "../examples/evals/cassettes", RunID: r.id,
			LLM: "cassette:examples/evals/cassettes", Agent: r.opts})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := runs.Save(t.Context(), rep); err != nil {
			t.Fatal(err)
		}
	}
	return runs
}

// serveWith serves the view with opts (Source, Evals) on a loopback port.
func serveWith(t *testing.T, opts ui.Options) *ui.Server {
	t.Helper()
	ln, err := ui.Listen(ui.DefaultAddr)
	if err != nil {
		t.Fatal(err)
	}
	opts.Name, opts.Poll = "test store", 20*time.Millisecond
	s, err := ui.New(ln, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return s
}

// TestEvalPages: the view lists the store's eval runs, shows a run's
// cases with what failed, and each case's world opens as a session; it
// keeps its security model (the token) for these pages too.
func TestEvalPages(t *testing.T) {
	st := world.NewMemoryStorage()
	runs := evalRuns(t, st)
	s := serveWith(t, ui.Options{Source: parts(st), Reducers: registry(), Evals: runs})

	if code, _, _ := get(t, client(t), s, "", "/evals"); code != http.StatusForbidden {
		t.Errorf("/evals without the token: %d; want 403", code)
	}
	c := login(t, s)
	code, body, _ := get(t, c, s, "", "/evals")
	if code != http.StatusOK {
		t.Fatalf("/evals: %d\n%s", code, body)
	}
	for _, want := range []string{`href="/evals/broken"`, `href="/evals/good"`, ">3 of 3<", ">2 of 3<", "cassette:examples/evals/cassettes"} {
		if !strings.Contains(body, want) {
			t.Errorf("/evals lacks %q:\n%s", want, body)
		}
	}
	if strings.Index(body, "/evals/broken") > strings.Index(body, "/evals/good") {
		t.Errorf("/evals does not list the newest run first")
	}
	code, body, _ = get(t, c, s, "", "/evals/broken")
	if code != http.StatusOK {
		t.Fatalf("/evals/broken: %d\n%s", code, body)
	}
	world := "eval-broken.write-note.gpt-5-mini"
	for _, want := range []string{
		`<td class="status bad">FAIL</td>`,
		`href="/w/` + world + `"`,
		"file_contains notes/hello.md",
		"the workspace has no file notes/hello.md",
		"model call 2 is not the recorded one",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/evals/broken lacks %q", want)
		}
	}
	if n := len(regexp.MustCompile(`<td class="status ok">pass</td>`).FindAllString(body, -1)); n != 2 {
		t.Errorf("/evals/broken shows %d passing cases; want 2", n)
	}
	code, body, _ = get(t, c, s, "", "/w/"+world)
	if code != http.StatusOK || !strings.Contains(body, "Write a short hello note to notes/hello.md.") {
		t.Errorf("the failing case's session /w/%s: %d\n%s", world, code, clip(body))
	}
	// A run's notices (a loose cassette's) are shown, for a passing case too.
	noted, err := runs.Load(t.Context(), "good")
	if err != nil {
		t.Fatal(err)
	}
	noted.Run = "noted"
	noted.Cases[0].Runs[0].Turns[0].Notices = []string{"cassette C: model call 1 differs from the recording in a user message; answering with the recorded answer"}
	if _, err := runs.Save(t.Context(), noted); err != nil {
		t.Fatal(err)
	}
	code, body, _ = get(t, c, s, "", "/evals/noted")
	if want := "<pre>turn 1: cassette C: model call 1 differs from the recording in a user message; answering with the recorded answer</pre>"; code != http.StatusOK || !strings.Contains(body, want) {
		t.Errorf("/evals/noted: %d, lacks %q:\n%s", code, want, clip(body))
	}
	if code, _, _ := get(t, c, s, "", "/evals/nope"); code != http.StatusNotFound {
		t.Errorf("/evals/nope: %d; want 404", code)
	}
	// A view without eval runs has no such pages.
	plain := serveWith(t, ui.Options{Source: parts(st)})
	if code, _, _ := get(t, login(t, plain), plain, "", "/evals"); code != http.StatusNotFound {
		t.Errorf("/evals of a view without runs: %d; want 404", code)
	}
}

// TestBrowserEvals follows, in Chromium, the header's link to the eval
// runs, a run, and its failing case's session.
func TestBrowserEvals(t *testing.T) {
	st := world.NewMemoryStorage()
	runs := evalRuns(t, st)
	s := serveWith(t, ui.Options{Source: parts(st), Reducers: registry(), Evals: runs})
	ctx := browse(t, 1280, 900)
	do(t, ctx, "open the link", chromedp.Navigate(s.URL()), chromedp.WaitVisible(chromedp.CSS("main h1")))
	follow(t, ctx, `header nav a[href="/evals"]`, "table.evals")
	follow(t, ctx, `table.evals a[href="/evals/broken"]`, "table.evalcases")
	if text := pageText(ctx); !strings.Contains(text, "2 of 3 passed") || !strings.Contains(text, "the workspace has no file notes/hello.md") {
		t.Fatalf("the run's page says:\n%s", clip(text))
	}
	shot(t, ctx, "evals")
	follow(t, ctx, `section.evalfail h3 a`, "#timeline")
	waitFor(t, ctx, "the session's failed turn", `document.body.innerText.includes("Write a short hello note")`)
}
