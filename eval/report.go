package eval

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/demiurge-dev/demiurge/agent"
)

// ReportVersion is the version of the report's JSON form. Version 2
// follows the command line's JSON convention (docs/cli.md): token counts
// as "usage": {"input_tokens", …}, durations as "duration_ms", model calls
// of unknown cost as "calls_cost_unknown"; ReadReport reads version 1 too.
const ReportVersion = 2

// Duration is a time.Duration that marshals to JSON as a number of
// milliseconds (fractional), as the command line writes every duration.
type Duration time.Duration

// MarshalJSON writes d in milliseconds.
func (d Duration) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, float64(d)/float64(time.Millisecond), 'f', -1, 64), nil
}

// UnmarshalJSON reads a number of milliseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var ms float64
	if err := json.Unmarshal(b, &ms); err != nil {
		return fmt.Errorf("a duration in milliseconds: %w", err)
	}
	if math.IsNaN(ms) || math.Abs(ms) > float64(math.MaxInt64)/float64(time.Millisecond) {
		return fmt.Errorf("a duration of %v ms is out of range", ms)
	}
	*d = Duration(math.Round(ms * float64(time.Millisecond)))
	return nil
}

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// Report is what a Run found: every case with every model, each run's
// checks, and the totals. Its JSON form is what demiurge eval --json
// prints and what it keeps of each run (docs/eval-report.schema.json).
type Report struct {
	Version int    `json:"version"`
	Run     string `json:"run"`
	// Suite is the suite's name; Dir its directory.
	Suite string `json:"suite"`
	Dir   string `json:"dir"`
	// Started is when the run began (RFC 3339, UTC); Duration how long
	// it took.
	Started  time.Time `json:"started"`
	Duration Duration  `json:"duration_ms"`
	// LLM says what answered: a provider, or cassette:DIR.
	LLM         string  `json:"llm,omitempty"`
	Store       string  `json:"store,omitempty"`
	Runs        int     `json:"runs"`
	PassRate    float64 `json:"pass_rate_required"`
	Concurrency int     `json:"concurrency"`
	// Cases are the results by case and model, in the suite's order.
	Cases []*CaseResult `json:"cases"`
	Total Totals        `json:"total"`
}

// Totals sum a report's cases (by case and model).
type Totals struct {
	Cases   int `json:"cases"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
	// Checks and ChecksPassed count the checks of every run.
	Checks       int `json:"checks"`
	ChecksPassed int `json:"checks_passed"`
	// Usage, CostMicroUSD and the unknowns sum every run, the judge's
	// model calls included.
	Usage             agent.Usage `json:"usage"`
	CostMicroUSD      uint64      `json:"cost_microusd"`
	CallsCostUnknown  uint64      `json:"calls_cost_unknown"`
	CallsUsageUnknown uint64      `json:"calls_usage_unknown"`
	// RunsDuration sums the runs' durations: more than the report's
	// Duration when cases run at once.
	RunsDuration Duration `json:"runs_duration_ms"`
}

// Tokens is the total of tokens in and out.
func (t Totals) Tokens() uint64 { return t.Usage.Prompt + t.Usage.Completion }

// CaseResult is a case run with one model, Runs times.
type CaseResult struct {
	Case        string `json:"case"`
	Model       string `json:"model"`
	File        string `json:"file"`
	Description string `json:"description,omitempty"`
	// Skipped is the reason the case was skipped, if it was.
	Skipped string `json:"skipped,omitempty"`
	// Pass says the share of runs that passed reached the report's
	// pass_rate_required; Passed counts them.
	Pass     bool    `json:"pass"`
	Passed   int     `json:"passed"`
	PassRate float64 `json:"pass_rate"`
	// Mean is the runs' mean rounds, usage, cost and duration.
	Mean Means `json:"mean"`
	// CallsCostUnknown and CallsUsageUnknown sum the runs' model calls
	// whose cost (usage) is not known.
	CallsCostUnknown  uint64       `json:"calls_cost_unknown"`
	CallsUsageUnknown uint64       `json:"calls_usage_unknown"`
	Runs              []*RunResult `json:"runs"`
}

// Means are the mean figures of a case's runs.
type Means struct {
	Rounds       float64   `json:"rounds"`
	Usage        MeanUsage `json:"usage"`
	CostMicroUSD float64   `json:"cost_microusd"`
	Duration     Duration  `json:"duration_ms"`
}

// MeanUsage is agent.Usage's counts as means over runs.
type MeanUsage struct {
	Prompt     float64 `json:"input_tokens"`
	Completion float64 `json:"output_tokens"`
	Cached     float64 `json:"cached_tokens"`
	Reasoning  float64 `json:"reasoning_tokens"`
}

// Tokens is the mean of tokens in and out.
func (u MeanUsage) Tokens() float64 { return u.Prompt + u.Completion }

// RunResult is one run of a case with a model, in its own world.
type RunResult struct {
	Run int `json:"run"`
	// World is the run's world in the store: open it with demiurge ui,
	// trace or fork. JudgeWorld is where its rubric checks were graded.
	World      string `json:"world"`
	JudgeWorld string `json:"judge_world,omitempty"`
	Pass       bool   `json:"pass"`
	// Error says what kept the case from running to its end (a world
	// that did not open, a missing recording, the case's timeout).
	Error  string        `json:"error,omitempty"`
	Turns  []TurnResult  `json:"turns"`
	Checks []CheckResult `json:"checks"`
	// The sums of the turns.
	Rounds            uint64      `json:"rounds"`
	Usage             agent.Usage `json:"usage"`
	CostMicroUSD      uint64      `json:"cost_microusd"`
	CallsCostUnknown  uint64      `json:"calls_cost_unknown"`
	CallsUsageUnknown uint64      `json:"calls_usage_unknown"`
	// The judge's model calls, grading the rubric checks.
	JudgeUsage            agent.Usage `json:"judge_usage,omitzero"`
	JudgeCostMicroUSD     uint64      `json:"judge_cost_microusd,omitempty"`
	JudgeCallsCostUnknown uint64      `json:"judge_calls_cost_unknown,omitempty"`
	// Duration is the whole run's: opening the world, the turns, the
	// checks.
	Duration Duration `json:"duration_ms"`
	// Recorded is the cassette the run was recorded as (--record).
	Recorded string `json:"recorded,omitempty"`
}

// Tokens is the run's tokens in and out (the judge's aside).
func (r *RunResult) Tokens() uint64 { return r.Usage.Prompt + r.Usage.Completion }

// TurnResult is one turn of a run.
type TurnResult struct {
	User string `json:"user"`
	// Answer is the turn's answer: the text of the model's last message,
	// as run --json's turn_end has it.
	Answer  string `json:"answer"`
	Outcome string `json:"outcome"`
	Finish  string `json:"finish,omitempty"`
	// RequestID is the turn's in its chat; Seq the journal seq of its
	// end: demiurge fork --at SEQ goes on from there.
	RequestID         uint64      `json:"request_id"`
	Seq               uint64      `json:"seq"`
	Rounds            uint64      `json:"rounds"`
	ToolCalls         int         `json:"tool_calls"`
	Usage             agent.Usage `json:"usage"`
	CostMicroUSD      uint64      `json:"cost_microusd"`
	CallsCostUnknown  uint64      `json:"calls_cost_unknown"`
	CallsUsageUnknown uint64      `json:"calls_usage_unknown"`
	Duration          Duration    `json:"duration_ms"`
	// Errors are the turn's errors and stops (a failed model call, a
	// recording that does not match).
	Errors []string `json:"errors,omitempty"`
	// Notices are what the turn was told that is not an error: a loose
	// cassette answered a model call whose request is not the recorded
	// one ("cassette DIR: model call 2 differs from the recording in a
	// tool output; answering with the recorded answer").
	Notices []string `json:"notices,omitempty"`
}

// CheckResult is what one check found.
type CheckResult struct {
	// Turn is the turn checked, from 1; 0 for a check of the whole case.
	Turn int    `json:"turn"`
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Where is the check's place in the suite: file:line.
	Where string `json:"where,omitempty"`
	Pass  bool   `json:"pass"`
	// Problem says what is wrong, when the check fails.
	Problem string `json:"problem,omitempty"`
}

// summarize fills the case's pass, rate and means from its runs.
func (cr *CaseResult) summarize(rate float64) {
	if cr.Skipped != "" || len(cr.Runs) == 0 {
		return
	}
	n := float64(len(cr.Runs))
	var m Means
	var d time.Duration
	for _, r := range cr.Runs {
		if r.Pass {
			cr.Passed++
		}
		m.Rounds += float64(r.Rounds)
		m.Usage.Prompt += float64(r.Usage.Prompt)
		m.Usage.Completion += float64(r.Usage.Completion)
		m.Usage.Cached += float64(r.Usage.Cached)
		m.Usage.Reasoning += float64(r.Usage.Reasoning)
		m.CostMicroUSD += float64(r.CostMicroUSD)
		d += r.Duration.Std()
		cr.CallsCostUnknown += r.CallsCostUnknown
		cr.CallsUsageUnknown += r.CallsUsageUnknown
	}
	cr.PassRate = float64(cr.Passed) / n
	cr.Pass = cr.PassRate >= rate-1e-9
	m.Rounds /= n
	m.Usage.Prompt /= n
	m.Usage.Completion /= n
	m.Usage.Cached /= n
	m.Usage.Reasoning /= n
	m.CostMicroUSD /= n
	m.Duration = Duration(d / time.Duration(len(cr.Runs)))
	cr.Mean = m
}

func (r *Report) total() {
	t := Totals{}
	for _, cr := range r.Cases {
		t.Cases++
		switch {
		case cr.Skipped != "":
			t.Skipped++
			continue
		case cr.Pass:
			t.Passed++
		default:
			t.Failed++
		}
		for _, run := range cr.Runs {
			t.Checks += len(run.Checks)
			for _, c := range run.Checks {
				if c.Pass {
					t.ChecksPassed++
				}
			}
			t.Usage = addUsage(addUsage(t.Usage, run.Usage), run.JudgeUsage)
			t.CostMicroUSD += run.CostMicroUSD + run.JudgeCostMicroUSD
			t.CallsCostUnknown += run.CallsCostUnknown + run.JudgeCallsCostUnknown
			t.CallsUsageUnknown += run.CallsUsageUnknown
			t.RunsDuration += run.Duration
		}
	}
	r.Total = t
}

func addUsage(a, b agent.Usage) agent.Usage {
	return agent.Usage{Prompt: a.Prompt + b.Prompt, Completion: a.Completion + b.Completion, Cached: a.Cached + b.Cached, Reasoning: a.Reasoning + b.Reasoning}
}

// Passed reports whether every case that ran passed.
func (r *Report) Passed() bool { return r.Total.Failed == 0 }

// WriteJSON writes the report as one JSON document on one line, as
// demiurge eval --json prints it.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// ReadReport decodes a report written by WriteJSON: of this version, or
// of version 1 (before the command line's JSON convention), which it
// converts. Version 1 kept the judge's tokens as one count: they are read
// as input tokens.
func ReadReport(rd io.Reader) (*Report, error) {
	b, err := io.ReadAll(io.LimitReader(rd, maxReportBytes+1))
	if err != nil {
		return nil, fmt.Errorf("eval: read a report: %w", err)
	}
	if len(b) > maxReportBytes {
		return nil, fmt.Errorf("eval: read a report: it is larger than %d MiB", maxReportBytes>>20)
	}
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("eval: read a report: %w", err)
	}
	switch {
	case head.Version == nil:
		return nil, errors.New("eval: read a report: it has no version (is it the JSON of demiurge eval --json?)")
	case *head.Version == 1:
		return readReportV1(b)
	case *head.Version != ReportVersion:
		return nil, fmt.Errorf("eval: a report of version %d; this demiurge reads versions 1 and %d", *head.Version, ReportVersion)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("eval: read a report: %w", err)
	}
	return &r, nil
}

// maxReportBytes bounds a report ReadReport reads.
const maxReportBytes = 256 << 20

// TextOptions configure WriteText.
type TextOptions struct {
	// Command is how the report's hints run demiurge: "demiurge", or
	// "demiurge --store DIR" for a store other than the default.
	Command string
}

// WriteText writes the report as a person reads it: a table of the
// cases (case, model, result, checks, rounds, tokens, cost, latency),
// then what failed, case by case, with the world to open, then the
// totals.
func (r *Report) WriteText(w io.Writer, o TextOptions) error {
	if o.Command == "" {
		o.Command = "demiurge"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tMODEL\tRESULT\tCHECKS\tROUNDS\tTOKENS\tCOST\tLATENCY")
	for _, cr := range r.Cases {
		if cr.Skipped != "" {
			fmt.Fprintf(tw, "%s\t%s\tskip\t\t\t\t\t\n", cr.Case, cr.Model)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cr.Case, cr.Model, cr.result(r.Runs), cr.checkMarks(),
			mean(cr.Mean.Rounds), mean(cr.Mean.Usage.Tokens()), costText(cr.Mean.CostMicroUSD, cr.CallsCostUnknown > 0), seconds(cr.Mean.Duration.Std()))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, cr := range r.Cases {
		if cr.Skipped != "" || cr.Pass && cr.Passed == len(cr.Runs) {
			continue
		}
		fmt.Fprintf(w, "\n%s %s [%s] (%s)", verdict(cr.Pass), cr.Case, cr.Model, cr.File)
		if len(cr.Runs) > 1 {
			fmt.Fprintf(w, ": %d of %d runs passed", cr.Passed, len(cr.Runs))
		}
		fmt.Fprintln(w)
		for _, run := range cr.Runs {
			if run.Pass {
				continue
			}
			prefix := "  "
			if len(cr.Runs) > 1 {
				fmt.Fprintf(w, "  run %d:\n", run.Run)
				prefix = "    "
			}
			if run.Error != "" {
				fmt.Fprintf(w, "%serror: %s\n", prefix, indent(run.Error, prefix+"  "))
			}
			for _, c := range run.Checks {
				if c.Pass {
					continue
				}
				where := ""
				if c.Where != "" {
					where = " (" + c.Where + ")"
				}
				turn := "case"
				if c.Turn > 0 {
					turn = "turn " + strconv.Itoa(c.Turn)
				}
				fmt.Fprintf(w, "%s✗ %s: %s%s\n%s    %s\n", prefix, turn, c.Name, where, prefix, indent(c.Problem, prefix+"    "))
			}
			for i, t := range run.Turns {
				for _, e := range t.Errors {
					fmt.Fprintf(w, "%sturn %d: %s\n", prefix, i+1, indent(e, prefix+"  "))
				}
				for _, n := range t.Notices {
					fmt.Fprintf(w, "%sturn %d: note: %s\n", prefix, i+1, indent(n, prefix+"  "))
				}
			}
			fmt.Fprintf(w, "%sworld %s: %s ui · %s trace --world %s", prefix, run.World, o.Command, o.Command, run.World)
			if n := len(run.Turns); n > 0 && run.Turns[n-1].Seq > 0 {
				fmt.Fprintf(w, " · %s fork --world %s --at %d", o.Command, run.World, run.Turns[n-1].Seq)
			}
			fmt.Fprintln(w)
		}
	}
	// A run that passed, but was told something on the way (a loose
	// cassette answered a call that differs from the recording): said,
	// since the pass may not mean what it would.
	for _, cr := range r.Cases {
		for _, run := range cr.Runs {
			if !run.Pass {
				continue
			}
			header := false
			for i, t := range run.Turns {
				for _, n := range t.Notices {
					if !header {
						fmt.Fprintf(w, "\nNOTE %s [%s]", cr.Case, cr.Model)
						if len(cr.Runs) > 1 {
							fmt.Fprintf(w, " run %d", run.Run)
						}
						fmt.Fprintf(w, " (%s)\n", cr.File)
						header = true
					}
					fmt.Fprintf(w, "  turn %d: %s\n", i+1, indent(n, "    "))
				}
			}
		}
	}
	t := r.Total
	fmt.Fprintf(w, "\n%s: %d of %d passed", r.Suite, t.Passed, t.Cases-t.Skipped)
	if t.Skipped > 0 {
		fmt.Fprintf(w, ", %d skipped", t.Skipped)
	}
	// The tokens and cost are the agent's, as the table's columns and eval
	// compare count them; the rubric judge's (in Total too) are said
	// apart, labelled.
	var judge agent.Usage
	var judgeCost, judgeUnknown uint64
	for _, cr := range r.Cases {
		for _, run := range cr.Runs {
			judge = addUsage(judge, run.JudgeUsage)
			judgeCost += run.JudgeCostMicroUSD
			judgeUnknown += run.JudgeCallsCostUnknown
		}
	}
	judgeTokens := judge.Prompt + judge.Completion
	fmt.Fprintf(w, " (%d of %d checks) · %s tokens · %s",
		t.ChecksPassed, t.Checks, strconv.FormatUint(t.Tokens()-min(judgeTokens, t.Tokens()), 10),
		costText(float64(t.CostMicroUSD-min(judgeCost, t.CostMicroUSD)), t.CallsCostUnknown-min(judgeUnknown, t.CallsCostUnknown) > 0))
	if judgeTokens > 0 || judgeCost > 0 || judgeUnknown > 0 {
		fmt.Fprintf(w, " · judge %s tokens · %s", strconv.FormatUint(judgeTokens, 10), costText(float64(judgeCost), judgeUnknown > 0))
	}
	fmt.Fprintf(w, " · %s · run %s\n", seconds(r.Duration.Std()), r.Run)
	return nil
}

func verdict(pass bool) string {
	if pass {
		return "FLAKY"
	}
	return "FAIL"
}

func (cr *CaseResult) result(runs int) string {
	if runs > 1 {
		return fmt.Sprintf("%s %d/%d", map[bool]string{true: "pass", false: "FAIL"}[cr.Pass], cr.Passed, len(cr.Runs))
	}
	if cr.Pass {
		return "pass"
	}
	return "FAIL"
}

// maxMarks is how many checks the table marks one by one.
const maxMarks = 8

// checkMarks shows the first run's checks, one mark each, and how many
// passed: ✓✓✗ 2/3.
func (cr *CaseResult) checkMarks() string {
	if len(cr.Runs) == 0 {
		return ""
	}
	run := cr.Runs[0]
	for _, r := range cr.Runs {
		if !r.Pass { // show a failing run
			run = r
			break
		}
	}
	var b strings.Builder
	n := 0
	for i, c := range run.Checks {
		if c.Pass {
			n++
		}
		if i < maxMarks {
			if c.Pass {
				b.WriteString("✓")
			} else {
				b.WriteString("✗")
			}
		}
	}
	if len(run.Checks) > maxMarks {
		b.WriteString("…")
	}
	if run.Error != "" {
		b.WriteString("!")
	}
	fmt.Fprintf(&b, " %d/%d", n, len(run.Checks))
	return b.String()
}

func mean(v float64) string {
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func costText(micro float64, unknown bool) string {
	s := "$" + strconv.FormatFloat(micro/1e6, 'f', 4, 64)
	if unknown {
		if micro == 0 {
			return "?"
		}
		s += "+?"
	}
	return s
}

func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + "s"
}

func indent(s, prefix string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}

// JUnit XML, as CI systems read it (the Jenkins / Ant dialect).
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// WriteJUnit writes the report as JUnit XML: a test suite of the
// suite's cases, one test case per case and model, failed when the case
// failed (the failure lists what each failing run found), with the
// worlds to open in system-out.
func (r *Report) WriteJUnit(w io.Writer) error {
	s := junitSuite{Name: r.Suite, Time: seconds3(r.Duration.Std()), Timestamp: r.Started.UTC().Format(time.RFC3339),
		Properties: []junitProperty{{"run", r.Run}, {"llm", r.LLM}, {"runs", strconv.Itoa(r.Runs)}}}
	for _, cr := range r.Cases {
		jc := junitCase{Name: cr.Case + " [" + cr.Model + "]", Classname: r.Suite, File: cr.File, Time: seconds3(cr.Mean.Duration.Std() * time.Duration(max(len(cr.Runs), 1)))}
		s.Tests++
		switch {
		case cr.Skipped != "":
			s.Skipped++
			jc.Skipped = &junitSkipped{Message: cr.Skipped}
		case !cr.Pass:
			s.Failures++
			var b strings.Builder
			fails := 0
			for _, run := range cr.Runs {
				if run.Pass {
					continue
				}
				fmt.Fprintf(&b, "run %d (world %s):\n", run.Run, run.World)
				if run.Error != "" {
					fmt.Fprintf(&b, "  error: %s\n", run.Error)
				}
				for _, c := range run.Checks {
					if !c.Pass {
						fails++
						fmt.Fprintf(&b, "  ✗ %s (%s): %s\n", c.Name, c.Where, c.Problem)
					}
				}
				for i, t := range run.Turns {
					for _, e := range t.Errors {
						fmt.Fprintf(&b, "  turn %d: %s\n", i+1, e)
					}
				}
			}
			msg := fmt.Sprintf("%d of %d runs passed", cr.Passed, len(cr.Runs))
			if len(cr.Runs) == 1 {
				msg = plural(fails, "check") + " failed"
				if cr.Runs[0].Error != "" {
					msg = "the case did not run to its end"
				}
			}
			jc.Failure = &junitFailure{Message: msg, Type: "eval", Text: b.String()}
		}
		var out strings.Builder
		for _, run := range cr.Runs {
			fmt.Fprintf(&out, "world %s\n", run.World)
		}
		jc.SystemOut = out.String()
		s.Cases = append(s.Cases, jc)
	}
	doc := junitSuites{Name: "demiurge eval", Tests: s.Tests, Failures: s.Failures, Skipped: s.Skipped, Time: s.Time, Suites: []junitSuite{s}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func seconds3(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }
