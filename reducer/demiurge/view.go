package demiurge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/demiurge-dev/demiurge/cas"
)

// ToolCallOf returns the call a tool_call entry names: its arguments in
// full, where the entry's text may be a preview. Entries written before
// entries had refs have none; then their text is the whole.
func ToolCallOf(ctx context.Context, g cas.Getter, e Entry) (LlmToolCall, error) {
	tc := LlmToolCall{Name: deref(e.Tool), CallID: deref(e.CallID), ArgumentsJSON: e.Text}
	if e.Kind != EntryToolCall || e.Ref == nil {
		return tc, nil
	}
	if err := cas.GetNode(ctx, g, *e.Ref, &tc); err != nil {
		return tc, fmt.Errorf("tool call %s: %w", e.Ref.Short(), err)
	}
	return tc, nil
}

// ToolOutputOf returns the whole output a tool_output entry names (the
// function_call_output item at its ref), where the entry's text may be a
// preview. A text within EntryTextLimit is the whole (a preview is
// longer), and is returned as it is, without reading the item: a chat's
// state read as a newer module will take it up (ImportedView) names
// items that module has yet to write.
func ToolOutputOf(ctx context.Context, g cas.Getter, e Entry) (string, error) {
	if e.Kind != EntryToolOutput || e.Ref == nil || len(e.Text) <= EntryTextLimit {
		return e.Text, nil
	}
	b, err := g.Get(ctx, *e.Ref)
	if err != nil {
		return e.Text, fmt.Errorf("tool output %s: %w", e.Ref.Short(), err)
	}
	var it outputItem
	if err := json.Unmarshal(b, &it); err != nil {
		return e.Text, fmt.Errorf("tool output %s: %w", e.Ref.Short(), err)
	}
	return it.Output, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// StateView is what readers (the command line, trace) read of a chat's
// state: the same for demiurge/ChatState@3, @2 and @1 (a Chat@1 world's
// state decodes into it with UsageUnknown and CostUnknown 0; only @3
// counts cache writes, Usage.CacheWrite).
type StateView struct {
	Title         *string       `cbor:"title"`
	Settings      *SettingsView `cbor:"settings"`
	Entries       []Entry       `cbor:"entries"`
	EntriesBase   uint64        `cbor:"entries_base"`
	LastRequestID uint64        `cbor:"last_request_id"`
	Turn          *struct {
		RequestID uint64 `cbor:"request_id"`
		Round     uint64 `cbor:"round"`
		// Calls are the round's calls: Status is pending (running),
		// approval (waiting for the user), or how it ended.
		Calls []struct {
			CallID     string   `cbor:"call_id"`
			Tool       string   `cbor:"tool"`
			Status     string   `cbor:"status"`
			RequestRef *cas.Ref `cbor:"request_ref"`
			// DeadlineNS is when a call that waits for approval times
			// out (logical time, ns since the Unix epoch); 0 for none.
			DeadlineNS uint64 `cbor:"deadline_ns"`
		} `cbor:"calls"`
	} `cbor:"turn"`
	Usage        TokenUsage `cbor:"usage"`
	CostMicroUSD uint64     `cbor:"cost_microusd"`
	UsageUnknown uint64     `cbor:"usage_unknown"`
	CostUnknown  uint64     `cbor:"cost_unknown"`
	// Tokens is the chat's estimate of the next request's prompt (0 for
	// Chat@1).
	Tokens uint64 `cbor:"tokens"`
}

// SettingsView is what readers read of a chat's settings.
type SettingsView struct {
	Provider      string   `cbor:"provider"`
	Model         string   `cbor:"model"`
	ToolsRef      *cas.Ref `cbor:"tools_ref"`
	ContextWindow *uint64  `cbor:"context_window"`
}

// Since is State.Since for a view.
func (st *StateView) Since(n uint64) ([]Entry, uint64) {
	s := State{Entries: st.Entries, EntriesBase: st.EntriesBase}
	return s.Since(n)
}

// StopText is a guard's stop text as it is shown, in its stop entry and
// in the outputs of the calls it did not run (status not_run). The chat
// journals "the turn reached 1 model rounds" when max_rounds is 1, and
// keeps doing so (its state is replayed byte for byte, so the words of a
// recorded stop cannot change); shown, it reads "1 model round".
func StopText(text string) string {
	return strings.Replace(text, "reached 1 model rounds", "reached 1 model round", 1)
}
