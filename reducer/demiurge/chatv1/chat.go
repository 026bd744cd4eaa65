// Package chatv1 is the chat reducer of worlds made with demiurge/Chat@1,
// kept as it was when demiurge/Chat@2 replaced it (package
// reducer/demiurge), so that those worlds step — and replay — exactly as
// they were recorded: their journals hold the states, events and effects
// it derived, byte for byte. Do not change what it computes; the recorded
// sessions under testdata/sessions are made with it and must replay.
//
// The reducer is deterministic: it reads only its state, its event, the
// CAS (the model's tool call nodes, tool specs, outputs) and the ingress
// stamp.
package chatv1

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/internal/jsonschema"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
)

// Names in the AIR of examples/demiurge.
const (
	ModuleName         = "demiurge/Chat@1"
	ChatPlan           = "demiurge/chat_plan@1"
	ToolPlan           = "demiurge/tool_plan@1"
	ChatRequestSchema  = "demiurge/ChatRequest@1"
	ToolRequestSchema  = "demiurge/ToolCallRequested@1"
	CommitSchema       = "sys/WorkspaceCommit@1"
	defaultWorkspaceID = "default"
)

// Reducer is the chat reducer. Its zero value is ready to use; it caches
// compiled tool schemas by the ref of their tools blob (a pure function of
// the blob's bytes, so the cache cannot change what it computes).
type Reducer struct {
	// Verify, if it points to true, makes every step that takes its
	// state from the memo decode the state all the same and fail if the
	// two differ (reducer/demiurge sets it in builds with -tags invariants or -race).
	Verify *bool
	mu     sync.Mutex
	specs  map[cas.Ref]*toolSet
}

// Register adds the chat reducer to r under ModuleName.
func Register(r *reducer.Registry) { r.MustRegister(ModuleName, &Reducer{}) }

type toolSet struct {
	byName map[string]*toolSpec
	err    error
}

type toolSpec struct {
	spec   tools.SpecTool
	schema *jsonschema.Schema
	err    error // the schema does not compile
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
		if r.Verify != nil && *r.Verify {
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
	ev, ok := event.(*schema.Map)
	if !ok {
		return reducer.Output{}, fmt.Errorf("chat: event is %s, want a demiurge/ChatEvent@1 variant", schema.String(event))
	}
	tag, v, _ := ev.VariantTag()
	var err error
	switch tag {
	case "Created":
		var e ChatCreated
		if err = reducer.ToGo(v, &e); err == nil {
			s.created(e)
		}
	case "User":
		var e UserMessage
		if err = reducer.ToGo(v, &e); err == nil {
			err = r.user(s, e)
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
	if st.Transcript == nil {
		st.Transcript = []cas.Ref{}
	}
	if st.Entries == nil {
		st.Entries = []Entry{}
	}
	if t := st.Turn; t != nil {
		if t.Calls == nil {
			t.Calls = []PendingCall{}
		}
		if t.Seen == nil {
			t.Seen = map[string]uint64{}
		}
	}
}

func (s *step) entry(e Entry) { s.st.Entries = append(s.st.Entries, e) }

func strp(s string) *string { return &s }

func (s *step) created(e ChatCreated) {
	if s.st.Settings == nil {
		set := e.Settings
		s.st.Settings = &set
	}
	if s.st.Title == nil {
		s.st.Title = e.Title
	}
}

func (r *Reducer) user(s *step, e UserMessage) error {
	if e.Settings != nil {
		set := *e.Settings
		s.st.Settings = &set
	}
	if s.st.Settings == nil {
		return fmt.Errorf("chat %s has no settings: send Created first, or settings with the message", s.chat)
	}
	if e.RequestID <= s.st.LastRequestID {
		// A message we have seen (a retry): nothing to do.
		return nil
	}
	// The entries of earlier turns leave the state (the journal keeps
	// them); those this step adds stay, the interrupted turn's stop first.
	dropped := len(s.st.Entries)
	if t := s.st.Turn; t != nil {
		// A new message while a turn runs ends that turn: its calls that
		// have no output yet get one, so the transcript stays valid.
		s.stopTurn(fmt.Sprintf("a new message (request %d) arrived before the turn ended", e.RequestID))
	}
	s.st.EntriesBase += uint64(dropped)
	s.st.Entries = append([]Entry{}, s.st.Entries[dropped:]...)
	s.st.LastRequestID = e.RequestID
	s.st.Transcript = append(s.st.Transcript, e.MessageRef)
	ref := e.MessageRef
	s.entry(Entry{RequestID: e.RequestID, Kind: EntryUser, Text: e.Text, Ref: &ref})
	s.st.Turn = &Turn{RequestID: e.RequestID, Seen: map[string]uint64{}, Calls: []PendingCall{}}
	return s.request()
}

// request emits the ChatRequest of the turn's current round.
func (s *step) request() error {
	set, t := s.st.Settings, s.st.Turn
	refs := append([]cas.Ref{}, s.st.Transcript...)
	req := ChatRequest{
		ChatID: s.chat, RequestID: t.RequestID, Round: t.Round, Provider: set.Provider, Model: set.Model,
		MaxTokens: set.MaxTokens, Temperature: set.Temperature, Instructions: set.Instructions,
		ReasoningEffort: set.ReasoningEffort, MessageRefs: refs, ToolsRef: set.ToolsRef,
	}
	if set.ToolsRef != nil {
		req.ToolChoice = &ToolChoice{Tag: "Auto"}
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
	rc := e.Receipt
	s.st.Transcript = append(s.st.Transcript, rc.OutputRef)
	used := rc.TokenUsage.Prompt + rc.TokenUsage.Completion
	t.Tokens += used
	u := &s.st.Usage
	u.Prompt += rc.TokenUsage.Prompt
	u.Completion += rc.TokenUsage.Completion
	u.Cached += rc.TokenUsage.Cached
	u.Reasoning += rc.TokenUsage.Reasoning
	s.st.CostMicroUSD += rc.CostMicroUSD
	if rc.OutputText != "" {
		ref := rc.OutputRef
		s.entry(Entry{RequestID: t.RequestID, Round: t.Round, Kind: EntryAssistant, Text: rc.OutputText, Ref: &ref})
	}
	if len(rc.ToolCallRefs) == 0 {
		s.entry(Entry{RequestID: t.RequestID, Round: t.Round, Kind: EntryDone, Text: s.turnSummary()})
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
	ts := r.toolSet(s)
	args := make([]parsedArgs, len(calls))
	for i, tc := range calls {
		args[i] = parseArgs(tc.ArgumentsJSON)
		sig := signature(tc.Name, args[i].canon)
		t.Seen[sig]++
		if stop == "" && t.Seen[sig] >= cmp.Or(set.MaxRepeats, DefaultMaxRepeats) {
			stop = fmt.Sprintf("the model called %s with the same arguments %d times (max_repeats)", tc.Name, t.Seen[sig])
		}
		t.Calls = append(t.Calls, PendingCall{CallID: tc.CallID, Tool: tc.Name, Signature: sig, Status: "pending"})
	}
	if stop != "" {
		for i, tc := range calls {
			s.entry(Entry{RequestID: t.RequestID, Round: t.Round, Kind: EntryToolCall, Text: preview(tc.ArgumentsJSON), Ref: &rc.ToolCallRefs[i],
				CallID: strp(tc.CallID), Tool: strp(tc.Name), Status: strp("not_run")})
		}
		s.stopTurn(stop)
		return nil
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
		s.entry(Entry{RequestID: t.RequestID, Round: t.Round, Kind: EntryToolCall, Text: preview(req.ArgumentsJSON), Ref: &rc.ToolCallRefs[i],
			CallID: strp(tc.CallID), Tool: strp(tc.Name), Status: strp("requested")})
		v, err := reducer.FromGo(req)
		if err != nil {
			return err
		}
		s.out.Events = append(s.out.Events, reducer.Event{Schema: ToolRequestSchema, Value: v})
	}
	return s.maybeNextRound()
}

func (s *step) turnSummary() string {
	t := s.st.Turn
	return fmt.Sprintf("%d rounds, %d tokens", t.Round+1, t.Tokens)
}

// check validates one tool call before anything runs: the tool is offered
// and allowed, its arguments (args, parsed from tc.ArgumentsJSON) parse
// and fit the tool's JSON Schema. It returns the request to run, or why
// the call is refused (said to the model, so it can fix the call).
func (r *Reducer) check(s *step, ts *toolSet, tc LlmToolCall, args parsedArgs) (ToolCallRequested, string) {
	t := s.st.Turn
	req := ToolCallRequested{ChatID: s.chat, RequestID: t.RequestID, Round: t.Round, CallID: tc.CallID, Tool: tc.Name}
	if ts.err != nil {
		return req, fmt.Sprintf("error: tool %s cannot run: the tool list is unreadable (%v)", tc.Name, ts.err)
	}
	spec, ok := ts.byName[tc.Name]
	if !ok {
		return req, fmt.Sprintf("error: there is no tool named %q. Available tools: %s. Call one of them by its exact name.", clip(tc.Name, 80), strings.Join(ts.names(), ", "))
	}
	if allow := s.st.Settings.ToolsAllow; allow != nil && !slices.Contains(allow, tc.Name) {
		return req, fmt.Sprintf("error: tool %s is not allowed in this chat (allowed: %s).", tc.Name, strings.Join(allow, ", "))
	}
	if spec.err != nil {
		return req, fmt.Sprintf("error: tool %s cannot run: its input schema does not compile (%v)", tc.Name, spec.err)
	}
	if args.err != nil || args.trailing {
		msg := "trailing data after the object"
		if args.err != nil {
			msg = args.err.Error()
		}
		return req, fmt.Sprintf("error: the arguments of %s are not valid JSON (%s). Send one JSON object that fits the tool's parameters schema.", tc.Name, msg)
	}
	m, isObj := args.value.(map[string]any)
	if !isObj {
		return req, fmt.Sprintf("error: the arguments of %s must be a JSON object, got %s.", tc.Name, jsonKind(args.value))
	}
	if err := spec.schema.Validate(m); err != nil {
		return req, fmt.Sprintf("error: the arguments of %s do not fit its parameters schema: %s. Fix the arguments and call again.", tc.Name, tools.SchemaErrorText(err))
	}
	req.ArgumentsJSON = args.canon
	req.Family = spec.spec.Family
	switch req.Family {
	case tools.FamilyBash:
		script, _ := m["commands"].(string)
		if script == "" {
			script, _ = m["script"].(string)
		}
		req.Script = script
		if n, ok := m["timeout_ms"].(json.Number); ok {
			if v, err := n.Int64(); err == nil && v > 0 {
				u := uint64(v)
				req.TimeoutMS = &u
			}
		}
	case tools.FamilyMCP:
		req.Server, req.ServerTool = spec.spec.Server, spec.spec.ServerTool
	case tools.FamilyIntrospect, tools.FamilyWorkspace:
	default:
		return req, fmt.Sprintf("error: tool %s has no known way to run (family %q).", tc.Name, req.Family)
	}
	return req, ""
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}

// parsedArgs is a call's arguments_json, parsed once for both the repeat
// guard and the check.
type parsedArgs struct {
	value    any    // the first JSON value of the text, numbers as json.Number
	canon    string // value with sorted keys, or the raw text if it does not parse
	err      error  // the text does not start with a JSON value
	trailing bool   // more JSON follows the value
}

func parseArgs(js string) parsedArgs {
	a := parsedArgs{canon: js}
	dec := json.NewDecoder(strings.NewReader(js))
	dec.UseNumber()
	if a.err = dec.Decode(&a.value); a.err != nil {
		return a
	}
	a.trailing = dec.More()
	if b, err := json.Marshal(a.value); err == nil {
		a.canon = string(b)
	}
	return a
}

// toolSet returns the compiled tool specs of the chat's tools blob.
func (r *Reducer) toolSet(s *step) *toolSet {
	ref := s.st.Settings.ToolsRef
	if ref == nil {
		return &toolSet{byName: map[string]*toolSpec{}}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ts, ok := r.specs[*ref]; ok {
		return ts
	}
	ts := &toolSet{byName: map[string]*toolSpec{}}
	b, err := s.c.CAS.Get(bgctx(), *ref)
	if err == nil {
		var specs []tools.SpecTool
		specs, err = tools.DecodeSpec(b)
		for _, sp := range specs {
			ts.byName[sp.Name] = compileSpec(sp)
		}
	}
	ts.err = err
	if r.specs == nil {
		r.specs = map[cas.Ref]*toolSet{}
	}
	r.specs[*ref] = ts
	return ts
}

func compileSpec(sp tools.SpecTool) *toolSpec {
	t := &toolSpec{spec: sp}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(sp.Parameters))
	if err != nil {
		t.err = err
		return t
	}
	c := tools.NewSchemaCompiler()
	url := "mem://tools/" + sp.Name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		t.err = err
		return t
	}
	t.schema, t.err = c.Compile(url)
	return t
}

func (ts *toolSet) names() []string {
	out := make([]string, 0, len(ts.byName))
	for n := range ts.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// outputItem is a function_call_output item, as the Responses API reads it.
type outputItem struct {
	Type   string `json:"type"`
	CallID string `json:"call_id"`
	Output string `json:"output"`
}

// answer gives a call its output: it writes the output item blob and marks
// the call with a status (ok, error, denied, timeout, not_run).
func (s *step) answer(pc *PendingCall, status, text string) error {
	return s.answerCut(pc, status, text, int(cmp.Or(s.st.Settings.OutputLimit, DefaultOutputLimit)))
}

// answerCut is answer with the output cut at limit bytes.
func (s *step) answerCut(pc *PendingCall, status, text string, limit int) error {
	text = cutUTF8(text, limit)
	b, err := json.Marshal(outputItem{Type: "function_call_output", CallID: pc.CallID, Output: text})
	if err != nil {
		return err
	}
	ref := cas.Sum(b)
	s.out.Blobs = append(s.out.Blobs, b)
	pc.Status, pc.OutputRef = status, &ref
	t := s.st.Turn
	s.entry(Entry{RequestID: t.RequestID, Round: t.Round, Kind: EntryToolOutput, Text: preview(text), Ref: &ref,
		CallID: strp(pc.CallID), Tool: strp(pc.Tool), Status: strp(status)})
	return nil
}

// cutUTF8 cuts text to at most limit bytes on a UTF-8 boundary, with a note
// of the original size.
func cutUTF8(text string, limit int) string {
	if len(text) <= limit {
		return text
	}
	cut := runeCut(text, limit)
	return text[:cut] + fmt.Sprintf("\n[output cut at %d of %d bytes]", cut, len(text))
}

// signature names a call for the repeat guard: the tool and its canonical
// arguments, or their hash when they are long (a script can be; the chat's
// state keeps one signature per call).
func signature(tool, args string) string {
	if len(args) > 80 {
		args = cas.Sum([]byte(args)).String()
	}
	return tool + " " + args
}

// EntryTextLimit bounds the text a tool_call or tool_output entry keeps:
// the chat's state is written at every step, so it holds the start of long
// arguments and outputs, and the entry's ref names the whole (see
// ToolCallOf and ToolOutputOf).
const EntryTextLimit = 1024

// preview is what an entry keeps of text: all of it up to EntryTextLimit,
// else its start and its size.
func preview(text string) string {
	if len(text) <= EntryTextLimit {
		return text
	}
	return clip(text, EntryTextLimit) + fmt.Sprintf(" [%d bytes in all]", len(text))
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:runeCut(s, n)] + "…"
}

// runeCut returns the largest cut of s at most n (n < len(s)) that falls on
// a UTF-8 boundary.
func runeCut(s string, n int) int {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// maybeNextRound sends the next request once every call of the round has
// its output: the outputs join the transcript in call order.
func (s *step) maybeNextRound() error {
	t := s.st.Turn
	for _, pc := range t.Calls {
		if pc.Status == "pending" {
			return nil
		}
	}
	for _, pc := range t.Calls {
		s.st.Transcript = append(s.st.Transcript, *pc.OutputRef)
	}
	t.Calls = []PendingCall{}
	t.Round++
	return s.request()
}

// stopTurn ends the turn with a reason the user sees; every call still
// without output gets one saying it was not run.
func (s *step) stopTurn(reason string) {
	t := s.st.Turn
	for i := range t.Calls {
		if t.Calls[i].Status == "pending" {
			_ = s.answer(&t.Calls[i], "not_run", "not run: "+reason)
		}
	}
	for _, pc := range t.Calls {
		if pc.OutputRef != nil {
			s.st.Transcript = append(s.st.Transcript, *pc.OutputRef)
		}
	}
	s.entry(Entry{RequestID: t.RequestID, Round: t.Round, Kind: EntryStop, Text: reason})
	s.st.Turn = nil
}

func (r *Reducer) toolResult(s *step, e ToolResult) error {
	t := s.st.Turn
	if t == nil || t.RequestID != e.RequestID || t.Round != e.Round {
		return s.forwardCommits(e.Response.Commits) // a late result: its commits still count
	}
	var pc *PendingCall
	for i := range t.Calls {
		if t.Calls[i].CallID == e.CallID && t.Calls[i].Status == "pending" {
			pc = &t.Calls[i]
		}
	}
	if pc == nil {
		return s.forwardCommits(e.Response.Commits)
	}
	resp := e.Response
	status, text := "ok", resp.Stdout
	if resp.ExitCode != 0 || resp.Error != nil {
		status = "error"
		var b strings.Builder
		fmt.Fprintf(&b, "error (exit %d", resp.ExitCode)
		if resp.Error != nil {
			fmt.Fprintf(&b, ", %s", *resp.Error)
		}
		b.WriteString(")")
		if resp.Stderr != "" {
			b.WriteString("\n" + resp.Stderr)
		}
		if resp.Stdout != "" {
			b.WriteString("\n" + resp.Stdout)
		}
		text = b.String()
	} else if resp.Stderr != "" {
		// A script that ends well can still say things on stderr (a
		// refusal it caught with ||, a warning): the model reads both.
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += "[stderr]\n" + resp.Stderr
	} else if text == "" {
		text = "(no output)"
	}
	// A tool that cut its own output (StdoutTruncated) has said so in it,
	// with the size it had.
	// A tool that bounds its own output (a file read) is cut at its own
	// limit; the others at the chat's.
	limit := int(cmp.Or(s.st.Settings.OutputLimit, DefaultOutputLimit))
	if sp := r.toolSet(s).byName[pc.Tool]; sp != nil && sp.spec.OutputLimit > 0 {
		limit = sp.spec.OutputLimit
	}
	if err := s.answerCut(pc, status, text, limit); err != nil {
		return err
	}
	if err := s.forwardCommits(resp.Commits); err != nil {
		return err
	}
	return s.maybeNextRound()
}

// forwardCommits records the workspace commits a tool made.
func (s *step) forwardCommits(cs []WorkspaceCommit) error {
	for _, c := range cs {
		v, err := reducer.FromGo(c)
		if err != nil {
			return err
		}
		s.out.Events = append(s.out.Events, reducer.Event{Schema: CommitSchema, Value: v, Key: c.Workspace})
	}
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
	case ToolPlan:
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
			return s.maybeNextRound()
		}
	case ChatPlan:
		var req ChatRequest
		if err := cas.Unmarshal(e.Input, &req); err != nil {
			return fmt.Errorf("chat plan input: %w", err)
		}
		if t == nil || t.RequestID != req.RequestID || t.Round != req.Round {
			return nil
		}
		s.entry(Entry{RequestID: t.RequestID, Round: t.Round, Kind: EntryError, Text: "the model could not be reached: " + msg})
		s.stopTurn("the model call failed")
	}
	return nil
}

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
