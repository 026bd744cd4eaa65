package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/demiurge-dev/demiurge/agent/session"
)

// finishText says how a reply ended, for people.
func finishText(f string) string {
	switch {
	case f == "stop", f == "tool_calls", f == "":
		return f
	case f == "refusal":
		return "refused"
	case f == "length":
		return "cut off by the output token limit"
	case f == "content_filter":
		return "cut off by a content filter"
	case strings.HasPrefix(f, "incomplete"):
		return "cut off by the provider (" + f + ")"
	}
	return f
}

// costText formats a cost in micro-USD, or says it is unknown.
func costText(microUSD uint64, unknown bool) string {
	switch {
	case unknown && microUSD == 0:
		return "cost unknown"
	case unknown:
		return fmt.Sprintf("$%.4f + unknown", float64(microUSD)/1e6)
	}
	return fmt.Sprintf("$%.4f", float64(microUSD)/1e6)
}

// writeTurns writes the turns of an agent world's sessions for people.
func writeTurns(w io.Writer, turns []*session.Turn) error {
	var b strings.Builder
	var total uint64
	totalUnknown := false
	for i, t := range turns {
		if i > 0 {
			b.WriteString("\n")
		}
		lines, _ := turnLines(t)
		for _, l := range lines {
			b.WriteString(l)
			b.WriteString("\n")
		}
		cost, unknown := t.Cost()
		total += cost
		totalUnknown = totalUnknown || unknown
	}
	if len(turns) > 1 {
		fmt.Fprintf(&b, "\nsession: %d turns, %s\n", len(turns), costText(total, totalUnknown))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// turnEnded reports whether a turn has ended: nothing more is recorded
// of it.
func turnEnded(t *session.Turn) bool {
	return t.Outcome != "" || t.Done != "" || t.Stop != "" || t.Error != ""
}

// turnLines renders one turn for people, a line each (without newlines).
// stable is how many of the lines will stay as they are while the turn
// goes on: all of them once it has ended; while it runs, those up to the
// first tool call without its result (the ones after it, the assistant's
// text and the turn's end, are still to come or to change).
func turnLines(t *session.Turn) (lines []string, stable int) {
	running := !turnEnded(t)
	unstable := false // a line so far may still change
	add := func(format string, args ...any) {
		lines = append(lines, fmt.Sprintf(format, args...))
		if !unstable {
			stable = len(lines)
		}
	}
	add("turn %d of chat %s, %s", t.RequestID, t.Chat, t.Time)
	add("  user: %s", clipLine(t.User, 200))
	for round, r := range t.Rounds {
		if m := r.Compaction; m != nil {
			add("  compaction call: %s, %.1f ms, %s", m.Model, m.LatencyMS, costText(m.CostMicroUSD, m.CostUnknown))
		}
		if m := r.Model; m != nil {
			if m.Error != "" {
				add("  model call %d: failed after %.1f ms: %s", round+1, m.LatencyMS, clipLine(m.Error, 200))
			} else {
				tokens := fmt.Sprintf("%d tokens in (%d cached), %d out (%d reasoning)", m.InputTokens, m.CachedTokens, m.OutputTokens, m.Reasoning)
				if m.UsageUnknown {
					tokens = "tokens unknown (the provider reported no usage)"
				}
				add("  model call %d: %s, %.1f ms, %s, %s, %s",
					round+1, m.Model, m.LatencyMS, tokens, costText(m.CostMicroUSD, m.CostUnknown), finishText(m.Finish))
			}
			for _, f := range m.Retried {
				what := f.Kind
				if f.Status != 0 {
					what = fmt.Sprintf("HTTP %d", f.Status)
				}
				add("    attempt %d failed (%s: %s), retried after %d ms", f.Attempt, what, clipLine(f.Message, 160), f.WaitMS)
			}
		}
		for _, tc := range r.Calls {
			var b strings.Builder
			fmt.Fprintf(&b, "    %s %s", tc.Tool, clipLine(tc.Arguments, 120))
			switch tc.Status {
			case "ok":
				fmt.Fprintf(&b, " → ok in %.1f ms, %d bytes", tc.LatencyMS, len(tc.Output))
			case "requested":
				fmt.Fprintf(&b, " → requested, no output yet")
				unstable = unstable || running
			default:
				if tc.Rejected {
					fmt.Fprintf(&b, " → rejected before running: %s", clipLine(tc.Output, 160))
					add("%s", b.String())
					continue
				}
				if tc.Cut {
					b.WriteString(" → not run: the reply was cut off before the call was complete")
					add("%s", b.String())
					continue
				}
				fmt.Fprintf(&b, " → %s", tc.Status)
				if tc.LatencyMS > 0 {
					fmt.Fprintf(&b, " in %.1f ms", tc.LatencyMS)
				}
				fmt.Fprintf(&b, ": %s", clipLine(tc.Output, 160))
			}
			if len(tc.SubCalls) > 0 {
				fmt.Fprintf(&b, " (commands: %s)", strings.Join(tc.SubCalls, ", "))
			}
			add("%s", b.String())
		}
	}
	unstable = unstable || running
	for _, a := range t.Assistant {
		add("  assistant: %s", clipLine(a, 400))
	}
	for _, n := range t.Notices {
		add("  note: %s", n)
	}
	if t.Error != "" {
		add("  error: %s", t.Error)
	}
	if t.Stop != "" {
		add("  stopped: %s", t.Stop)
	}
	if t.Done != "" {
		end := "  done: " + t.Done
		switch t.Outcome {
		case "refusal":
			end += " (the model refused)"
		case "cut":
			end += " (the answer is incomplete: " + finishText(t.LastFinish()) + ")"
		}
		add("%s", end)
	}
	cost, unknown := t.Cost()
	add("  turn cost: %s", costText(cost, unknown))
	return lines, stable
}
