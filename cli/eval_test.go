package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/eval"
	"github.com/demiurge-dev/demiurge/tools/workspace"
)

var recordEvals = flag.Bool("record-evals", false, "record examples/evals/cassettes again, with demiurge eval --record against the scripted model (review the diff)")

const (
	evalSuite     = "../examples/evals"
	evalCassettes = "../examples/evals/cassettes"
)

// evalCases are examples/evals' cases.
var evalCases = []string{"count-todos", "edit-plan", "journal-height", "list-plans", "refuse-key", "shopping-list", "sort-words", "write-note"}

// TestEvalExamples runs examples/evals from its cassettes, offline, as CI
// does: every case passes. With -record-evals it first records them again,
// as a user with a model's key would (demiurge eval --record), the model
// being the scripted one of evalmodel_test.go on loopback.
func TestEvalExamples(t *testing.T) {
	if *recordEvals {
		srv := llmtest.NewServerFunc(evalModel)
		defer srv.Close()
		env := map[string]string{"OPENAI_API_KEY": "sk-scripted", "OPENAI_BASE_URL": srv.URL}
		if err := os.RemoveAll(evalCassettes); err != nil {
			t.Fatal(err)
		}
		r := run(t, env, "", "--store", t.TempDir(), "eval", evalSuite, "--record", evalCassettes, "--no-progress")
		if r.code != 0 {
			t.Fatalf("eval --record: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
	}
	store := t.TempDir()
	r := run(t, nil, "", "--store", store, "eval", evalSuite, "--llm", "cassette:"+evalCassettes, "--no-progress", "--junit", filepath.Join(store, "junit.xml"))
	if r.code != 0 {
		t.Fatalf("eval: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, c := range evalCases {
		if !regexp.MustCompile(`(?m)^` + c + ` +gpt-5-mini +pass `).MatchString(r.stdout) {
			t.Errorf("case %s does not pass:\n%s", c, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "demiurge-agent: 8 of 8 passed") {
		t.Errorf("the summary:\n%s", r.stdout)
	}
	junit, err := os.ReadFile(filepath.Join(store, "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(junit, []byte(`<testsuite name="demiurge-agent" tests="8" failures="0" skipped="0"`)) {
		t.Errorf("junit.xml:\n%s", junit)
	}
	// The run is kept: runs lists it, compare reads it.
	r = run(t, nil, "", "--store", store, "eval", "runs", "--json")
	var kept []struct {
		Run   string      `json:"run"`
		Total eval.Totals `json:"total"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &kept); err != nil || len(kept) != 1 || kept[0].Total.Passed != 8 {
		t.Fatalf("eval runs --json: %q (%v)", r.stdout, err)
	}
}

// brokenWorkspace is the workspace tools broken as a regression would
// break them: every call fails.
type brokenWorkspace struct{}

func (brokenWorkspace) Run(ctx context.Context, call *effects.Call) effects.Receipt {
	return effects.Receipt{Status: effects.StatusError, Error: "the workspace is read-only (a deliberately broken tool)"}
}

// TestEvalBrokenTool breaks a tool the cases use: the cases that call it
// fail, each named, with what the checks found and what the recording
// says differs, and the others pass; compare puts them first.
func TestEvalBrokenTool(t *testing.T) {
	store := t.TempDir()
	ok := run(t, nil, "", "--store", store, "eval", evalSuite, "--llm", "cassette:"+evalCassettes, "--no-progress")
	if ok.code != 0 {
		t.Fatalf("eval: exit %d\n%s\n%s", ok.code, ok.stdout, ok.stderr)
	}
	var out, errs bytes.Buffer
	code := Run(t.Context(), []string{"--store", store, "eval", evalSuite, "--llm", "cassette:" + evalCassettes, "--no-progress"},
		strings.NewReader(""), &out, &errs, WithAdapter(workspace.EffectCall, brokenWorkspace{}), WithEnv(func(string) string { return "" }))
	if code != exitFailure {
		t.Fatalf("eval with a broken tool: exit %d, want %d\n%s\n%s", code, exitFailure, out.String(), errs.String())
	}
	report := out.String()
	var failing []string
	for _, m := range regexp.MustCompile(`(?m)^FAIL (\S+) \[gpt-5-mini\]`).FindAllStringSubmatch(report, -1) {
		failing = append(failing, m[1])
	}
	// The cases whose model calls workspace_read, _write or _edit: bash
	// runs the workspace's commands in its own sandbox.
	if want := []string{"edit-plan", "shopping-list", "write-note"}; !slices.Equal(failing, want) {
		t.Errorf("failing cases %q, want %q:\n%s", failing, want, report)
	}
	for _, want := range []string{
		"✗ turn 1: file_contains notes/hello.md (../examples/evals/write-note.yaml:",
		"the workspace has no file notes/hello.md",
		"turn 1: llm.generate failed: cassette ../examples/evals/cassettes/write-note/gpt-5-mini: model call 2 is not the recorded one",
		"Case write-note now makes a model call its cassette did not record. If a tool, the prompt or the manifest broke, fix it; " +
			"if the new behaviour is right, record the case again with its model (demiurge eval ../examples/evals --case write-note --record ../examples/evals/cassettes, with the model's key) " +
			"and review the cassette's diff; demiurge eval --cassette-loose answers from the recording all the same.",
		"✗ turn 2: file_equals list.md (../examples/evals/shopping-list.yaml:",
		"not made: turn 1 failed",
		`+output: "error: workspace.call failed: the workspace is read-only (a deliberately broken tool)"`,
		"✗ turn 1: file_equals plan.md",
		"world eval-",
		"demiurge-agent: 5 of 8 passed",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	r := run(t, nil, "", "--store", store, "eval", "compare", "previous", "latest")
	if r.code != exitFailure {
		t.Errorf("compare: exit %d, want %d (regressions)\n%s%s", r.code, exitFailure, r.stdout, r.stderr)
	}
	lines := strings.Split(r.stdout, "\n")
	var changes []string
	for _, l := range lines {
		if f := strings.Fields(l); len(f) >= 5 && (f[4] == "regressed" || f[4] == "passing") {
			changes = append(changes, f[0]+" "+f[4])
		}
	}
	want := []string{"edit-plan regressed", "shopping-list regressed", "write-note regressed",
		"count-todos passing", "journal-height passing", "list-plans passing", "refuse-key passing", "sort-words passing"}
	if !slices.Equal(changes, want) {
		t.Errorf("compare's rows %q, want %q:\n%s", changes, want, r.stdout)
	}
	if !strings.Contains(r.stdout, "passed 8 → 5 of 8") {
		t.Errorf("compare's totals:\n%s", r.stdout)
	}
}

// TestEvalProgress: on a terminal the bar is redrawn in place and wiped
// at the end; elsewhere each case that ends is a line.
func TestEvalProgress(t *testing.T) {
	c := &eval.Case{ID: "write-note"}
	pass := &eval.RunResult{World: "eval-x.write-note.m", Pass: true}
	fail := &eval.RunResult{World: "eval-x.other.m"}
	var b bytes.Buffer
	p := newEvalProgress(&b, true)
	p(eval.Progress{Done: 1, Total: 4, Case: c, Last: pass})
	p(eval.Progress{Done: 2, Total: 4, Failed: 1, Case: c, Last: fail})
	p(eval.Progress{Done: -1})
	got := b.String()
	for _, want := range []string{"\r\033[K███████░░░░░░░░░░░░░░░░░░░░░░░ 1/4 · ", "\r\033[K███████████████░░░░░░░░░░░░░░░ 2/4, 1 failed · ", "write-note"} {
		if !strings.Contains(got, want) {
			t.Errorf("the bar %q lacks %q", got, want)
		}
	}
	if !strings.HasSuffix(got, "\r\033[K") {
		t.Errorf("the bar is not wiped at the end: %q", got)
	}
	b.Reset()
	p = newEvalProgress(&b, false)
	p(eval.Progress{Done: 2, Total: 4, Failed: 1, Case: c, Last: fail})
	p(eval.Progress{Done: -1})
	if want := "eval: FAIL write-note (2/4, 0.00s) world eval-x.other.m\n"; b.String() != want {
		t.Errorf("the lines: %q; want %q", b.String(), want)
	}
}
