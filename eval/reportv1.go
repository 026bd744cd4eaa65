package eval

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/demiurge-dev/demiurge/agent"
)

// The JSON form of a report of version 1, before the command line's JSON
// convention: durations in integer nanoseconds (_ns), tokens as one
// count, a turn's usage as {prompt, completion, cached, reasoning}, model
// calls of unknown cost as cost_unknown.
type (
	reportV1 struct {
		Run         string    `json:"run"`
		Suite       string    `json:"suite"`
		Dir         string    `json:"dir"`
		Started     time.Time `json:"started"`
		Duration    int64     `json:"duration_ns"`
		LLM         string    `json:"llm"`
		Store       string    `json:"store"`
		Runs        int       `json:"runs"`
		PassRate    float64   `json:"pass_rate_required"`
		Concurrency int       `json:"concurrency"`
		Cases       []caseV1  `json:"cases"`
	}
	caseV1 struct {
		Case        string  `json:"case"`
		Model       string  `json:"model"`
		File        string  `json:"file"`
		Description string  `json:"description"`
		Skipped     string  `json:"skipped"`
		Pass        bool    `json:"pass"`
		Passed      int     `json:"passed"`
		PassRate    float64 `json:"pass_rate"`
		Runs        []runV1 `json:"runs"`
	}
	runV1 struct {
		Run               int           `json:"run"`
		World             string        `json:"world"`
		JudgeWorld        string        `json:"judge_world"`
		Pass              bool          `json:"pass"`
		Error             string        `json:"error"`
		Turns             []turnV1      `json:"turns"`
		Checks            []CheckResult `json:"checks"`
		Rounds            uint64        `json:"rounds"`
		CostMicroUSD      uint64        `json:"cost_microusd"`
		CostUnknown       uint64        `json:"cost_unknown"`
		JudgeTokens       uint64        `json:"judge_tokens"`
		JudgeCostMicroUSD uint64        `json:"judge_cost_microusd"`
		Latency           int64         `json:"latency_ns"`
		Recorded          string        `json:"recorded"`
	}
	turnV1 struct {
		User    string `json:"user"`
		Answer  string `json:"answer"`
		Outcome string `json:"outcome"`
		Finish  string `json:"finish"`
		Seq     uint64 `json:"seq"`
		Rounds  uint64 `json:"rounds"`
		Calls   int    `json:"tool_calls"`
		// Usage's counts had these names; a demiurge between the JSON
		// convention and version 2 wrote them as agent.Usage's.
		Usage struct {
			Prompt     uint64 `json:"prompt"`
			Completion uint64 `json:"completion"`
			Cached     uint64 `json:"cached"`
			Reasoning  uint64 `json:"reasoning"`
			agent.Usage
		} `json:"usage"`
		CostMicroUSD uint64   `json:"cost_microusd"`
		CostUnknown  uint64   `json:"cost_unknown"`
		Latency      int64    `json:"latency_ns"`
		Errors       []string `json:"errors"`
	}
)

// readReportV1 reads a report of version 1 as one of this version: the
// figures a run and a turn kept, and the means and totals made again from
// them.
func readReportV1(b []byte) (*Report, error) {
	var v reportV1
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("eval: read a report of version 1: %w", err)
	}
	r := &Report{Version: ReportVersion, Run: v.Run, Suite: v.Suite, Dir: v.Dir, Started: v.Started, Duration: Duration(v.Duration),
		LLM: v.LLM, Store: v.Store, Runs: v.Runs, PassRate: v.PassRate, Concurrency: v.Concurrency}
	for _, c := range v.Cases {
		cr := &CaseResult{Case: c.Case, Model: c.Model, File: c.File, Description: c.Description, Skipped: c.Skipped}
		for _, run := range c.Runs {
			rr := &RunResult{Run: run.Run, World: run.World, JudgeWorld: run.JudgeWorld, Pass: run.Pass, Error: run.Error,
				Checks: run.Checks, Rounds: run.Rounds, CostMicroUSD: run.CostMicroUSD, CallsCostUnknown: run.CostUnknown,
				JudgeUsage: agent.Usage{Prompt: run.JudgeTokens}, JudgeCostMicroUSD: run.JudgeCostMicroUSD,
				Duration: Duration(run.Latency), Recorded: run.Recorded}
			for _, t := range run.Turns {
				u := addUsage(t.Usage.Usage, agent.Usage{Prompt: t.Usage.Prompt, Completion: t.Usage.Completion, Cached: t.Usage.Cached, Reasoning: t.Usage.Reasoning})
				rr.Turns = append(rr.Turns, TurnResult{User: t.User, Answer: t.Answer, Outcome: t.Outcome, Finish: t.Finish, Seq: t.Seq,
					Rounds: t.Rounds, ToolCalls: t.Calls, Usage: u, CostMicroUSD: t.CostMicroUSD, CallsCostUnknown: t.CostUnknown,
					Duration: Duration(t.Latency), Errors: t.Errors})
				rr.Usage = addUsage(rr.Usage, u)
			}
			cr.Runs = append(cr.Runs, rr)
		}
		cr.summarize(r.PassRate)
		// The verdicts are the run's own (its pass rate required).
		cr.Pass, cr.Passed, cr.PassRate = c.Pass, c.Passed, c.PassRate
		r.Cases = append(r.Cases, cr)
	}
	r.total()
	return r, nil
}
