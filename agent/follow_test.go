package agent_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/agent"
)

// writeTurns are a turn whose one call, a write, waits for approval, and
// the model's answer after it.
func writeTurns() []llmtest.Turn {
	return []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "1"}`, CallID: "call_a"}}},
		{Text: "done"},
	}
}

// TestAwaitApproval: a stream of a chat that awaits approval stays open
// while its call waits, without an approver: it yields the request once,
// then the decision as it lands (Answer from another goroutine, or the
// approval timeout), and the rest of the turn.
func TestAwaitApproval(t *testing.T) {
	for _, tc := range []struct {
		name    string
		follow  bool // Send without waiting, then Follow; else Send awaits
		timeout time.Duration
		want    []string
	}{
		{name: "send/answer", want: []string{`"approved":true`, `"tool":"workspace_write","status":"ok"`}},
		{name: "follow/answer", follow: true, want: []string{`"approved":true`, `"tool":"workspace_write","status":"ok"`}},
		{name: "send/timeout", timeout: 300 * time.Millisecond, want: []string{`"approved":false`, `"timed_out":true`, `"status":"denied"`}},
		// Long enough for Send to end first, awaiting, on a busy machine.
		{name: "follow/timeout", follow: true, timeout: 2 * time.Second,
			want: []string{`"approved":false`, `"timed_out":true`, `"status":"denied"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w, srv := fake(t, writeTurns())
			opts := []agent.ChatOption{agent.RequireApproval("workspace_write")}
			if tc.timeout > 0 {
				opts = append(opts, agent.ApprovalTimeout(tc.timeout))
			}
			c := w.Chat("c", opts...)
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			if tc.follow {
				if _, end := collect(t, c.Send(ctx, "write a.md")); end.Outcome != agent.OutcomeAwaitingApproval {
					t.Fatalf("Send: end %+v; want awaiting approval", end)
				}
			}
			stream := c.With(agent.AwaitApproval()).Send(ctx, "write a.md")
			if tc.follow {
				stream = c.With(agent.AwaitApproval()).Follow(ctx)
			}
			answered := make(chan error, 1)
			var lines []string
			var end agent.TurnEnd
			for e, err := range stream {
				if err != nil {
					t.Fatalf("turn: %v", err)
				}
				if ar, ok := e.(agent.ApprovalRequested); ok && tc.timeout == 0 {
					// Answered elsewhere: a web handler, say.
					go func() { _, _, err := c.Answer(ctx, ar.CallID, agent.Decision{Approve: true}); answered <- err }()
				}
				if te, ok := e.(agent.TurnEnd); ok {
					end = te
				}
				if _, ok := e.(agent.TextDelta); !ok {
					b, _ := agent.MarshalEvent(e)
					lines = append(lines, string(b))
				}
			}
			got := strings.Join(lines, "\n")
			if tc.timeout == 0 {
				if err := <-answered; err != nil {
					t.Fatalf("Answer: %v", err)
				}
			}
			if ctx.Err() != nil || end.Outcome != agent.OutcomeAnswer {
				t.Fatalf("end %+v (ctx %v); want the answer after the decision\n%s", end, ctx.Err(), got)
			}
			if n := strings.Count(got, `"type":"approval_requested"`); n != 1 {
				t.Errorf("%d approval_requested; want 1\n%s", n, got)
			}
			for _, want := range tc.want {
				if !strings.Contains(got, want) {
					t.Errorf("events lack %s:\n%s", want, got)
				}
			}
			if n := srv.Remaining(); n != 0 {
				t.Errorf("%d model turns unused", n)
			}
		})
	}
}

// TestAwaitApprovalCancel: a stream that awaits approval ends when its
// context does, as a stream without AwaitApproval would have (awaiting
// approval, then ctx's error), and the call still waits in the world;
// a decision later goes on with the turn.
func TestAwaitApprovalCancel(t *testing.T) {
	w, srv := fake(t, writeTurns())
	c := w.Chat("c", agent.RequireApproval("workspace_write"), agent.AwaitApproval())
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var types []string
	var end agent.TurnEnd
	var last error
	var asked agent.ApprovalRequested
	for e, err := range c.Send(ctx, "write a.md") {
		if err != nil {
			last = err
			break
		}
		types = append(types, e.Type())
		if ar, ok := e.(agent.ApprovalRequested); ok {
			asked = ar
			cancel() // the caller gives up waiting
		}
		if te, ok := e.(agent.TurnEnd); ok {
			end = te
		}
	}
	if !errors.Is(last, context.Canceled) || end.Outcome != agent.OutcomeAwaitingApproval {
		t.Fatalf("the stream ended with %+v, %v; want awaiting approval, then the context's error\n%v", end, last, types)
	}
	if got := strings.Join(types, " "); strings.Count(got, "approval_requested") != 1 || strings.Contains(got, "guard_stop") {
		t.Errorf("events %s; want the request once, and no stop", got)
	}
	if p := c.Pending(t.Context()); len(p) != 1 || p[0].CallID != "call_a" {
		t.Fatalf("pending %+v; want call_a still waiting", p)
	}
	// Following it again: it yields the call that waits, then the rest
	// once it is decided.
	ctx, cancel = context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var lines []string
	for e, err := range c.Follow(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if ar, ok := e.(agent.ApprovalRequested); ok {
			if ar != asked {
				t.Errorf("the waiting call, followed: %+v; want %+v, as Send yielded it", ar, asked)
			}
			go c.Answer(ctx, ar.CallID, agent.Decision{Reason: "no"})
		}
		lines = append(lines, e.Type())
		if te, ok := e.(agent.TurnEnd); ok {
			end = te
		}
	}
	if end.Outcome != agent.OutcomeAnswer || !strings.HasPrefix(strings.Join(lines, " "), "approval_requested approval_decided") {
		t.Errorf("Follow: %v, end %+v", lines, end)
	}
	if n := srv.Remaining(); n != 0 {
		t.Errorf("%d model turns unused", n)
	}
}

// TestFollowUsageAfterRestart: Follow of a turn a process left running
// when it stopped (closed mid-turn, its model call in flight) ends with
// the whole turn's usage and cost, those of a run that was not
// interrupted, though it saw only the last model call.
func TestFollowUsageAfterRestart(t *testing.T) {
	u1 := &llmtest.Usage{Input: 100, Cached: 20, Output: 10, Reasoning: 3}
	u2 := &llmtest.Usage{Input: 300, Output: 40}
	call := llmtest.Turn{Calls: []llmtest.Call{{Name: "introspect_journal_head", Arguments: `{}`, CallID: "call_h"}}, Usage: u1}
	answer := llmtest.Turn{Text: "the head", Usage: u2}
	model := agent.WithModel(agent.Model{Name: "gpt-test",
		Options: []llm.ModelOptions{{Match: "gpt-test", Price: &llm.Price{Input: 1_000_000, CachedInput: 100_000, Output: 4_000_000}}}})

	w, _ := fake(t, []llmtest.Turn{call, answer}, model)
	_, want := collect(t, w.Chat("c").Send(t.Context(), "the head?"))
	if want.Outcome != agent.OutcomeAnswer || want.Usage.Prompt == 0 || want.CostMicroUSD == 0 {
		t.Fatalf("the uninterrupted turn: %+v", want)
	}

	hold := make(chan struct{})
	defer close(hold)
	lost := answer
	lost.Hold = hold // the answer never comes: the process stops first
	// The answer after the restart comes once Follow has started: the
	// reopened world asks for it at once, and a quick answer could end
	// the turn before Follow looks, leaving it nothing to follow.
	release := make(chan struct{})
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) })
	late := answer
	late.Hold = release
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{call, lost, late}})
	t.Cleanup(srv.Close)
	dir := filepath.Join(t.TempDir(), "store")
	opts := []agent.Option{env("OPENAI_API_KEY", "sk-test", "OPENAI_BASE_URL", srv.URL), model, agent.WithDir(dir)}
	w2 := reopenMidCall(t, srv, opts)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	agent.SetTurnStartedHook(t.Cleanup, func(*agent.Chat) { releaseOnce.Do(func() { close(release) }) })
	lines, got := collect(t, w2.Chat("c").Follow(ctx))
	if got.Outcome != agent.OutcomeAnswer {
		t.Fatalf("Follow after the restart ended with %+v\n%s", got, strings.Join(lines, "\n"))
	}
	if got.Usage != want.Usage || got.CostMicroUSD != want.CostMicroUSD || got.UsageUnknown != want.UsageUnknown || got.CostUnknown != want.CostUnknown {
		t.Errorf("usage after the restart %+v, $%d; want %+v, $%d (the uninterrupted run's)", got.Usage, got.CostMicroUSD, want.Usage, want.CostMicroUSD)
	}
	if srv.Remaining() != 0 {
		t.Errorf("%d model turns unused", srv.Remaining())
	}
}

// TestAwaitApprovalTimeoutAfterRestart: a call left waiting by a process
// that stopped is timed out at its deadline by the next, when a stream
// awaits it with no approver: the follower's process keeps the deadline.
func TestAwaitApprovalTimeoutAfterRestart(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: writeTurns()})
	t.Cleanup(srv.Close)
	dir := filepath.Join(t.TempDir(), "store")
	opts := []agent.Option{env("OPENAI_API_KEY", "sk-test", "OPENAI_BASE_URL", srv.URL),
		agent.WithModel(agent.Model{Name: "gpt-test"}), agent.WithDir(dir)}
	chat := []agent.ChatOption{agent.RequireApproval("workspace_write"), agent.ApprovalTimeout(2 * time.Second)}
	w1, err := agent.Open(t.Context(), manifest, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if _, end := collect(t, w1.Chat("c", chat...).Send(t.Context(), "write a.md")); end.Outcome != agent.OutcomeAwaitingApproval {
		t.Fatalf("Send: end %+v; want awaiting approval", end)
	}
	if err := w1.Close(); err != nil { // its timer goes with it
		t.Fatal(err)
	}
	w2, err := agent.Open(t.Context(), manifest, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	lines, end := collect(t, w2.Chat("c", append(chat, agent.AwaitApproval())...).Follow(ctx))
	got := strings.Join(lines, "\n")
	if end.Outcome != agent.OutcomeAnswer {
		t.Fatalf("Follow: end %+v; want the answer after the timeout\n%s", end, got)
	}
	for _, want := range []string{`"type":"approval_requested"`, `"timed_out":true`, `"status":"denied"`} {
		if !strings.Contains(got, want) {
			t.Errorf("events lack %s:\n%s", want, got)
		}
	}
}

// TestAwaitApprovalBreak: breaking out of a stream that awaits approval
// while the turn only waits leaves the turn waiting, as ctx's end does;
// it does not stop it.
func TestAwaitApprovalBreak(t *testing.T) {
	w, _ := fake(t, writeTurns())
	c := w.Chat("c", agent.RequireApproval("workspace_write"), agent.AwaitApproval())
	for e, err := range c.Send(t.Context(), "write a.md") {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := e.(agent.ApprovalRequested); ok {
			break
		}
	}
	if p := c.Pending(t.Context()); len(p) != 1 || p[0].CallID != "call_a" {
		t.Fatalf("pending %+v; want call_a still waiting", p)
	}
	// So does breaking a Follow at the call that already waits.
	for range c.Follow(t.Context()) {
		break
	}
	st, _ := c.State()
	if st.Turn == nil || len(c.Pending(t.Context())) != 1 {
		t.Errorf("after break the chat is %+v; want its call waiting", st)
	}
}

// TestAwaitApprovalBreakTimeout: a call whose stream broke off while it
// waited is still timed out at its deadline by the process that saw it.
func TestAwaitApprovalBreakTimeout(t *testing.T) {
	w, srv := fake(t, writeTurns())
	c := w.Chat("c", agent.RequireApproval("workspace_write"), agent.ApprovalTimeout(200*time.Millisecond), agent.AwaitApproval())
	for e, err := range c.Send(t.Context(), "write a.md") {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := e.(agent.ApprovalRequested); ok {
			break
		}
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
	if n := srv.Remaining(); n != 0 {
		t.Errorf("%d model turns unused", n)
	}
}

// TestApprovalAskedOnceWhenWorldRunsAhead: the world may reach a call
// that waits for approval before the stream that sent the message reads
// anything (a busy machine); the call is still yielded once, in the
// turn's order, and an approver is asked once. (CI saw it yielded twice.)
func TestApprovalAskedOnceWhenWorldRunsAhead(t *testing.T) {
	agent.SetTurnStartedHook(t.Cleanup, func(c *agent.Chat) {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		for len(c.Pending(ctx)) == 0 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
	})
	t.Run("await", func(t *testing.T) {
		w, _ := fake(t, writeTurns())
		c := w.Chat("c", agent.RequireApproval("workspace_write"), agent.AwaitApproval())
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		var types []string
		for e, err := range c.Send(ctx, "write a.md") {
			if err != nil {
				t.Fatal(err)
			}
			if ar, ok := e.(agent.ApprovalRequested); ok {
				go c.Answer(ctx, ar.CallID, agent.Decision{Approve: true})
			}
			if _, ok := e.(agent.TextDelta); !ok {
				types = append(types, e.Type())
			}
		}
		want := "message model_call tool_call_started approval_requested approval_decided tool_call_finished model_call message turn_end"
		if got := strings.Join(types, " "); got != want {
			t.Errorf("events\n%s\nwant\n%s", got, want)
		}
	})
	t.Run("approver", func(t *testing.T) {
		asked := 0
		w, _ := fake(t, writeTurns(), agent.WithApprover(func(context.Context, agent.ApprovalRequested) (agent.Decision, bool) {
			asked++
			return agent.Decision{Approve: true}, true
		}))
		c := w.Chat("c", agent.RequireApproval("workspace_write"))
		lines, end := collect(t, c.Send(t.Context(), "write a.md"))
		if end.Outcome != agent.OutcomeAnswer || asked != 1 {
			t.Errorf("asked %d times, end %+v; want once, then the answer\n%s", asked, end, strings.Join(lines, "\n"))
		}
	})
}

// TestFollowTurnEndingAsItBegins: a resumed turn that ends between the
// moment Follow registers and the moment it reads the chat's state ends
// the stream with the turn's own outcome, not "failed" (its end was in
// the state Follow started from, not among the entries it read).
func TestFollowTurnEndingAsItBegins(t *testing.T) {
	call := llmtest.Turn{Calls: []llmtest.Call{{Name: "introspect_journal_head", Arguments: `{}`, CallID: "call_h"}}}
	hold := make(chan struct{})
	defer close(hold)
	lost := llmtest.Turn{Text: "the head", Hold: hold} // never answered: the process stops first
	release := make(chan struct{})
	late := llmtest.Turn{Text: "the head", Hold: release}
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{call, lost, late}})
	t.Cleanup(srv.Close)
	opts := []agent.Option{env("OPENAI_API_KEY", "sk-test", "OPENAI_BASE_URL", srv.URL),
		agent.WithModel(agent.Model{Name: "gpt-test"}), agent.WithDir(filepath.Join(t.TempDir(), "store"))}
	w2 := reopenMidCall(t, srv, opts)
	agent.SetRegisteredHook(t.Cleanup, func(c *agent.Chat) {
		close(release) // the answer comes, and the turn ends, before Follow reads the state
		for st, ok := c.State(); !ok || st.Turn != nil; st, ok = c.State() {
			time.Sleep(2 * time.Millisecond)
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	lines, got := collect(t, w2.Chat("c").Follow(ctx))
	if got.Outcome != agent.OutcomeAnswer || got.RequestID != 1 {
		t.Errorf("Follow ended with %+v; want turn 1's answer\n%s", got, strings.Join(lines, "\n"))
	}
}

// reopenMidCall sends "the head?" to chat c of a world opened with opts,
// whose model (srv) first calls the tool as call_h: once that call has
// finished and the next model call is in flight (srv has one turn left),
// the world is closed, as a process that stops; the world is opened again
// (it resumes the turn) and returned, closed when the test ends.
func reopenMidCall(t *testing.T, srv *llmtest.Server, opts []agent.Option) *agent.World {
	t.Helper()
	w1, err := agent.Open(t.Context(), manifest, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for e, err := range w1.Chat("c").Send(t.Context(), "the head?") {
		if err != nil {
			break // the world closed
		}
		if tf, ok := e.(agent.ToolCallFinished); ok && tf.CallID == "call_h" {
			for srv.Remaining() > 1 {
				time.Sleep(5 * time.Millisecond)
			}
			if err := w1.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	w1.Close()
	w2, err := agent.Open(t.Context(), manifest, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w2.Close() })
	return w2
}
