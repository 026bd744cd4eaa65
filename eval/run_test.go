package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/tools/workspace"
)

// testSuite is a suite of the agent: a workspace edit, bash over a
// seeded workspace, a refusal, and a case whose checks fail.
func testSuite(t testing.TB) string {
	return writeSuite(t, map[string]string{
		"suite.yaml": "manifest: " + manifest + "\nmodel: gpt-5-mini\n",
		"write-note.yaml": `description: the agent writes a note
user: Write a hello note.
checks:
  - answer_contains: notes/hello.md
  - file_equals: {path: notes/hello.md, content: "# Hello\n"}
  - tool_called: {name: workspace_write, args: {path: notes/hello.md, content: {contains: Hello}}}
  - tool_not_called: bash
  - max_tool_calls: 1
  - outcome: answer
  - finish: stop
  - max_rounds: 2
  - max_tokens: 100000
  - max_cost_usd: 1
  - max_latency: 1m
  - jq: '[.[] | select(.type == "tool_call_finished" and .status == "ok")] | length == 1'
  - rubric: The answer names the file it wrote, ` + "`notes/hello.md`" + `.
`,
		"count-lines.yaml": `workspace:
  files:
    todo.txt: "a\nb\nc\n"
turns:
  - user: Count the lines of todo.txt.
    checks:
      - answer_contains: 3 lines
      - tool_called: {name: bash, args: {commands: {matches: "wc -l"}}}
      - name: the script read the file with the workspace's tool
        tool_called: {name: workspace_read, via: bash, args: {path: todo.txt}, status: ok}
      - tool_not_called: {name: workspace_read, via: direct}
      - max_tool_calls: 1
      - max_tool_calls: {max: 2, via: any}
checks:
  - file_exists: todo.txt
  - file_absent: notes/hello.md
`,
		"refuse.json": `{"user": "Read the secrets of the other users.",
  "checks": [{"finish": "refusal"}, {"tool_not_called": "bash"}, {"answer_matches": "(?i)can't help"}]}`,
		"failing.yaml": `user: Write a hello note, please.
checks:
  - answer_contains: goodbye
  - file_exists: notes/bye.md
  - rubric: The answer mentions ` + "`goodbye.md`" + `.
  - name: a jq that gives a number
    jq: map(select(.type == "tool_call_started")) | length
`,
	})
}

func byCase(r *Report) map[string]*CaseResult {
	m := map[string]*CaseResult{}
	for _, c := range r.Cases {
		m[c.Case] = c
	}
	return m
}

func failed(cr *CaseResult) []string {
	var out []string
	for _, r := range cr.Runs {
		if r.Error != "" {
			out = append(out, "error: "+r.Error)
		}
		for _, c := range r.Checks {
			if !c.Pass {
				out = append(out, c.Name+": "+c.Problem)
			}
		}
	}
	return out
}

var wantPass = map[string]bool{"write-note": true, "count-lines": true, "refuse": true, "failing": false}

func checkResults(t *testing.T, rep *Report) {
	t.Helper()
	cases := byCase(rep)
	for id, pass := range wantPass {
		cr := cases[id]
		if cr == nil {
			t.Fatalf("no result for case %s", id)
		}
		if cr.Pass != pass {
			t.Errorf("case %s: pass %v, want %v; failed: %q", id, cr.Pass, pass, failed(cr))
		}
	}
	f := failed(cases["failing"])
	want := []string{
		`answer_contains "goodbye": the answer does not contain "goodbye": "I wrote notes/hello.md (version 1)."`,
		"file_exists notes/bye.md: the workspace has no file notes/bye.md",
		`rubric "The answer mentions ` + "`goodbye.md`" + `.": the judge says it fails: the answer does not mention goodbye.md`,
		"a jq that gives a number: the jq expression gave 1, want true or false",
	}
	if strings.Join(f, "\n") != strings.Join(want, "\n") {
		t.Errorf("the failing case's checks:\n%s\nwant\n%s", strings.Join(f, "\n"), strings.Join(want, "\n"))
	}
	if rep.Total.Passed != 3 || rep.Total.Failed != 1 {
		t.Errorf("totals %+v", rep.Total)
	}
}

// TestRecordAndReplay runs a suite against a scripted model, recording
// it; runs it again from the recording with no model, with the same
// results; then with a broken tool, which fails the case that uses it,
// saying why; and compares the runs.
func TestRecordAndReplay(t *testing.T) {
	srv := llmtest.NewServerFunc(scripted)
	defer srv.Close()
	s := mustLoad(t, testSuite(t))
	st, _ := storage(t)
	tapes := t.TempDir()
	live := run(t, s, Options{Storage: st, Agent: []agent.Option{modelEnv(srv)}, Record: tapes, Concurrency: 2, RunID: "live"})
	checkResults(t, live)
	checkReportSchema(t, live)
	calls := srv.Served()
	if calls == 0 {
		t.Fatal("the scripted model was not called")
	}
	for _, c := range []string{"write-note", "count-lines", "refuse", "failing"} {
		if _, err := os.Stat(filepath.Join(tapes, c, "gpt-5-mini", "journal.cbor")); err != nil {
			t.Errorf("case %s was not recorded: %v", c, err)
		}
	}
	if _, err := os.Stat(filepath.Join(tapes, "write-note", "gpt-5-mini.judge", "journal.cbor")); err != nil {
		t.Errorf("the judge of write-note was not recorded: %v", err)
	}

	replayed := run(t, s, Options{Storage: st, Cassettes: tapes, Concurrency: 3, RunID: "replayed"})
	checkResults(t, replayed)
	if n := srv.Served(); n != calls {
		t.Errorf("the run from cassettes called the model %d times", n-calls)
	}
	lc, rc := byCase(live), byCase(replayed)
	for id := range wantPass {
		l, r := lc[id].Mean, rc[id].Mean
		if l.Usage != r.Usage || l.CostMicroUSD != r.CostMicroUSD || l.Rounds != r.Rounds {
			t.Errorf("case %s: live %+v tokens $%v %v rounds, replayed %+v $%v %v", id, l.Usage, l.CostMicroUSD, l.Rounds,
				r.Usage, r.CostMicroUSD, r.Rounds)
		}
	}

	broken := run(t, s, Options{Storage: st, Cassettes: tapes, RunID: "broken",
		Agent: []agent.Option{agent.WithAdapter(workspace.EffectCall, brokenWrite{})}})
	checkReportSchema(t, broken)
	bc := byCase(broken)
	if bc["write-note"].Pass || !bc["count-lines"].Pass || !bc["refuse"].Pass {
		t.Fatalf("with workspace_write broken: write-note pass %v (want false), count-lines %v, refuse %v (want true)",
			bc["write-note"].Pass, bc["count-lines"].Pass, bc["refuse"].Pass)
	}
	var text bytes.Buffer
	if err := broken.WriteText(&text, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"FAIL write-note [gpt-5-mini]",
		"✗ turn 1: file_equals notes/hello.md",
		"the workspace has no file notes/hello.md",
		"model call 2 is not the recorded one",
		"Case write-note now makes a model call its cassette did not record. If a tool, the prompt or the manifest broke, fix it; " +
			"if the new behaviour is right, record the case again with its model (demiurge eval " + s.Dir + " --case write-note --record " + tapes + ", with the model's key)",
		"demiurge eval --cassette-loose answers from the recording all the same.",
		"world eval-broken.write-note.gpt-5-mini: demiurge ui · demiurge trace --world eval-broken.write-note.gpt-5-mini · demiurge fork --world eval-broken.write-note.gpt-5-mini --at ",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, text.String())
		}
	}

	cmp := Compare(live, broken, "", "")
	if cmp.Rows[0].Case != "write-note" || cmp.Rows[0].Change != Regressed {
		t.Errorf("the comparison's first row is %+v, want write-note regressed", cmp.Rows[0])
	}
	if cmp.Regressions() != 1 || cmp.Counts[Failing] != 1 || cmp.Counts[Passing] != 2 {
		t.Errorf("counts %v", cmp.Counts)
	}
	var ct bytes.Buffer
	if err := cmp.WriteText(&ct); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ct.String(), "REGRESSED write-note [gpt-5-mini] in B (world eval-broken.write-note.gpt-5-mini)") {
		t.Errorf("the comparison:\n%s", ct.String())
	}

	// A user message changed: the strict cassette refuses the case's
	// calls; a loose one answers them, and the report notes each, though
	// the case passes.
	changed := *s
	changed.Cases = nil
	for _, c := range s.Cases {
		if c.ID == "count-lines" {
			cc := *c
			cc.Turns = slices.Clone(c.Turns)
			cc.Turns[0].User += " Please."
			c = &cc
		}
		changed.Cases = append(changed.Cases, c)
	}
	if strict := byCase(run(t, &changed, Options{Storage: st, Cassettes: tapes, RunID: "strict"})); strict["count-lines"].Pass {
		t.Errorf("count-lines passed with a changed user message and a strict cassette")
	}
	loose := run(t, &changed, Options{Storage: st, Cassettes: tapes, Loose: true, RunID: "loose"})
	checkReportSchema(t, loose)
	lr := byCase(loose)["count-lines"]
	if !lr.Pass || len(lr.Runs) != 1 || len(lr.Runs[0].Turns) == 0 || len(lr.Runs[0].Turns[0].Notices) == 0 {
		t.Fatalf("count-lines from a loose cassette: %+v", lr)
	}
	var lt bytes.Buffer
	if err := loose.WriteText(&lt, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := "\nNOTE count-lines [gpt-5-mini] (" + filepath.Join(s.Dir, "count-lines.yaml") + ")\n  turn 1: cassette " +
		filepath.Join(tapes, "count-lines", "gpt-5-mini") + ": model call 1 differs from the recording in a user message; answering with the recorded answer\n"; !strings.Contains(lt.String(), want) {
		t.Errorf("the report lacks %q:\n%s", want, lt.String())
	}

	// The report's JSON reads back.
	var js bytes.Buffer
	if err := live.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(&js)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mustJSON(live), mustJSON(back); a != b {
		t.Errorf("the report does not read back as written")
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// brokenWrite is workspace_write broken, as a regression would break
// it: every write fails.
type brokenWrite struct{}

func (brokenWrite) Run(ctx context.Context, call *effects.Call) effects.Receipt {
	return effects.Receipt{Status: effects.StatusError, Error: "workspace_write: the disk is full"}
}

// TestRunsAndModels runs a case three times with each of two models
// against a model that answers well every time as "steady" and only on
// odd requests as "flaky": the report gives each case and model its pass
// rate, --pass-rate lets the flaky one pass, and the comparison of the
// models puts the flaky model's failure first.
func TestRunsAndModels(t *testing.T) {
	var mu sync.Mutex
	flaky := 0
	srv := llmtest.NewServerFunc(func(req llmtest.Request) llmtest.Turn {
		x := req.Exchange()
		if req.Model == "flaky" && len(x.Calls) == 0 {
			mu.Lock()
			flaky++
			n := flaky
			mu.Unlock()
			if n%2 == 0 {
				return llmtest.Turn{Text: "I would rather not."}
			}
		}
		return scripted(req)
	})
	defer srv.Close()
	dir := writeSuite(t, map[string]string{
		"note.yaml": "manifest: " + manifest + "\nmodels: [steady, flaky]\nuser: Write a hello note.\nchecks:\n  - file_exists: notes/hello.md\n",
	})
	s := mustLoad(t, dir)
	st, _ := storage(t)
	rep := run(t, s, Options{Storage: st, Agent: []agent.Option{modelEnv(srv)}, Runs: 3, Concurrency: 1, RunID: "rates"})
	checkReportSchema(t, rep)
	if len(rep.Cases) != 2 {
		t.Fatalf("%d results; want one per model", len(rep.Cases))
	}
	steady, fl := rep.Cases[0], rep.Cases[1]
	if steady.Model != "steady" || steady.Passed != 3 || !steady.Pass || steady.PassRate != 1 {
		t.Errorf("steady: %+v", steady)
	}
	if fl.Model != "flaky" || fl.Passed != 2 || fl.Pass || len(fl.Runs) != 3 {
		t.Errorf("flaky: passed %d of %d, pass %v; want 2 of 3, failed", fl.Passed, len(fl.Runs), fl.Pass)
	}
	worlds := map[string]bool{}
	for _, cr := range rep.Cases {
		for _, r := range cr.Runs {
			worlds[r.World] = true
		}
	}
	if len(worlds) != 6 || !worlds["eval-rates.note.flaky.2"] {
		t.Errorf("the runs' worlds: %v; want six, eval-rates.note.flaky.2 among them", worlds)
	}
	var text bytes.Buffer
	_ = rep.WriteText(&text, TextOptions{})
	for _, want := range []string{"note  steady  pass 3/3", "note  flaky   FAIL 2/3", "FAIL note [flaky] (", ": 2 of 3 runs passed", "  run 2:\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, text.String())
		}
	}
	cmp := Compare(rep, rep, "steady", "flaky")
	if len(cmp.Rows) != 1 || cmp.Rows[0].Change != Regressed || cmp.Rows[0].Model != "" {
		t.Errorf("steady vs flaky: %+v", cmp.Rows)
	}

	// With --pass-rate 0.6, two runs of three are enough.
	flaky = 0
	rep = run(t, s, Options{Storage: st, Agent: []agent.Option{modelEnv(srv)}, Runs: 3, Concurrency: 2, PassRate: 0.6, Models: []string{"flaky"}})
	if len(rep.Cases) != 1 || !rep.Cases[0].Pass || rep.Cases[0].Passed != 2 {
		t.Errorf("flaky at --pass-rate 0.6: %+v", rep.Cases[0])
	}
	text.Reset()
	_ = rep.WriteText(&text, TextOptions{})
	if !strings.Contains(text.String(), "FLAKY note [flaky]") {
		t.Errorf("a case that passes by its rate with failing runs is not shown as flaky:\n%s", text.String())
	}
}

// TestInterrupted: a run whose ctx ends reports what ran, and the cases
// it did not run as not run.
func TestInterrupted(t *testing.T) {
	s := mustLoad(t, "../examples/evals")
	st, _ := storage(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	rep, err := Run(ctx, s, Options{Storage: st, Cassettes: "../examples/evals/cassettes", Concurrency: 1,
		Progress: func(p Progress) {
			if p.Done == 2 {
				cancel()
			}
		}})
	if !errors.Is(err, ErrInterrupted) || rep == nil {
		t.Fatalf("Run: %v, report %v; want ErrInterrupted and a report", err, rep != nil)
	}
	if rep.Total.Passed != 2 || rep.Total.Failed != 6 {
		t.Errorf("totals %+v; want the 2 that ran passed, 6 not", rep.Total)
	}
	last := rep.Cases[len(rep.Cases)-1].Runs[0]
	if last.Error != "not run: eval: the run was interrupted" {
		t.Errorf("the last case: %q", last.Error)
	}
}
