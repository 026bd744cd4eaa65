package demiurge

import (
	"fmt"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cas/reflist"
)

// The Go forms of the chat's AIR schemas (examples/demiurge). Option fields
// are pointers; nil encodes as null.

// Settings is demiurge/Settings@2.
type Settings struct {
	Provider     string  `cbor:"provider"`
	Model        string  `cbor:"model"`
	MaxTokens    uint64  `cbor:"max_tokens"`
	Temperature  *string `cbor:"temperature"`
	Instructions *string `cbor:"instructions"`
	// InstructionsRef names a blob holding the system prompt (after
	// Instructions, if both are set): a long prompt is then named, not
	// written into every state and request.
	InstructionsRef *cas.Ref `cbor:"instructions_ref"`
	ReasoningEffort *string  `cbor:"reasoning_effort"`
	ToolsRef        *cas.Ref `cbor:"tools_ref"`
	ToolsAllow      []string `cbor:"tools_allow"`
	MaxRounds       uint64   `cbor:"max_rounds"`
	MaxRepeats      uint64   `cbor:"max_repeats"`
	TokenBudget     *uint64  `cbor:"token_budget"`
	OutputLimit     uint64   `cbor:"output_limit"`
	// ToolChoice is sent with every round; Required and Tool apply to a
	// turn's first round only, then Auto (so that a model made to call a
	// tool can answer after it). Nil means Auto when there are tools.
	ToolChoice *ToolChoice `cbor:"tool_choice"`
	// ContextWindow is the model's window in tokens (the model table's,
	// written by the caller); nil or 0 turns the window's checks off.
	ContextWindow *uint64 `cbor:"context_window"`
	// CompactAt is the share of the window, in percent, past which the
	// next request is not sent as it is (default DefaultCompactAt).
	CompactAt *uint64 `cbor:"compact_at"`
	// OnOverflow is what happens then: "compact" (the default: a model
	// call summarizes the oldest part of the transcript) or "fail" (the
	// turn ends, saying so).
	OnOverflow *string `cbor:"on_overflow"`
	// RequireApproval names the tools whose calls wait for the user's
	// approval (an ApprovalDecision) before they run; "*" names every
	// tool. It is left out of the state when empty (as RequestRef is), so
	// that worlds whose AIR predates approvals still replay: an optional
	// field added to a record, not a new version of it.
	RequireApproval []string `cbor:"require_approval,omitempty"`
	// ApprovalTimeoutMS, if not zero, is how long a call waits for the
	// user's approval: a decision that comes later (by the world's logical
	// time), or the host's timeout (ApprovalDecision.Timeout), denies it.
	// Left out of the state when zero, as RequireApproval is.
	ApprovalTimeoutMS uint64 `cbor:"approval_timeout_ms,omitempty"`
	// ItemBytes, if not zero, is the most of one transcript item that a
	// model call is sent: the model adapter sends a longer one cut, with a
	// note of its size (llm.Config.MaxItemBytes). The estimate of the next
	// request (State.Tokens) then counts no more of a user message or a
	// tool output than that, as the request holds no more; a chat that
	// gets it, or a new value, counts its estimate again from the
	// transcript. Without it a message sent cut counted whole, and one over
	// the window kept every later request from being sent. Left out of the
	// state when zero, as RequireApproval is.
	ItemBytes uint64 `cbor:"item_bytes,omitempty"`
	// ToolPromptTokens is what the provider adds to a request that
	// carries tools, which no byte of the request shows (Anthropic's
	// tool-use system prompt, a few hundred tokens: llm.ToolPromptTokens):
	// the estimate of the next request (State.Tokens) counts it with the
	// tools, from the chat's first call on. Without it the first call's
	// estimate fell that much short of what the provider counted (the
	// later ones start from the provider's count, which has it). Left
	// out of the state when zero, as RequireApproval is.
	ToolPromptTokens uint64 `cbor:"tool_prompt_tokens,omitempty"`
}

// Defaults of the guards and limits.
const (
	DefaultMaxRounds   = 16
	DefaultMaxRepeats  = 3
	DefaultOutputLimit = 30000
	// DefaultCompactAt is the share of the window (percent) a request may
	// fill before the chat compacts.
	DefaultCompactAt = 80
	// KeepShare is the share of the window (percent) the rounds kept
	// whole by a compaction may fill at most.
	KeepShare = 30
)

// ChatCreated is demiurge/ChatCreated@2.
type ChatCreated struct {
	ChatID   string   `cbor:"chat_id"`
	Title    *string  `cbor:"title"`
	Settings Settings `cbor:"settings"`
}

// UserMessage is demiurge/UserMessage@2.
type UserMessage struct {
	ChatID     string    `cbor:"chat_id"`
	RequestID  uint64    `cbor:"request_id"`
	Text       string    `cbor:"text"`
	MessageRef cas.Ref   `cbor:"message_ref"`
	Settings   *Settings `cbor:"settings"`
	// ToolChoice, if set, is the tool choice of this turn's first round.
	ToolChoice *ToolChoice `cbor:"tool_choice"`
}

// ApprovalDecision is demiurge/ApprovalDecision@1: the user approves or
// denies a call that waits for approval.
type ApprovalDecision struct {
	ChatID    string `cbor:"chat_id"`
	RequestID uint64 `cbor:"request_id"`
	CallID    string `cbor:"call_id"`
	Approve   bool   `cbor:"approve"`
	Reason    string `cbor:"reason"`
	// Timeout marks the decision a host sends when the call's deadline
	// has passed (PendingCall.DeadlineNS): it denies the call as timed out
	// if the world's logical time has reached the deadline, and changes
	// nothing before. Left out when false.
	Timeout bool `cbor:"timeout,omitempty"`
}

// ChatImport is demiurge/ChatImport@1: the chat of an older chat module
// (Module, whose newest state of the chat is State) goes on under this
// one, in a world whose manifest changed to it.
type ChatImport struct {
	ChatID string  `cbor:"chat_id"`
	Module string  `cbor:"module"`
	State  cas.Ref `cbor:"state"`
}

// StopRequest is demiurge/StopRequest@1: the user stops the turn of
// RequestID (if it is still running) for Reason.
type StopRequest struct {
	ChatID    string `cbor:"chat_id"`
	RequestID uint64 `cbor:"request_id"`
	Reason    string `cbor:"reason"`
}

// CompactRequest is demiurge/CompactRequest@1: the user asks the chat to
// compact its transcript now.
type CompactRequest struct {
	ChatID    string `cbor:"chat_id"`
	RequestID uint64 `cbor:"request_id"`
}

// ToolChoice is sys/LlmToolChoice@1.
type ToolChoice struct {
	Tag   string `cbor:"$tag"`
	Value *struct {
		Name string `cbor:"name"`
	} `cbor:"$value,omitempty"`
}

// Transcript is sys/LlmTranscript@1: the messages a model call is sent,
// Prefix ++ Refs[From:To] ++ Suffix (To nil: to the end).
type Transcript struct {
	Refs   reflist.List `cbor:"refs"`
	From   uint64       `cbor:"from"`
	To     *uint64      `cbor:"to"`
	Prefix []cas.Ref    `cbor:"prefix"`
	Suffix []cas.Ref    `cbor:"suffix"`
}

// Purposes of a ChatRequest.
const (
	PurposeAnswer  = "answer"  // the model answers the turn
	PurposeCompact = "compact" // the model summarizes the oldest part of the transcript
)

// ChatRequest is demiurge/ChatRequest@2.
type ChatRequest struct {
	ChatID          string      `cbor:"chat_id"`
	RequestID       uint64      `cbor:"request_id"`
	Round           uint64      `cbor:"round"`
	Purpose         string      `cbor:"purpose"`
	Provider        string      `cbor:"provider"`
	Model           string      `cbor:"model"`
	MaxTokens       uint64      `cbor:"max_tokens"`
	Temperature     *string     `cbor:"temperature"`
	Instructions    *string     `cbor:"instructions"`
	InstructionsRef *cas.Ref    `cbor:"instructions_ref"`
	ReasoningEffort *string     `cbor:"reasoning_effort"`
	Transcript      Transcript  `cbor:"transcript"`
	ToolsRef        *cas.Ref    `cbor:"tools_ref"`
	ToolChoice      *ToolChoice `cbor:"tool_choice"`
}

// TokenUsage counts tokens: a model call's, as its receipt says, or a
// chat's, summed. It is the Go form of two schemas, and encodes as the
// one V2 says:
//
//   - sys/LlmTokenUsage@1 {prompt, completion, cached, reasoning}: the
//     usage of @1 and @2 receipts, and of the state of Chat@2 and Chat@1
//     worlds (which count no cache writes apart: they are in prompt);
//   - sys/LlmTokenUsage@2 {input, output, cache_read, cache_write,
//     reasoning} (V2): the usage of @3 receipts and of Chat@3's state.
//
// Whichever it is, Prompt counts every input token (cache reads and writes
// included), Completion every output token (reasoning included), and
// Cached, CacheWrite and Reasoning are their parts. A value decodes as the
// schema its fields say.
type TokenUsage struct {
	Prompt     uint64
	Completion uint64
	Cached     uint64
	CacheWrite uint64
	Reasoning  uint64
	// V2 says it is a sys/LlmTokenUsage@2.
	V2 bool
}

// tokenUsageV1 and tokenUsageV2 are the encoded forms of TokenUsage.
type tokenUsageV1 struct {
	Prompt     uint64 `cbor:"prompt"`
	Completion uint64 `cbor:"completion"`
	Cached     uint64 `cbor:"cached"`
	Reasoning  uint64 `cbor:"reasoning"`
}

type tokenUsageV2 struct {
	Input      uint64 `cbor:"input"`
	Output     uint64 `cbor:"output"`
	CacheRead  uint64 `cbor:"cache_read"`
	CacheWrite uint64 `cbor:"cache_write"`
	Reasoning  uint64 `cbor:"reasoning"`
}

// tokenUsageAny decodes either form: which fields are there says which.
type tokenUsageAny struct {
	Prompt     uint64  `cbor:"prompt"`
	Completion uint64  `cbor:"completion"`
	Cached     uint64  `cbor:"cached"`
	Input      *uint64 `cbor:"input"`
	Output     uint64  `cbor:"output"`
	CacheRead  uint64  `cbor:"cache_read"`
	CacheWrite uint64  `cbor:"cache_write"`
	Reasoning  uint64  `cbor:"reasoning"`
}

// MarshalCBOR encodes u as sys/LlmTokenUsage@2 if u.V2, else as @1, which
// has no place for cache writes: a V1 usage that counts some is an error
// (it would lose them).
func (u TokenUsage) MarshalCBOR() ([]byte, error) {
	if u.V2 {
		return cas.MarshalBody(tokenUsageV2{Input: u.Prompt, Output: u.Completion, CacheRead: u.Cached, CacheWrite: u.CacheWrite, Reasoning: u.Reasoning})
	}
	if u.CacheWrite != 0 {
		return nil, fmt.Errorf("chat: %d tokens written to the cache cannot be counted in a sys/LlmTokenUsage@1", u.CacheWrite)
	}
	return cas.MarshalBody(tokenUsageV1{Prompt: u.Prompt, Completion: u.Completion, Cached: u.Cached, Reasoning: u.Reasoning})
}

// UnmarshalCBOR decodes a sys/LlmTokenUsage@2 (it has "input") or @1.
func (u *TokenUsage) UnmarshalCBOR(b []byte) error {
	var v tokenUsageAny
	if err := cas.Unmarshal(b, &v); err != nil {
		return err
	}
	if v.Input != nil {
		*u = TokenUsage{Prompt: *v.Input, Completion: v.Output, Cached: v.CacheRead, CacheWrite: v.CacheWrite, Reasoning: v.Reasoning, V2: true}
		return nil
	}
	*u = TokenUsage{Prompt: v.Prompt, Completion: v.Completion, Cached: v.Cached, Reasoning: v.Reasoning}
	return nil
}

// LlmReceipt is the part of a model call's receipt the chat reads, of
// sys/LlmGenerateReceipt@3 (Chat@3) or @2 (Chat@2). TokenUsage and
// CostMicroUSD are nil when the receipt says they are unknown.
type LlmReceipt struct {
	OutputRef    cas.Ref     `cbor:"output_ref"`
	OutputText   string      `cbor:"output_text"`
	TokenUsage   *TokenUsage `cbor:"token_usage"`
	CostMicroUSD *uint64     `cbor:"cost_microusd"`
	Model        string      `cbor:"model"`
	FinishReason string      `cbor:"finish_reason"`
	ToolCallRefs []cas.Ref   `cbor:"tool_call_refs"`
}

// ChatResult is demiurge/ChatResult@3 (the receipt a
// sys/LlmGenerateReceipt@3) or @2 (an @2 receipt).
type ChatResult struct {
	ChatID    string     `cbor:"chat_id"`
	RequestID uint64     `cbor:"request_id"`
	Round     uint64     `cbor:"round"`
	Receipt   LlmReceipt `cbor:"receipt"`
}

// LlmToolCall is sys/LlmToolCall@1.
type LlmToolCall struct {
	CallID        string `cbor:"call_id"`
	Name          string `cbor:"name"`
	ArgumentsJSON string `cbor:"arguments_json"`
}

// ToolCallRequested is demiurge/ToolCallRequested@1.
type ToolCallRequested struct {
	ChatID        string  `cbor:"chat_id"`
	RequestID     uint64  `cbor:"request_id"`
	Round         uint64  `cbor:"round"`
	CallID        string  `cbor:"call_id"`
	Tool          string  `cbor:"tool"`
	Family        string  `cbor:"family"`
	ArgumentsJSON string  `cbor:"arguments_json"`
	Script        string  `cbor:"script"`
	TimeoutMS     *uint64 `cbor:"timeout_ms"`
	Server        string  `cbor:"server"`
	ServerTool    string  `cbor:"server_tool"`
}

// WorkspaceCommit is sys/WorkspaceCommit@1.
type WorkspaceCommit struct {
	Workspace    string  `cbor:"workspace"`
	ExpectedHead *uint64 `cbor:"expected_head"`
	Meta         struct {
		RootHash  string `cbor:"root_hash"`
		Owner     string `cbor:"owner"`
		CreatedAt int64  `cbor:"created_at"`
	} `cbor:"meta"`
}

// ToolResponse is sys/ToolResponse@1.
type ToolResponse struct {
	Stdout          string            `cbor:"stdout"`
	Stderr          string            `cbor:"stderr"`
	ExitCode        int64             `cbor:"exit_code"`
	Error           *string           `cbor:"error"`
	StdoutTruncated bool              `cbor:"stdout_truncated"`
	StderrTruncated bool              `cbor:"stderr_truncated"`
	Commits         []WorkspaceCommit `cbor:"commits"`
}

// ToolResult is demiurge/ToolResult@1.
type ToolResult struct {
	ChatID    string       `cbor:"chat_id"`
	RequestID uint64       `cbor:"request_id"`
	Round     uint64       `cbor:"round"`
	CallID    string       `cbor:"call_id"`
	Response  ToolResponse `cbor:"response"`
}

// PlanEnded is sys/PlanEnded@1.
type PlanEnded struct {
	Plan   string `cbor:"plan"`
	PlanID uint64 `cbor:"plan_id"`
	Status string `cbor:"status"`
	Error  *struct {
		Step    string `cbor:"step"`
		Code    string `cbor:"code"`
		Message string `cbor:"message"`
	} `cbor:"error"`
	Input []byte `cbor:"input"`
}

// Entry is demiurge/Entry@1: one line of the chat's timeline.
type Entry struct {
	RequestID uint64   `cbor:"request_id"`
	Round     uint64   `cbor:"round"`
	Kind      string   `cbor:"kind"`
	Text      string   `cbor:"text"`
	Ref       *cas.Ref `cbor:"ref"`
	CallID    *string  `cbor:"call_id"`
	Tool      *string  `cbor:"tool"`
	Status    *string  `cbor:"status"`
}

// Entry kinds.
const (
	EntryUser       = "user"        // the user's message
	EntryAssistant  = "assistant"   // the model's text
	EntryToolCall   = "tool_call"   // a call the model made (status: requested, rejected, not_run, or cut: its reply was cut off)
	EntryToolOutput = "tool_output" // a call's output (status: ok, error, denied, timeout, not_run)
	EntryStop       = "stop"        // a guard ended the turn
	EntryError      = "error"       // the model call failed (the provider's error, by class)
	EntryDone       = "done"        // the turn ended with the model's answer (status: its finish reason: stop, refusal, length, content_filter, …)
	EntryNotice     = "notice"      // something the user should know that does not end the turn
	EntryCompact    = "compact"     // the chat compacted its transcript (ref: the summary)
	EntryApproval   = "approval"    // the user approved or denied a call (status: approved, denied; text: the reason)
)

// PendingCall is demiurge/PendingCall@1.
type PendingCall struct {
	CallID    string   `cbor:"call_id"`
	Tool      string   `cbor:"tool"`
	Signature string   `cbor:"signature"`
	Status    string   `cbor:"status"`
	OutputRef *cas.Ref `cbor:"output_ref"`
	// RequestRef names the ToolCallRequested of a call that waits for the
	// user's approval (status "approval"): what runs once approved.
	RequestRef *cas.Ref `cbor:"request_ref,omitempty"`
	// DeadlineNS is when a call that waits for approval times out, on the
	// world's logical clock (nanoseconds since the Unix epoch): the time
	// it began to wait plus Settings.ApprovalTimeoutMS. Zero (and left
	// out) when the chat sets no timeout.
	DeadlineNS uint64 `cbor:"deadline_ns,omitempty"`
}

// Turn kinds.
const (
	TurnAnswer  = "answer"  // the model answers a user message
	TurnCompact = "compact" // the user asked for a compaction, nothing more
)

// RecentCalls is how many of a turn's latest calls the repeat guard
// remembers.
const RecentCalls = 32

// Turn is demiurge/Turn@2: the user message (or compaction) being
// answered.
type Turn struct {
	RequestID uint64        `cbor:"request_id"`
	Round     uint64        `cbor:"round"`
	Kind      string        `cbor:"kind"`
	Tokens    uint64        `cbor:"tokens"`
	Calls     []PendingCall `cbor:"calls"`
	// Recent are the signatures of the turn's latest calls (at most
	// RecentCalls), oldest first: the repeat guard counts a call's
	// repeats among them.
	Recent []string `cbor:"recent"`
	// ToolChoice is the tool choice of the turn's first round, if the
	// message set one.
	ToolChoice *ToolChoice `cbor:"tool_choice"`
	// Compacting is where the compaction under way cuts the transcript
	// (the items before it go into the summary); nil when none is.
	Compacting *uint64 `cbor:"compacting"`
}

// RoundMark is demiurge/RoundMark@1: where a round began in the
// transcript, and the estimated tokens of a request up to there.
type RoundMark struct {
	Index  uint64 `cbor:"index"`
	Tokens uint64 `cbor:"tokens"`
}

// Marks is how many round marks the chat keeps: a compaction keeps at
// most this many of the latest rounds whole.
const Marks = 16

// EntriesKept bounds the chat state's timeline: past it, the oldest
// entries leave the state (earlier states in the journal keep them).
const EntriesKept = 4

// State is demiurge/ChatState@3, or @2 in a Chat@2 world: they differ
// in Usage only (see TokenUsage). Everything in it is bounded, however
// long the chat: the transcript is a reflist (its root), the timeline the
// latest entries, the round marks the latest rounds.
type State struct {
	Title    *string   `cbor:"title"`
	Settings *Settings `cbor:"settings"`
	// Transcript holds every message, output and tool output of the chat,
	// in order; what a request sends is Summary (if any) and
	// Transcript[From:].
	Transcript reflist.List `cbor:"transcript"`
	From       uint64       `cbor:"from"`
	Summary    *cas.Ref     `cbor:"summary"`
	// Entries is the latest part of the chat's timeline (of the latest
	// turn, and at most EntriesKept); EntriesBase is how many entries came
	// before it: Entries[i] is entry EntriesBase+i of the chat's whole
	// timeline.
	Entries       []Entry    `cbor:"entries"`
	EntriesBase   uint64     `cbor:"entries_base"`
	LastRequestID uint64     `cbor:"last_request_id"`
	Turn          *Turn      `cbor:"turn"`
	Usage         TokenUsage `cbor:"usage"`
	CostMicroUSD  uint64     `cbor:"cost_microusd"`
	// UsageUnknown and CostUnknown count the model calls whose usage, or
	// cost, is unknown (Usage and CostMicroUSD leave them out).
	UsageUnknown uint64 `cbor:"usage_unknown"`
	CostUnknown  uint64 `cbor:"cost_unknown"`
	// Tokens estimates the next request's prompt: the last call's usage
	// (prompt and output), and about a token for every 4 bytes of what was
	// added since; OverheadTokens the instructions' and tools' share.
	Tokens         uint64 `cbor:"tokens"`
	OverheadTokens uint64 `cbor:"overhead_tokens"`
	// Marks are where the latest rounds began (at most Marks).
	Marks []RoundMark `cbor:"marks"`
}

// Since returns the entries of the chat's timeline from entry n on (n
// counts every entry since the chat began) that st still holds, and the
// number of entries the timeline has: the n to pass next time. A reader
// that follows the chat's states in journal order and prints Since(seen)
// prints every entry once.
func (st *State) Since(n uint64) ([]Entry, uint64) {
	end := st.EntriesBase + uint64(len(st.Entries))
	if n >= end {
		return nil, end
	}
	if n < st.EntriesBase {
		n = st.EntriesBase
	}
	return st.Entries[n-st.EntriesBase:], end
}
