package demiurge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/adapters/toolcall"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/replay"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/world"
)

// fakeTool is a tool whose output is computed by fn.
type fakeTool struct {
	name, schema string
	fn           func(args map[string]any) tools.Response
	limit        int // its own output limit (tools.OutputLimiter), 0 for none
}

func (f *fakeTool) OutputLimit() int { return f.limit }

func (f *fakeTool) Info() tools.Info {
	return tools.Info{Name: f.name, Description: "A fake tool for tests: " + f.name, InputSchema: json.RawMessage(f.schema)}
}
func (f *fakeTool) Run(ctx context.Context, r tools.Request, _ tools.StatusFunc) tools.Response {
	var args map[string]any
	if err := json.Unmarshal(r.Arguments, &args); err != nil {
		return tools.Response{ExitCode: 2, Stderr: err.Error()}
	}
	return f.fn(args)
}

type chatWorld struct {
	w     *world.World
	st    *world.MemoryStorage
	cat   *schema.Catalog
	reg   *reducer.Registry
	srv   *llmtest.Server
	tools *toolcall.Adapter
}

func newChatWorld(t *testing.T, script llmtest.Script) *chatWorld {
	t.Helper()
	return newChatWorldOn(t, llmtest.NewServer(script), "")
}

// newChatWorldOn is newChatWorld with the model srv, and settings for
// the chat over the defaults (a JSON object, such as
// `{"context_window": 3000}`).
func newChatWorldOn(t *testing.T, srv *llmtest.Server, settings string) *chatWorld {
	t.Helper()
	ctx := t.Context()
	reg := reducer.NewRegistry()
	demiurge.Register(reg)
	cat, err := schema.Load("../../examples/demiurge", &schema.LoadOptions{Reducers: reg.Names()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	gen, err := llm.New(llm.Config{BaseURL: srv.URL + "/v1", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	ta := toolcall.New(
		&fakeTool{name: "introspect_manifest", schema: `{"type":"object","properties":{},"additionalProperties":false}`,
			fn: func(map[string]any) tools.Response { return tools.Response{Stdout: `{"manifest":"ok"}`} }},
		&fakeTool{name: "workspace_read", schema: `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`,
			fn: func(a map[string]any) tools.Response {
				switch a["path"] {
				case "missing.md":
					return tools.Response{ExitCode: 1, Stderr: "workspace_read: missing.md: no such file"}
				case "big.md": // over the chat's limit (200), under the tool's own
					return tools.Response{Stdout: strings.Repeat("b", 900)}
				case "huge.md":
					return tools.Response{Stdout: strings.Repeat("h", 12000)}
				case "warn.md":
					return tools.Response{Stdout: "text", Stderr: "workspace_read: warn.md: 2 bytes are not UTF-8"}
				}
				return tools.Response{Stdout: "contents of " + fmt.Sprint(a["path"])}
			}, limit: 10000},
	)
	st := world.NewMemoryStorage()
	w, err := world.Open(ctx, world.Options{
		Name: "chat", Catalog: cat, Reducers: reg, Storage: st,
		Adapters: map[string]effects.Adapter{
			"llm.generate":    &llm.Adapter{Generator: gen},
			"introspect.call": ta,
			"workspace.call":  ta,
		},
		Dispatch: effects.DispatcherOptions{Getenv: func(k string) (string, bool) { return "sk-test-key", k == "OPENAI_API_KEY" }},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	var specs []tools.SpecTool
	for _, name := range ta.Names() {
		tl, _ := ta.Tool(name)
		fam := tools.FamilyIntrospect
		if strings.HasPrefix(name, "workspace_") {
			fam = tools.FamilyWorkspace
		}
		specs = append(specs, tools.SpecFor(tl, fam))
	}
	blob, err := tools.EncodeSpec(specs)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := st.CAS().Put(ctx, blob)
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]any{"provider": "openai-responses", "model": "gpt-test", "max_tokens": 1000, "tools_ref": ref.String(),
		"max_rounds": 4, "max_repeats": 3, "output_limit": 200, "token_budget": 1000000}
	if settings != "" {
		if err := json.Unmarshal([]byte(settings), &set); err != nil {
			t.Fatal(err)
		}
	}
	created, err := json.Marshal(map[string]any{"Created": map[string]any{"chat_id": "c1", "title": "test", "settings": set}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.SendJSON(ctx, "demiurge/ChatEvent@3", []byte(created)); err != nil {
		t.Fatal(err)
	}
	return &chatWorld{w: w, st: st, cat: cat, reg: reg, srv: srv, tools: ta}
}

func (cw *chatWorld) say(t *testing.T, id int, text string) {
	t.Helper()
	ctx := t.Context()
	msg, _ := json.Marshal(map[string]string{"role": "user", "content": text})
	ref, err := cw.st.CAS().Put(ctx, msg)
	if err != nil {
		t.Fatal(err)
	}
	js := fmt.Sprintf(`{"User": {"chat_id": "c1", "request_id": %d, "text": %q, "message_ref": %q}}`, id, text, ref)
	if _, err := cw.w.SendJSON(ctx, "demiurge/ChatEvent@3", []byte(js)); err != nil {
		t.Fatal(err)
	}
	if err := cw.w.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
}

// send sends a chat event (JSON) and waits until the world is idle.
func (cw *chatWorld) send(t *testing.T, js string) {
	t.Helper()
	if _, err := cw.w.SendJSON(t.Context(), demiurge.EventSchema, []byte(js)); err != nil {
		t.Fatal(err)
	}
	if err := cw.w.WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// stateBytes returns the chat's state as it is stored.
func (cw *chatWorld) stateBytes(t *testing.T) ([]byte, error) {
	t.Helper()
	v, _, ok := cw.w.State(demiurge.ModuleName, "c1")
	if !ok {
		t.Fatal("no chat cell")
	}
	return schema.Encode(v)
}

func (cw *chatWorld) state(t *testing.T) demiurge.State {
	t.Helper()
	v, _, ok := cw.w.State(demiurge.ModuleName, "c1")
	if !ok {
		t.Fatal("no chat cell")
	}
	var st demiurge.State
	if err := reducer.ToGo(v, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func entries(st demiurge.State) string { return formatEntries(st.Entries) }

// timeline returns the chat's whole timeline, as a reader that follows its
// states in journal order reads it (the state keeps only its latest
// entries), formatted as entries does.
func (cw *chatWorld) timeline(t *testing.T) string {
	t.Helper()
	var all []demiurge.Entry
	seen := uint64(0)
	err := cw.st.Journal().Read(t.Context(), "chat", 1, func(r journal.Record) error {
		if r.Kind != world.KindState {
			return nil
		}
		sr, err := world.DecodeState(r)
		if err != nil || sr.Reducer != demiurge.ModuleName || !sr.State.Valid() {
			return err
		}
		var st demiurge.State
		if err := cas.GetNode(t.Context(), cw.st.CAS(), sr.State, &st); err != nil {
			return err
		}
		var unseen []demiurge.Entry
		unseen, seen = st.Since(seen)
		all = append(all, unseen...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return formatEntries(all)
}

func formatEntries(es []demiurge.Entry) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "%d.%d %s", e.RequestID, e.Round, e.Kind)
		if e.Tool != nil {
			fmt.Fprintf(&b, " %s", *e.Tool)
		}
		if e.Status != nil {
			fmt.Fprintf(&b, " [%s]", *e.Status)
		}
		fmt.Fprintf(&b, ": %s\n", strings.ReplaceAll(e.Text, "\n", " | "))
	}
	return b.String()
}

// TestParallelCallsOneInvalid: three calls in one turn, one to a tool that
// does not exist and one with arguments that do not fit its schema. The
// good one runs; the bad ones are answered at once with what to fix; the
// outputs go back in call order; the model then answers.
func TestParallelCallsOneInvalid(t *testing.T) {
	cw := newChatWorld(t, llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{
			{Name: "workspace_read", Arguments: `{"path":"README.md"}`},
			{Name: "delete_everything", Arguments: `{}`},
			{Name: "workspace_read", Arguments: `{"file":"README.md"}`},
			{Name: "workspace_read", Arguments: `{"path": "missing.md"}`},
		}},
		{Text: "Read README.md; the other calls failed."},
	}})
	cw.say(t, 1, "read the readme")
	var sb strings.Builder
	replay.Trace(t.Context(), &sb, cw.st.Journal(), "chat", replay.TraceOptions{})
	t.Logf("trace:\n%s", sb.String())
	st := cw.state(t)
	got := cw.timeline(t)
	want := `1.0 user: read the readme
1.0 tool_call workspace_read [requested]: {"path":"README.md"}
1.0 tool_call delete_everything [rejected]: {}
1.0 tool_output delete_everything [error]: error: there is no tool named "delete_everything". Available tools: introspect_manifest, workspace_read. Call one of them by its exact name.
1.0 tool_call workspace_read [rejected]: {"file":"README.md"}
1.0 tool_output workspace_read [error]: error: the arguments of workspace_read do not fit its parameters schema: at /: additional properties 'file' not allowed; at /: missing property 'path'. Fix the arguments and call again.
1.0 tool_call workspace_read [requested]: {"path":"missing.md"}
`
	if !strings.HasPrefix(got, want) {
		t.Fatalf("entries:\n%s\nwant prefix:\n%s", got, want)
	}
	if !strings.Contains(got, "tool_output workspace_read [ok]: contents of README.md") ||
		!strings.Contains(got, "tool_output workspace_read [error]: error (exit 1) | workspace_read: missing.md: no such file") ||
		!strings.HasSuffix(got, "1.1 assistant: Read README.md; the other calls failed.\n1.1 done [stop]: 2 rounds, "+fmt.Sprint(st.Usage.Prompt+st.Usage.Completion)+" tokens\n") {
		t.Fatalf("entries:\n%s", got)
	}
	// The second request carries every call's output, in call order.
	reqs := cw.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	body := string(reqs[1].Body)
	if strings.Count(body, `function_call_output`) != 4 {
		t.Fatalf("second request has %d outputs:\n%s", strings.Count(body, `function_call_output`), body)
	}
	last := -1
	for _, e := range st.Entries {
		if e.Kind != demiurge.EntryToolCall {
			continue
		}
		i := strings.Index(body, `"type":"function_call_output","call_id":"`+*e.CallID+`"`)
		if i < 0 {
			i = strings.Index(body, `"call_id":"`+*e.CallID+`","output"`)
		}
		if i <= last {
			t.Fatalf("output of %s is not after the previous call's output in the second request:\n%s", *e.CallID, body)
		}
		last = i
	}
	checkReplay(t, cw)
}

func checkReplay(t *testing.T, cw *chatWorld) {
	t.Helper()
	cw.w.Close()
	if _, err := world.Rerun(t.Context(), world.RerunOptions{Name: "chat", Catalog: cw.cat, Reducers: cw.reg, Storage: cw.st, FromGenesis: true}); err != nil {
		t.Fatal(replay.Describe(err))
	}
	var sb strings.Builder
	if err := replay.Trace(t.Context(), &sb, cw.st.Journal(), "chat", replay.TraceOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("trace:\n%s", sb.String())
}

// TestEntriesOfEarlierTurnsLeaveTheState: a new user message drops the
// entries of earlier turns from the chat's state (EntriesBase counts
// them), so the state stays the size of a turn; Since hands a reader each
// entry once.
func TestEntriesOfEarlierTurnsLeaveTheState(t *testing.T) {
	cw := newChatWorld(t, llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_read", Arguments: `{"path":"a.md"}`}}},
		{Text: "a.md read."},
		{Text: "Hello again."},
	}})
	cw.say(t, 1, "read a.md")
	first := cw.state(t)
	if first.EntriesBase != 0 || len(first.Entries) != 5 {
		t.Fatalf("after turn 1: base %d, entries:\n%s", first.EntriesBase, entries(first))
	}
	cw.say(t, 2, "hi")
	second := cw.state(t)
	want := "2.0 user: hi\n2.0 assistant: Hello again.\n2.0 done [stop]: 1 round, 0 tokens\n"
	if got := entries(second); second.EntriesBase != 5 || !strings.HasPrefix(got, "2.0 user: hi\n2.0 assistant: Hello again.\n2.0 done") {
		t.Fatalf("after turn 2: base %d, entries:\n%s\nwant base 5 and entries like:\n%s", second.EntriesBase, got, want)
	}

	// A reader following the two states sees every entry once, in order.
	var seen []string
	n := uint64(0)
	for _, st := range []demiurge.State{first, second} {
		var unseen []demiurge.Entry
		unseen, n = st.Since(n)
		for _, e := range unseen {
			seen = append(seen, fmt.Sprintf("%d %s", e.RequestID, e.Kind))
		}
	}
	if got := strings.Join(seen, ", "); got != "1 user, 1 tool_call, 1 tool_output, 1 assistant, 1 done, 2 user, 2 assistant, 2 done" || n != 8 {
		t.Fatalf("Since over both states: %s (n %d)", got, n)
	}
	// A reader that starts late, or asks again, gets nothing twice.
	if unseen, end := second.Since(2); len(unseen) != 3 || end != 8 {
		t.Fatalf("Since(2) = %d entries, %d", len(unseen), end)
	}
	if unseen, end := second.Since(8); len(unseen) != 0 || end != 8 {
		t.Fatalf("Since(8) = %d entries, %d", len(unseen), end)
	}
}
