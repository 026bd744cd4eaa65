// Package demiurge is the chat reducer of the Demiurge agent: it owns a
// chat's transcript, checks every tool call the model makes before
// anything runs, answers each call exactly once, and keeps the requests
// it sends under the model's context window.
//
// The flow and its AIR are in docs/agent.md and examples/demiurge
// (demiurge/Chat@3). Worlds made with demiurge/Chat@2 step with the same
// reducer, which then takes sys/LlmGenerateReceipt@2 and keeps its state
// as ChatState@2 (ModuleNameV2); worlds made with demiurge/Chat@1 step
// with package chatv1, kept as it was. Register registers all three.
//
// A step writes a bounded number of bytes however long the chat: the
// transcript is a reflist in the CAS (a step appends the new items and
// writes a small root), the timeline in the state is its latest entries,
// the repeat guard remembers the turn's latest calls.
//
// The reducer is deterministic: it reads only its state, its event, the
// CAS (the model's tool call nodes, tool specs, outputs, message blobs)
// and the ingress stamp.
package demiurge

import (
	"cmp"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cas/reflist"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/reducer/demiurge/chatv1"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
)

// Names in the AIR of examples/demiurge, and of the worlds made with
// Chat@2 and Chat@1.
const (
	ModuleName         = "demiurge/Chat@3"
	ModuleNameV2       = "demiurge/Chat@2"
	ModuleNameV1       = chatv1.ModuleName
	ChatPlan           = "demiurge/chat_plan@3"
	ChatPlanV2         = "demiurge/chat_plan@2"
	ChatPlanV1         = chatv1.ChatPlan
	ToolPlan           = "demiurge/tool_plan@3"
	ToolPlanV2         = "demiurge/tool_plan@2"
	ToolPlanV1         = chatv1.ToolPlan
	EventSchema        = "demiurge/ChatEvent@3"
	EventSchemaV2      = "demiurge/ChatEvent@2"
	ChatRequestSchema  = "demiurge/ChatRequest@2"
	ToolRequestSchema  = "demiurge/ToolCallRequested@1"
	CommitSchema       = "sys/WorkspaceCommit@1"
	defaultWorkspaceID = "default"
)

// Reducer is the chat reducer of Chat@3. Its zero value is ready to use;
// it caches compiled tool schemas by the ref of their tools blob (a pure
// function of the blob's bytes, so the cache cannot change what it
// computes).
type Reducer struct {
	// v2 makes it the reducer of Chat@2 worlds: their state counts the
	// usage as sys/LlmTokenUsage@1 (ChatState@2). Everything else is the
	// same; the receipts it gets (@2) say no more than that holds.
	v2    bool
	mu    sync.Mutex
	specs map[cas.Ref]*toolSet
}

// Register adds the chat reducers to r: Chat@3 under ModuleName, the
// reducer of Chat@2 worlds under ModuleNameV2, and that of Chat@1 worlds
// under ModuleNameV1.
func Register(r *reducer.Registry) {
	r.MustRegister(ModuleName, &Reducer{})
	r.MustRegister(ModuleNameV2, &Reducer{v2: true})
	r.MustRegister(ModuleNameV1, &chatv1.Reducer{Verify: &verifyMemoV1})
}

// Modules are the versions of the chat module, newest first.
var Modules = []string{ModuleName, ModuleNameV2, ModuleNameV1}

// ModuleIn returns the name of the chat module a world's catalog has
// (one of Modules, the newest if it has several), and whether it has one.
func ModuleIn(has func(name string) bool) (string, bool) {
	for _, n := range Modules {
		if has(n) {
			return n, true
		}
	}
	return "", false
}

// IsModule reports whether name is a version of the chat module.
func IsModule(name string) bool { return slices.Contains(Modules, name) }

// Plans are the chat plan and the tool plan that the AIR of a chat module
// (one of Modules) pairs with it.
func Plans(module string) (chat, tool string) {
	switch module {
	case ModuleNameV2:
		return ChatPlanV2, ToolPlanV2
	case ModuleNameV1:
		return ChatPlanV1, ToolPlanV1
	}
	return ChatPlan, ToolPlan
}

// step carries one step's work.
type step struct {
	c    *reducer.Context
	st   *State
	out  reducer.Output
	chat string
}

// Step implements reducer.Reducer.
func (r *Reducer) Step(c *reducer.Context, state, event schema.Value) (reducer.Output, error) {
	s := &step{c: c, st: &State{}}
	if st, ok := c.Memo.(*State); ok && state != nil {
		s.st = st // what the last step encoded: no need to decode it
		if verifyMemo {
			if err := checkMemo(state, st); err != nil {
				return reducer.Output{}, err
			}
		}
	} else if state != nil {
		if err := reducer.ToGo(state, s.st); err != nil {
			return reducer.Output{}, fmt.Errorf("chat: decode state: %w", err)
		}
	}
	if k, ok := c.Key.(string); ok {
		s.chat = k
	}
	s.st.Usage.V2 = !r.v2 // what a new chat starts with; a state decoded says it
	ev, ok := event.(*schema.Map)
	if !ok {
		return reducer.Output{}, fmt.Errorf("chat: event is %s, want a %s variant", schema.String(event), EventSchema)
	}
	s.trimEntries()
	tag, v, _ := ev.VariantTag()
	var err error
	switch tag {
	case "Created":
		var e ChatCreated
		if err = reducer.ToGo(v, &e); err == nil {
			err = r.created(s, e)
		}
	case "User":
		var e UserMessage
		if err = reducer.ToGo(v, &e); err == nil {
			err = r.user(s, e)
		}
	case "Compact":
		var e CompactRequest
		if err = reducer.ToGo(v, &e); err == nil {
			err = r.compactRequested(s, e)
		}
	case "Approval":
		var e ApprovalDecision
		if err = reducer.ToGo(v, &e); err == nil {
			err = r.approval(s, e)
		}
	case "Import":
		var e ChatImport
		if err = reducer.ToGo(v, &e); err == nil {
			err = r.imported(s, e)
		}
	case "Stop":
		var e StopRequest
		if err = reducer.ToGo(v, &e); err == nil {
			err = r.stopRequested(s, e)
		}
	case "Result":
		var e ChatResult
		if err = reducer.ToGo(v, &e); err == nil {
			err = r.result(s, e)
		}
	case "ToolResult":
		var e ToolResult
		if err = reducer.ToGo(v, &e); err == nil {
			err = r.toolResult(s, e)
		}
	case "PlanEnded":
		var e PlanEnded
		if err = reducer.ToGo(v, &e); err == nil {
			err = r.planEnded(s, e)
		}
	default:
		return reducer.Output{}, fmt.Errorf("chat: unknown event %q", tag)
	}
	if err != nil {
		return reducer.Output{}, fmt.Errorf("chat: %s: %w", tag, err)
	}
	s.st.fill()
	out, err := reducer.FromGo(s.st)
	if err != nil {
		return reducer.Output{}, err
	}
	s.out.State, s.out.Memo = out, s.st
	return s.out, nil
}

// checkMemo reports whether memo is not what state decodes to.
func checkMemo(state schema.Value, memo *State) error {
	var dec State
	if err := reducer.ToGo(state, &dec); err != nil {
		return fmt.Errorf("chat: decode state: %w", err)
	}
	if !reflect.DeepEqual(&dec, memo) {
		return fmt.Errorf("chat: the memo of the state is not the state decoded:\nmemo    %#v\ndecoded %#v", memo, &dec)
	}
	return nil
}

// fill replaces nil lists and maps, which would encode as null.
func (st *State) fill() {
	if st.Transcript.Tail == nil {
		st.Transcript.Tail = []cas.Ref{}
	}
	if st.Entries == nil {
		st.Entries = []Entry{}
	}
	if st.Marks == nil {
		st.Marks = []RoundMark{}
	}
	if t := st.Turn; t != nil {
		if t.Calls == nil {
			t.Calls = []PendingCall{}
		}
		if t.Recent == nil {
			t.Recent = []string{}
		}
	}
}

// trimEntries keeps the state's timeline bounded: past EntriesKept
// entries, the oldest leave it, keeping half. Only entries of earlier
// steps leave, so a reader that follows every state sees every entry.
func (s *step) trimEntries() {
	if n := len(s.st.Entries); n > EntriesKept {
		drop := n - EntriesKept/2
		s.st.EntriesBase += uint64(drop)
		s.st.Entries = append([]Entry{}, s.st.Entries[drop:]...)
	}
}

func (s *step) entry(e Entry) { s.st.Entries = append(s.st.Entries, e) }

func strp(s string) *string { return &s }

// appendItems appends refs to the transcript, with the chunk nodes that
// makes, and their estimated tokens to the next request's.
func (s *step) appendItems(tokens uint64, refs ...cas.Ref) error {
	l, nodes, err := s.st.Transcript.Append(refs...)
	if err != nil {
		return err
	}
	s.st.Transcript = l
	s.out.Blobs = append(s.out.Blobs, nodes...)
	s.st.Tokens += tokens
	return nil
}

// blobTokens estimates the tokens of a blob in the CAS: a token for every
// 4 bytes (see docs/agent.md, "Long sessions", for how close that is).
func (s *step) blobTokens(ref cas.Ref) uint64 {
	b, err := s.c.CAS.Get(bgctx(), ref)
	if err != nil {
		return 0
	}
	return tokensOf(len(b))
}

// tokensOf estimates the tokens of n bytes of JSON text.
func tokensOf(n int) uint64 { return uint64(n+3) / 4 }

// itemTokens estimates the tokens a transcript item of n bytes adds to a
// request: no more than Settings.ItemBytes of it is sent.
func (s *step) itemTokens(n int) uint64 {
	if b := s.st.Settings.ItemBytes; b > 0 && uint64(n) > b {
		return tokensOf(int(b))
	}
	return tokensOf(n)
}

// itemBlobTokens is itemTokens of a transcript item in the CAS.
func (s *step) itemBlobTokens(ref cas.Ref) uint64 {
	b, err := s.c.CAS.Get(bgctx(), ref)
	if err != nil {
		return 0
	}
	return s.itemTokens(len(b))
}

// recount estimates the next request again from what it sends: the
// overhead, the summary and each item of Transcript[From:] as itemTokens
// counts it, and the round marks with it. A chat whose ItemBytes changed
// recounts: an item counted whole before counts what is sent of it now.
func (s *step) recount() error {
	refs, err := reflist.Slice(bgctx(), s.c.CAS, nil, s.st.Transcript, s.st.From, s.st.Transcript.Len)
	if err != nil {
		return fmt.Errorf("chat %s: read its transcript to count its tokens: %w", s.chat, err)
	}
	tokens := s.st.OverheadTokens
	if s.st.Summary != nil {
		tokens += s.blobTokens(*s.st.Summary)
	}
	at := make([]uint64, len(refs)+1) // the estimate before item From+i
	for i, ref := range refs {
		at[i] = tokens
		tokens += s.itemBlobTokens(ref)
	}
	at[len(refs)] = tokens
	for i, m := range s.st.Marks {
		s.st.Marks[i].Tokens = at[min(m.Index-min(m.Index, s.st.From), uint64(len(refs)))]
	}
	s.st.Tokens = tokens
	return nil
}

// imported takes up the chat an older chat module left (a world whose
// manifest moved from Chat@2 to Chat@3): its state, as that module last
// wrote it, becomes this chat's, the usage counted in this module's
// schema. A turn it was running ends (its calls without output answered,
// so the transcript stays valid): the plans that ran it belong to the old
// module, and nothing brings their results here. A chat that exists
// already changes nothing.
func (r *Reducer) imported(s *step, e ChatImport) error {
	if s.st.Settings != nil {
		return nil
	}
	if r.v2 {
		return fmt.Errorf("chat %s: the chat of %s cannot be taken up (only one of %s, by %s)", s.chat, e.Module, ModuleNameV2, ModuleName)
	}
	if err := s.takeUp(e); err != nil {
		return err
	}
	// The notice goes with the turn the import comes before (the request
	// after the last), where a reader of that turn sees it.
	s.entry(Entry{RequestID: s.st.LastRequestID + 1, Kind: EntryNotice,
		Text: fmt.Sprintf("chat %s goes on under %s, as %s left it (the world's manifest changed)", s.chat, ModuleName, e.Module)})
	return nil
}

// ImportedView is a chat that Chat@2 left (e names its state) as Chat@3
// will take it up, for readers of a world whose manifest moved to Chat@3
// before the chat's next turn sends the Import: its state as the Import
// makes it (the usage counted as sys/LlmTokenUsage@2, a turn it was
// running stopped, its calls answered "not run"), without the notice
// that the chat goes on, which the Import adds. The outputs of the calls
// it answers are not in g: the Import writes them.
func ImportedView(g cas.Getter, e ChatImport) (*State, error) {
	s := &step{c: &reducer.Context{Module: ModuleName, Key: e.ChatID, CAS: g}, st: &State{}, chat: e.ChatID}
	s.st.Usage.V2 = true
	if err := s.takeUp(e); err != nil {
		return nil, err
	}
	s.st.fill()
	return s.st, nil
}

// takeUp makes the state of the chat of an older module (e) this step's:
// see imported.
func (s *step) takeUp(e ChatImport) error {
	if e.Module != ModuleNameV2 {
		return fmt.Errorf("chat %s: the chat of %s cannot be taken up (only one of %s, by %s)", s.chat, e.Module, ModuleNameV2, ModuleName)
	}
	var old State
	if err := cas.GetNode(bgctx(), s.c.CAS, e.State, &old); err != nil {
		return fmt.Errorf("chat %s: the state %s of %s: %w", s.chat, e.State.Short(), e.Module, err)
	}
	if old.Settings == nil {
		return fmt.Errorf("chat %s: the state %s of %s has no settings: not a chat's", s.chat, e.State.Short(), e.Module)
	}
	*s.st = old
	s.st.Usage.V2 = true
	s.trimEntries()
	if t := s.st.Turn; t != nil {
		if err := s.stopTurn(fmt.Sprintf("the chat moved from %s to %s (the world's manifest changed) while this turn ran", e.Module, ModuleName)); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reducer) created(s *step, e ChatCreated) error {
	if s.st.Settings == nil {
		set := e.Settings
		s.st.Settings = &set
		r.settingsChanged(s)
	}
	if s.st.Title == nil {
		s.st.Title = e.Title
	}
	return nil
}

// settingsChanged estimates the tokens the settings add to every request
// (the instructions and the tools, with what the provider adds to a
// request that carries tools).
func (r *Reducer) settingsChanged(s *step) {
	set := s.st.Settings
	over := uint64(0)
	if set.Instructions != nil {
		over += tokensOf(len(*set.Instructions))
	}
	if set.InstructionsRef != nil {
		over += s.blobTokens(*set.InstructionsRef)
	}
	if set.ToolsRef != nil {
		over += tokensOf(r.toolSet(s).size) + set.ToolPromptTokens
	}
	s.st.Tokens = s.st.Tokens - min(s.st.Tokens, s.st.OverheadTokens) + over
	s.st.OverheadTokens = over
}

func (r *Reducer) user(s *step, e UserMessage) error {
	if e.RequestID <= s.st.LastRequestID && s.st.Settings != nil {
		// A message we have seen (a retry): nothing to do, not even to
		// its settings, which may be older than the chat's.
		return nil
	}
	recount := false
	if e.Settings != nil {
		set := *e.Settings
		recount = s.st.Settings != nil && s.st.Settings.ItemBytes != set.ItemBytes
		s.st.Settings = &set
		r.settingsChanged(s)
	}
	if s.st.Settings == nil {
		return fmt.Errorf("chat %s has no settings: send Created first, or settings with the message", s.chat)
	}
	s.newTurn(e.RequestID, fmt.Sprintf("a new message (request %d) arrived before the turn ended", e.RequestID))
	if recount { // after newTurn: the outputs of a turn it stopped are in the transcript
		if err := s.recount(); err != nil {
			return err
		}
	}
	if err := s.appendItems(s.itemBlobTokens(e.MessageRef), e.MessageRef); err != nil {
		return err
	}
	ref := e.MessageRef
	s.entry(Entry{RequestID: e.RequestID, Kind: EntryUser, Text: e.Text, Ref: &ref})
	s.st.Turn = &Turn{RequestID: e.RequestID, Kind: TurnAnswer, ToolChoice: e.ToolChoice}
	return r.request(s)
}

// newTurn makes room for turn id: the entries of earlier turns leave the
// state (the journal keeps them), and a turn still running ends, its
// calls without output answered, so the transcript stays valid.
func (s *step) newTurn(id uint64, why string) {
	dropped := len(s.st.Entries)
	if s.st.Turn != nil {
		s.stopTurn(why)
	}
	s.st.EntriesBase += uint64(dropped)
	s.st.Entries = append([]Entry{}, s.st.Entries[dropped:]...)
	s.st.LastRequestID = id
}

// request emits the ChatRequest of the turn's current round, unless the
// request would not fit the model's window: then the chat compacts first,
// or ends the turn, as the settings say.
func (r *Reducer) request(s *step) error {
	set, t := s.st.Settings, s.st.Turn
	if ok, err := r.fitWindow(s); !ok || err != nil {
		return err
	}
	s.mark()
	req := s.baseRequest(PurposeAnswer)
	req.Transcript = s.view()
	if set.ToolsRef != nil {
		req.ToolChoice = &ToolChoice{Tag: "Auto"}
		switch {
		case t.Round == 0 && t.ToolChoice != nil:
			req.ToolChoice = t.ToolChoice
		case set.ToolChoice != nil && (t.Round == 0 || set.ToolChoice.Tag == "None" || set.ToolChoice.Tag == "Auto"):
			req.ToolChoice = set.ToolChoice
		}
	}
	return s.emitRequest(req)
}

// baseRequest is the turn's current request without its transcript and
// tool choice.
func (s *step) baseRequest(purpose string) ChatRequest {
	set, t := s.st.Settings, s.st.Turn
	return ChatRequest{
		ChatID: s.chat, RequestID: t.RequestID, Round: t.Round, Purpose: purpose, Provider: set.Provider, Model: set.Model,
		MaxTokens: set.MaxTokens, Temperature: set.Temperature, Instructions: set.Instructions, InstructionsRef: set.InstructionsRef,
		ReasoningEffort: set.ReasoningEffort, ToolsRef: set.ToolsRef,
	}
}

// view is what a request sends of the transcript: the summary, if the
// chat compacted, and the items after it.
func (s *step) view() Transcript {
	tr := Transcript{Refs: s.st.Transcript, From: s.st.From, Prefix: []cas.Ref{}, Suffix: []cas.Ref{}}
	if s.st.Summary != nil {
		tr.Prefix = []cas.Ref{*s.st.Summary}
	}
	return tr
}

func (s *step) emitRequest(req ChatRequest) error {
	if req.Transcript.Prefix == nil {
		req.Transcript.Prefix = []cas.Ref{}
	}
	if req.Transcript.Suffix == nil {
		req.Transcript.Suffix = []cas.Ref{}
	}
	if req.Transcript.Refs.Tail == nil {
		req.Transcript.Refs.Tail = []cas.Ref{}
	}
	v, err := reducer.FromGo(req)
	if err != nil {
		return err
	}
	s.out.Events = append(s.out.Events, reducer.Event{Schema: ChatRequestSchema, Value: v})
	return nil
}

func (r *Reducer) result(s *step, e ChatResult) error {
	t := s.st.Turn
	if t == nil || t.RequestID != e.RequestID || t.Round != e.Round {
		return nil // a late answer to a turn that ended
	}
	if len(t.Calls) > 0 {
		// The round has its answer, and waits for its calls' results: a
		// second answer to the same request is not the model's (one
		// request, one plan run, one result) and is ignored.
		return nil
	}
	rc := e.Receipt
	s.account(rc)
	if t.Compacting != nil {
		return r.compacted(s, rc)
	}
	if err := s.appendItems(0, rc.OutputRef); err != nil {
		return err
	}
	if rc.TokenUsage != nil {
		// The request and its answer, as the provider counted them.
		s.st.Tokens = rc.TokenUsage.Prompt + rc.TokenUsage.Completion
	} else {
		s.st.Tokens += s.blobTokens(rc.OutputRef)
		if b := s.st.Settings.TokenBudget; b != nil {
			s.entry(Entry{RequestID: t.RequestID, Round: t.Round, Kind: EntryNotice,
				Text: fmt.Sprintf("the provider reported no token usage for this call, so the token budget (%d) cannot count it", *b)})
		}
	}
	if rc.OutputText != "" {
		ref := rc.OutputRef
		s.entry(Entry{RequestID: t.RequestID, Round: t.Round, Kind: EntryAssistant, Text: rc.OutputText, Ref: &ref})
	}
	if len(rc.ToolCallRefs) == 0 {
		s.entry(Entry{RequestID: t.RequestID, Round: t.Round, Kind: EntryDone, Text: s.turnSummary(),
			Status: strp(cmp.Or(rc.FinishReason, "stop"))})
		s.st.Turn = nil
		return nil
	}
	set := s.st.Settings
	calls := make([]LlmToolCall, 0, len(rc.ToolCallRefs))
	for _, ref := range rc.ToolCallRefs {
		var tc LlmToolCall
		if err := cas.GetNode(bgctx(), s.c.CAS, ref, &tc); err != nil {
			return fmt.Errorf("tool call %s: %w", ref, err)
		}
		calls = append(calls, tc)
	}
	// Guards that end the turn before anything runs.
	stop := ""
	switch {
	case t.Round+1 >= cmp.Or(set.MaxRounds, DefaultMaxRounds):
		stop = fmt.Sprintf("the turn reached %d model rounds (max_rounds); the calls of the last one were not run", t.Round+1)
	case set.TokenBudget != nil && t.Tokens > *set.TokenBudget:
		stop = fmt.Sprintf("the turn used %d tokens, over its budget of %d (token_budget)", t.Tokens, *set.TokenBudget)
	}
	if stop == "" && replyCut(rc.FinishReason) {
		// The calls of a reply cut off before its end may be cut too:
		// none runs; the model is told, and may call again.
		why := fmt.Sprintf("error: your reply was cut off (finish reason %q) before its tool calls were complete, so this call was not run. Call it again; if its arguments were long, make them shorter or split the work.", rc.FinishReason)
		for i, tc := range calls {
			s.entry(Entry{RequestID: t.RequestID, Round: t.Round, Kind: EntryToolCall, Text: preview(tc.ArgumentsJSON), Ref: &rc.ToolCallRefs[i],
				CallID: strp(tc.CallID), Tool: strp(tc.Name), Status: strp("cut")})
			t.Calls = append(t.Calls, PendingCall{CallID: tc.CallID, Tool: tc.Name, Signature: signature(tc.Name, tc.ArgumentsJSON), Status: "pending"})
			if err := s.answer(&t.Calls[len(t.Calls)-1], "error", why); err != nil {
				return err
			}
		}
		return r.maybeNextRound(s)
	}
	ts := r.toolSet(s)
	args := make([]parsedArgs, len(calls))
	for i, tc := range calls {
		args[i] = parseArgs(tc.ArgumentsJSON)
		sig := signature(tc.Name, args[i].canon)
		n := uint64(1)
		for _, prev := range t.Recent {
			if prev == sig {
				n++
			}
		}
		t.Recent = append(t.Recent, sig)
		if len(t.Recent) > RecentCalls {
			t.Recent = append([]string{}, t.Recent[len(t.Recent)-RecentCalls:]...)
		}
		if stop == "" && n >= cmp.Or(set.MaxRepeats, DefaultMaxRepeats) {
			stop = fmt.Sprintf("the model called %s with the same arguments %d times (max_repeats)", tc.Name, n)
		}
		t.Calls = append(t.Calls, PendingCall{CallID: tc.CallID, Tool: tc.Name, Signature: sig, Status: "pending"})
	}
	if stop != "" {
		for i, tc := range calls {
			s.entry(Entry{RequestID: t.RequestID, Round: t.Round, Kind: EntryToolCall, Text: preview(tc.ArgumentsJSON), Ref: &rc.ToolCallRefs[i],
				CallID: strp(tc.CallID), Tool: strp(tc.Name), Status: strp("not_run")})
		}
		return s.stopTurn(stop)
	}
	for i, tc := range calls {
		req, why := r.check(s, ts, tc, args[i])
		if why != "" {
			s.entry(Entry{RequestID: t.RequestID, Round: t.Round, Kind: EntryToolCall, Text: preview(tc.ArgumentsJSON), Ref: &rc.ToolCallRefs[i],
				CallID: strp(tc.CallID), Tool: strp(tc.Name), Status: strp("rejected")})
			if err := s.answer(&t.Calls[len(t.Calls)-len(calls)+i], "error", why); err != nil {
				return err
			}
			continue
		}
		if needsApproval(s.st.Settings, tc.Name, req.Family) {
			// It runs once the user approves it: the request waits in the
			// store.
			b, err := cas.Marshal(req)
			if err != nil {
				return err
			}
			ref := cas.Sum(b)
			s.out.Blobs = append(s.out.Blobs, b)
			pc := &t.Calls[len(t.Calls)-len(calls)+i]
			pc.Status, pc.RequestRef = "approval", &ref
			if ms := s.st.Settings.ApprovalTimeoutMS; ms > 0 {
				pc.DeadlineNS = deadline(s.c.Stamp.LogicalNowNS, ms)
			}
			s.entry(Entry{RequestID: t.RequestID, Round: t.Round, Kind: EntryToolCall, Text: preview(req.ArgumentsJSON), Ref: &rc.ToolCallRefs[i],
				CallID: strp(tc.CallID), Tool: strp(tc.Name), Status: strp("approval")})
			continue
		}
		s.entry(Entry{RequestID: t.RequestID, Round: t.Round, Kind: EntryToolCall, Text: preview(req.ArgumentsJSON), Ref: &rc.ToolCallRefs[i],
			CallID: strp(tc.CallID), Tool: strp(tc.Name), Status: strp("requested")})
		if err := s.request(req); err != nil {
			return err
		}
	}
	return r.maybeNextRound(s)
}

// request emits the event that runs a checked call.
func (s *step) request(req ToolCallRequested) error {
	v, err := reducer.FromGo(req)
	if err != nil {
		return err
	}
	s.out.Events = append(s.out.Events, reducer.Event{Schema: ToolRequestSchema, Value: v})
	return nil
}

// needsApproval reports whether calls of tool (of family) wait for the
// user's approval: a tool named, every tool for "*", and the bash tool
// whenever any tool is named (a script can run every tool as a command,
// so approving the script is where those commands are approved).
func needsApproval(set *Settings, tool, family string) bool {
	if len(set.RequireApproval) == 0 {
		return false
	}
	return family == tools.FamilyBash || slices.Contains(set.RequireApproval, tool) || slices.Contains(set.RequireApproval, "*")
}

// approval runs or refuses a call that waits for the user's approval. A
// decision for a call that does not wait (one decided already, one of a
// turn that ended) changes nothing.
func (r *Reducer) approval(s *step, e ApprovalDecision) error {
	t := s.st.Turn
	if t == nil || t.RequestID != e.RequestID {
		return nil
	}
	var pc *PendingCall
	for i := range t.Calls {
		if t.Calls[i].CallID == e.CallID && t.Calls[i].Status == "approval" {
			pc = &t.Calls[i]
		}
	}
	if pc == nil || pc.RequestRef == nil {
		return nil
	}
	expired := pc.DeadlineNS != 0 && s.c.Stamp.LogicalNowNS >= pc.DeadlineNS
	if e.Timeout && !expired {
		return nil // the host's clock ran ahead of the world's: still waiting
	}
	status := "denied"
	switch {
	case expired:
		status = StatusTimedOut
	case e.Approve:
		status = "approved"
	}
	reason := e.Reason
	if expired {
		reason = fmt.Sprintf("no decision within %s", msText(s.st.Settings.ApprovalTimeoutMS))
		if !e.Timeout {
			reason += " (a decision came later: " + decisionText(e) + ")"
		}
	}
	s.entry(Entry{RequestID: t.RequestID, Round: t.Round, Kind: EntryApproval, Text: reason,
		CallID: strp(pc.CallID), Tool: strp(pc.Tool), Status: strp(status)})
	if expired || !e.Approve {
		why := "denied by the user"
		if expired {
			why = "not run: the user did not approve it within " + msText(s.st.Settings.ApprovalTimeoutMS)
		} else if e.Reason != "" {
			why += ": " + e.Reason
		}
		pc.RequestRef, pc.DeadlineNS = nil, 0
		if err := s.answer(pc, "denied", why+". Do not call it again with these arguments; ask the user, or do without it."); err != nil {
			return err
		}
		return r.maybeNextRound(s)
	}
	var req ToolCallRequested
	if err := cas.GetNode(bgctx(), s.c.CAS, *pc.RequestRef, &req); err != nil {
		return fmt.Errorf("the approved call %s: %w", pc.CallID, err)
	}
	pc.Status, pc.RequestRef, pc.DeadlineNS = "pending", nil, 0
	return s.request(req)
}

// StatusTimedOut is the status of the approval entry of a call that
// waited longer than the chat's approval timeout: it is denied.
const StatusTimedOut = "timed out"

// deadline is now plus ms milliseconds, saturating.
func deadline(now, ms uint64) uint64 {
	if ms > (math.MaxUint64-now)/1e6 {
		return math.MaxUint64
	}
	return now + ms*1e6
}

// msText writes a duration of ms milliseconds as Go's time.Duration does
// ("10m0s", "1h30m0s", "1.5s", "250ms"); the reducer may not import time.
func msText(ms uint64) string {
	if ms < 1000 {
		return fmt.Sprintf("%dms", ms)
	}
	h, m, sec, frac := ms/3600000, ms/60000%60, ms/1000%60, ms%1000
	s := strconv.FormatUint(sec, 10)
	if frac > 0 {
		s += strings.TrimRight(fmt.Sprintf(".%03d", frac), "0")
	}
	s += "s"
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%dm%s", h, m, s)
	case m > 0:
		return fmt.Sprintf("%dm%s", m, s)
	}
	return s
}

// decisionText is what a late decision said.
func decisionText(e ApprovalDecision) string {
	what := "deny"
	if e.Approve {
		what = "approve"
	}
	if e.Reason != "" {
		what += ", " + strconv.Quote(e.Reason)
	}
	return what
}

// account adds a call's usage and cost to the chat's and the turn's.
func (s *step) account(rc LlmReceipt) {
	if u := rc.TokenUsage; u != nil {
		s.st.Turn.Tokens += u.Prompt + u.Completion
		s.st.Usage.Prompt += u.Prompt
		s.st.Usage.Completion += u.Completion
		s.st.Usage.Cached += u.Cached
		s.st.Usage.CacheWrite += u.CacheWrite
		s.st.Usage.Reasoning += u.Reasoning
	} else {
		s.st.UsageUnknown++
	}
	if rc.CostMicroUSD != nil {
		s.st.CostMicroUSD += *rc.CostMicroUSD
	} else {
		s.st.CostUnknown++
	}
}

// replyCut reports whether a reply with this finish reason was cut before
// its end (llm.FinishCut: the token limit, a content filter, the provider
// ending it early).
func replyCut(finish string) bool {
	return finish == "length" || finish == "content_filter" || finish == "incomplete" || strings.HasPrefix(finish, "incomplete:")
}

func (s *step) turnSummary() string {
	t := s.st.Turn
	rounds := "1 round"
	if t.Round > 0 {
		rounds = fmt.Sprintf("%d rounds", t.Round+1)
	}
	return fmt.Sprintf("%s, %d tokens", rounds, t.Tokens)
}

// maybeNextRound sends the next request once every call of the round has
// its output: the outputs join the transcript in call order.
func (r *Reducer) maybeNextRound(s *step) error {
	t := s.st.Turn
	for _, pc := range t.Calls {
		if pc.Status == "pending" || pc.Status == "approval" {
			return nil
		}
	}
	if err := s.appendOutputs(); err != nil {
		return err
	}
	t.Round++
	return r.request(s)
}

// appendOutputs appends the outputs of the round's calls to the
// transcript, in call order.
func (s *step) appendOutputs() error {
	t := s.st.Turn
	var refs []cas.Ref
	for _, pc := range t.Calls {
		if pc.OutputRef != nil {
			refs = append(refs, *pc.OutputRef)
		}
	}
	t.Calls = []PendingCall{}
	return s.appendItems(0, refs...) // their tokens counted when they were written
}

// stopRequested ends the turn the user stopped, if it is still running:
// its calls without output are answered (a call that was running may still
// finish; its workspace commits are recorded), and a model answer that
// comes later is ignored.
func (r *Reducer) stopRequested(s *step, e StopRequest) error {
	t := s.st.Turn
	if t == nil || t.RequestID != e.RequestID {
		return nil // the turn ended before the stop came
	}
	reason := "the user stopped the turn"
	if e.Reason != "" {
		reason += " (" + e.Reason + ")"
	}
	return s.stopTurn(reason)
}

// stopTurn ends the turn with a reason the user sees; every call still
// without output gets one saying it was not run.
func (s *step) stopTurn(reason string) error {
	t := s.st.Turn
	for i := range t.Calls {
		if st := t.Calls[i].Status; st == "pending" || st == "approval" {
			t.Calls[i].RequestRef = nil
			if err := s.answer(&t.Calls[i], "not_run", "not run: "+reason); err != nil {
				return err
			}
		}
	}
	if err := s.appendOutputs(); err != nil {
		return err
	}
	s.entry(Entry{RequestID: t.RequestID, Round: t.Round, Kind: EntryStop, Text: reason})
	s.st.Turn = nil
	return nil
}

func (r *Reducer) planEnded(s *step, e PlanEnded) error {
	if e.Status == "ok" {
		return nil
	}
	msg, code := "the plan failed", ""
	if e.Error != nil {
		msg, code = e.Error.Message, e.Error.Code
	}
	t := s.st.Turn
	switch e.Plan {
	case ToolPlan, ToolPlanV2:
		var req ToolCallRequested
		if err := cas.Unmarshal(e.Input, &req); err != nil {
			return fmt.Errorf("tool plan input: %w", err)
		}
		if t == nil || t.RequestID != req.RequestID || t.Round != req.Round {
			return nil
		}
		for i := range t.Calls {
			pc := &t.Calls[i]
			if pc.CallID != req.CallID || pc.Status != "pending" {
				continue
			}
			status := "error"
			switch {
			case code == "effect_denied":
				status = "denied"
			case strings.Contains(msg, "timed out"):
				status = "timeout"
			}
			if err := s.answer(pc, status, fmt.Sprintf("%s: %s", status, msg)); err != nil {
				return err
			}
			return r.maybeNextRound(s)
		}
	case ChatPlan, ChatPlanV2:
		var req ChatRequest
		if err := cas.Unmarshal(e.Input, &req); err != nil {
			return fmt.Errorf("chat plan input: %w", err)
		}
		if t == nil || t.RequestID != req.RequestID || t.Round != req.Round {
			return nil
		}
		if t.Compacting != nil {
			msg = "the compaction's model call failed: " + msg
		}
		s.entry(Entry{RequestID: t.RequestID, Round: t.Round, Kind: EntryError, Text: msg})
		return s.stopTurn("the model call failed")
	}
	return nil
}
