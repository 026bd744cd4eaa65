package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm"
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
	case f == "incomplete: pause_turn":
		// Anthropic paused the turn more times than the adapter
		// continues it (llm.MaxPauseContinuations), or a continuation
		// failed (the trace shows the failed attempt).
		return "paused by the provider (pause_turn) and not continued further (at most " + strconv.Itoa(llm.MaxPauseContinuations) + " times); send a message to go on"
	case strings.HasPrefix(f, "incomplete"):
		return "cut off by the provider (" + f + ")"
	}
	return f
}

// msDuration formats a duration given in milliseconds as run prints
// durations (roundDuration: Go's form, to a precision that fits it), so
// that every command people read shows time one way: 2ms, 12.421s, 41µs.
func msDuration(ms float64) string {
	return roundDuration(time.Duration(ms * float64(time.Millisecond)))
}

// callLatency is a call's latency, or "resumed" for one dispatched again
// after the world was forked or opened again while it waited: the journal
// does not record when, and the time from the first request would count
// the time the world sat idle.
func callLatency(ms float64, resumed bool) string {
	if resumed {
		return "resumed"
	}
	return msDuration(ms)
}

// statusDetail is the output of a call that did not succeed without the
// status it starts with: the chat writes "error: …", "error (exit 1) …" or
// "denied: …" for the model, and the lines people read name the status
// already ("✗ bash error in 2ms: (exit 1) …", not "error: error …").
func statusDetail(status, output string) string {
	word := strings.ReplaceAll(status, "_", " ") // not_run writes "not run: …"
	if rest, ok := strings.CutPrefix(output, word+": "); ok {
		return rest
	}
	if rest, ok := strings.CutPrefix(output, word+" ("); ok {
		return "(" + rest
	}
	return output
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

// cachedText says how many input tokens were read from the provider's
// cache, and written to it if any were: "200 cached, 900 written to the
// cache".
func cachedText(read, written uint64) string {
	if written > 0 {
		return fmt.Sprintf("%d cached, %d written to the cache", read, written)
	}
	return fmt.Sprintf("%d cached", read)
}

// modelAt names the model that answered a call, and who served it if its
// receipt says: "gpt-5-mini at openai".
func modelAt(m *session.ModelCall) string {
	if m.ProviderName != "" {
		return m.Model + " at " + m.ProviderName
	}
	return m.Model
}

// callCost is a call's cost, and where it came from if its receipt says:
// "$0.0042 reported by openrouter (usage.cost)".
func callCost(m *session.ModelCall) string {
	cost := costText(m.CostMicroUSD, m.CostUnknown)
	if m.CostSource != "" && !m.CostUnknown {
		cost += " " + m.CostSource
	}
	return cost
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
				b.WriteString(forkLine(f) + "\n")
			}
		}
	}
	for i, t := range turns {
		writeForks(i)
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
	writeForks(len(turns))
	if len(turns) > 1 {
		fmt.Fprintf(&b, "\nsession: %d turns, %s\n", len(turns), costText(total, totalUnknown))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// forkLine says where a world was forked from another, and which of what
// comes before it is the other world's: the turns before it, but for the
// rest of a turn the fork was made in.
func forkLine(f session.Fork) string {
	var b strings.Builder
	fmt.Fprintf(&b, "forked from world %s at seq %d (%s)", f.From, f.At, f.Hash.Short())
	for i, t := range f.Open {
		switch {
		case i == 0:
			b.WriteString(" during ")
		case i == len(f.Open)-1:
			b.WriteString(" and ")
		default:
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "turn %d of chat %s", t.RequestID, t.Chat)
	}
	switch {
	case len(f.Open) == 1:
		b.WriteString(", which goes on in this world")
	case len(f.Open) > 1:
		b.WriteString(", which go on in this world")
	}
	b.WriteString(": ")
	switch {
	case len(f.Open) > 0:
		fmt.Fprintf(&b, "the records up to seq %d are that world's; ", f.At)
	case f.Turns > 0:
		b.WriteString("what comes before is that world's; ")
	}
	fmt.Fprintf(&b, "this world's own records start with the Fork record at seq %d", f.Seq)
	return b.String()
}

// turnEnded reports whether a turn has ended: nothing more is recorded
// of it.
func turnEnded(t *session.Turn) bool { return t.Ended() }

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
	add("turn %d of chat %s, %s", t.RequestID, t.Chat, t.When())
	add("  user: %s", clipLine(t.User, 200))
	for round, r := range t.Rounds {
		if m := r.Compaction; m != nil {
			add("  compaction call: %s, %s, %s", modelAt(m), callLatency(m.LatencyMS, m.Resumed), callCost(m))
		}
		if m := r.Model; m != nil {
			if m.Error != "" {
				when := "after " + msDuration(m.LatencyMS)
				if m.Resumed {
					when = "(resumed)"
				}
				add("  model call %d: failed %s: %s", round+1, when, clipLine(m.Error, 200))
			} else {
				tokens := fmt.Sprintf("%d tokens in (%s), %d out (%d reasoning)", m.InputTokens, cachedText(m.CachedTokens, m.CacheWriteTokens), m.OutputTokens, m.Reasoning)
				if m.UsageUnknown {
					tokens = "tokens unknown (the provider reported no usage)"
				}
				add("  model call %d: %s, %s, %s, %s, %s",
					round+1, modelAt(m), callLatency(m.LatencyMS, m.Resumed), tokens, callCost(m), finishText(m.Finish))
			}
			for _, f := range m.Retried {
				what := f.Kind
				if f.Status != 0 {
					what = fmt.Sprintf("HTTP %d", f.Status)
				}
				add("    attempt %d failed (%s: %s), retried after %s", f.Attempt, what, clipLine(f.Message, 160), msDuration(float64(f.WaitMS)))
			}
		}
		for _, a := range r.Assistant { // what the round's reply said, before its calls
			add("  assistant: %s", clipLine(a, 400))
		}
		for _, tc := range r.Calls {
			var b strings.Builder
			fmt.Fprintf(&b, "    %s %s", tc.Tool, clipLine(argsText(tc.Arguments), 120))
			switch tc.Status {
			case "ok":
				if tc.Resumed {
					fmt.Fprintf(&b, " → ok (resumed), %s", plural(len(tc.Output), "byte"))
				} else {
					fmt.Fprintf(&b, " → ok in %s, %s", msDuration(tc.LatencyMS), plural(len(tc.Output), "byte"))
				}
			case "requested":
				fmt.Fprintf(&b, " → requested, no output yet")
				unstable = unstable || running
			case "approval":
				fmt.Fprintf(&b, " → waits for the user's approval (demiurge approve or deny answers it)")
				unstable = unstable || running
			default:
				if tc.Rejected {
					fmt.Fprintf(&b, " → rejected before running: %s", clipLine(statusDetail(tc.Status, tc.Output), 160))
					add("%s", b.String())
					continue
				}
				if tc.Cut {
					b.WriteString(" → not run: the reply was cut off before the call was complete")
					add("%s", b.String())
					continue
				}
				fmt.Fprintf(&b, " → %s", tc.Status)
				switch {
				case tc.Resumed:
					b.WriteString(" (resumed)")
				case tc.LatencyMS > 0:
					fmt.Fprintf(&b, " in %s", msDuration(tc.LatencyMS))
				}
				fmt.Fprintf(&b, ": %s", clipLine(statusDetail(tc.Status, tc.Output), 160))
			}
			if tc.Approval == "approved" && tc.Status != "approval" {
				b.WriteString(" (approved by the user)")
			}
			if len(tc.SubCalls) > 0 {
				fmt.Fprintf(&b, " (commands: %s)", strings.Join(tc.SubCalls, ", "))
			}
			add("%s", b.String())
			if tc.Status == "ok" {
				for l := range strings.Lines(outputPreview(tc.Output, "      │ ", 2)) {
					add("%s", strings.TrimSuffix(l, "\n"))
				}
			}
		}
	}
	unstable = unstable || running
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
	switch cost, unknown := t.Cost(); {
	case !t.Answered():
		add("  turn cost: unknown (no model call answered)") // not $0.0000: nothing priced it
	case unknown && cost == 0:
		add("  turn cost: unknown") // not "turn cost: cost unknown"
	default:
		add("  turn cost: %s", costText(cost, unknown))
	}
	return lines, stable
}

// outputPreview is the first lines of a tool's output, each cut and
// prefixed, with how many lines are left out.
func outputPreview(out, prefix string, lines int) string {
	out = strings.TrimRight(out, "\n")
	if out == "" {
		return ""
	}
	all := strings.Split(out, "\n")
	var b strings.Builder
	for i, l := range all {
		if i == lines {
			fmt.Fprintf(&b, "%s… %s more\n", prefix, plural(len(all)-i, "line"))
			break
		}
		fmt.Fprintf(&b, "%s%s\n", prefix, clipLine(l, 120))
	}
	return b.String()
}
