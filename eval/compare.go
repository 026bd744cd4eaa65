package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Change is what became of a case from one side of a comparison to the
// other.
type Change string

// The changes, in the order a comparison lists them: what got worse
// first.
const (
	Regressed Change = "regressed" // passed in A, fails in B
	Failing   Change = "failing"   // fails in both
	Removed   Change = "removed"   // in A only
	Fixed     Change = "fixed"     // failed in A, passes in B
	Added     Change = "added"     // in B only
	Passing   Change = "passing"   // passes in both
)

var changeRank = map[Change]int{Regressed: 0, Failing: 1, Removed: 2, Fixed: 3, Added: 4, Passing: 5}

// Side names one side of a comparison: a run, and the model its cases
// are taken with when two models of runs are compared ("" for all).
type Side struct {
	Run   string `json:"run"`
	Suite string `json:"suite"`
	LLM   string `json:"llm,omitempty"`
	Model string `json:"model,omitempty"`
}

// Cell is one case on one side.
type Cell struct {
	Pass     bool    `json:"pass"`
	PassRate float64 `json:"pass_rate"`
	// Mean is the case's mean rounds, usage, cost and duration over its
	// runs.
	Mean             Means  `json:"mean"`
	CallsCostUnknown uint64 `json:"calls_cost_unknown"`
	// World is the case's (first run's) world.
	World string `json:"world,omitempty"`
	// Failed names the checks that failed (of the first failing run).
	Failed []string `json:"failed,omitempty"`
}

// Row is one case of a comparison.
type Row struct {
	Case string `json:"case"`
	// Model is the case's model when two runs are compared case by case
	// and model by model; "" when two models are compared.
	Model  string `json:"model,omitempty"`
	Change Change `json:"change"`
	A      *Cell  `json:"a,omitempty"`
	B      *Cell  `json:"b,omitempty"`
}

// SideTotals sum one side over the cases both sides have: the cases'
// means, summed.
type SideTotals struct {
	Cases        int       `json:"cases"`
	Passed       int       `json:"passed"`
	Usage        MeanUsage `json:"usage"`
	CostMicroUSD float64   `json:"cost_microusd"`
	Duration     Duration  `json:"duration_ms"`
}

// Comparison says what changed from run A to run B (or from model A to
// model B), case by case, the regressions first.
type Comparison struct {
	A      Side       `json:"a"`
	B      Side       `json:"b"`
	Rows   []Row      `json:"rows"`
	TotalA SideTotals `json:"total_a"`
	TotalB SideTotals `json:"total_b"`
	// Counts counts the rows by change.
	Counts map[Change]int `json:"counts"`
}

// Compare compares reports a and b: each case with each model, matched
// by case and model. With modelA and modelB set, it compares the cases
// of a with modelA to those of b with modelB, matched by case (a and b
// may be the same report: demiurge eval --model A,B). Skipped cases are
// left out.
func Compare(a, b *Report, modelA, modelB string) *Comparison {
	byModel := modelA != "" || modelB != ""
	c := &Comparison{A: Side{Run: a.Run, Suite: a.Suite, LLM: a.LLM, Model: modelA}, B: Side{Run: b.Run, Suite: b.Suite, LLM: b.LLM, Model: modelB},
		Counts: map[Change]int{}}
	type keyed struct {
		key  string
		cr   *CaseResult
		rank int
	}
	collect := func(r *Report, model string) (map[string]*CaseResult, []keyed) {
		m := map[string]*CaseResult{}
		var order []keyed
		for i, cr := range r.Cases {
			if cr.Skipped != "" || (byModel && cr.Model != model) {
				continue
			}
			k := cr.Case
			if !byModel {
				k += "\x00" + cr.Model
			}
			m[k] = cr
			order = append(order, keyed{k, cr, i})
		}
		return m, order
	}
	am, aorder := collect(a, modelA)
	bm, border := collect(b, modelB)
	pos := map[string]int{}
	for _, k := range aorder {
		pos[k.key] = k.rank
	}
	for _, k := range border {
		if _, ok := pos[k.key]; !ok {
			pos[k.key] = len(a.Cases) + k.rank
		}
	}
	keys := make([]string, 0, len(pos))
	for k := range pos {
		keys = append(keys, k)
	}
	for _, k := range keys {
		ca, cb := am[k], bm[k]
		row := Row{A: cellOf(ca), B: cellOf(cb)}
		src := ca
		if src == nil {
			src = cb
		}
		row.Case = src.Case
		if !byModel {
			row.Model = src.Model
		}
		switch {
		case ca == nil:
			row.Change = Added
		case cb == nil:
			row.Change = Removed
		case ca.Pass && !cb.Pass:
			row.Change = Regressed
		case !ca.Pass && cb.Pass:
			row.Change = Fixed
		case ca.Pass:
			row.Change = Passing
		default:
			row.Change = Failing
		}
		if ca != nil && cb != nil {
			for _, x := range []struct {
				t  *SideTotals
				cr *CaseResult
			}{{&c.TotalA, ca}, {&c.TotalB, cb}} {
				x.t.Cases++
				if x.cr.Pass {
					x.t.Passed++
				}
				u := x.cr.Mean.Usage
				x.t.Usage.Prompt += u.Prompt
				x.t.Usage.Completion += u.Completion
				x.t.Usage.Cached += u.Cached
				x.t.Usage.Reasoning += u.Reasoning
				x.t.CostMicroUSD += x.cr.Mean.CostMicroUSD
				x.t.Duration += x.cr.Mean.Duration
			}
		}
		c.Counts[row.Change]++
		c.Rows = append(c.Rows, row)
	}
	sort.SliceStable(c.Rows, func(i, j int) bool {
		ri, rj := c.Rows[i], c.Rows[j]
		if changeRank[ri.Change] != changeRank[rj.Change] {
			return changeRank[ri.Change] < changeRank[rj.Change]
		}
		return pos[rowKey(ri, byModel)] < pos[rowKey(rj, byModel)]
	})
	return c
}

func rowKey(r Row, byModel bool) string {
	if byModel {
		return r.Case
	}
	return r.Case + "\x00" + r.Model
}

func cellOf(cr *CaseResult) *Cell {
	if cr == nil {
		return nil
	}
	c := &Cell{Pass: cr.Pass, PassRate: cr.PassRate, Mean: cr.Mean, CallsCostUnknown: cr.CallsCostUnknown}
	if len(cr.Runs) > 0 {
		c.World = cr.Runs[0].World
	}
	for _, r := range cr.Runs {
		if r.Pass {
			continue
		}
		if r.Error != "" {
			c.Failed = append(c.Failed, "error: "+clip(firstLine(r.Error), 100))
		}
		for _, ch := range r.Checks {
			if !ch.Pass {
				c.Failed = append(c.Failed, ch.Name)
			}
		}
		break
	}
	return c
}

// Regressions counts the cases that passed in A and fail in B (a case B
// did not run is not one: it may have been left out on purpose).
func (c *Comparison) Regressions() int { return c.Counts[Regressed] }

// WriteJSON writes the comparison as one JSON object on one line.
func (c *Comparison) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(c)
}

func (s Side) label() string {
	l := "run " + s.Run
	if s.Model != "" {
		l = s.Model + " (" + l + ")"
	}
	if s.LLM != "" && strings.HasPrefix(s.LLM, "cassette:") {
		l += ", " + s.LLM
	}
	return l
}

// WriteText writes the comparison as a table, the regressions first,
// then the totals over the cases both sides ran.
func (c *Comparison) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "A: %s\nB: %s\n\n", c.A.label(), c.B.label())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "CASE\t"
	byModel := c.A.Model != "" || c.B.Model != ""
	if !byModel {
		head += "MODEL\t"
	}
	fmt.Fprintln(tw, head+"A\tB\tCHANGE\tTOKENS B-A\tCOST B-A\tLATENCY B-A")
	for _, r := range c.Rows {
		line := r.Case + "\t"
		if !byModel {
			line += r.Model + "\t"
		}
		line += cellResult(r.A) + "\t" + cellResult(r.B) + "\t" + string(r.Change) + "\t"
		if r.A != nil && r.B != nil {
			a, b := r.A.Mean, r.B.Mean
			line += signed(b.Usage.Tokens()-a.Usage.Tokens(), 0) + "\t" + signedCost(b.CostMicroUSD-a.CostMicroUSD) + "\t" + signedSeconds((b.Duration - a.Duration).Std())
		} else {
			line += "\t\t"
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range c.Rows {
		if r.Change != Regressed && r.Change != Failing {
			continue
		}
		if r.B != nil && len(r.B.Failed) > 0 {
			fmt.Fprintf(w, "\n%s %s", strings.ToUpper(string(r.Change)), r.Case)
			if r.Model != "" {
				fmt.Fprintf(w, " [%s]", r.Model)
			}
			fmt.Fprintf(w, " in B (world %s):\n", r.B.World)
			for _, f := range r.B.Failed {
				fmt.Fprintf(w, "  ✗ %s\n", f)
			}
		}
	}
	ta, tb := c.TotalA, c.TotalB
	fmt.Fprintf(w, "\npassed %d → %d of %d · tokens %s → %s (%s) · cost %s → %s (%s) · latency %s → %s (%s)\n",
		ta.Passed, tb.Passed, ta.Cases,
		strconv.FormatFloat(ta.Usage.Tokens(), 'f', 0, 64), strconv.FormatFloat(tb.Usage.Tokens(), 'f', 0, 64), percent(ta.Usage.Tokens(), tb.Usage.Tokens()),
		costText(ta.CostMicroUSD, false), costText(tb.CostMicroUSD, false), percent(ta.CostMicroUSD, tb.CostMicroUSD),
		seconds(ta.Duration.Std()), seconds(tb.Duration.Std()), percent(float64(ta.Duration), float64(tb.Duration)))
	var parts []string
	for _, ch := range []Change{Regressed, Failing, Removed, Fixed, Added, Passing} {
		if n := c.Counts[ch]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, ch))
		}
	}
	fmt.Fprintln(w, strings.Join(parts, ", "))
	return nil
}

func cellResult(c *Cell) string {
	switch {
	case c == nil:
		return "-"
	case c.PassRate > 0 && c.PassRate < 1:
		return fmt.Sprintf("%s %.0f%%", map[bool]string{true: "pass", false: "FAIL"}[c.Pass], c.PassRate*100)
	case c.Pass:
		return "pass"
	}
	return "FAIL"
}

func signed(v float64, prec int) string {
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if v > 0 {
		s = "+" + s
	}
	return s
}

func signedCost(micro float64) string {
	s := "$" + strconv.FormatFloat(abs(micro)/1e6, 'f', 4, 64)
	switch {
	case micro > 0:
		return "+" + s
	case micro < 0:
		return "-" + s
	}
	return s
}

func signedSeconds(d time.Duration) string {
	s := strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + "s"
	if d > 0 {
		s = "+" + s
	}
	return s
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

func percent(a, b float64) string {
	if a == 0 {
		if b == 0 {
			return "±0%"
		}
		return "new"
	}
	p := (b - a) / a * 100
	return signed(p, 1) + "%"
}
