// Package session reads an agent world's sessions out of its journal:
// the turns of each chat, the model calls of each round (tokens, latency,
// cost, retried attempts), the tool calls the model made (arguments,
// results, errors, durations, the commands of a bash script) and the
// guards that stopped turns. It is what `demiurge trace` shows of an agent
// world, and its JSON form (one object a turn) is `trace --json`; package
// otlp below it writes the turns as OpenTelemetry spans (`trace --otlp`).
package session

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
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools/workspace"
	"github.com/demiurge-dev/demiurge/tools/workspace/history"
	"github.com/demiurge-dev/demiurge/world"
)

type key struct {
	chat           string
	request, round uint64
	compact        bool // a compaction call (Chat@2), not the round's answer
}

// ModelCall is one model call of a round: the answer's model, latency,
// tokens, cost and finish reason, or its error.
type ModelCall struct {
	Round uint64 `json:"round"`
	// Seq is the seq of the call's receipt in the journal.
	Seq uint64 `json:"seq,omitempty"`
	// Provider and RequestModel are what the call asked for (the
	// intent's params): the wire protocol ("openai-responses",
	// "openai-chat"; "" for the adapter's default) and the model. Model
	// is the model that answered.
	Provider     string `json:"provider,omitempty"`
	RequestModel string `json:"request_model,omitempty"`
	// ProviderName names who served the call ("openai", "openrouter",
	// "deepseek"), as a sys/LlmGenerateReceipt@3 says; "" if the receipt
	// does not say (@1 and @2 receipts, a server demiurge does not know).
	ProviderName string  `json:"provider_name,omitempty"`
	Model        string  `json:"model,omitempty"`
	ResponseID   string  `json:"response_id,omitempty"` // the provider's id of the response
	LatencyMS    float64 `json:"duration_ms"`
	// InputTokens counts the request's tokens, cache reads and writes
	// included; CachedTokens those read from the cache, CacheWriteTokens
	// those written to it. OutputTokens counts the answer's, Reasoning
	// included.
	InputTokens      uint64 `json:"input_tokens"`
	CachedTokens     uint64 `json:"cached_tokens"`
	CacheWriteTokens uint64 `json:"cache_write_tokens,omitempty"`
	OutputTokens     uint64 `json:"output_tokens"`
	Reasoning        uint64 `json:"reasoning_tokens"`
	CostMicroUSD     uint64 `json:"cost_microusd"`
	// CostSource says where a known cost came from ("reported by the
	// provider (usage.cost)", "gpt-5.2 at the price of catwalk"); "" for
	// @1 and @2 receipts, which do not say.
	CostSource string `json:"cost_source,omitempty"`
	// UsageUnknown: the provider reported no usage (the token counts are
	// 0); CostUnknown: the model has no price, or its usage is unknown.
	UsageUnknown bool   `json:"usage_unknown,omitempty"`
	CostUnknown  bool   `json:"cost_unknown,omitempty"`
	Finish       string `json:"finish_reason,omitempty"`
	// Status is the receipt's status: ok, error or timeout.
	Status string `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
	// Retried are the attempts that failed before the one that answered.
	Retried []llm.FailedAttempt `json:"retried,omitempty"`
	// StartNS and EndNS are the ingress stamps (Unix nanoseconds) of the
	// input whose step asked for the call and of its receipt.
	StartNS uint64 `json:"start_ns,omitempty"`
	EndNS   uint64 `json:"end_ns,omitempty"`
	// Resumed: the world was forked or opened again while the call
	// waited for its receipt (a Fork or Manifest record lies between),
	// so it was dispatched again, at a time the journal does not record.
	// LatencyMS then runs from the first request and counts the time the
	// world sat idle, not how long the call took.
	Resumed bool `json:"resumed,omitempty"`
}

// ToolCall is one tool call the model made, and what came of it.
type ToolCall struct {
	CallID    string   `json:"call_id"`
	Tool      string   `json:"tool"`
	Arguments string   `json:"arguments"`
	Status    string   `json:"status"`             // the output's status: ok, error, denied, timeout, not_run (or requested)
	Rejected  bool     `json:"rejected,omitempty"` // refused before running (unknown tool, bad arguments)
	Cut       bool     `json:"cut,omitempty"`      // not run: the model's reply was cut off before it was complete
	Output    string   `json:"output,omitempty"`
	LatencyMS float64  `json:"duration_ms,omitempty"`
	SubCalls  []string `json:"sub_calls,omitempty"`
	// Seq is the seq of the call's receipt in the journal (0 for a call
	// that never ran).
	Seq uint64 `json:"seq,omitempty"`
	// Commands are the tool calls a bash script made, one a command, in
	// the order they ran (SubCalls holds their names).
	Commands []Command `json:"commands,omitempty"`
	// Commits are the workspace versions the call made, with what each
	// changed.
	Commits []Commit `json:"commits,omitempty"`
	// Approval is what the user said of a call that needed approval:
	// waiting (no answer yet), approved, denied (with ApprovalReason) or
	// "timed out" (denied: nobody answered within the chat's approval
	// timeout).
	Approval       string `json:"approval,omitempty"`
	ApprovalReason string `json:"approval_reason,omitempty"`
	// StartNS is the ingress stamp (Unix nanoseconds) of the input whose
	// step dispatched the call, or, for a call that never ran, of the one
	// whose step recorded it; EndNS that of its receipt, or of the step
	// that recorded its output (0 while it has none).
	StartNS uint64 `json:"start_ns,omitempty"`
	EndNS   uint64 `json:"end_ns,omitempty"`
	// Resumed is ModelCall.Resumed: LatencyMS counts an idle world too.
	Resumed bool `json:"resumed,omitempty"`
}

// Command is one command of a bash script: a tool call made inside it.
type Command struct {
	Tool       string  `json:"tool"`
	Arguments  string  `json:"arguments"`
	ExitCode   int64   `json:"exit_code"`
	Error      string  `json:"error,omitempty"`
	DurationMS float64 `json:"duration_ms"`
}

// Commit is one workspace version a tool call made: the roots of the
// workspace's tree before and after it (refs in the CAS), and the paths
// that changed between them.
type Commit struct {
	Workspace string `json:"workspace"`
	Version   uint64 `json:"version"`
	From      string `json:"from"`
	To        string `json:"to"`
	// Changes are the paths the commit added, removed or changed, in walk
	// order; nil if the trees could not be read (ChangesError says why).
	Changes      []Change `json:"changes"`
	ChangesError string   `json:"changes_error,omitempty"`
}

// Change is a path a commit changed, with its entry's hash before and
// after ("" where the path is absent).
type Change struct {
	Path   string `json:"path"`
	Change string `json:"change"` // added, removed or changed
	Kind   string `json:"kind"`   // file, dir, or symlink
	Old    string `json:"old,omitempty"`
	New    string `json:"new,omitempty"`
}

// Turn is one turn of a chat: the user's message, its rounds, the
// assistant's text and how it ended.
type Turn struct {
	Chat      string `json:"chat"`
	RequestID uint64 `json:"request_id"`
	// Seq is the seq of the input that started the turn, and Hash the
	// hash of its record (which chains over every record before it).
	Seq  uint64 `json:"seq,omitempty"`
	Hash string `json:"hash,omitempty"`
	// Time is when the turn started (StartNS), RFC 3339 in UTC; When
	// says it for people.
	Time   string   `json:"time"`
	User   string   `json:"user"`
	Rounds []*Round `json:"rounds"`
	// Assistant are the texts of every round's reply, in order: each
	// round has its own (Round.Assistant).
	Assistant []string `json:"assistant,omitempty"`
	Notices   []string `json:"notices,omitempty"`
	Stop      string   `json:"stop,omitempty"`
	Error     string   `json:"error,omitempty"`
	Done      string   `json:"done,omitempty"`
	// Outcome is how the turn ended: answer, refusal, cut (the answer
	// was cut by the token limit or a filter), failed, stopped (a
	// guard), or "" while it runs.
	Outcome string `json:"outcome,omitempty"`
	// StartNS is the ingress stamp (Unix nanoseconds) of the input that
	// started the turn (Time is the same, for people); EndNS that of the
	// input whose step ended it, 0 while it runs.
	StartNS uint64 `json:"start_ns,omitempty"`
	EndNS   uint64 `json:"end_ns,omitempty"`
}

// Round is one model call of a turn and the tool calls it made.
type Round struct {
	// Compaction is the call that compacted the transcript before the
	// round's request, if one did.
	Compaction *ModelCall `json:"compaction,omitempty"`
	Model      *ModelCall `json:"model,omitempty"`
	// Assistant are the texts of the round's reply (the model may say
	// something before its tool calls, and says its answer in the last
	// round), in order.
	Assistant []string    `json:"assistant,omitempty"`
	Calls     []*ToolCall `json:"tool_calls,omitempty"`
}

// Reader reads an agent world's records, in journal order, into turns.
type Reader struct {
	cas        cas.Getter
	now        uint64 // wall time of the input being read
	lastReq    []key
	pendCalls  []callKey
	modelIn    map[string]string
	keys       map[string]key
	toolIn     map[string]callKey
	started    map[string]uint64
	opened     map[string]int       // intent → reopens read before it
	reopens    int                  // Fork and Manifest records read: the world was forked or opened again
	asked      map[string][2]string // llm intent → the provider and model of its params
	models     map[key]*ModelCall
	tools      map[callKey]*ToolCall
	shown      map[string]uint64 // entries of each chat's timeline seen (see demiurge.StateView.Since)
	turns      []*Turn
	turnOf     map[key]*Turn // (chat, request, 0) → turn
	chatEvents bool
	inputSeq   uint64                        // seq of the input being read
	inputHash  cas.Ref                       // hash of its record
	versions   map[string]map[uint64]cas.Ref // workspace → version → root
	chatAIR    bool                          // the manifest last recorded has the chat reducer
	forks      []Fork
	// toolPlans are the plans a tool call starts (the manifest's triggers
	// of demiurge.ToolRequestSchema); planCall is the call each tool plan
	// instance runs, by plan id: its intents are that call's, whatever
	// their kind (a bash script's commands run inside its one intent).
	toolPlans map[string]bool
	planCall  map[uint64]callKey
}

// defaultToolPlans are the tool plans of the chat's manifests, for a
// journal whose manifest cannot be read (a trimmed bundle).
var defaultToolPlans = map[string]bool{demiurge.ToolPlan: true, "demiurge/tool_plan@1": true}

// Fork is where a forked world's records stop being those of the world it
// was forked from (see world.Fork). The Fork record itself, at Seq, is
// the forked world's first record of its own.
type Fork struct {
	world.ForkOrigin
	// Turns counts the turns read before it: they began in the other
	// world.
	Turns int
	// Open are those of them that had not ended at the fork (it was made
	// mid-turn): the rest of each is the forked world's, not a crash's
	// leftover.
	Open []*Turn
}

// NewReader returns a reader of sessions whose blobs g holds.
func NewReader(g cas.Getter) *Reader {
	return &Reader{cas: g, modelIn: map[string]string{}, toolIn: map[string]callKey{}, started: map[string]uint64{},
		models: map[key]*ModelCall{}, tools: map[callKey]*ToolCall{}, shown: map[string]uint64{}, turnOf: map[key]*Turn{},
		keys: map[string]key{}, versions: map[string]map[uint64]cas.Ref{}, asked: map[string][2]string{}, opened: map[string]int{},
		toolPlans: defaultToolPlans, planCall: map[uint64]callKey{}}
}

func text(v schema.Value) string { s, _ := v.(string); return s }
func num(v schema.Value) uint64  { n, _ := v.(uint64); return n }
func ms(d uint64) float64        { return float64(d) / 1e6 }

// Record reads one record of the world, in journal order.
func (c *Reader) Record(r journal.Record) error {
	v, err := schema.Decode(r.Payload)
	if err != nil {
		return nil
	}
	m, _ := v.(*schema.Map)
	switch r.Kind {
	case world.KindEvent, world.KindReceipt:
		c.now = num(schema.FieldPath(m, "stamp", "now"))
		c.inputSeq, c.inputHash = r.Seq, r.Hash
	}
	switch r.Kind {
	case world.KindManifest, world.KindFork:
		// A world records a manifest only when it is opened (and its
		// manifest changed), and a fork is a world opened anew: the
		// effects pending then are dispatched again.
		c.reopens++
	}
	switch r.Kind {
	case world.KindManifest:
		c.chatAIR = false
		if ref, err := cas.ParseRef(text(schema.FieldPath(m, "manifest"))); err == nil {
			var man struct {
				Modules []struct {
					Name string `cbor:"name"`
				} `cbor:"modules"`
				Triggers []struct {
					Event string `cbor:"event"`
					Plan  string `cbor:"plan"`
				} `cbor:"triggers"`
			}
			if cas.GetNode(context.Background(), c.cas, ref, &man) == nil {
				for _, mod := range man.Modules {
					c.chatAIR = c.chatAIR || demiurge.IsModule(mod.Name)
				}
				plans := map[string]bool{}
				for _, tr := range man.Triggers {
					if tr.Event == demiurge.ToolRequestSchema {
						plans[tr.Plan] = true
					}
				}
				if len(plans) > 0 {
					c.toolPlans = plans
				}
			}
		}
	case world.KindFork:
		if o, err := world.DecodeFork(r); err == nil {
			f := Fork{ForkOrigin: o, Turns: len(c.turns)}
			for _, t := range c.turns {
				if !t.Ended() {
					f.Open = append(f.Open, t)
				}
			}
			c.forks = append(c.forks, f)
		}
	case world.KindEvent, world.KindRaised:
		switch text(schema.FieldPath(m, "schema")) {
		case "demiurge/ChatEvent@1", "demiurge/ChatEvent@2":
			c.chatEvents = true
		case demiurge.ChatRequestSchema, "demiurge/ChatRequest@1":
			c.lastReq = append(c.lastReq, key{text(schema.FieldPath(m, "value", "chat_id")), num(schema.FieldPath(m, "value", "request_id")),
				num(schema.FieldPath(m, "value", "round")), text(schema.FieldPath(m, "value", "purpose")) == demiurge.PurposeCompact})
		case demiurge.ToolRequestSchema:
			c.pendCalls = append(c.pendCalls, callKey{text(schema.FieldPath(m, "value", "chat_id")), num(schema.FieldPath(m, "value", "request_id")),
				num(schema.FieldPath(m, "value", "round")), text(schema.FieldPath(m, "value", "call_id"))})
		}
	case world.KindPlanStarted:
		// A tool call's plan starts in the step that raised the call, in
		// the order the calls were raised.
		if c.toolPlans[text(schema.FieldPath(m, "plan"))] && len(c.pendCalls) > 0 {
			c.planCall[num(schema.FieldPath(m, "plan_id"))] = c.pendCalls[0]
			c.pendCalls = c.pendCalls[1:]
		}
	case world.KindIntent:
		in := text(schema.FieldPath(m, "intent"))
		switch kind := text(schema.FieldPath(m, "kind")); kind {
		case llm.EffectKind:
			c.asked[in] = [2]string{text(schema.FieldPath(m, "params", "provider")), text(schema.FieldPath(m, "params", "model"))}
			if len(c.lastReq) > 0 {
				c.modelIn[in] = c.lastReq[0].String()
				c.keys[c.lastReq[0].String()] = c.lastReq[0]
				c.lastReq = c.lastReq[1:]
			}
		default:
			// The intent of a tool call's plan, of whatever kind (a
			// program's own tool is custom.call): its call is the plan's.
			if text(schema.FieldPath(m, "origin", "kind")) == "plan" {
				if call, ok := c.planCall[num(schema.FieldPath(m, "origin", "plan_id"))]; ok {
					c.toolIn[in] = call
				}
			}
		}
		c.started[in], c.opened[in] = c.now, c.reopens
	case world.KindReceipt:
		in := text(schema.FieldPath(m, "intent"))
		lat := ms(c.now - c.started[in])
		resumed := c.opened[in] != c.reopens
		if k, ok := c.modelIn[in]; ok {
			key := c.keys[k]
			mc := &ModelCall{Round: key.round, Seq: r.Seq, LatencyMS: lat, Error: text(schema.FieldPath(m, "error")),
				Provider: c.asked[in][0], RequestModel: c.asked[in][1], Status: text(schema.FieldPath(m, "status")),
				StartNS: c.started[in], EndNS: c.now, Resumed: resumed}
			if p, ok := schema.FieldPath(m, "payload").(*schema.Map); ok {
				mc.Model, mc.Finish = text(schema.FieldPath(p, "model")), text(schema.FieldPath(p, "finish_reason"))
				mc.ResponseID = text(schema.FieldPath(p, "provider_id"))
				readUsage(mc, p)
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
			tc.LatencyMS, tc.Seq = lat, r.Seq
			tc.StartNS, tc.EndNS, tc.Resumed = c.started[in], c.now, resumed
			if p, ok := schema.FieldPath(m, "payload").(*schema.Map); ok {
				c.response(tc, p)
			}
		}
	case world.KindState:
		if text(schema.FieldPath(m, "reducer")) == history.Module {
			c.workspaceState(text(schema.FieldPath(m, "key")), text(schema.FieldPath(m, "state")))
			return nil
		}
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

// toolResponse is what Reader reads of a sys/ToolResponse@1 receipt.
type toolResponse struct {
	Calls []struct {
		Tool          string  `cbor:"tool"`
		ArgumentsJSON string  `cbor:"arguments_json"`
		ExitCode      int64   `cbor:"exit_code"`
		Error         *string `cbor:"error"`
		DurationNS    uint64  `cbor:"duration_ns"`
	} `cbor:"calls"`
	Commits []history.Commit `cbor:"commits"`
}

// response reads a tool call's receipt: the commands of a script and the
// workspace versions the call made.
func (c *Reader) response(tc *ToolCall, p *schema.Map) {
	var resp toolResponse
	if reducer.ToGo(p, &resp) != nil {
		return // not a tool response: nothing more to show
	}
	for _, sc := range resp.Calls {
		tc.SubCalls = append(tc.SubCalls, sc.Tool)
		tc.Commands = append(tc.Commands, Command{Tool: sc.Tool, Arguments: sc.ArgumentsJSON, ExitCode: sc.ExitCode,
			Error: deref(sc.Error), DurationMS: ms(sc.DurationNS)})
	}
	for _, cm := range resp.Commits {
		vs := c.versions[cm.Workspace]
		if vs == nil {
			vs = map[uint64]cas.Ref{}
			c.versions[cm.Workspace] = vs
		}
		var base uint64 // the version the commit was made on
		if cm.ExpectedHead != nil {
			base = *cm.ExpectedHead
		} else {
			for v := range vs {
				base = max(base, v)
			}
		}
		from, ok := vs[base]
		if !ok {
			from = workspace.EmptyRootRef
		}
		vs[base+1] = cm.Meta.RootHash
		commit := Commit{Workspace: cm.Workspace, Version: base + 1, From: from.String(), To: cm.Meta.RootHash.String()}
		changes, err := workspace.Diff(context.Background(), c.cas, from, cm.Meta.RootHash, "")
		if err != nil {
			commit.ChangesError = err.Error()
		}
		for _, ch := range changes {
			commit.Changes = append(commit.Changes, Change{Path: ch.Path, Change: ch.Change, Kind: ch.Kind,
				Old: refText(ch.OldHash), New: refText(ch.NewHash)})
		}
		tc.Commits = append(tc.Commits, commit)
	}
}

// workspaceState reads a state of sys/Workspace@1: the versions of a
// workspace, whichever way they were made.
func (c *Reader) workspaceState(ws, state string) {
	ref, err := cas.ParseRef(state)
	if err != nil {
		return
	}
	var h history.History
	if cas.GetNode(context.Background(), c.cas, ref, &h) != nil {
		return
	}
	vs := c.versions[ws]
	if vs == nil {
		vs = map[uint64]cas.Ref{}
		c.versions[ws] = vs
	}
	for v := uint64(1); v <= h.Latest; v++ {
		if meta, ok := h.Version(v); ok {
			vs[v] = meta.RootHash
		}
	}
}

func refText(r cas.Ref) string {
	if !r.Valid() {
		return ""
	}
	return r.String()
}

func (k key) String() string {
	return fmt.Sprintf("%s/%d/%d/%v", k.chat, k.request, k.round, k.compact)
}

// callKey names a tool call: a call id is the model's, unique within one
// answer at best (a local server may number the calls of every answer
// alike), so a call is its chat's, its turn's and its round's.
type callKey struct {
	chat           string
	request, round uint64
	call           string
}

func (c *Reader) tool(k callKey) *ToolCall {
	tc, ok := c.tools[k]
	if !ok {
		tc = &ToolCall{CallID: k.call}
		c.tools[k] = tc
	}
	return tc
}

func (c *Reader) turn(chat string, e demiurge.Entry) *Turn {
	t := c.turnOf[key{chat, e.RequestID, 0, false}]
	if t == nil {
		t = &Turn{Chat: chat, RequestID: e.RequestID, Seq: c.inputSeq, Hash: refText(c.inputHash), StartNS: c.now,
			Time: time.Unix(0, int64(c.now)).UTC().Format(time.RFC3339Nano)}
		c.turnOf[key{chat, e.RequestID, 0, false}] = t
		c.turns = append(c.turns, t)
	}
	for uint64(len(t.Rounds)) <= e.Round {
		t.Rounds = append(t.Rounds, &Round{})
	}
	return t
}

func (c *Reader) entry(chat string, e demiurge.Entry) {
	t := c.turn(chat, e)
	r := t.Rounds[e.Round]
	switch e.Kind {
	case demiurge.EntryUser:
		t.User = e.Text
	case demiurge.EntryAssistant:
		t.Assistant = append(t.Assistant, e.Text)
		r.Assistant = append(r.Assistant, e.Text)
	case demiurge.EntryToolCall:
		tc := c.tool(callKey{chat, e.RequestID, e.Round, deref(e.CallID)})
		tc.Tool, tc.Arguments, tc.Status = deref(e.Tool), e.Text, deref(e.Status)
		if call, err := demiurge.ToolCallOf(context.Background(), c.cas, e); err == nil {
			tc.Arguments = call.ArgumentsJSON // whole, where the entry keeps a preview
		}
		tc.Rejected, tc.Cut = tc.Status == "rejected", tc.Status == "cut"
		if tc.StartNS == 0 {
			tc.StartNS = c.now
		}
		if tc.Status == "approval" {
			tc.Approval = "waiting"
		}
		r.Calls = append(r.Calls, tc)
	case demiurge.EntryApproval:
		tc := c.tool(callKey{chat, e.RequestID, e.Round, deref(e.CallID)})
		tc.Approval, tc.ApprovalReason = deref(e.Status), e.Text
	case demiurge.EntryToolOutput:
		tc := c.tool(callKey{chat, e.RequestID, e.Round, deref(e.CallID)})
		tc.Status, tc.Output = deref(e.Status), e.Text
		if tc.EndNS == 0 {
			tc.EndNS = c.now
		}
		if out, err := demiurge.ToolOutputOf(context.Background(), c.cas, e); err == nil {
			tc.Output = out
		}
		if tc.Status == "not_run" {
			tc.Output = demiurge.StopText(tc.Output)
		}
	case demiurge.EntryNotice, demiurge.EntryCompact:
		t.Notices = append(t.Notices, e.Text)
	case demiurge.EntryStop:
		t.Stop, t.EndNS = demiurge.StopText(e.Text), c.now
		if t.Outcome == "" {
			t.Outcome = "stopped"
		}
	case demiurge.EntryError:
		t.Error, t.Outcome, t.EndNS = e.Text, "failed", c.now
	case demiurge.EntryDone:
		t.Done, t.Outcome, t.EndNS = e.Text, doneOutcome(e), c.now
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

// Turns returns the turns read so far, with their model calls attached to
// their rounds.
func (c *Reader) Turns() []*Turn {
	for _, t := range c.turns {
		for round, r := range t.Rounds {
			r.Model = c.models[key{t.Chat, t.RequestID, uint64(round), false}]
			r.Compaction = c.models[key{t.Chat, t.RequestID, uint64(round), true}]
		}
	}
	return c.turns
}

// Forks returns the Fork records read, in journal order: a fork of a
// fork has two.
func (c *Reader) Forks() []Fork { return c.forks }

// IsChat reports whether the records read held chat events: the world is
// an agent world.
func (c *Reader) IsChat() bool { return c.chatEvents }

// ChatManifest reports whether the manifest the world last recorded has
// the chat reducer: an agent world, even before its first message (a
// follower shows it as turns from the start).
func (c *Reader) ChatManifest() bool { return c.chatAIR }

// WriteJSON writes the turns read, one JSON object a line.
func (c *Reader) WriteJSON(w io.Writer) error {
	for _, t := range c.Turns() {
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

// Cost returns the turn's cost, the sum of its model calls that answered,
// and whether some of it is unknown. A turn none of whose model calls
// answered (it made none yet, or they failed) has an unknown cost, not a
// zero that reads as a price: nothing priced it.
func (t *Turn) Cost() (microUSD uint64, unknown bool) {
	for _, r := range t.Rounds {
		for _, m := range []*ModelCall{r.Compaction, r.Model} {
			if m != nil && m.Error == "" {
				microUSD += m.CostMicroUSD
				unknown = unknown || m.CostUnknown
			}
		}
	}
	return microUSD, unknown || !t.Answered()
}

// Answered reports whether a model call of the turn answered (one without
// an error).
func (t *Turn) Answered() bool {
	for _, r := range t.Rounds {
		for _, m := range []*ModelCall{r.Compaction, r.Model} {
			if m != nil && m.Error == "" {
				return true
			}
		}
	}
	return false
}

// Ended reports whether the turn has ended: nothing more is recorded of
// it.
func (t *Turn) Ended() bool {
	return t.Outcome != "" || t.Done != "" || t.Stop != "" || t.Error != ""
}

// LastFinish is the finish reason of the turn's last model reply.
func (t *Turn) LastFinish() string {
	for i := len(t.Rounds) - 1; i >= 0; i-- {
		if m := t.Rounds[i].Model; m != nil {
			return m.Finish
		}
	}
	return ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// readUsage reads a model call's usage, cost and provider from its
// receipt, of any version: sys/LlmGenerateReceipt@3 (sys/LlmTokenUsage@2:
// input, output, cache_read, cache_write, reasoning; a cost_source and a
// provider_name), or @1 and @2 (sys/LlmTokenUsage@1: prompt, completion,
// cached, reasoning).
func readUsage(mc *ModelCall, p *schema.Map) {
	if u, ok := schema.FieldPath(p, "token_usage").(*schema.Map); ok {
		if _, v1 := u.Get("prompt"); v1 {
			mc.InputTokens, mc.OutputTokens = num(schema.FieldPath(u, "prompt")), num(schema.FieldPath(u, "completion"))
			mc.CachedTokens = num(schema.FieldPath(u, "cached"))
		} else {
			mc.InputTokens, mc.OutputTokens = num(schema.FieldPath(u, "input")), num(schema.FieldPath(u, "output"))
			mc.CachedTokens, mc.CacheWriteTokens = num(schema.FieldPath(u, "cache_read")), num(schema.FieldPath(u, "cache_write"))
		}
		mc.Reasoning = num(schema.FieldPath(u, "reasoning"))
	}
	mc.CostMicroUSD = num(schema.FieldPath(p, "cost_microusd"))
	mc.ProviderName = text(schema.FieldPath(p, "provider_name"))
	if src := schema.FieldPath(p, "cost_source"); src != nil {
		if b, err := schema.Encode(src); err == nil {
			var cs llm.CostSource
			if cas.Unmarshal(b, &cs) == nil {
				mc.CostSource = cs.String()
			}
		}
	}
}

// When is the turn's start for people: "2006-01-02 15:04:05.000", UTC.
func (t *Turn) When() string {
	if at, err := time.Parse(time.RFC3339Nano, t.Time); err == nil {
		return at.UTC().Format("2006-01-02 15:04:05.000")
	}
	return t.Time
}
