package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/demiurge-dev/demiurge/agent"
)

// JudgeInstructions is the system prompt of the model that grades rubric
// checks.
const JudgeInstructions = `You grade the work of an AI agent. You are given a rubric and the transcript of what the agent did: the user's messages, the tool calls it made with their results, and its answers. Decide whether the agent's work meets every point of the rubric, judging only what the transcript shows.

Answer with one JSON object and nothing else:
{"pass": true or false, "reason": "one sentence that says why"}`

// judge grades the case so far against a rubric: a model call in the
// judge's own world (beside the case's, named <world>.judge), journaled
// and recorded like any other, so that a cassette answers it offline.
func (cr *caseRun) judge(ctx context.Context, criteria, model string) (bool, string, error) {
	c := cr.j.c
	if model == "" {
		model = c.JudgeModel
	}
	if model == "" {
		model = cr.j.model
	}
	if cr.judgeW == nil {
		m, err := cr.model(model, CassetteDir(cr.opts.Cassettes, c.ID, cr.j.model)+".judge")
		if err != nil {
			return false, "", fmt.Errorf("the judge: %w", err)
		}
		name := cr.res.World + ".judge"
		o := []agent.Option{agent.WithStorage(cr.opts.Storage), agent.WithWorld(name), agent.WithModel(m),
			agent.WithInstructions(JudgeInstructions)}
		w, err := agent.Open(ctx, c.Manifest, append(o, cr.opts.Agent...)...)
		if err != nil {
			return false, "", fmt.Errorf("open the judge's world: %w", err)
		}
		cr.judgeW, cr.res.JudgeWorld = w, name
	}
	cr.judged++
	chat := cr.judgeW.Chat(fmt.Sprintf("rubric-%d", cr.judged), agent.DefaultToolChoice(agent.ToolChoiceNone), agent.UseModel(model))
	var answer string
	var end agent.TurnEnd
	var errs []string
	for e, err := range chat.Send(ctx, cr.judgePrompt(criteria)) {
		if err != nil {
			return false, "", fmt.Errorf("the judge: %w", err)
		}
		switch e := e.(type) {
		case agent.Message:
			if e.Role == "assistant" {
				answer = e.Text
			}
		case agent.TurnError:
			errs = append(errs, e.Text)
		case agent.TurnEnd:
			end = e
		}
	}
	cr.res.JudgeCostMicroUSD += end.CostMicroUSD
	cr.res.JudgeCallsCostUnknown += end.CostUnknown
	cr.res.JudgeUsage = addUsage(cr.res.JudgeUsage, end.Usage)
	if end.Outcome != agent.OutcomeAnswer {
		why := strings.Join(errs, "; ")
		if why == "" {
			why = "its turn ended " + string(end.Outcome)
		}
		return false, "", fmt.Errorf("the judge did not answer: %s", why)
	}
	pass, reason, err := parseVerdict(answer)
	if err != nil {
		return false, "", err
	}
	return pass, reason, nil
}

var refText = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(blake3|sha256):[0-9a-f]{64}`) })

// judgePrompt is the message the judge grades: the rubric, and the
// transcript of the case's turns so far. Refs and the world's name, which
// differ from run to run, are masked, so that the request is the same
// each time the same turns are graded (a strict cassette answers it).
func (cr *caseRun) judgePrompt(criteria string) string {
	var b strings.Builder
	b.WriteString("Rubric:\n")
	b.WriteString(strings.TrimSpace(criteria))
	b.WriteString("\n\nTranscript:\n")
	for _, e := range cr.all.events {
		switch e := e.(type) {
		case agent.Message:
			fmt.Fprintf(&b, "%s: %s\n", e.Role, e.Text)
		case agent.ToolCallStarted:
			args := e.Arguments
			if raw, ok := cr.args[e.CallID]; ok {
				args = raw
			}
			fmt.Fprintf(&b, "tool call %s: %s\n", e.Tool, clip(args, 2000))
		case agent.ToolCallFinished:
			fmt.Fprintf(&b, "tool result %s (%s): %s\n", e.Tool, e.Status, clip(e.Output, 2000))
		case agent.TurnError:
			fmt.Fprintf(&b, "error: %s\n", e.Text)
		case agent.GuardStop:
			fmt.Fprintf(&b, "stopped: %s\n", e.Reason)
		}
	}
	out := refText().ReplaceAllString(b.String(), "$1:…")
	return strings.ReplaceAll(out, cr.res.World, "<world>")
}

// parseVerdict reads the judge's answer: a JSON object {"pass", "reason"},
// alone or in a fenced block.
func parseVerdict(answer string) (bool, string, error) {
	text := strings.TrimSpace(answer)
	if m := fenced().FindStringSubmatch(text); m != nil {
		text = m[1]
	}
	if i, j := strings.IndexByte(text, '{'), strings.LastIndexByte(text, '}'); i >= 0 && j > i {
		text = text[i : j+1]
	}
	var v struct {
		Pass   *bool  `json:"pass"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal([]byte(text), &v); err != nil || v.Pass == nil {
		return false, "", fmt.Errorf(`the judge's answer is not the JSON asked for ({"pass": true|false, "reason": "…"}): %s`, preview(answer))
	}
	return *v.Pass, v.Reason, nil
}
