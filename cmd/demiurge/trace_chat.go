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
func writeTurns(w io.Writer, turns []*session.Turn) error { return writeSession(w, turns, nil) }

// writeSession writes the turns of an agent world's sessions for people,
// with the points where the world was forked from another.
func writeSession(w io.Writer, turns []*session.Turn, forks []session.Fork) error {
	var b strings.Builder
	var total uint64
	totalUnknown := false
	writeForks := func(i int) {
		for _, f := range forks {
			if f.Turns == i {
				if i > 0 {
					b.WriteString("\n")
				}
				fmt.Fprintf(&b, "forked from world %s at seq %d (%s): what comes before is that world's; this world's own records start at seq %d\n", f.From, f.At, f.Hash.Short(), f.Seq+1)
			}
		}
	}
	for i, t := range turns {
		writeForks(i)
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "turn %d of chat %s, %s\n  user: %s\n", t.RequestID, t.Chat, t.Time, clipLine(t.User, 200))
		for round, r := range t.Rounds {
			if m := r.Compaction; m != nil {
				fmt.Fprintf(&b, "  compaction call: %s, %.1f ms, %s\n", m.Model, m.LatencyMS, costText(m.CostMicroUSD, m.CostUnknown))
			}
			if m := r.Model; m != nil {
				if m.Error != "" {
					fmt.Fprintf(&b, "  model call %d: failed after %.1f ms: %s\n", round+1, m.LatencyMS, clipLine(m.Error, 200))
				} else {
					tokens := fmt.Sprintf("%d tokens in (%d cached), %d out (%d reasoning)", m.InputTokens, m.CachedTokens, m.OutputTokens, m.Reasoning)
					if m.UsageUnknown {
						tokens = "tokens unknown (the provider reported no usage)"
					}
					fmt.Fprintf(&b, "  model call %d: %s, %.1f ms, %s, %s, %s\n",
						round+1, m.Model, m.LatencyMS, tokens, costText(m.CostMicroUSD, m.CostUnknown), finishText(m.Finish))
				}
				for _, f := range m.Retried {
					what := f.Kind
					if f.Status != 0 {
						what = fmt.Sprintf("HTTP %d", f.Status)
					}
					fmt.Fprintf(&b, "    attempt %d failed (%s: %s), retried after %d ms\n", f.Attempt, what, clipLine(f.Message, 160), f.WaitMS)
				}
			}
			for _, tc := range r.Calls {
				fmt.Fprintf(&b, "    %s %s", tc.Tool, clipLine(tc.Arguments, 120))
				switch tc.Status {
				case "ok":
					fmt.Fprintf(&b, " → ok in %.1f ms, %d bytes", tc.LatencyMS, len(tc.Output))
				case "requested":
					fmt.Fprintf(&b, " → requested, no output yet")
				default:
					if tc.Rejected {
						fmt.Fprintf(&b, " → rejected before running: %s\n", clipLine(tc.Output, 160))
						continue
					}
					if tc.Cut {
						b.WriteString(" → not run: the reply was cut off before the call was complete\n")
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
				b.WriteString("\n")
			}
		}
		for _, a := range t.Assistant {
			fmt.Fprintf(&b, "  assistant: %s\n", clipLine(a, 400))
		}
		for _, n := range t.Notices {
			fmt.Fprintf(&b, "  note: %s\n", n)
		}
		if t.Error != "" {
			fmt.Fprintf(&b, "  error: %s\n", t.Error)
		}
		if t.Stop != "" {
			fmt.Fprintf(&b, "  stopped: %s\n", t.Stop)
		}
		if t.Done != "" {
			fmt.Fprintf(&b, "  done: %s", t.Done)
			switch t.Outcome {
			case "refusal":
				b.WriteString(" (the model refused)")
			case "cut":
				b.WriteString(" (the answer is incomplete: " + finishText(t.LastFinish()) + ")")
			}
			b.WriteString("\n")
		}
		cost, unknown := t.Cost()
		fmt.Fprintf(&b, "  turn cost: %s\n", costText(cost, unknown))
		total += cost
		totalUnknown = totalUnknown || unknown
	}
	writeForks(len(turns))
	if len(turns) > 1 {
		fmt.Fprintf(&b, "\nsession: %d turns, %s\n", len(turns), costText(total, totalUnknown))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
