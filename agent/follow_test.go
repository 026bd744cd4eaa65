package agent_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/agent"
)

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
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{call, lost, answer}})
	t.Cleanup(srv.Close)
	dir := filepath.Join(t.TempDir(), "store")
	opts := []agent.Option{env("OPENAI_API_KEY", "sk-test", "OPENAI_BASE_URL", srv.URL), model, agent.WithDir(dir)}
	w1, err := agent.Open(t.Context(), manifest, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for e, err := range w1.Chat("c").Send(t.Context(), "the head?") {
		if err != nil {
			break // the world closed
		}
		if tf, ok := e.(agent.ToolCallFinished); ok && tf.CallID == "call_h" {
			// The next model call is asked for in this step: stop the
			// process while it is in flight.
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
	defer w2.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
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
