package demiurge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/rogpeppe/go-internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/fixtures/*.txtar")

// TestChatFixtures runs testdata/fixtures/*.txtar: a "script" of commands
// stepping the chat reducer (demiurge/Chat@2) of one chat, c1, and the
// "want" output. An optional "tools.json" is the chat's tools, a JSON
// array of {name, description, parameters, family, output_limit}; an
// optional "settings.json" is merged over the default settings of
// "created". The reducer runs as a world runs it, without the world: each
// step gets the state and the memo of the step before, its blobs are
// stored, and its state and events must fit their schemas; a step that
// fails leaves the state as it was. Commands:
//
//	created [SETTINGS_JSON]   Created, the default settings with these over them
//	user TEXT                 a User message (its request_id the one after the chat's last)
//	settings SETTINGS_JSON    from now on user messages carry settings: the defaults with these over them
//	compact                   a Compact request (its request_id the one after the chat's last)
//	model REPLY_JSON          the model's answer to the latest ChatRequest:
//	                          {"text", "calls": [{"id", "name", "args" (JSON) or "arguments" (text)}],
//	                           "usage": {"prompt", "completion"}, "finish", "request_id", "round"}
//	tool CALL_ID RESPONSE_JSON  the result of a requested call (a sys/ToolResponse@1, missing fields zero)
//	event EVENT_JSON          any demiurge/ChatEvent@2 value
//	state                     the chat's state as indented JSON
//	turn                      a compact view: the turn, its calls, the transcript, the estimates
//	entries                   the timeline entries the state holds
//	intents                   the events the last step emitted, in full
//	clock +DURATION           advance the logical time of the steps that follow (it starts at fixtureEpoch)
//	replay                    step every event again with a fresh reducer, no memo, and compare
//
// After each step the new timeline entries and the events it emitted are
// printed, or its error. Hashes are cut to 12 digits.
// fixtureEpoch is the logical time of a fixture's first step; the fixture
// prints times as durations since it.
const fixtureEpoch = 1_700_000_000_000_000_000

func TestChatFixtures(t *testing.T) {
	files, _ := filepath.Glob("testdata/fixtures/*.txtar")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got := runChatFixture(t, ar)
			if diff := chatGoldenDiff(ar, got); diff != "" {
				if *update {
					setChatWant(ar, got)
					if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				t.Errorf("output differs (rerun with -update and review the diff)\n%s", diff)
			}
		})
	}
}

// TestChatFixtureDetectsMismatch: a want section that is wrong fails,
// naming the first line that differs.
func TestChatFixtureDetectsMismatch(t *testing.T) {
	ar := txtar.Parse([]byte(`-- script --
user hello
-- want --
> user hello
  error: chat: User: chat c1 has settings
`))
	got := runChatFixture(t, ar)
	diff := chatGoldenDiff(ar, got)
	if !strings.Contains(diff, "first difference at line 2") || !strings.Contains(got, "has no settings") {
		t.Fatalf("got:\n%s\ndiff:\n%s", got, diff)
	}
	setChatWant(ar, got)
	if diff := chatGoldenDiff(ar, runChatFixture(t, ar)); diff != "" {
		t.Errorf("the same script twice: %s", diff)
	}
}

func chatGoldenDiff(ar *txtar.Archive, got string) string {
	want := ""
	for _, f := range ar.Files {
		if f.Name == "want" {
			want = string(f.Data)
		}
	}
	if want == got {
		return ""
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(gl) || i < len(wl); i++ {
		g, w := "<end>", "<end>"
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			return fmt.Sprintf("first difference at line %d:\ngot:  %s\nwant: %s\n\ngot:\n%s", i+1, g, w, got)
		}
	}
	return "outputs differ"
}

func setChatWant(ar *txtar.Archive, got string) {
	for i, f := range ar.Files {
		if f.Name == "want" {
			ar.Files[i].Data = []byte(got)
			return
		}
	}
	ar.Files = append(ar.Files, txtar.File{Name: "want", Data: []byte(got)})
}

// chatStep is one step as the fixture ran it, for replay.
type chatStep struct {
	now   uint64 // the step's logical time
	event schema.Value
	out   string // the step's state and events, encoded, or its error
}

type chatFixture struct {
	t        *testing.T
	ctx      context.Context
	out      *bytes.Buffer
	cat      *schema.Catalog
	store    *cas.Memory
	settings map[string]any
	// userSettings, if set, go with every user message.
	userSettings map[string]any
	red          *demiurge.Reducer
	state        schema.Value
	memo         any
	seen         uint64 // timeline entries printed
	lastReq      *demiurge.ChatRequest
	calls        map[string]demiurge.ToolCallRequested
	emitted      []reducer.Event // by the last step
	steps        []chatStep
	now          uint64 // the logical time of the next step
}

func runChatFixture(t *testing.T, ar *txtar.Archive) string {
	t.Helper()
	reg := reducer.NewRegistry()
	demiurge.Register(reg)
	cat, err := schema.Load("../../examples/demiurge", &schema.LoadOptions{Reducers: reg.Names()})
	if err != nil {
		t.Fatal(err)
	}
	fx := &chatFixture{
		t: t, ctx: t.Context(), out: &bytes.Buffer{}, cat: cat, store: cas.NewMemory(), red: &demiurge.Reducer{},
		calls: map[string]demiurge.ToolCallRequested{}, now: fixtureEpoch,
		settings: map[string]any{"provider": "openai-responses", "model": "gpt-test", "max_tokens": 1000,
			"max_rounds": 8, "max_repeats": 3, "output_limit": 2000},
	}
	var script string
	for _, f := range ar.Files {
		switch f.Name {
		case "script":
			script = string(f.Data)
		case "want":
		case "settings.json":
			if err := json.Unmarshal(f.Data, &fx.settings); err != nil {
				t.Fatalf("settings.json: %v", err)
			}
		case "tools.json":
			fx.settings["tools_ref"] = fx.toolsBlob(f.Data).String()
		default:
			t.Fatalf("unknown file %s", f.Name)
		}
	}
	for _, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fmt.Fprintf(fx.out, "> %s\n", line)
		fx.command(line)
	}
	return fx.out.String()
}

func (fx *chatFixture) printf(format string, args ...any) {
	fmt.Fprintf(fx.out, "  "+format+"\n", args...)
}

// toolsBlob stores the tools blob of a tools.json and returns its ref.
func (fx *chatFixture) toolsBlob(js []byte) cas.Ref {
	var list []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Family      string          `json:"family"`
		OutputLimit int             `json:"output_limit"`
	}
	if err := json.Unmarshal(js, &list); err != nil {
		fx.t.Fatalf("tools.json: %v", err)
	}
	specs := make([]tools.SpecTool, len(list))
	for i, l := range list {
		specs[i] = tools.SpecTool{Name: l.Name, Description: l.Description, Parameters: l.Parameters, Family: l.Family, OutputLimit: l.OutputLimit}
	}
	blob, err := tools.EncodeSpec(specs)
	if err != nil {
		fx.t.Fatalf("tools.json: %v", err)
	}
	return fx.put(blob)
}

func (fx *chatFixture) put(b []byte) cas.Ref {
	ref, err := fx.store.Put(fx.ctx, b)
	if err != nil {
		fx.t.Fatal(err)
	}
	return ref
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (fx *chatFixture) command(line string) {
	t := fx.t
	cmd, rest, _ := strings.Cut(line, " ")
	switch cmd {
	case "created":
		set := maps.Clone(fx.settings)
		if rest != "" {
			if err := json.Unmarshal([]byte(rest), &set); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
		}
		fx.step(mustJSON(t, map[string]any{"Created": map[string]any{"chat_id": "c1", "title": "fixture", "settings": set}}))
	case "user", "big":
		if cmd == "big" { // big N: a message of N bytes
			n, err := strconv.Atoi(rest)
			if err != nil {
				t.Fatalf("%s: want big N", line)
			}
			rest = strings.Repeat("x", n)
		}
		ref := fx.put([]byte(mustJSON(t, map[string]string{"role": "user", "content": rest})))
		id := fx.decodeState().LastRequestID + 1
		msg := map[string]any{"chat_id": "c1", "request_id": id, "text": rest, "message_ref": ref.String()}
		if fx.userSettings != nil {
			msg["settings"] = fx.userSettings
		}
		fx.step(mustJSON(t, map[string]any{"User": msg}))
	case "settings":
		fx.userSettings = maps.Clone(fx.settings)
		if err := json.Unmarshal([]byte(rest), &fx.userSettings); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
	case "compact":
		id := fx.decodeState().LastRequestID + 1
		fx.step(mustJSON(t, map[string]any{"Compact": map[string]any{"chat_id": "c1", "request_id": id}}))
	case "model":
		fx.step(fx.modelResult(rest))
	case "tool":
		id, js, _ := strings.Cut(rest, " ")
		fx.step(fx.toolResult(id, js))
	case "event":
		fx.step(rest)
	case "state":
		if fx.state == nil {
			fx.printf("no state")
			return
		}
		var b bytes.Buffer
		if err := json.Indent(&b, []byte(shortHashes(schema.ValueJSON(fx.state))), "  ", "  "); err != nil {
			t.Fatal(err)
		}
		fx.printf("%s", b.String())
	case "turn":
		fx.printTurn()
	case "entries":
		fx.printEntries(0)
	case "intents":
		if len(fx.emitted) == 0 {
			fx.printf("none")
		}
		for _, e := range fx.emitted {
			var b bytes.Buffer
			if err := json.Indent(&b, []byte(shortHashes(schema.ValueJSON(e.Value))), "  ", "  "); err != nil {
				t.Fatal(err)
			}
			fx.printf("%s %s", e.Schema, b.String())
		}
	case "replay":
		fx.replay()
	case "clock":
		d, err := time.ParseDuration(rest)
		if err != nil || d < 0 {
			t.Fatalf("clock %s: want a duration to advance the logical time by (e.g. +90s)", rest)
		}
		fx.now += uint64(d)
		fx.printf("logical time %s", time.Duration(fx.now-fixtureEpoch))
	default:
		t.Fatalf("unknown command %q", cmd)
	}
}

// modelResult builds the Result event that answers the latest ChatRequest
// with the reply in js: the output items blob and a tool call node for each
// call are stored, as the llm adapter stores them.
func (fx *chatFixture) modelResult(js string) string {
	t := fx.t
	var reply struct {
		Text  string `json:"text"`
		Calls []struct {
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Args      json.RawMessage `json:"args"`
			Arguments *string         `json:"arguments"`
		} `json:"calls"`
		Usage     *demiurge.TokenUsage `json:"usage"`
		Finish    string               `json:"finish"`
		RequestID *uint64              `json:"request_id"`
		Round     *uint64              `json:"round"`
	}
	if err := json.Unmarshal([]byte(js), &reply); err != nil {
		t.Fatalf("model %s: %v", js, err)
	}
	if fx.lastReq == nil && (reply.RequestID == nil || reply.Round == nil) {
		t.Fatalf("model: no ChatRequest to answer")
	}
	req, round := uint64(0), uint64(0)
	if fx.lastReq != nil {
		req, round = fx.lastReq.RequestID, fx.lastReq.Round
	}
	if reply.RequestID != nil {
		req = *reply.RequestID
	}
	if reply.Round != nil {
		round = *reply.Round
	}
	type item struct {
		Type      string `json:"type"`
		Role      string `json:"role,omitempty"`
		Text      string `json:"text,omitempty"`
		CallID    string `json:"call_id,omitempty"`
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments,omitempty"`
	}
	var items []item
	if reply.Text != "" {
		items = append(items, item{Type: "message", Role: "assistant", Text: reply.Text})
	}
	callRefs := []string{}
	for _, c := range reply.Calls {
		args := string(c.Args)
		if c.Arguments != nil {
			args = *c.Arguments
		}
		items = append(items, item{Type: "function_call", CallID: c.ID, Name: c.Name, Arguments: args})
		node, err := cas.Marshal(demiurge.LlmToolCall{CallID: c.ID, Name: c.Name, ArgumentsJSON: args})
		if err != nil {
			t.Fatal(err)
		}
		callRefs = append(callRefs, fx.put(node).String())
	}
	if items == nil {
		items = []item{}
	}
	out := fx.put([]byte(mustJSON(t, items)))
	rc := map[string]any{
		"output_ref": out.String(), "output_text": reply.Text, "token_usage": reply.Usage, "cost_cents": nil, "cost_microusd": nil,
		"provider_id": "fixture", "model": "gpt-test", "finish_reason": cmpOr(reply.Finish, "stop"), "tool_call_refs": callRefs,
		"output_items_ref": nil, "request_ref": nil, "response_ref": nil, "attempts": 1, "failed_attempts_ref": nil,
	}
	if reply.Usage != nil {
		rc["token_usage"] = map[string]any{"prompt": reply.Usage.Prompt, "completion": reply.Usage.Completion, "cached": 0, "reasoning": 0}
	}
	return mustJSON(t, map[string]any{"Result": map[string]any{"chat_id": "c1", "request_id": req, "round": round, "receipt": rc}})
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// toolResult builds the ToolResult event of call id: the request's turn
// and round (or, for a call never requested, the latest request's), the
// response in js over a zero response.
func (fx *chatFixture) toolResult(id, js string) string {
	t := fx.t
	resp := map[string]any{"stdout": "", "stderr": "", "exit_code": 0, "error": nil, "stdout_truncated": false, "stderr_truncated": false, "commits": []any{}, "calls": []any{}}
	if err := json.Unmarshal([]byte(js), &resp); err != nil {
		t.Fatalf("tool %s %s: %v", id, js, err)
	}
	req, round := uint64(0), uint64(0)
	if r, ok := fx.calls[id]; ok {
		req, round = r.RequestID, r.Round
	} else if fx.lastReq != nil {
		req, round = fx.lastReq.RequestID, fx.lastReq.Round
	}
	return mustJSON(t, map[string]any{"ToolResult": map[string]any{"chat_id": "c1", "request_id": req, "round": round, "call_id": id, "response": resp}})
}

// stepOnce runs the reducer on one event as a world would and returns the
// output, or the step's error (the reducer's, or an output that does not
// fit its schemas), and the output encoded for replay.
func stepOnce(cat *schema.Catalog, store *cas.Memory, red *demiurge.Reducer, now uint64, state schema.Value, memo any, ev schema.Value) (reducer.Output, string, error) {
	c := &reducer.Context{
		Stamp:  reducer.Stamp{NowNS: now, LogicalNowNS: now, Entropy: make([]byte, 32)},
		Module: demiurge.ModuleName, Key: "c1", EventSchema: demiurge.EventSchema, CAS: store, Memo: memo,
	}
	out, err := red.Step(c, state, ev)
	if err != nil {
		return out, "error: " + err.Error(), err
	}
	ns, err := schema.Normalize(cat, schema.RefType("demiurge/ChatState@2"), out.State)
	if err != nil {
		err = fmt.Errorf("new state does not fit demiurge/ChatState@2: %w", err)
		return out, "error: " + err.Error(), err
	}
	// The world keeps the normalized state (options the reducer left out
	// are null in it), as here.
	out.State = ns
	var enc strings.Builder
	enc.Write(schema.ValueJSON(out.State))
	for i, e := range out.Events {
		v, err := schema.Normalize(cat, schema.RefType(e.Schema), e.Value)
		if err != nil {
			err = fmt.Errorf("event %d does not fit %s: %w", i, e.Schema, err)
			return out, "error: " + err.Error(), err
		}
		out.Events[i].Value = v
		fmt.Fprintf(&enc, "\n%s %s %s", e.Schema, schema.ValueJSON(e.Key), schema.ValueJSON(v))
	}
	if len(out.Effects) > 0 {
		err = fmt.Errorf("the chat emitted %d effects; it declares none", len(out.Effects))
		return out, "error: " + err.Error(), err
	}
	for _, b := range out.Blobs {
		if _, err := store.Put(context.Background(), b); err != nil {
			return out, "error: " + err.Error(), err
		}
	}
	return out, enc.String(), nil
}

// step sends one chat event (AIR JSON) and prints what it did.
func (fx *chatFixture) step(js string) {
	ev, err := schema.NormalizeJSON(fx.cat, schema.RefType(demiurge.EventSchema), []byte(js))
	if err != nil {
		fx.printf("refused: %s: %v", demiurge.EventSchema, err)
		return
	}
	fx.emitted = nil
	out, enc, err := stepOnce(fx.cat, fx.store, fx.red, fx.now, fx.state, fx.memo, ev)
	fx.steps = append(fx.steps, chatStep{now: fx.now, event: ev, out: enc})
	if err != nil {
		// The world journals a ReducerError and keeps the state; the memo
		// is gone.
		fx.memo = nil
		fx.printf("%s", enc)
		if !strings.HasPrefix(err.Error(), "chat: ") {
			fx.t.Errorf("the chat's output is invalid: %v", err)
		}
		return
	}
	fx.state, fx.memo, fx.emitted = out.State, out.Memo, out.Events
	fx.printEntries(fx.seen)
	for _, e := range out.Events {
		fx.printEvent(e)
	}
}

func (fx *chatFixture) decodeState() demiurge.State {
	var st demiurge.State
	if fx.state != nil {
		if err := reducer.ToGo(fx.state, &st); err != nil {
			fx.t.Fatal(err)
		}
	}
	return st
}

// printEntries prints the timeline entries the state holds from entry n
// on.
func (fx *chatFixture) printEntries(n uint64) {
	st := fx.decodeState()
	es, end := st.Since(n)
	if n == 0 && st.EntriesBase > 0 {
		fx.printf("(%d earlier entries left the state)", st.EntriesBase)
	}
	for _, e := range es {
		var b strings.Builder
		fmt.Fprintf(&b, "entry %d.%d %s", e.RequestID, e.Round, e.Kind)
		if e.Tool != nil {
			fmt.Fprintf(&b, " %s", *e.Tool)
		}
		if e.CallID != nil {
			fmt.Fprintf(&b, " (%s)", *e.CallID)
		}
		if e.Status != nil {
			fmt.Fprintf(&b, " [%s]", *e.Status)
		}
		text := strings.ReplaceAll(e.Text, "\n", " | ")
		if len(text) > 1000 { // a big message (big N)
			text = fmt.Sprintf("%s… (%d bytes)", text[:40], len(text))
		}
		fmt.Fprintf(&b, ": %s", text)
		fx.printf("%s", b.String())
	}
	if end > fx.seen {
		fx.seen = end
	}
}

// printTurn prints the state in short: the turn under way and its calls,
// what a request sends of the transcript, and the token estimates.
func (fx *chatFixture) printTurn() {
	st := fx.decodeState()
	if t := st.Turn; t == nil {
		fx.printf("no turn (last request %d)", st.LastRequestID)
	} else {
		var calls []string
		for _, c := range t.Calls {
			deadline := ""
			if c.DeadlineNS != 0 {
				deadline = fmt.Sprintf(" until %s", time.Duration(c.DeadlineNS-fixtureEpoch))
			}
			calls = append(calls, fmt.Sprintf("%s %s [%s%s]", c.CallID, c.Tool, c.Status, deadline))
		}
		compacting := ""
		if t.Compacting != nil {
			compacting = fmt.Sprintf(", compacting up to item %d", *t.Compacting)
		}
		fx.printf("turn %d.%d %s, %d tokens%s, calls: %s", t.RequestID, t.Round, t.Kind, t.Tokens, compacting, strings.Join(calls, ", "))
	}
	if set := st.Settings; set != nil {
		window := "none"
		if set.ContextWindow != nil {
			window = fmt.Sprint(*set.ContextWindow)
		}
		allow := "all"
		if set.ToolsAllow != nil {
			allow = strings.Join(set.ToolsAllow, " ")
		}
		fx.printf("settings: %s, max_rounds %d, max_repeats %d, output_limit %d, context_window %s, tools_allow %s",
			set.Model, set.MaxRounds, set.MaxRepeats, set.OutputLimit, window, allow)
	}
	summary := "none"
	if st.Summary != nil {
		summary = st.Summary.Short()
	}
	fx.printf("transcript %d items, sent from %d, summary %s", st.Transcript.Len, st.From, summary)
	var marks []string
	for _, m := range st.Marks {
		marks = append(marks, fmt.Sprintf("%d@%d", m.Index, m.Tokens))
	}
	fx.printf("tokens %d (overhead %d), marks [%s]; usage %d+%d, usage unknown %d, cost unknown %d",
		st.Tokens, st.OverheadTokens, strings.Join(marks, " "), st.Usage.Prompt, st.Usage.Completion, st.UsageUnknown, st.CostUnknown)
}

func (fx *chatFixture) printEvent(e reducer.Event) {
	switch e.Schema {
	case demiurge.ChatRequestSchema:
		var r demiurge.ChatRequest
		if err := reducer.ToGo(e.Value, &r); err != nil {
			fx.t.Fatal(err)
		}
		fx.lastReq = &r
		tr := r.Transcript
		to := "end"
		if tr.To != nil {
			to = fmt.Sprint(*tr.To)
		}
		choice := "none"
		if r.ToolChoice != nil {
			choice = r.ToolChoice.Tag
		}
		fx.printf("emit ChatRequest %d.%d %s: transcript items %d..%s of %d, prefix %d, suffix %d, tool_choice %s",
			r.RequestID, r.Round, r.Purpose, tr.From, to, tr.Refs.Len, len(tr.Prefix), len(tr.Suffix), choice)
	case demiurge.ToolRequestSchema:
		var r demiurge.ToolCallRequested
		if err := reducer.ToGo(e.Value, &r); err != nil {
			fx.t.Fatal(err)
		}
		fx.calls[r.CallID] = r
		fx.printf("emit ToolCallRequested %d.%d %s %s (%s) %s", r.RequestID, r.Round, r.CallID, r.Tool, r.Family, r.ArgumentsJSON)
	default:
		fx.printf("emit %s %s", e.Schema, shortHashes(schema.ValueJSON(e.Value)))
	}
}

// replay steps every event again with a fresh reducer (no cached tool
// specs) and no memo, and compares each step's outcome.
func (fx *chatFixture) replay() {
	red := &demiurge.Reducer{}
	var state schema.Value
	for i, s := range fx.steps {
		out, enc, err := stepOnce(fx.cat, fx.store, red, s.now, state, nil, s.event)
		if enc != s.out {
			fx.printf("step %d differs:\n    live:   %s\n    replay: %s", i+1, s.out, enc)
			fx.t.Errorf("replay of step %d differs", i+1)
			return
		}
		if err == nil {
			state = out.State
		}
	}
	fx.printf("replay: %d steps, the same states, events and errors", len(fx.steps))
}

var hashRE = regexp.MustCompile(`blake3:[0-9a-f]{64}`)

func shortHashes(js []byte) string {
	return hashRE.ReplaceAllStringFunc(string(js), func(s string) string { return s[:len("blake3:")+12] })
}
