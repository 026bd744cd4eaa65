package agent_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/replay"
)

// TestChatMovesToChat3: a world made with Chat@2 (the AIR the agent had
// then, testdata/air/chat2) whose manifest moves to Chat@3 goes on with
// its chat: the model of the next turn reads the turns before, the
// chat's usage and cost go on from where they were, a call that waited
// for approval under Chat@2 is answered "not run" (the turn it belonged
// to stops, and the stream says so), and the world replays byte for byte,
// each record under the manifest it was written under.
func TestChatMovesToChat3(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Text: "Hello from Chat@2.", Usage: &llmtest.Usage{Input: 1000, Output: 10}},
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "hi"}`, CallID: "call_w"}},
			Usage: &llmtest.Usage{Input: 1100, Output: 20}},
		{Text: "Hello from Chat@3.", Usage: &llmtest.Usage{Input: 1200, Cached: 1000, Output: 30}},
	}})
	defer srv.Close()
	dir := t.TempDir()
	wait := agent.WithApprover(func(context.Context, agent.ApprovalRequested) (agent.Decision, bool) { return agent.Decision{}, false })
	open := func(manifest string) *agent.World {
		t.Helper()
		w, err := agent.Open(t.Context(), manifest, agent.WithDir(dir), agent.WithModel(agent.Model{Name: "gpt-test"}), wait,
			env("OPENAI_API_KEY", "sk-test", "OPENAI_BASE_URL", srv.URL))
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	w := open("../testdata/air/chat2")
	if w.Module() != demiurge.ModuleNameV2 {
		t.Fatalf("module %s; want %s", w.Module(), demiurge.ModuleNameV2)
	}
	c := w.Chat("main", agent.RequireApproval("workspace_write"))
	turn1, end := collect(t, c.Send(t.Context(), "Say hello."))
	if end.Outcome != agent.OutcomeAnswer {
		t.Fatalf("Chat@2 turn: %+v", end)
	}
	if _, end := collect(t, c.Send(t.Context(), "Write a.md.")); end.Outcome != agent.OutcomeAwaitingApproval {
		t.Fatalf("Chat@2 turn that waits: %+v", end)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	w = open(manifest)
	if w.Module() != demiurge.ModuleName {
		t.Fatalf("module %s; want %s", w.Module(), demiurge.ModuleName)
	}
	c = w.Chat("main", agent.RequireApproval("workspace_write"))
	turn2 := checkChat2Read(t, w, c, turn1)
	lines, end := collect(t, c.Send(t.Context(), "Say hello again."))
	got := strings.Join(lines, "\n")
	if end.Outcome != agent.OutcomeAnswer || end.RequestID != 3 {
		t.Fatalf("the first Chat@3 turn: %+v\n%s", end, got)
	}
	for _, want := range []string{
		`"type":"approval_decided","seq":`, // the call that waited, answered not run
		`"call_id":"call_w","tool":"workspace_write","approved":false,"reason":"not run: the chat moved from demiurge/Chat@2 to demiurge/Chat@3`,
		`turn 2 stopped: the chat moved from demiurge/Chat@2 to demiurge/Chat@3 (the world's manifest changed) while this turn ran`,
		`chat main goes on under demiurge/Chat@3, as demiurge/Chat@2 left it`,
		`"text":"Hello from Chat@3."`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the stream has no %q:\n%s", want, got)
		}
	}
	// This turn's usage is its own call's, not the chat's before.
	if end.Usage.Prompt != 1200 || end.Usage.Cached != 1000 || end.UsageUnknown != 0 {
		t.Errorf("the turn's usage %+v; want its one call's", end.Usage)
	}
	// The model read the turns before, and the call's output.
	body := string(srv.Requests()[2].Body)
	for _, want := range []string{"Say hello.", "Hello from Chat@2.", "Write a.md.", "not run: the chat moved", "Say hello again."} {
		if !strings.Contains(body, want) {
			t.Errorf("the Chat@3 request has no %q:\n%s", want, body)
		}
	}
	st, ok := c.State()
	if !ok || st.LastRequestID != 3 || st.Usage.Prompt != 3300 || !st.Usage.V2 || st.Turn != nil {
		t.Errorf("the chat's state: %+v", st)
	}
	// Its turns under Chat@2 read as they did, taken up or not.
	watched, _ := collect(t, c.Watch(t.Context(), 1))
	if g, w := strings.Join(watched, "\n"), strings.Join(turn1, "\n"); g != w {
		t.Errorf("Watch of the Chat@2 turn 1 once the chat is under Chat@3:\n%s\nwant (Send's):\n%s", g, w)
	}
	// The turn that waited: as it read before, seqs and all (its end,
	// which the Import journaled, stands where Chat@2 left the chat).
	watched, _ = collect(t, c.Watch(t.Context(), 2))
	if g, w := strings.Join(watched, "\n"), strings.Join(turn2, "\n"); g != w {
		t.Errorf("Watch of the Chat@2 turn 2 once the Import stopped it:\n%s\nwant (as it read before):\n%s", g, w)
	}
	checkNotRunOutput(t, c) // and after the Import, the same
	bundle := filepath.Join(t.TempDir(), "bundle")
	if _, err := w.Export(t.Context(), bundle); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// Replayed as recorded, not re-derived: from genesis (the Chat@2
	// records under Chat@2's manifest) and from the newest snapshot.
	b, err := replay.Read(bundle)
	if err != nil {
		t.Fatal(err)
	}
	for _, fromGenesis := range []bool{true, false} {
		if _, err := replay.ReplayBundle(t.Context(), b, agent.Registry(), fromGenesis); err != nil {
			t.Fatalf("replay (from genesis %v): %v", fromGenesis, err)
		}
	}
	if n := srv.Remaining(); n != 0 {
		t.Errorf("%d model turns unused", n)
	}
}

// checkChat2Read checks what the chat c, which Chat@2 left in a world that
// now runs Chat@3, reads as before its next message: its two turns (the
// first answered, turn1 its events as Send yielded them; the second
// waiting for approval), its usage and settings, as Chat@3 will take them
// up, the turn that waited stopped; and nothing of it written.
func checkChat2Read(t *testing.T, w *agent.World, c *agent.Chat, turn1 []string) (turn2 []string) {
	t.Helper()
	head := w.Head()
	st, ok := c.State()
	if !ok {
		t.Fatal("the chat Chat@2 left has no state under Chat@3 before its next message")
	}
	if st.LastRequestID != 2 || st.Turn != nil || st.Usage.Prompt != 2100 || st.Usage.Completion != 30 || !st.Usage.V2 ||
		st.Settings == nil || st.Settings.Model != "gpt-test" {
		t.Errorf("the chat's state before its next message: %+v (settings %+v)", st, st.Settings)
	}
	var kinds []string
	for _, e := range st.Entries {
		kinds = append(kinds, fmt.Sprintf("%d %s", e.RequestID, e.Kind))
	}
	if got, want := strings.Join(kinds, ", "), "2 user, 2 tool_call, 2 tool_output, 2 stop"; got != want {
		t.Errorf("the chat's entries: %s; want %s", got, want)
	}
	if p := c.Pending(t.Context()); len(p) != 0 {
		t.Errorf("calls wait for approval in a chat whose turn stops when it goes on: %+v", p)
	}
	if lines, _ := collect(t, c.Follow(t.Context())); len(lines) != 0 {
		t.Errorf("Follow of a chat with no turn under way: %s", lines)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a turn not begun is waited for
	defer cancel()
	watched, _ := collect(t, c.Watch(ctx, 1))
	if g, w := strings.Join(watched, "\n"), strings.Join(turn1, "\n"); g != w {
		t.Errorf("Watch of the Chat@2 turn 1 under Chat@3:\n%s\nwant (Send's):\n%s", g, w)
	}
	// The turn that waited ends as the chat reads: Chat@3 stops it.
	turn2, end := collect(t, c.Watch(ctx, 2))
	if got := strings.Join(turn2, "\n"); end.Outcome != agent.OutcomeStopped || end.RequestID != 2 ||
		!strings.Contains(got, `"call_id":"call_w","tool":"workspace_write","status":"not_run","output":"not run: the chat moved from demiurge/Chat@2 to demiurge/Chat@3`) {
		t.Errorf("Watch of the Chat@2 turn 2 under Chat@3: %+v\n%s", end, got)
	}
	// The whole output of the call not run reads as the event does, before
	// the Import writes it.
	checkNotRunOutput(t, c)
	if h := w.Head(); h != head {
		t.Errorf("reading the chat wrote the journal: head %d, was %d", h.Seq, head.Seq)
	}
	return turn2
}

// checkNotRunOutput checks Chat.Output of the call of turn 2 that did not
// run: the whole output is the event's.
func checkNotRunOutput(t *testing.T, c *agent.Chat) {
	t.Helper()
	found := false
	for e, err := range c.Watch(t.Context(), 2) {
		if err != nil {
			t.Fatal(err)
		}
		f, ok := e.(agent.ToolCallFinished)
		if !ok || f.CallID != "call_w" {
			continue
		}
		found = true
		out, err := c.Output(t.Context(), f)
		if err != nil || out != f.Output || !strings.HasPrefix(out, "not run: the chat moved from demiurge/Chat@2 to demiurge/Chat@3") {
			t.Errorf("Chat.Output of the call not run: %q, %v; want the event's %q", out, err, f.Output)
		}
	}
	if !found {
		t.Error("Watch of turn 2 has no ToolCallFinished of call_w")
	}
}
