package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/agent/session"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/replay/replaytest"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/world"
)

const manifest = "../examples/demiurge"

// env is an environment with only the variables given.
func env(kv ...string) agent.Option {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return agent.WithEnv(func(k string) (string, bool) { v, ok := m[k]; return v, ok })
}

// fake opens the demiurge example world against llmtest answering turns.
func fake(t *testing.T, turns []llmtest.Turn, opts ...agent.Option) (*agent.World, *llmtest.Server) {
	t.Helper()
	srv := llmtest.NewServer(llmtest.Script{Turns: turns})
	t.Cleanup(srv.Close)
	opts = append([]agent.Option{env("OPENAI_API_KEY", "sk-test", "OPENAI_BASE_URL", srv.URL),
		agent.WithModel(agent.Model{Name: "gpt-test"})}, opts...)
	w, err := agent.Open(t.Context(), manifest, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, srv
}

// collect runs a turn and returns its events, as text lines, and its end.
func collect(t *testing.T, seq func(yield func(agent.Event, error) bool)) ([]string, agent.TurnEnd) {
	t.Helper()
	var lines []string
	var end agent.TurnEnd
	for e, err := range seq {
		if err != nil {
			t.Fatalf("turn: %v", err)
		}
		switch e := e.(type) {
		case agent.TextDelta:
			continue // how the text is cut depends on the stream
		case agent.TurnEnd:
			end = e
		}
		b, err := agent.MarshalEvent(e)
		if err != nil {
			t.Fatalf("marshal %T: %v", e, err)
		}
		lines = append(lines, string(b))
	}
	return lines, end
}

func TestSendDemo(t *testing.T) {
	w, err := agent.Open(t.Context(), manifest, agent.WithModel(agent.Cassette("../testdata/sessions/demo")), env())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	lines, end := collect(t, w.Chat("main").Send(t.Context(), "Write a hello note and show it to me."))
	if end.Outcome != agent.OutcomeAnswer || end.Finish != "stop" {
		t.Errorf("turn end %+v; want an answer", end)
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{
		`"type":"message","seq":`, `"role":"user","text":"Write a hello note and show it to me."`,
		`"type":"tool_call_started"`, `"tool":"workspace_write"`, `"status":"requested"`,
		`"type":"tool_call_finished"`, `"tool":"bash"`, `"status":"ok"`,
		`"type":"model_call"`,
		`"role":"assistant","text":"I wrote notes/hello.md in the workspace and read it back: it says hello."`,
		`"type":"turn_end"`, `"outcome":"answer"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the events lack %s:\n%s", want, got)
		}
	}
	if !strings.HasSuffix(lines[len(lines)-1], "}") || !strings.Contains(lines[len(lines)-1], "turn_end") {
		t.Errorf("the last event is not the turn's end: %s", lines[len(lines)-1])
	}
}

type weatherIn struct {
	City string `json:"city" jsonschema:"the city, e.g. Paris"`
}

type weatherOut struct {
	City    string `json:"city"`
	Weather string `json:"weather"`
}

func weather() tools.Tool {
	return agent.Func("get_weather", "The weather in a city now.", func(ctx context.Context, in weatherIn) (weatherOut, error) {
		if in.City == "Atlantis" {
			return weatherOut{}, errors.New("no such city")
		}
		return weatherOut{City: in.City, Weather: "sunny"}, nil
	})
}

func TestCustomTool(t *testing.T) {
	w, srv := fake(t, []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "get_weather", Arguments: `{"city": "Paris"}`}, {Name: "get_weather", Arguments: `{"city": "Atlantis"}`}, {Name: "get_weather", Arguments: `{"town": "Rome"}`}}},
		{Calls: []llmtest.Call{{Name: "bash", Arguments: `{"commands": "get_weather --city Oslo | jq -r .weather"}`}}},
		{Text: "Sunny in Paris and Oslo."},
	}, agent.WithTools(weather()))
	lines, end := collect(t, w.Chat("c").Send(t.Context(), "Weather?"))
	if end.Outcome != agent.OutcomeAnswer {
		t.Fatalf("end %+v\n%s", end, strings.Join(lines, "\n"))
	}
	var finished []agent.ToolCallFinished
	for _, l := range lines {
		if strings.Contains(l, `"tool_call_finished"`) {
			var f agent.ToolCallFinished
			if err := json.Unmarshal([]byte(l), &f); err != nil {
				t.Fatal(err)
			}
			finished = append(finished, f)
		}
	}
	want := []struct{ status, output string }{
		{"error", "do not fit its parameters schema"},
		{"ok", `{"city":"Paris","weather":"sunny"}`},
		{"error", "get_weather: no such city"},
		{"ok", "sunny"},
	}
	if len(finished) != len(want) {
		t.Fatalf("%d tool calls finished; want %d:\n%s", len(finished), len(want), strings.Join(lines, "\n"))
	}
	seen := map[string]bool{}
	for _, f := range finished {
		for i, w := range want {
			if f.Status == w.status && strings.Contains(f.Output, w.output) {
				seen[fmt.Sprint(i)] = true
			}
		}
	}
	if len(seen) != len(want) {
		t.Errorf("tool results %+v; want %+v", finished, want)
	}
	if n := srv.Remaining(); n != 0 {
		t.Errorf("%d model turns unused", n)
	}
	// The tool is offered with its inferred schema.
	var spec string
	for _, st := range w.Tools() {
		if st.Name == "get_weather" {
			spec = string(st.Parameters)
		}
	}
	if !strings.Contains(spec, `"city"`) || !strings.Contains(spec, `"the city, e.g. Paris"`) || !strings.Contains(spec, `"required":["city"]`) {
		t.Errorf("get_weather's schema: %s", spec)
	}
}

// TestFuncDefinitionErrors: a tool Func cannot make usable is refused by
// Open, saying what and how to fix it, instead of being offered and then
// refusing every call (an input type that is not an object) or failing
// each one (a nil function).
func TestFuncDefinitionErrors(t *testing.T) {
	type In struct {
		Unit string `json:"unit" jsonschema:"enum=C,F"`
	}
	type Ok struct {
		Unit string `json:"unit"`
	}
	cases := []struct {
		name string
		tool tools.Tool
		want []string
	}{
		{"string input", agent.Func("s", "x", func(ctx context.Context, in string) (string, error) { return in, nil }),
			[]string{"tool s", `type is string, not "object"`, "struct"}},
		{"non-object schema", agent.Func("t", "x", func(ctx context.Context, in Ok) (string, error) { return "", nil },
			agent.WithInputSchema(json.RawMessage(`{"type":"string"}`))), []string{"tool t", "WithInputSchema"}},
		{"schema not JSON", agent.Func("j", "x", func(ctx context.Context, in Ok) (string, error) { return "", nil },
			agent.WithInputSchema(json.RawMessage(`not json`))), []string{"tool j: the input schema is not a JSON object"}},
		{"nil function", agent.Func[Ok, string]("n", "x", nil), []string{"tool n: nil function"}},
		{"schema beside the type", agent.Func("m", "x", func(ctx context.Context, in Ok) (string, error) { return "", nil },
			agent.WithInputSchema(json.RawMessage(`{"type":"object","properties":{"unit":{"type":"string"},"temp":{"type":"number"}}}`))),
			[]string{"tool m", `property "temp"`, "agent_test.Ok", "unit"}},
		{"enum in the tag", agent.Func("e", "x", func(ctx context.Context, in In) (string, error) { return "", nil }),
			[]string{"tool e", "enum", "WithInputSchema"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := agent.Open(t.Context(), manifest, agent.WithModel(agent.Model{Name: "gpt-test", APIKey: "sk-test"}), env(), agent.WithTools(tc.tool))
			if err == nil {
				w.Close()
				t.Fatal("Open took the tool")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Open: %v; want it to say %q", err, want)
				}
			}
		})
	}
}

// TestEmptyChatID: a chat with no id is refused at once, saying so; its
// turn used to run in the world unseen while the stream waited for it.
func TestEmptyChatID(t *testing.T) {
	w, srv := fake(t, []llmtest.Turn{{Text: "unseen"}})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	c := w.Chat("")
	for name, seq := range map[string]func(func(agent.Event, error) bool){
		"Send": c.Send(ctx, "hi"), "Compact": c.Compact(ctx), "Follow": c.Follow(ctx), "Decide": c.Decide(ctx, "call_x", agent.Decision{}),
	} {
		var errs []error
		for e, err := range seq {
			if err == nil {
				t.Errorf("%s: event %T before the error", name, e)
				continue
			}
			errs = append(errs, err)
		}
		if ctx.Err() != nil {
			t.Fatalf("%s of a chat with no id waited until the deadline", name)
		}
		if name == "Follow" || name == "Decide" {
			continue // nothing under way, nothing waits
		}
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), `World.Chat("main")`) {
			t.Errorf("%s of a chat with no id: %v; want one error saying to name it", name, errs)
		}
	}
	if _, _, err := c.Answer(ctx, "call_x", agent.Decision{}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("Answer: %v", err)
	}
	if n := srv.Served(); n != 0 {
		t.Errorf("the model was asked %d times", n)
	}
}

// TestToolNamesChecked: RequireApproval, AllowTools or a tool choice
// naming no tool (a typo) fails the Send, before the model is asked: the
// tool meant would otherwise run without approval, silently, or the turn
// fail at the provider.
func TestToolNamesChecked(t *testing.T) {
	w, srv := fake(t, []llmtest.Turn{{Text: "unasked"}})
	for _, tc := range []struct {
		opt  agent.ChatOption
		want string
	}{
		{agent.RequireApproval("workspace_write", "workspace_writ"), `RequireApproval names "workspace_writ"`},
		{agent.AllowTools("*"), `AllowTools names "*"`},
		{agent.DefaultToolChoice(agent.ToolChoiceTool("nope")), `DefaultToolChoice names "nope"`},
		{nil, `WithToolChoice names "workspace_writ"`},
	} {
		var errs []error
		c := w.Chat("c")
		var sendOpts []agent.SendOption
		if tc.opt != nil {
			c = w.Chat("c", tc.opt)
		} else {
			sendOpts = append(sendOpts, agent.WithToolChoice(agent.ToolChoiceTool("workspace_writ")))
		}
		for _, err := range c.Send(t.Context(), "write", sendOpts...) {
			errs = append(errs, err)
		}
		if len(errs) != 1 || errs[0] == nil || !strings.Contains(errs[0].Error(), tc.want) || !strings.Contains(errs[0].Error(), "(bash, introspect_journal_head,") {
			t.Errorf("Send: %v; want one error: %s, which is no tool (and the tools)", errs, tc.want)
		}
	}
	if _, ok := w.Chat("c").State(); ok {
		t.Error("the refused Send created the chat")
	}
	var compactErrs []error
	for _, err := range w.Chat("c").Compact(t.Context()) {
		compactErrs = append(compactErrs, err)
	}
	if len(compactErrs) != 1 || !errors.Is(compactErrs[0], agent.ErrNoChat) {
		t.Errorf("Compact of a chat the world lacks: %v; want one error, ErrNoChat", compactErrs)
	}
	if _, ok := w.Chat("c").State(); ok {
		t.Error("Compact created the chat")
	}
	if n := srv.Served(); n != 0 {
		t.Errorf("the model was asked %d times", n)
	}
}

// TestUseModelEmpty: UseModel("") (a flag left empty) is the world's
// model, not a chat whose every model call fails for want of a name.
func TestUseModelEmpty(t *testing.T) {
	w, srv := fake(t, []llmtest.Turn{{Text: "hi"}})
	c := w.Chat("c", agent.UseModel(""))
	if c.Model() != "gpt-test" {
		t.Errorf("the chat's model is %q; want the world's, gpt-test", c.Model())
	}
	if _, end := collect(t, c.Send(t.Context(), "hello")); end.Outcome != agent.OutcomeAnswer {
		t.Errorf("end %+v", end)
	}
	if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Model != "gpt-test" {
		t.Errorf("requests %+v; want one to gpt-test", reqs)
	}
}

func TestStopOnCancel(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	w, _ := fake(t, []llmtest.Turn{{Text: "a long answer that never ends", Hold: hold, EventDelay: llmtest.Duration(5 * time.Millisecond)}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var types []string
	var last error
	for e, err := range w.Chat("c").Send(ctx, "go") {
		if err != nil {
			last = err
			break
		}
		types = append(types, e.Type())
		if _, ok := e.(agent.TextDelta); ok {
			cancel()
		}
		if end, ok := e.(agent.TurnEnd); ok && end.Outcome != agent.OutcomeStopped {
			t.Errorf("turn end %+v; want stopped", end)
		}
	}
	if !errors.Is(last, context.Canceled) {
		t.Errorf("last error %v; want context.Canceled", last)
	}
	if !strings.Contains(strings.Join(types, " "), "guard_stop turn_end") {
		t.Errorf("events %v; want the stop and the turn's end", types)
	}
	st, _ := w.Chat("c").State()
	if st.Turn != nil {
		t.Errorf("the chat still has a turn: %+v", st.Turn)
	}
}

func TestBreakStopsTheTurn(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	w, _ := fake(t, []llmtest.Turn{{Text: "a long answer that never ends", Hold: hold}})
	c := w.Chat("c")
	for range c.Send(t.Context(), "go") {
		break
	}
	st, _ := c.State()
	if st.Turn != nil || len(st.Entries) == 0 || st.Entries[len(st.Entries)-1].Kind != "stop" {
		t.Errorf("after break the chat is %+v; want its turn stopped", st)
	}
}

func TestApprovals(t *testing.T) {
	turns := []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "hi"}`}, {Name: "introspect_journal_head", Arguments: `{}`}}},
		{Text: "wrote it"},
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "b.md", "content": "no"}`}}},
		{Text: "did not write it"},
	}
	var asked []string
	approver := func(ctx context.Context, r agent.ApprovalRequested) (agent.Decision, bool) {
		asked = append(asked, r.Tool+" "+r.Arguments)
		return agent.Decision{}, false // leave it waiting
	}
	w, srv := fake(t, turns, agent.WithApprover(approver))
	c := w.Chat("c", agent.RequireApproval("workspace_write"))
	lines, end := collect(t, c.Send(t.Context(), "write a.md"))
	if end.Outcome != agent.OutcomeAwaitingApproval {
		t.Fatalf("end %+v; want awaiting approval\n%s", end, strings.Join(lines, "\n"))
	}
	if len(asked) != 1 || asked[0] != `workspace_write {"content":"hi","path":"a.md"}` {
		t.Errorf("the approver was asked %q", asked)
	}
	pending := c.Pending(t.Context())
	if len(pending) != 1 || pending[0].Tool != "workspace_write" {
		t.Fatalf("pending %+v", pending)
	}
	// Following the waiting turn ends at once, where Send's stream ended.
	if _, fend := collect(t, c.Follow(t.Context())); fend.Outcome != agent.OutcomeAwaitingApproval || fend.Seq != end.Seq || fend.RequestID != end.RequestID {
		t.Errorf("Follow of the waiting turn ended with %+v; want %+v", fend, end)
	}
	// The other call ran; the write waits, in the world.
	if !strings.Contains(strings.Join(lines, "\n"), `"tool":"introspect_journal_head","status":"ok"`) {
		t.Errorf("the call that needs no approval did not run:\n%s", strings.Join(lines, "\n"))
	}
	lines, end = collect(t, c.Decide(t.Context(), pending[0].CallID, agent.Decision{Approve: true}))
	if end.Outcome != agent.OutcomeAnswer || !strings.Contains(strings.Join(lines, "\n"), `"type":"approval_decided"`) {
		t.Fatalf("after approval: %+v\n%s", end, strings.Join(lines, "\n"))
	}
	if got := strings.Join(lines, "\n"); !strings.Contains(got, `"tool":"workspace_write","status":"ok"`) {
		t.Errorf("the approved write did not run:\n%s", got)
	}
	// A denial answers the model, which goes on.
	_, end = collect(t, c.Send(t.Context(), "write b.md"))
	if end.Outcome != agent.OutcomeAwaitingApproval {
		t.Fatalf("end %+v", end)
	}
	call := c.Pending(t.Context())[0].CallID
	lines, end = collect(t, c.Decide(t.Context(), call, agent.Decision{Reason: "not b.md"}))
	if end.Outcome != agent.OutcomeAnswer || !strings.Contains(strings.Join(lines, "\n"), `denied by the user: not b.md`) {
		t.Errorf("after denial: %+v\n%s", end, strings.Join(lines, "\n"))
	}
	if _, err := func() (agent.Event, error) {
		for e, err := range c.Decide(t.Context(), call, agent.Decision{Approve: true}) {
			return e, err
		}
		return nil, nil
	}(); !errors.Is(err, agent.ErrNotWaiting) {
		t.Errorf("a second decision: %v; want ErrNotWaiting", err)
	}
	if n := srv.Remaining(); n != 0 {
		t.Errorf("%d model turns unused", n)
	}
}

func TestApproverAlways(t *testing.T) {
	turns := []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "1"}`}}},
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "b.md", "content": "2"}`}}},
		{Text: "done"},
	}
	n := 0
	w, _ := fake(t, turns, agent.WithApprover(func(ctx context.Context, r agent.ApprovalRequested) (agent.Decision, bool) {
		n++
		return agent.Decision{Approve: true, Always: true}, true
	}))
	_, end := collect(t, w.Chat("c", agent.RequireApproval("*")).Send(t.Context(), "write"))
	if end.Outcome != agent.OutcomeAnswer || n != 1 {
		t.Errorf("end %+v, approver asked %d times; want an answer, asked once", end, n)
	}
}

// TestApproverDecidedElsewhere: an approver that waits for a person is
// asked with a context that ends when the call is decided otherwise
// (Chat.Answer from another goroutine: a web handler, demiurge approve),
// and the stream goes on with that decision instead of hanging.
func TestApproverDecidedElsewhere(t *testing.T) {
	turns := []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "1"}`}}},
		{Text: "written"},
	}
	asked := make(chan agent.ApprovalRequested, 1)
	causes := make(chan error, 1)
	approver := func(ctx context.Context, r agent.ApprovalRequested) (agent.Decision, bool) {
		asked <- r
		<-ctx.Done() // the person answers elsewhere
		causes <- context.Cause(ctx)
		return agent.Decision{Reason: "too late: not taken"}, true
	}
	w, srv := fake(t, turns, agent.WithApprover(approver))
	c := w.Chat("c", agent.RequireApproval("workspace_write"))
	answered := make(chan error, 1)
	go func() {
		r := <-asked
		_, _, err := c.Answer(context.Background(), r.CallID, agent.Decision{Approve: true})
		answered <- err
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	lines, end := collect(t, c.Send(ctx, "write a.md"))
	got := strings.Join(lines, "\n")
	if err := <-answered; err != nil {
		t.Fatalf("Answer: %v", err)
	}
	if ctx.Err() != nil || end.Outcome != agent.OutcomeAnswer {
		t.Fatalf("end %+v (ctx %v); want the answer after the decision made elsewhere\n%s", end, ctx.Err(), got)
	}
	for _, want := range []string{`"approved":true`, `"tool":"workspace_write","status":"ok"`} {
		if !strings.Contains(got, want) {
			t.Errorf("events lack %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, "not taken") {
		t.Errorf("the approver's late decision was taken:\n%s", got)
	}
	if cause := <-causes; cause == nil || cause == context.DeadlineExceeded {
		t.Errorf("the approver's context ended with %v; want the call decided otherwise", cause)
	}
	if n := srv.Remaining(); n != 0 {
		t.Errorf("%d model turns unused", n)
	}
}

// TestApprovalTimeout: an approver that does not answer by the chat's
// approval timeout is asked with a context that ends at the deadline;
// the call is then denied as timed out and the model goes on. A decision
// that comes after the deadline (Chat.Decide, later) denies the call all
// the same (the reducer's fixtures and run_approval.txtar show that).
func TestApprovalTimeout(t *testing.T) {
	turns := []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "1"}`}}},
		{Text: "not written"},
	}
	var deadlines []time.Time
	approver := func(ctx context.Context, r agent.ApprovalRequested) (agent.Decision, bool) {
		d, _ := ctx.Deadline()
		deadlines = append(deadlines, d)
		<-ctx.Done() // the user never answers
		return agent.Decision{}, false
	}
	w, srv := fake(t, turns, agent.WithApprover(approver))
	c := w.Chat("c", agent.RequireApproval("workspace_write"), agent.ApprovalTimeout(300*time.Millisecond))
	start := time.Now()
	lines, end := collect(t, c.Send(t.Context(), "write a.md"))
	got := strings.Join(lines, "\n")
	if end.Outcome != agent.OutcomeAnswer {
		t.Fatalf("end %+v; want an answer after the timeout\n%s", end, got)
	}
	for _, want := range []string{`"type":"approval_requested"`, `"deadline":"`, `"approved":false`, `"timed_out":true`,
		`"status":"denied"`, `the user did not approve it within 300ms`} {
		if !strings.Contains(got, want) {
			t.Errorf("events lack %s:\n%s", want, got)
		}
	}
	if len(deadlines) != 1 || deadlines[0].IsZero() || deadlines[0].Sub(start) > 2*time.Second {
		t.Errorf("the approver's contexts had deadlines %v; want one, 300ms after the call", deadlines)
	}

	if n := srv.Remaining(); n != 0 {
		t.Errorf("%d model turns unused", n)
	}
}

// TestApprovalTimeoutUnfollowed: a process that holds the world times out
// a waiting call at its deadline though nobody follows the turn; the turn
// goes on in the world.
func TestApprovalTimeoutUnfollowed(t *testing.T) {
	turns := []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "1"}`}}},
		{Text: "not written"},
	}
	w, srv := fake(t, turns)
	c := w.Chat("c", agent.RequireApproval("workspace_write"), agent.ApprovalTimeout(200*time.Millisecond))
	if _, end := collect(t, c.Send(t.Context(), "write a.md")); end.Outcome != agent.OutcomeAwaitingApproval {
		t.Fatalf("end %+v; want awaiting approval", end)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st, _ := c.State()
		if st.Turn == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the call still waits 10s after its deadline: %+v", st.Turn)
		}
	}
	st, _ := c.State()
	var kinds []string
	for _, e := range st.Entries {
		kinds = append(kinds, e.Kind+"/"+deref(e.Status))
	}
	if got := strings.Join(kinds, " "); !strings.Contains(got, "approval/timed out tool_output/denied assistant/") {
		t.Errorf("entries %s; want the call timed out, denied, and the model's answer", got)
	}
	if n := srv.Remaining(); n != 0 {
		t.Errorf("%d model turns unused", n)
	}
}

// TestAnswer: a decision journaled with Answer, with no stream following
// the turn (what a process does with a decision another sends it), lets
// the world go on with the turn by itself; a second is ErrNotWaiting.
func TestAnswer(t *testing.T) {
	turns := []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "1"}`, CallID: "call_a"}}},
		{Text: "done"},
	}
	w, srv := fake(t, turns)
	c := w.Chat("c", agent.RequireApproval("workspace_write"))
	if _, end := collect(t, c.Send(t.Context(), "write")); end.Outcome != agent.OutcomeAwaitingApproval {
		t.Fatalf("end %+v", end)
	}
	if _, _, err := c.Answer(t.Context(), "call_nope", agent.Decision{Approve: true}); !errors.Is(err, agent.ErrNotWaiting) {
		t.Errorf("Answer of an unknown call: %v; want ErrNotWaiting", err)
	}
	ar, head, err := c.Answer(t.Context(), "call_a", agent.Decision{Approve: true, Reason: "from elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	if ar.Tool != "workspace_write" || head.Seq == 0 {
		t.Errorf("Answer: %+v at %+v", ar, head)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for {
		if st, _ := c.State(); st.Turn == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the turn did not end after the decision")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, _, err := c.Answer(t.Context(), "call_a", agent.Decision{Approve: true}); !errors.Is(err, agent.ErrNotWaiting) {
		t.Errorf("a second Answer: %v; want ErrNotWaiting", err)
	}
	if n := srv.Remaining(); n != 0 {
		t.Errorf("%d model turns unused", n)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestFollowAwaiting: a turn that waits for approval, followed again (a
// new process, say), ends its stream at once as awaiting; its approver,
// if it has one now, answers.
func TestFollowAwaiting(t *testing.T) {
	turns := []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "1"}`}}},
		{Text: "done"},
	}
	w, _ := fake(t, turns)
	c := w.Chat("c", agent.RequireApproval("workspace_write"))
	if _, end := collect(t, c.Send(t.Context(), "write")); end.Outcome != agent.OutcomeAwaitingApproval {
		t.Fatalf("end %+v", end)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, end := collect(t, c.Follow(ctx)); end.Outcome != agent.OutcomeAwaitingApproval {
		t.Fatalf("Follow: end %+v; want awaiting approval at once", end)
	}
}

// TestCassetteStrict: a message the recording does not hold ends the turn
// with an error that shows what differs, and the model call's receipt is
// journaled as an error of the cassette.
func TestCassetteStrict(t *testing.T) {
	w, err := agent.Open(t.Context(), manifest, agent.WithModel(agent.Cassette("../testdata/sessions/demo")), env())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// Its calls are made under the recording's model, not "cassette".
	if m := w.Chat("main").Model(); m != "gpt-test" {
		t.Errorf("the chat's model is %q; want the recording's, gpt-test", m)
	}
	var turnErr string
	lines, end := collect(t, w.Chat("main").Send(t.Context(), "Write a poem."))
	for _, l := range lines {
		if strings.Contains(l, `"type":"turn_error"`) {
			turnErr = l
		}
	}
	if end.Outcome != agent.OutcomeFailed {
		t.Errorf("turn end %+v; want failed", end)
	}
	for _, want := range []string{
		`model call 1 is not the recorded one`, `transcript item 1 (user message):`,
		`-content: \"Write a hello note and show it to me.\"\n+content: \"Write a poem.\"`,
	} {
		if !strings.Contains(turnErr, want) {
			t.Errorf("the turn's error lacks %s:\n%s", want, turnErr)
		}
	}
	var receipts []string
	if err := w.Storage().Journal().Read(t.Context(), w.Name(), 1, func(r journal.Record) error {
		if r.Kind == "Receipt" {
			v, err := schema.Decode(r.Payload)
			if err != nil {
				return err
			}
			receipts = append(receipts, fmt.Sprint(schema.FieldPath(v, "status"), " ", schema.FieldPath(v, "adapter")))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(receipts, ",") != "error cassette" {
		t.Errorf("receipts %v; want one error from the cassette", receipts)
	}
}

// TestCassetteLoose: a loose cassette answers a message the recording
// does not hold with the recorded answers, and the turn streams a
// one-line notice of what differs; the log gets the diff.
func TestCassetteLoose(t *testing.T) {
	var log bytes.Buffer
	w, err := agent.Open(t.Context(), manifest, agent.WithModel(agent.CassetteLoose("../testdata/sessions/demo")), env(),
		agent.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	lines, end := collect(t, w.Chat("main").Send(t.Context(), "Write a poem."))
	if end.Outcome != agent.OutcomeAnswer {
		t.Errorf("turn end %+v; want an answer", end)
	}
	notices := 0
	for _, l := range lines {
		if !strings.Contains(l, `"type":"notice"`) {
			continue
		}
		if strings.Contains(l, `\n`) || strings.Contains(l, `"seq":0`) ||
			!strings.Contains(l, `: model call `) || !strings.Contains(l, ` differs from the recording in a user message; answering with the recorded answer"`) {
			t.Errorf("notice %s; want one line naming the message as what differs", l)
		}
		notices++
	}
	if notices != 3 {
		t.Errorf("%d notices of a call that differs; want 3 (one a model call):\n%s", notices, strings.Join(lines, "\n"))
	}
	if n := strings.Count(log.String(), `+content: \"Write a poem.\"`); n != 3 {
		t.Errorf("the log shows the diff of the message %d times; want 3:\n%s", n, log.String())
	}
}

// TestFork: a world forked before its user's message goes on with another
// message; its model sees only the other message; both worlds replay,
// and the fork's journal says where it came from. A seq inside a step is
// refused.
func TestFork(t *testing.T) {
	w, srv := fake(t, []llmtest.Turn{{Text: "Hello."}, {Text: "Bonjour."}})
	_, first := collect(t, w.Chat("main").Send(t.Context(), "Say hello."))
	if first.Outcome != agent.OutcomeAnswer {
		t.Fatalf("turn end %+v", first)
	}
	// A TurnEnd's Seq ends a step (World.Fork's doc says so): the world
	// as the turn left it, no turn under way.
	after, err := w.Fork(t.Context(), first.Seq, "after")
	if err != nil {
		t.Fatalf("a fork at the TurnEnd's seq %d: %v", first.Seq, err)
	}
	if st, ok := after.Chat("main").State(); !ok || st.Turn != nil || st.LastRequestID != first.RequestID {
		t.Errorf("the fork at the TurnEnd holds the chat %+v (%v); want its turn %d ended", st, ok, first.RequestID)
	}
	if err := after.Close(); err != nil {
		t.Fatal(err)
	}
	// The step of the user's message: fork at the record before it.
	var at uint64
	st := w.Storage()
	if err := st.Journal().Read(t.Context(), w.Name(), 1, func(r journal.Record) error {
		if r.Kind == world.KindEvent && at == 0 && strings.Contains(string(r.Payload), "Say hello.") {
			at = r.Seq - 1
		}
		return nil
	}); err != nil || at == 0 {
		t.Fatalf("no user message in the journal (%v)", err)
	}
	var mid *world.MidStepError
	if _, err := w.Fork(t.Context(), at+2, "bad"); !errors.As(err, &mid) {
		t.Fatalf("a fork inside the message's step: %v; want a MidStepError", err)
	}
	f, err := w.Fork(t.Context(), at, "fr")
	if err != nil {
		t.Fatal(err)
	}
	lines, end := collect(t, f.Chat("main").Send(t.Context(), "Say it in French."))
	if end.Outcome != agent.OutcomeAnswer || !strings.Contains(strings.Join(lines, "\n"), `"text":"Bonjour."`) {
		t.Fatalf("the fork's turn: %+v\n%s", end, strings.Join(lines, "\n"))
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "Say it in French.") || strings.Contains(string(reqs[1].Body), "Say hello.") {
		t.Fatalf("the fork's request does not hold only its own message:\n%s", reqs[len(reqs)-1].Body)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	cat, err := schema.Load(manifest, &schema.LoadOptions{Reducers: agent.Registry().Names()})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"main", "fr"} {
		if _, err := world.Rerun(t.Context(), world.RerunOptions{Name: name, Catalog: cat, Reducers: agent.Registry(), Storage: st, FromGenesis: true}); err != nil {
			t.Errorf("world %s does not replay: %v", name, err)
		}
	}
	rd := session.NewReader(st.CAS())
	if err := st.Journal().Read(t.Context(), "fr", 1, rd.Record); err != nil {
		t.Fatal(err)
	}
	if fs := rd.Forks(); len(fs) != 1 || fs[0].From != "main" || fs[0].At != at || fs[0].Turns != 0 {
		t.Errorf("the fork's origin: %+v; want main at %d, before any turn", fs, at)
	}
}

// TestExport: a program records a session of its own with World.Export
// (no store package to reach into, no AIR to load again): the bundle
// replays as a golden test, and a cassette of it answers the program.
func TestExport(t *testing.T) {
	turns := []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "introspect_journal_head", Arguments: `{}`}}},
		{Text: "the head is there"},
	}
	w, _ := fake(t, turns)
	if _, end := collect(t, w.Chat("main").Send(t.Context(), "Where is the head?")); end.Outcome != agent.OutcomeAnswer {
		t.Fatalf("end %+v", end)
	}
	dir := filepath.Join(t.TempDir(), "session")
	m, err := w.Export(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if m == nil {
		t.Fatal("Export returned no manifest")
	}
	if _, err := w.Export(t.Context(), dir); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("a second export into %s: %v; want an error naming it", dir, err)
	}
	replaytest.CheckGolden(t, dir, agent.Registry(), true) // writes trace.txt
	replaytest.CheckGolden(t, dir, agent.Registry(), false)
	c, err := agent.Open(t.Context(), manifest, agent.WithModel(agent.Cassette(dir)), env())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lines, end := collect(t, c.Chat("main").Send(t.Context(), "Where is the head?"))
	if end.Outcome != agent.OutcomeAnswer || !strings.Contains(strings.Join(lines, "\n"), "the head is there") {
		t.Errorf("the cassette of the export answered %+v\n%s", end, strings.Join(lines, "\n"))
	}
}

// TestDirHeldOnce: WithDir's doc holds: a second Open of a store a World
// holds fails saying so, and another world of that store opens through
// the first one's Storage.
func TestDirHeldOnce(t *testing.T) {
	dir := t.TempDir()
	model := agent.WithModel(agent.Model{Name: "gpt-test", APIKey: "sk-test"})
	w, err := agent.Open(t.Context(), manifest, agent.WithDir(dir), model, env())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w2, err := agent.Open(t.Context(), manifest, agent.WithDir(dir), model, env()); err == nil {
		w2.Close()
		t.Fatal("a second Open of a held store succeeded")
	} else if !strings.Contains(err.Error(), "locked") {
		t.Errorf("a second Open of a held store: %v; want it to say the store is locked", err)
	}
	other, err := agent.Open(t.Context(), manifest, agent.WithStorage(w.Storage()), agent.WithWorld("other"), model, env())
	if err != nil {
		t.Fatalf("another world through the first one's Storage: %v", err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestNewMessageWhileCallWaits: a message sent while a call of the turn
// before waits for approval answers that call (not run, journaled) and
// the stream of the new message says so first: the call is not dropped
// without a word, the earlier turn is said to have stopped, and then the
// new turn runs.
func TestNewMessageWhileCallWaits(t *testing.T) {
	w, srv := fake(t, []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "hi"}`, CallID: "call_29_0"}}},
		{Text: "fine, I will not write it"},
	}, agent.WithApprover(func(context.Context, agent.ApprovalRequested) (agent.Decision, bool) { return agent.Decision{}, false }))
	c := w.Chat("c", agent.RequireApproval("workspace_write"))
	if _, end := collect(t, c.Send(t.Context(), "write a.md")); end.Outcome != agent.OutcomeAwaitingApproval {
		t.Fatalf("end %+v; want awaiting approval", end)
	}
	var decided []agent.ApprovalDecided
	var notices []string
	var order []string
	for e, err := range c.Send(t.Context(), "never mind") {
		if err != nil {
			t.Fatal(err)
		}
		switch e := e.(type) {
		case agent.ApprovalDecided:
			decided = append(decided, e)
			order = append(order, "decided")
		case agent.Notice:
			notices = append(notices, e.Text)
			order = append(order, "notice")
		case agent.Message:
			order = append(order, e.Role)
		case agent.TurnEnd:
			if e.RequestID != 2 || e.Outcome != agent.OutcomeAnswer {
				t.Errorf("turn end %+v; want request 2 answered", e)
			}
		}
	}
	want := "not run: a new message (request 2) arrived before the turn ended"
	if len(decided) != 1 || decided[0].CallID != "call_29_0" || decided[0].RequestID != 1 || decided[0].Approved || decided[0].Reason != want {
		t.Errorf("approval decided %+v; want call_29_0 of request 1 denied: %s", decided, want)
	}
	if len(notices) != 1 || notices[0] != "turn 1 stopped: a new message (request 2) arrived before the turn ended" {
		t.Errorf("notices %q", notices)
	}
	if strings.Join(order, " ") != "decided notice user assistant" {
		t.Errorf("events in the order %q; want the call's answer and the earlier turn's stop before the new message", order)
	}
	if len(c.Pending(t.Context())) != 0 {
		t.Errorf("calls still wait: %+v", c.Pending(t.Context()))
	}
	// The model was told, in the new turn's request, that the call did not run.
	if reqs := srv.Requests(); len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), want) {
		t.Errorf("the model's requests: %d; want 2, the second telling it the call did not run", len(reqs))
	}
}
