package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools/introspect"
	"github.com/demiurge-dev/demiurge/tools/mcp"
	"github.com/demiurge-dev/demiurge/tools/workspace"
	"github.com/demiurge-dev/demiurge/world"
)

// The agent's view of a session: turns, the model calls of each (tokens,
// latency, cost), the tool calls the model made (arguments, results,
// errors, durations) and the guards that stopped turns. It is read from the
// journal: the chat states' timelines, with timings from the stamps of the
// receipts.

type modelKey struct {
	chat           string
	request, round uint64
	compact        bool // a compaction call (Chat@2), not the round's answer
}

type modelCall struct {
	Round        uint64  `json:"round"`
	Model        string  `json:"model,omitempty"`
	LatencyMS    float64 `json:"latency_ms"`
	InputTokens  uint64  `json:"input_tokens"`
	CachedTokens uint64  `json:"cached_tokens"`
	OutputTokens uint64  `json:"output_tokens"`
	Reasoning    uint64  `json:"reasoning_tokens"`
	CostMicroUSD uint64  `json:"cost_microusd"`
	// UsageUnknown: the provider reported no usage (the token counts are
	// 0); CostUnknown: the model has no price, or its usage is unknown.
	UsageUnknown bool   `json:"usage_unknown,omitempty"`
	CostUnknown  bool   `json:"cost_unknown,omitempty"`
	Finish       string `json:"finish_reason,omitempty"`
	Error        string `json:"error,omitempty"`
	// Retried are the attempts that failed before the one that answered.
	Retried []llm.FailedAttempt `json:"retried,omitempty"`
}

type toolCall struct {
	CallID    string   `json:"call_id"`
	Tool      string   `json:"tool"`
	Arguments string   `json:"arguments"`
	Status    string   `json:"status"`             // the output's status: ok, error, denied, timeout, not_run (or requested)
	Rejected  bool     `json:"rejected,omitempty"` // refused before running (unknown tool, bad arguments)
	Cut       bool     `json:"cut,omitempty"`      // not run: the model's reply was cut off before it was complete
	Output    string   `json:"output,omitempty"`
	LatencyMS float64  `json:"latency_ms,omitempty"`
	SubCalls  []string `json:"sub_calls,omitempty"`
}

type turnView struct {
	Chat      string       `json:"chat"`
	RequestID uint64       `json:"request_id"`
	Time      string       `json:"time"`
	User      string       `json:"user"`
	Rounds    []*roundView `json:"rounds"`
	Assistant []string     `json:"assistant,omitempty"`
	Notices   []string     `json:"notices,omitempty"`
	Stop      string       `json:"stop,omitempty"`
	Error     string       `json:"error,omitempty"`
	Done      string       `json:"done,omitempty"`
	// Outcome is how the turn ended: answer, refusal, cut (the answer
	// was cut by the token limit or a filter), failed, stopped (a
	// guard), or "" while it runs.
	Outcome string `json:"outcome,omitempty"`
}

type roundView struct {
	// Compaction is the call that compacted the transcript before the
	// round's request, if one did.
	Compaction *modelCall  `json:"compaction,omitempty"`
	Model      *modelCall  `json:"model,omitempty"`
	Calls      []*toolCall `json:"tool_calls,omitempty"`
}

// chatTrace collects the agent's view while reading records.
type chatTrace struct {
	cas        cas.Getter
	now        uint64 // wall time of the input being read
	lastReq    []modelKey
	pendCalls  []string
	modelIn    map[string]string
	keys       map[string]modelKey
	toolIn     map[string]string
	started    map[string]uint64
	models     map[modelKey]*modelCall
	tools      map[string]*toolCall
	shown      map[string]uint64 // entries of each chat's timeline seen (see demiurge.StateView.Since)
	turns      []*turnView
	turnOf     map[modelKey]*turnView // (chat, request, 0) → turn
	chatEvents bool
}

func newChatTrace(g cas.Getter) *chatTrace {
	return &chatTrace{cas: g, modelIn: map[string]string{}, toolIn: map[string]string{}, started: map[string]uint64{},
		models: map[modelKey]*modelCall{}, tools: map[string]*toolCall{}, shown: map[string]uint64{}, turnOf: map[modelKey]*turnView{},
		keys: map[string]modelKey{}}
}

func text(v schema.Value) string { s, _ := v.(string); return s }
func num(v schema.Value) uint64  { n, _ := v.(uint64); return n }
func ms(d uint64) float64        { return float64(d) / 1e6 }

func (c *chatTrace) record(r journal.Record) error {
	v, err := schema.Decode(r.Payload)
	if err != nil {
		return nil
	}
	m, _ := v.(*schema.Map)
	switch r.Kind {
	case world.KindEvent, world.KindReceipt:
		c.now = num(schema.FieldPath(m, "stamp", "now"))
	}
	switch r.Kind {
	case world.KindEvent, world.KindRaised:
		switch text(schema.FieldPath(m, "schema")) {
		case "demiurge/ChatEvent@1", "demiurge/ChatEvent@2":
			c.chatEvents = true
		case demiurge.ChatRequestSchema, "demiurge/ChatRequest@1":
			c.lastReq = append(c.lastReq, modelKey{text(schema.FieldPath(m, "value", "chat_id")), num(schema.FieldPath(m, "value", "request_id")),
				num(schema.FieldPath(m, "value", "round")), text(schema.FieldPath(m, "value", "purpose")) == demiurge.PurposeCompact})
		case demiurge.ToolRequestSchema:
			c.pendCalls = append(c.pendCalls, text(schema.FieldPath(m, "value", "call_id")))
		}
	case world.KindIntent:
		in := text(schema.FieldPath(m, "intent"))
		switch kind := text(schema.FieldPath(m, "kind")); kind {
		case llm.EffectKind:
			if len(c.lastReq) > 0 {
				c.modelIn[in] = c.lastReq[0].String()
				c.keys[c.lastReq[0].String()] = c.lastReq[0]
				c.lastReq = c.lastReq[1:]
			}
		case introspect.EffectCall, workspace.EffectCall, "scripted.run", mcp.EffectKind:
			if len(c.pendCalls) > 0 {
				c.toolIn[in] = c.pendCalls[0]
				c.pendCalls = c.pendCalls[1:]
			}
		}
		c.started[in] = c.now
	case world.KindReceipt:
		in := text(schema.FieldPath(m, "intent"))
		lat := ms(c.now - c.started[in])
		if k, ok := c.modelIn[in]; ok {
			key := c.keys[k]
			mc := &modelCall{Round: key.round, LatencyMS: lat, Error: text(schema.FieldPath(m, "error"))}
			if p, ok := schema.FieldPath(m, "payload").(*schema.Map); ok {
				mc.Model, mc.Finish = text(schema.FieldPath(p, "model")), text(schema.FieldPath(p, "finish_reason"))
				mc.InputTokens, mc.OutputTokens = num(schema.FieldPath(p, "token_usage", "prompt")), num(schema.FieldPath(p, "token_usage", "completion"))
				mc.CachedTokens, mc.Reasoning = num(schema.FieldPath(p, "token_usage", "cached")), num(schema.FieldPath(p, "token_usage", "reasoning"))
				mc.CostMicroUSD = num(schema.FieldPath(p, "cost_microusd"))
				mc.UsageUnknown = schema.FieldPath(p, "token_usage") == nil
				mc.CostUnknown = schema.FieldPath(p, "cost_microusd") == nil
				if r, err := cas.ParseRef(text(schema.FieldPath(p, "failed_attempts_ref"))); err == nil {
					_ = cas.GetNode(context.Background(), c.cas, r, &mc.Retried)
				}
			}
			c.models[key] = mc
		}
		if call, ok := c.toolIn[in]; ok {
			tc := c.tool(call)
			tc.LatencyMS = lat
			if p, ok := schema.FieldPath(m, "payload").(*schema.Map); ok {
				if calls, ok := schema.FieldPath(p, "calls").([]schema.Value); ok {
					for _, sc := range calls {
						sm, _ := sc.(*schema.Map)
						tc.SubCalls = append(tc.SubCalls, text(schema.FieldPath(sm, "tool")))
					}
				}
			}
		}
	case world.KindState:
		if !demiurge.IsModule(text(schema.FieldPath(m, "reducer"))) || text(schema.FieldPath(m, "state")) == "" {
			return nil
		}
		chat := text(schema.FieldPath(m, "key"))
		ref, err := cas.ParseRef(text(schema.FieldPath(m, "state")))
		if err != nil {
			return nil
		}
		var st demiurge.StateView
		if err := cas.GetNode(context.Background(), c.cas, ref, &st); err != nil {
			return nil // the state blob is not in this store (a trimmed bundle)
		}
		unseen, n := st.Since(c.shown[chat])
		for _, e := range unseen {
			c.entry(chat, e)
		}
		c.shown[chat] = n
	}
	return nil
}

func (k modelKey) String() string {
	return fmt.Sprintf("%s/%d/%d/%v", k.chat, k.request, k.round, k.compact)
}

func (c *chatTrace) tool(call string) *toolCall {
	tc, ok := c.tools[call]
	if !ok {
		tc = &toolCall{CallID: call}
		c.tools[call] = tc
	}
	return tc
}

func (c *chatTrace) turn(chat string, e demiurge.Entry) *turnView {
	t := c.turnOf[modelKey{chat, e.RequestID, 0, false}]
	if t == nil {
		t = &turnView{Chat: chat, RequestID: e.RequestID, Time: time.Unix(0, int64(c.now)).UTC().Format("2006-01-02 15:04:05.000")}
		c.turnOf[modelKey{chat, e.RequestID, 0, false}] = t
		c.turns = append(c.turns, t)
	}
	for uint64(len(t.Rounds)) <= e.Round {
		t.Rounds = append(t.Rounds, &roundView{})
	}
	return t
}

func (c *chatTrace) entry(chat string, e demiurge.Entry) {
	t := c.turn(chat, e)
	r := t.Rounds[e.Round]
	switch e.Kind {
	case demiurge.EntryUser:
		t.User = e.Text
	case demiurge.EntryAssistant:
		t.Assistant = append(t.Assistant, e.Text)
	case demiurge.EntryToolCall:
		tc := c.tool(deref(e.CallID))
		tc.Tool, tc.Arguments, tc.Status = deref(e.Tool), e.Text, deref(e.Status)
		if call, err := demiurge.ToolCallOf(context.Background(), c.cas, e); err == nil {
			tc.Arguments = call.ArgumentsJSON // whole, where the entry keeps a preview
		}
		tc.Rejected, tc.Cut = tc.Status == "rejected", tc.Status == "cut"
		r.Calls = append(r.Calls, tc)
	case demiurge.EntryToolOutput:
		tc := c.tool(deref(e.CallID))
		tc.Status, tc.Output = deref(e.Status), e.Text
		if out, err := demiurge.ToolOutputOf(context.Background(), c.cas, e); err == nil {
			tc.Output = out
		}
	case demiurge.EntryNotice, demiurge.EntryCompact:
		t.Notices = append(t.Notices, e.Text)
	case demiurge.EntryStop:
		t.Stop = e.Text
		if t.Outcome == "" {
			t.Outcome = "stopped"
		}
	case demiurge.EntryError:
		t.Error, t.Outcome = e.Text, "failed"
	case demiurge.EntryDone:
		t.Done, t.Outcome = e.Text, doneOutcome(e)
	}
}

// doneOutcome is the outcome of a turn that ended with the model's reply
// (its done entry).
func doneOutcome(e demiurge.Entry) string {
	switch f := deref(e.Status); {
	case f == "refusal":
		return "refusal"
	case f == "length" || f == "content_filter" || strings.HasPrefix(f, "incomplete"):
		return "cut"
	}
	return "answer"
}

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

// finish attaches the model calls to their rounds.
func (c *chatTrace) finish() {
	for _, t := range c.turns {
		for round, r := range t.Rounds {
			r.Model = c.models[modelKey{t.Chat, t.RequestID, uint64(round), false}]
			r.Compaction = c.models[modelKey{t.Chat, t.RequestID, uint64(round), true}]
		}
	}
}

func (c *chatTrace) writeJSON(w io.Writer) error {
	for _, t := range c.turns {
		b, err := json.Marshal(t)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
			return err
		}
	}
	return nil
}

// cost returns the turn's cost and whether some of it is unknown.
func (t *turnView) cost() (microUSD uint64, unknown bool) {
	for _, r := range t.Rounds {
		for _, m := range []*modelCall{r.Compaction, r.Model} {
			if m != nil && m.Error == "" {
				microUSD += m.CostMicroUSD
				unknown = unknown || m.CostUnknown
			}
		}
	}
	return microUSD, unknown
}

// lastFinish is the finish reason of the turn's last model reply.
func (t *turnView) lastFinish() string {
	for i := len(t.Rounds) - 1; i >= 0; i-- {
		if m := t.Rounds[i].Model; m != nil {
			return m.Finish
		}
	}
	return ""
}

func (c *chatTrace) writeText(w io.Writer) error {
	var b strings.Builder
	var total uint64
	totalUnknown := false
	for i, t := range c.turns {
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
				b.WriteString(" (the answer is incomplete: " + finishText(t.lastFinish()) + ")")
			}
			b.WriteString("\n")
		}
		cost, unknown := t.cost()
		fmt.Fprintf(&b, "  turn cost: %s\n", costText(cost, unknown))
		total += cost
		totalUnknown = totalUnknown || unknown
	}
	if len(c.turns) > 1 {
		fmt.Fprintf(&b, "\nsession: %d turns, %s\n", len(c.turns), costText(total, totalUnknown))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
