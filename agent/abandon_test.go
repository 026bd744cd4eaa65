package agent_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/world"
)

type slowIn struct {
	N int `json:"n"`
}

// TestStopCancelsRunningCall: stopping a turn while its tool runs cancels
// the run (the tool's context ends), journals the world's "cancelled"
// receipt, and drops what the tool returns; reopening the world does not
// run the call again, and the session replays.
func TestStopCancelsRunningCall(t *testing.T) {
	dir := t.TempDir()
	var runs, finished atomic.Int32
	started := make(chan struct{}, 4)
	cancelled := make(chan struct{}, 4)
	slow := agent.Func("slow", "Takes its time.", func(ctx context.Context, in slowIn) (string, error) {
		runs.Add(1)
		started <- struct{}{}
		select {
		case <-ctx.Done():
			cancelled <- struct{}{}
			return "", ctx.Err()
		case <-time.After(30 * time.Second):
			finished.Add(1)
			return "done", nil
		}
	})
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "slow", Arguments: `{"n": 1}`}}},
		{Text: "next answer"},
	}})
	defer srv.Close()
	open := func() *agent.World {
		w, err := agent.Open(t.Context(), manifest, agent.WithDir(dir), agent.WithTools(slow),
			env("OPENAI_API_KEY", "sk-test", "OPENAI_BASE_URL", srv.URL), agent.WithModel(agent.Model{Name: "gpt-test"}))
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	w := open()
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		cancel()
	}()
	var end agent.TurnEnd
	for e := range w.Chat("c").Send(ctx, "go slow") {
		if te, ok := e.(agent.TurnEnd); ok {
			end = te
		}
	}
	if end.Outcome != agent.OutcomeStopped {
		t.Errorf("turn end %+v; want stopped", end)
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the stopped turn's tool run was not cancelled")
	}
	// The world's receipt is journaled after the stop.
	var receipt string
	deadline := time.Now().Add(10 * time.Second)
	for receipt == "" && time.Now().Before(deadline) {
		_ = w.World().Storage().Journal().Read(t.Context(), "main", 1, func(r journal.Record) error {
			if r.Kind == world.KindReceipt && strings.Contains(string(r.Payload), "cancelled: turn 1 of chat c has ended") {
				receipt = string(r.Payload)
			}
			return nil
		})
		time.Sleep(10 * time.Millisecond)
	}
	if receipt == "" {
		t.Fatal("no cancelled receipt was journaled for the stopped turn's call")
	}
	w.Close()

	// Reopened, the world has nothing left to run for the stopped turn.
	w = open()
	defer w.Close()
	if _, e := collect(t, w.Chat("c").Send(t.Context(), "again")); e.Outcome != agent.OutcomeAnswer {
		t.Errorf("the next turn ended %+v; want an answer", e)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the tool ran %d times; want once (not again after the reopen)", n)
	}
	if finished.Load() != 0 {
		t.Error("the cancelled run finished")
	}
	if err := w.World().WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
}
