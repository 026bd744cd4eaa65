package eval

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/internal/jsonschema"
)

// TestPublishedSchemas: docs/ publishes the schemas the loader checks
// against, byte for byte.
func TestPublishedSchemas(t *testing.T) {
	for file, embedded := range map[string][]byte{"../docs/eval-case.schema.json": CaseSchema, "../docs/eval-suite.schema.json": SuiteSchema} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, embedded) {
			t.Errorf("%s is not the schema the loader checks against: cp eval/%s.schema.json to it", file, map[string]string{
				"../docs/eval-case.schema.json": "case", "../docs/eval-suite.schema.json": "suite"}[file])
		}
	}
	if _, err := compiled(); err != nil {
		t.Fatal(err)
	}
}

// reportSchema compiles docs/eval-report.schema.json.
func reportSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("../docs/eval-report.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("mem:///eval/report.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem:///eval/report.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkReportSchema checks that the report's JSON is valid against the
// published schema.
func checkReportSchema(t testing.TB, r *Report) {
	t.Helper()
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(&b)
	if err != nil {
		t.Fatal(err)
	}
	if err := reportSchema(t).Validate(v); err != nil {
		t.Errorf("the report is not valid against docs/eval-report.schema.json: %v", err)
	}
}

// TestReadReportV1 reads a report of version 1 (written by demiurge
// before the JSON convention, eval/testdata/report-v1.json: two cases of
// examples/evals from their cassettes) as one of version 2: the same
// runs, checks and figures, under the new names.
func TestReadReportV1(t *testing.T) {
	f, err := os.Open("testdata/report-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ReadReport(f)
	if err != nil {
		t.Fatal(err)
	}
	checkReportSchema(t, r)
	if r.Version != ReportVersion || r.Run != "20261129-054427-e1aa" || len(r.Cases) != 2 {
		t.Fatalf("version %d, run %s, %d cases", r.Version, r.Run, len(r.Cases))
	}
	// The totals the v1 report printed: 2 of 2 passed (12 of 12 checks) ·
	// 26177 tokens · $0.0067 · 0.48s.
	if tot := r.Total; tot.Passed != 2 || tot.Checks != 12 || tot.ChecksPassed != 12 || tot.Tokens() != 26177 || tot.CostMicroUSD != 6715 {
		t.Errorf("totals %+v (%d tokens)", tot, tot.Tokens())
	}
	if d := r.Duration.Std(); d != 479511874 {
		t.Errorf("duration %v", d)
	}
	c := r.Cases[0]
	if c.Case != "count-todos" || !c.Pass || c.Mean.Rounds != 2 || c.Mean.Usage.Prompt != 11459 || c.Mean.Usage.Completion != 30 ||
		c.Mean.CostMicroUSD != 2925 || c.Mean.Duration.Std() != 347466272 {
		t.Errorf("count-todos: %+v", c)
	}
	turn := c.Runs[0].Turns[0]
	if turn.Answer != "3 items of todo.md are still open." || turn.Usage.Prompt != 11459 || turn.Duration.Std() != 156246936 || turn.Seq != 28 {
		t.Errorf("its turn: %+v", turn)
	}
	if w := r.Cases[1].Runs[0]; w.JudgeWorld == "" || w.JudgeUsage.Prompt+w.JudgeUsage.Completion == 0 || len(w.Checks) != 7 {
		t.Errorf("write-note's run: %+v", w)
	}
	for _, bad := range []string{`{"version": 3}`, `{"run": "x"}`, `[1]`} {
		if _, err := ReadReport(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadReport(%s): no error", bad)
		}
	}
}

// TestTextTotalsJudgeApart: the report's last line counts the agent's
// tokens and cost as the table's columns (and eval compare) do, and the
// rubric judge's apart, labelled: their sum is the JSON's total.
func TestTextTotalsJudgeApart(t *testing.T) {
	f, err := os.Open("testdata/report-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ReadReport(f)
	if err != nil {
		t.Fatal(err)
	}
	var agentTokens, judgeTokens uint64
	for _, cr := range r.Cases {
		for _, run := range cr.Runs {
			agentTokens += run.Tokens()
			judgeTokens += run.JudgeUsage.Prompt + run.JudgeUsage.Completion
		}
	}
	if judgeTokens == 0 || agentTokens+judgeTokens != r.Total.Tokens() {
		t.Fatalf("agent %d + judge %d tokens; the total is %d", agentTokens, judgeTokens, r.Total.Tokens())
	}
	var b strings.Builder
	if err := r.WriteText(&b, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	last := lines[len(lines)-1]
	want := fmt.Sprintf(" · %d tokens · $", agentTokens)
	wantJudge := fmt.Sprintf(" · judge %d tokens · $", judgeTokens)
	if !strings.Contains(last, want) || !strings.Contains(last, wantJudge) {
		t.Errorf("the totals line %q; want %q and %q in it", last, want, wantJudge)
	}
}
