package agent

import (
	"encoding/json"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
)

// An Event is something that happened in a turn, as Chat.Send streams it:
// a closed set of types, each of which marshals to JSON as an object whose
// "type" names it. Events other than TextDelta come from journal records
// and carry the journal seq of the step that wrote them (Seq), so a
// viewer can link them to `demiurge trace`.
type Event interface {
	// Type names the event in its JSON form ("tool_call_started", ...).
	Type() string
	event()
}

// TextDelta is a piece of the model's answer as it streams. It is not
// journaled: the round's whole text comes in Message (which a viewer
// that printed the deltas need not print again).
type TextDelta struct {
	Round uint64 `json:"round"`
	Text  string `json:"text"`
}

// Message is the user's message or the model's text of one round.
type Message struct {
	Seq   uint64 `json:"seq"`
	Round uint64 `json:"round"`
	// Role is "user" or "assistant".
	Role string   `json:"role"`
	Text string   `json:"text"`
	Ref  *cas.Ref `json:"ref,omitempty"` // the transcript item, in the store
}

// ToolCallStarted is a tool call the model made. Status is "requested"
// (it runs), "rejected" (it was refused before running: its
// ToolCallFinished says why), "cut" (the model's reply was cut off) or
// "not_run" (a guard ended the turn first).
type ToolCallStarted struct {
	Seq       uint64   `json:"seq"`
	Round     uint64   `json:"round"`
	CallID    string   `json:"call_id"`
	Tool      string   `json:"tool"`
	Arguments string   `json:"arguments"`     // a preview of the arguments' JSON
	Ref       *cas.Ref `json:"ref,omitempty"` // the call, in the store
	Status    string   `json:"status"`
}

// ToolCallFinished is a call's result, as the model reads it. Status is
// "ok", "error", "denied", "timeout" or "not_run".
type ToolCallFinished struct {
	Seq    uint64 `json:"seq"`
	Round  uint64 `json:"round"`
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	Status string `json:"status"`
	// Output is a preview of what the model reads (see Chat.Output for
	// the whole); Size is its length in bytes.
	Output string   `json:"output"`
	Size   int      `json:"size"`
	Ref    *cas.Ref `json:"ref,omitempty"`
	// Duration is the time from the step that requested the call to the
	// step that recorded its result (zero for a call answered at once);
	// in JSON, duration_ms (milliseconds, as every duration the command
	// line prints).
	Duration time.Duration `json:"-"`
}

// MarshalJSON writes the call with its Duration as duration_ms.
func (e ToolCallFinished) MarshalJSON() ([]byte, error) {
	type plain ToolCallFinished
	return json.Marshal(struct {
		plain
		DurationMS float64 `json:"duration_ms"`
	}{plain(e), float64(e.Duration) / float64(time.Millisecond)})
}

// ModelCall is a model call's usage and cost.
type ModelCall struct {
	Seq   uint64 `json:"seq"`
	Round uint64 `json:"round"`
	Usage Usage  `json:"usage"`
	// UsageUnknown is true when the provider reported no usage.
	UsageUnknown bool   `json:"usage_unknown"`
	CostMicroUSD uint64 `json:"cost_microusd"`
	// CostUnknown is true when the model's prices are not known.
	CostUnknown bool `json:"cost_unknown"`
}

// Usage counts tokens: Prompt the request's (input_tokens in JSON, as
// OpenAI's usage and OpenTelemetry name them), Cached those of them read
// from the provider's cache, Completion the answer's (output_tokens),
// Reasoning those of them spent reasoning.
type Usage struct {
	Prompt     uint64 `json:"input_tokens"`
	Completion uint64 `json:"output_tokens"`
	Cached     uint64 `json:"cached_tokens"`
	Reasoning  uint64 `json:"reasoning_tokens"`
}

// ApprovalRequested is a call that waits for the user's approval before
// it runs (its tool is in the chat's RequireApproval). Answer it with
// Chat.Decide, or let an approver (WithApprover) answer it.
type ApprovalRequested struct {
	Seq       uint64 `json:"seq"`
	Round     uint64 `json:"round"`
	RequestID uint64 `json:"request_id"`
	CallID    string `json:"call_id"`
	Tool      string `json:"tool"`
	// Arguments is the call's arguments, canonical JSON.
	Arguments string `json:"arguments"`
	// Deadline is when the call stops waiting and is denied, if the chat
	// has an approval timeout (ApprovalTimeout); zero otherwise.
	Deadline time.Time `json:"deadline,omitzero"`
}

// ApprovalDecided is the user's decision on a call that waited.
type ApprovalDecided struct {
	Seq uint64 `json:"seq"`
	// RequestID is the turn the call belongs to: an earlier one than the
	// stream's when a new message ended that turn while the call waited
	// (the chat answers it "not run", denied).
	RequestID uint64 `json:"request_id"`
	CallID    string `json:"call_id"`
	Tool      string `json:"tool"`
	Approved  bool   `json:"approved"`
	Reason    string `json:"reason,omitempty"`
	// TimedOut says the call waited longer than the chat's approval
	// timeout: it is denied (Approved false), whatever came later.
	TimedOut bool `json:"timed_out,omitempty"`
}

// Notice is something the user should know that does not end the turn.
type Notice struct {
	Seq  uint64 `json:"seq"`
	Text string `json:"text"`
}

// Compacted says the chat summarized the oldest part of its transcript.
type Compacted struct {
	Seq  uint64   `json:"seq"`
	Text string   `json:"text"`
	Ref  *cas.Ref `json:"ref,omitempty"` // the summary
}

// GuardStop says the turn was stopped before the model answered: by a
// guard (max_rounds, max_repeats, token_budget, the context window) or by
// the user (Chat.Stop, a cancelled context).
type GuardStop struct {
	Seq    uint64 `json:"seq"`
	Reason string `json:"reason"`
}

// TurnError is a failure that ends the turn: the model call failed (the
// provider's error, by class) or a plan failed.
type TurnError struct {
	Seq  uint64 `json:"seq"`
	Text string `json:"text"`
}

// Outcome is how a turn ended.
type Outcome string

// The outcomes of a turn.
const (
	OutcomeAnswer  Outcome = "answer"  // the model answered (a refusal is an answer)
	OutcomeFailed  Outcome = "failed"  // a failure ended it
	OutcomeStopped Outcome = "stopped" // a guard or the user stopped it
	OutcomeCut     Outcome = "cut"     // the answer was cut off (the output token limit, a content filter)
	// OutcomeAwaitingApproval: the turn waits for the user's decision on
	// calls (ApprovalRequested) and no approver answered; it goes on when
	// Chat.Decide answers, from this process or another, now or later.
	// A chat that awaits approval (AwaitApproval) ends a stream so only
	// when its ctx ends, or its loop breaks, while the turn waits.
	OutcomeAwaitingApproval Outcome = "awaiting_approval"
)

// TurnEnd is the last event of a turn, once its records are committed.
type TurnEnd struct {
	Seq       uint64  `json:"seq"`
	RequestID uint64  `json:"request_id"`
	Outcome   Outcome `json:"outcome"`
	// Finish is the model's finish reason when it answered ("stop",
	// "refusal", "length", "content_filter", ...).
	Finish string `json:"finish,omitempty"`
	// Summary is the turn's summary line ("2 rounds, 1200 tokens").
	Summary string `json:"summary,omitempty"`
	// Answer is the text of the model's last message in the turn, its
	// answer ("" if it said nothing, or the turn ended without one).
	Answer string `json:"answer,omitempty"`
	// Usage and CostMicroUSD are what the turn's model calls used, all
	// of them: those before a restart, or before the decision a Decide
	// stream began with, too.
	Usage        Usage  `json:"usage"`
	CostMicroUSD uint64 `json:"cost_microusd"`
	// UsageUnknown and CostUnknown count the turn's calls whose usage or
	// cost is not known.
	UsageUnknown uint64 `json:"calls_usage_unknown"`
	CostUnknown  uint64 `json:"calls_cost_unknown"`
}

func (TextDelta) Type() string         { return "text_delta" }
func (Message) Type() string           { return "message" }
func (ToolCallStarted) Type() string   { return "tool_call_started" }
func (ToolCallFinished) Type() string  { return "tool_call_finished" }
func (ModelCall) Type() string         { return "model_call" }
func (Notice) Type() string            { return "notice" }
func (ApprovalRequested) Type() string { return "approval_requested" }
func (ApprovalDecided) Type() string   { return "approval_decided" }
func (Compacted) Type() string         { return "compacted" }
func (GuardStop) Type() string         { return "guard_stop" }
func (TurnError) Type() string         { return "turn_error" }
func (TurnEnd) Type() string           { return "turn_end" }

func (TextDelta) event()         {}
func (Message) event()           {}
func (ToolCallStarted) event()   {}
func (ToolCallFinished) event()  {}
func (ModelCall) event()         {}
func (Notice) event()            {}
func (ApprovalRequested) event() {}
func (ApprovalDecided) event()   {}
func (Compacted) event()         {}
func (GuardStop) event()         {}
func (TurnError) event()         {}
func (TurnEnd) event()           {}

// MarshalEvent returns e as one JSON object: {"type": e.Type(), ...its
// fields}. It is the form of `demiurge run --json`.
func MarshalEvent(e Event) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	t, _ := json.Marshal(e.Type())
	out := append([]byte(`{"type":`), t...)
	if len(b) > 2 {
		out = append(out, ',')
	}
	return append(out, b[1:]...), nil
}
