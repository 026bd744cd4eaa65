package chatv1

import "github.com/demiurge-dev/demiurge/cas"

// The Go forms of the chat's AIR schemas (examples/demiurge). Option fields
// are pointers; nil encodes as null.

// Settings is demiurge/Settings@1.
type Settings struct {
	Provider        string   `cbor:"provider"`
	Model           string   `cbor:"model"`
	MaxTokens       uint64   `cbor:"max_tokens"`
	Temperature     *string  `cbor:"temperature"`
	Instructions    *string  `cbor:"instructions"`
	ReasoningEffort *string  `cbor:"reasoning_effort"`
	ToolsRef        *cas.Ref `cbor:"tools_ref"`
	ToolsAllow      []string `cbor:"tools_allow"`
	MaxRounds       uint64   `cbor:"max_rounds"`
	MaxRepeats      uint64   `cbor:"max_repeats"`
	TokenBudget     *uint64  `cbor:"token_budget"`
	OutputLimit     uint64   `cbor:"output_limit"`
}

// Defaults of the guards and limits.
const (
	DefaultMaxRounds   = 16
	DefaultMaxRepeats  = 3
	DefaultOutputLimit = 30000
)

// ChatCreated is demiurge/ChatCreated@1.
type ChatCreated struct {
	ChatID   string   `cbor:"chat_id"`
	Title    *string  `cbor:"title"`
	Settings Settings `cbor:"settings"`
}

// UserMessage is demiurge/UserMessage@1.
type UserMessage struct {
	ChatID     string    `cbor:"chat_id"`
	RequestID  uint64    `cbor:"request_id"`
	Text       string    `cbor:"text"`
	MessageRef cas.Ref   `cbor:"message_ref"`
	Settings   *Settings `cbor:"settings"`
}

// ToolChoice is sys/LlmToolChoice@1.
type ToolChoice struct {
	Tag   string `cbor:"$tag"`
	Value *struct {
		Name string `cbor:"name"`
	} `cbor:"$value,omitempty"`
}

// ChatRequest is demiurge/ChatRequest@1.
type ChatRequest struct {
	ChatID          string      `cbor:"chat_id"`
	RequestID       uint64      `cbor:"request_id"`
	Round           uint64      `cbor:"round"`
	Provider        string      `cbor:"provider"`
	Model           string      `cbor:"model"`
	MaxTokens       uint64      `cbor:"max_tokens"`
	Temperature     *string     `cbor:"temperature"`
	Instructions    *string     `cbor:"instructions"`
	ReasoningEffort *string     `cbor:"reasoning_effort"`
	MessageRefs     []cas.Ref   `cbor:"message_refs"`
	ToolsRef        *cas.Ref    `cbor:"tools_ref"`
	ToolChoice      *ToolChoice `cbor:"tool_choice"`
}

// TokenUsage is sys/LlmTokenUsage@1.
type TokenUsage struct {
	Prompt     uint64 `cbor:"prompt"`
	Completion uint64 `cbor:"completion"`
	Cached     uint64 `cbor:"cached"`
	Reasoning  uint64 `cbor:"reasoning"`
}

// LlmReceipt is the part of sys/LlmGenerateReceipt@1 the chat reads.
type LlmReceipt struct {
	OutputRef    cas.Ref    `cbor:"output_ref"`
	OutputText   string     `cbor:"output_text"`
	TokenUsage   TokenUsage `cbor:"token_usage"`
	CostMicroUSD uint64     `cbor:"cost_microusd"`
	Model        string     `cbor:"model"`
	FinishReason string     `cbor:"finish_reason"`
	ToolCallRefs []cas.Ref  `cbor:"tool_call_refs"`
}

// ChatResult is demiurge/ChatResult@1.
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
	EntryToolCall   = "tool_call"   // a call the model made (status: requested or rejected)
	EntryToolOutput = "tool_output" // a call's output (status: ok, error, denied, timeout, not_run)
	EntryStop       = "stop"        // a guard ended the turn
	EntryError      = "error"       // the model could not be reached
	EntryDone       = "done"        // the turn ended with the model's answer
)

// PendingCall is demiurge/PendingCall@1.
type PendingCall struct {
	CallID    string   `cbor:"call_id"`
	Tool      string   `cbor:"tool"`
	Signature string   `cbor:"signature"`
	Status    string   `cbor:"status"`
	OutputRef *cas.Ref `cbor:"output_ref"`
}

// Turn is demiurge/Turn@1: the user message being answered.
type Turn struct {
	RequestID uint64            `cbor:"request_id"`
	Round     uint64            `cbor:"round"`
	Tokens    uint64            `cbor:"tokens"`
	Calls     []PendingCall     `cbor:"calls"`
	Seen      map[string]uint64 `cbor:"seen"`
}

// State is demiurge/ChatState@1.
type State struct {
	Title      *string   `cbor:"title"`
	Settings   *Settings `cbor:"settings"`
	Transcript []cas.Ref `cbor:"transcript"`
	// Entries is the timeline of the chat's latest turn (after the stop
	// entries of the turn its message interrupted, if any): a new user
	// message drops the entries of earlier turns, so the state a step rewrites stays the
	// size of a turn however long the chat. Earlier states in the journal
	// hold the dropped ones.
	Entries []Entry `cbor:"entries"`
	// EntriesBase is how many entries were dropped: Entries[i] is entry
	// EntriesBase+i of the chat's whole timeline.
	EntriesBase   uint64     `cbor:"entries_base"`
	LastRequestID uint64     `cbor:"last_request_id"`
	Turn          *Turn      `cbor:"turn"`
	Usage         TokenUsage `cbor:"usage"`
	CostMicroUSD  uint64     `cbor:"cost_microusd"`
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
