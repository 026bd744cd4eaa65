package agent_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/agent"
)

// toolTurns are a turn of two rounds that runs two tools, then answers.
func toolTurns() []llmtest.Turn {
	return []llmtest.Turn{
		{Text: "Let me look.", Calls: []llmtest.Call{
			{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "1"}`, CallID: "call_w"},
			{Name: "introspect_journal_head", Arguments: `{}`, CallID: "call_h"},
		}},
		{Calls: []llmtest.Call{{Name: "bash", Arguments: `{"script": "cat a.md; echo more >> a.md"}`, CallID: "call_b"}}},
		{Text: "Done: a.md holds 1."},
	}
}

// TestWatchAfterTheTurn: a watcher that starts once the turn has ended
// reads the same events, in the same order, as the stream that ran it.
func TestWatchAfterTheTurn(t *testing.T) {
	t.Parallel()
	w, _ := fake(t, append(toolTurns(), llmtest.Turn{Text: "second"}))
	c := w.Chat("c")
	want, end := collect(t, c.Send(t.Context(), "write a.md"))
	if end.Outcome != agent.OutcomeAnswer {
		t.Fatalf("turn 1: %+v", end)
	}
	want2, _ := collect(t, c.Send(t.Context(), "again"))
	for i, want := range [][]string{want, want2} {
		got, _ := collect(t, c.Watch(t.Context(), uint64(i+1)))
		if g, w := strings.Join(got, "\n"), strings.Join(want, "\n"); g != w {
			t.Errorf("Watch of turn %d:\n%s\nwant (Send's):\n%s", i+1, g, w)
		}
	}
}

// TestWatchDuringTheTurn: watchers that start before the turn, and while
// it runs, read the same events as Send; a watcher that stops changes
// nothing in the turn.
func TestWatchDuringTheTurn(t *testing.T) {
	t.Parallel()
	turns := toolTurns()
	hold := make(chan struct{})
	turns[1].Hold = hold // the second round waits until a watcher is in
	w, _ := fake(t, turns)
	c := w.Chat("c")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()

	type result struct {
		lines []string
		err   error
	}
	watch := func(c *agent.Chat) chan result {
		out := make(chan result, 1)
		go func() {
			var r result
			for e, err := range c.Watch(ctx, 1) {
				if err != nil {
					r.err = err
					break
				}
				if _, ok := e.(agent.TextDelta); ok {
					continue
				}
				b, _ := agent.MarshalEvent(e)
				r.lines = append(r.lines, string(b))
			}
			out <- r
		}()
		return out
	}
	early := watch(w.Chat("c")) // before the turn begins
	// One that leaves at its first event: the turn goes on.
	go func() {
		for range w.Chat("c").Watch(ctx, 1) {
			break
		}
	}()
	var late chan result
	var want []string
	for e, err := range c.Send(ctx, "write a.md") {
		if err != nil {
			t.Fatal(err)
		}
		if tf, ok := e.(agent.ToolCallFinished); ok && tf.CallID == "call_h" && late == nil {
			late = watch(w.Chat("c")) // mid-turn
			time.Sleep(50 * time.Millisecond)
			close(hold)
		}
		if _, ok := e.(agent.TextDelta); ok {
			continue
		}
		b, _ := agent.MarshalEvent(e)
		want = append(want, string(b))
	}
	if late == nil {
		t.Fatal("the turn made no introspect call")
	}
	for name, ch := range map[string]chan result{"early": early, "late": late} {
		r := <-ch
		if r.err != nil {
			t.Errorf("%s watcher: %v", name, r.err)
		}
		if g, w := strings.Join(r.lines, "\n"), strings.Join(want, "\n"); g != w {
			t.Errorf("%s watcher:\n%s\nwant (Send's):\n%s", name, g, w)
		}
	}
}

// TestWatchApproval: a watcher waits with a turn whose call waits for
// approval, and goes on with it once the call is answered; its ctx ending
// ends only the watcher.
func TestWatchApproval(t *testing.T) {
	t.Parallel()
	w, _ := fake(t, writeTurns())
	c := w.Chat("c", agent.RequireApproval("workspace_write"))
	if _, end := collect(t, c.Send(t.Context(), "write a.md")); end.Outcome != agent.OutcomeAwaitingApproval {
		t.Fatalf("Send: %+v", end)
	}
	short, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	var seen []string
	var last error
	for e, err := range c.Watch(short, 1) {
		if err != nil {
			last = err
			break
		}
		seen = append(seen, e.Type())
	}
	if !errors.Is(last, context.DeadlineExceeded) || !strings.Contains(strings.Join(seen, " "), "approval_requested") {
		t.Fatalf("a watcher of the waiting turn: %v then %v", seen, last)
	}
	if got := c.Pending(t.Context()); len(got) != 1 {
		t.Fatalf("after the watcher left, %d calls wait; want 1", len(got))
	}
	ctx, cancel2 := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel2()
	go func() { _, _, _ = c.Answer(ctx, "call_a", agent.Decision{Approve: true}) }()
	lines, end := collect(t, c.Watch(ctx, 1))
	if end.Outcome != agent.OutcomeAnswer || !strings.Contains(strings.Join(lines, "\n"), `"approved":true`) {
		t.Errorf("the watcher after the answer: %+v\n%s", end, strings.Join(lines, "\n"))
	}
}

// TestWatchAfterRestart: a turn a process left mid-call, resumed by the
// next one as the world reopens, reads from its start in one watcher:
// what the first process did, then what the second does.
func TestWatchAfterRestart(t *testing.T) {
	t.Parallel()
	call := llmtest.Turn{Calls: []llmtest.Call{{Name: "introspect_journal_head", Arguments: `{}`, CallID: "call_h"}}}
	hold := make(chan struct{})
	defer close(hold)
	lost := llmtest.Turn{Text: "never", Hold: hold}
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{call, lost, {Text: "the head"}}})
	t.Cleanup(srv.Close)
	dir := filepath.Join(t.TempDir(), "store")
	opts := []agent.Option{env("OPENAI_API_KEY", "sk-test", "OPENAI_BASE_URL", srv.URL),
		agent.WithModel(agent.Model{Name: "gpt-test"}), agent.WithDir(dir)}
	w2 := reopenMidCall(t, srv, opts)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	lines, end := collect(t, w2.Chat("c").Watch(ctx, 1))
	got := strings.Join(lines, "\n")
	if end.Outcome != agent.OutcomeAnswer || !strings.Contains(got, `"role":"user"`) ||
		!strings.Contains(got, `"call_id":"call_h"`) || !strings.Contains(got, `"text":"the head"`) {
		t.Errorf("Watch after the restart:\n%s", got)
	}
}

// TestCreate: a chat created before its first message exists, with no
// turn; creating it again changes nothing; its first message is turn 1.
func TestCreate(t *testing.T) {
	t.Parallel()
	w, _ := fake(t, []llmtest.Turn{{Text: "hi"}})
	c := w.Chat("new")
	if _, ok := c.State(); ok {
		t.Fatal("the chat exists before Create")
	}
	if err := c.Create(t.Context()); err != nil {
		t.Fatal(err)
	}
	head := w.Head()
	if err := c.Create(t.Context()); err != nil || w.Head() != head {
		t.Fatalf("Create again: %v, head %v -> %v", err, head, w.Head())
	}
	st, ok := c.State()
	if !ok || st.LastRequestID != 0 || st.Turn != nil {
		t.Fatalf("after Create: %+v, %v", st, ok)
	}
	if _, end := collect(t, c.Send(t.Context(), "hello")); end.RequestID != 1 || end.Outcome != agent.OutcomeAnswer {
		t.Errorf("the first message: %+v", end)
	}
	if err := w.Chat("").Create(t.Context()); err == nil {
		t.Error("Create of the empty id: no error")
	}
}
