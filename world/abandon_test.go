package world_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// TestAbandonedIntents: an intent Options.Abandoned disowns is answered by
// the world ("cancelled: REASON", journaled) instead of run: in flight,
// its run's context is cancelled and its own receipt dropped; recovered
// when the world opens, it is not run at all. The plan hears an error
// receipt, and the journal replays.
func TestAbandonedIntents(t *testing.T) {
	ctx := t.Context()
	cat, err := schema.Load("testdata/bench5", nil)
	if err != nil {
		t.Fatal(err)
	}
	st := world.NewMemoryStorage()
	var runs, finished atomic.Int32
	started := make(chan struct{}, 16)
	blocking := effects.AdapterFunc(func(ctx context.Context, c *effects.Call) effects.Receipt {
		runs.Add(1)
		started <- struct{}{}
		select {
		case <-ctx.Done():
		case <-time.After(30 * time.Second):
			finished.Add(1)
		}
		return effects.OK("noop", schema.Record("ok", true))
	})
	var abandon atomic.Bool
	open := func() *world.World {
		w, err := world.Open(ctx, world.Options{Name: "wf", Catalog: cat, Reducers: reducer.NewRegistry(), Storage: st,
			Adapters: map[string]effects.Adapter{"bench.noop": blocking},
			Abandoned: func(m *world.Machine, in *effects.Intent) (string, bool) {
				if _, ok := m.PlanInput(in.Origin.PlanID); !ok {
					t.Errorf("intent %s: its plan is not running", in.Hash.Short())
				}
				return "the test gave up on it", abandon.Load()
			}})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	cancelledReceipts := func() int {
		n := 0
		err := st.Journal().Read(ctx, "wf", 1, func(r journal.Record) error {
			if r.Kind == world.KindReceipt && strings.Contains(string(r.Payload), "cancelled: the test gave up on it") {
				n++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	// In flight: the first plan's effect runs; once it is abandoned, the
	// next commit cancels it.
	w := open()
	if _, err := w.SendJSON(ctx, "bench/StartSeq@1", []byte(`{"n": 1}`)); err != nil {
		t.Fatal(err)
	}
	<-started
	abandon.Store(true)
	if _, err := w.SendJSON(ctx, "bench/StartSeq@1", []byte(`{"n": 2}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the adapter ran %d times; want once (the abandoned intents after it never run)", n)
	}
	// Each plan's first effect is answered by the world; the plan ends
	// on the error.
	if n := cancelledReceipts(); n != 2 {
		t.Errorf("%d cancelled receipts journaled; want 2", n)
	}
	w.Close()

	// Recovered: an intent pending when the world closed is answered at
	// open, not run.
	abandon.Store(false)
	w = open()
	if _, err := w.SendJSON(ctx, "bench/StartSeq@1", []byte(`{"n": 3}`)); err != nil {
		t.Fatal(err)
	}
	<-started
	w.Close() // its run is cancelled by the close; the intent stays pending
	abandon.Store(true)
	before := runs.Load()
	w = open()
	if err := w.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if n := runs.Load(); n != before {
		t.Errorf("the adapter ran %d times after the reopen; want none", n-before)
	}
	if n := cancelledReceipts(); n != 3 {
		t.Errorf("%d cancelled receipts journaled; want 3", n)
	}
	if finished.Load() != 0 {
		t.Error("a cancelled run finished")
	}
	if _, err := world.Rerun(ctx, world.RerunOptions{Name: "wf", Catalog: cat, Reducers: reducer.NewRegistry(), Storage: st, FromGenesis: true}); err != nil {
		t.Errorf("replay: %v", err)
	}
}

// TestAbandonedPanics: a panic in Options.Abandoned keeps the intent (and
// the world): it runs as if the callback had said it is wanted.
func TestAbandonedPanics(t *testing.T) {
	ctx := t.Context()
	cat, err := schema.Load("testdata/bench5", nil)
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	w, err := world.Open(ctx, world.Options{Name: "wf", Catalog: cat, Reducers: reducer.NewRegistry(), Storage: world.NewMemoryStorage(),
		Adapters: map[string]effects.Adapter{"bench.noop": effects.AdapterFunc(func(ctx context.Context, c *effects.Call) effects.Receipt {
			runs.Add(1)
			return effects.OK("noop", schema.Record("ok", true))
		})},
		Abandoned: func(*world.Machine, *effects.Intent) (string, bool) { panic("a bug in the callback") }})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.SendJSON(ctx, "bench/StartSeq@1", []byte(`{"n": 1}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.WaitIdle(ctx); err != nil {
		t.Fatalf("WaitIdle: %v", err)
	}
	if n := runs.Load(); n != 5 {
		t.Errorf("the adapter ran %d times; want the plan's 5 effects", n)
	}
}
