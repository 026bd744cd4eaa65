package world_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// runCounter is an adapter that takes a while and counts its runs by
// intent, and the runs a close cut short.
type runCounter struct {
	slow    time.Duration
	started chan cas.Ref
	mu      sync.Mutex
	runs    map[cas.Ref]int
	cut     int
}

func newRunCounter(slow time.Duration) *runCounter {
	return &runCounter{slow: slow, started: make(chan cas.Ref, 64), runs: map[cas.Ref]int{}}
}

func (a *runCounter) Run(ctx context.Context, c *effects.Call) effects.Receipt {
	a.mu.Lock()
	a.runs[c.Intent.Hash]++
	a.mu.Unlock()
	a.started <- c.Intent.Hash
	select {
	case <-time.After(a.slow):
	case <-ctx.Done():
		a.mu.Lock()
		a.cut++
		a.mu.Unlock()
	}
	return effects.OK("noop", schema.Record("ok", true))
}

// check fails the test unless want intents ran, each once, none cut short.
func (a *runCounter) check(t *testing.T, want int) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	for h, n := range a.runs {
		if n != 1 {
			t.Errorf("intent %s ran %d times; want once", h.Short(), n)
		}
	}
	if len(a.runs) != want || a.cut != 0 {
		t.Errorf("%d intents ran, %d runs cut short by a close; want %d, none", len(a.runs), a.cut, want)
	}
}

// TestDrain: a drained world dispatches nothing new and waits for the
// effect in flight; the intents its receipt emits are journaled and held.
// Closed then, and opened again (another worker, say), the world runs the
// held intents there: every effect of the workflow runs exactly once, and
// none is cut short. Resume, instead, dispatches them in place.
func TestDrain(t *testing.T) {
	ctx := t.Context()
	cat, err := schema.Load("testdata/bench5", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"close and reopen", "resume"} {
		t.Run(how, func(t *testing.T) {
			st := world.NewMemoryStorage()
			a := newRunCounter(100 * time.Millisecond)
			open := func() *world.World {
				w, err := world.Open(ctx, world.Options{Name: "wf", Catalog: cat, Reducers: reducer.NewRegistry(), Storage: st,
					Adapters: map[string]effects.Adapter{"bench.noop": a}})
				if err != nil {
					t.Fatal(err)
				}
				return w
			}
			w := open()
			if _, err := w.SendJSON(ctx, "bench/StartSeq@1", []byte(`{"n": 1}`)); err != nil {
				t.Fatal(err)
			}
			<-a.started // the first effect runs
			if n := w.InFlight(); n != 1 {
				t.Errorf("InFlight = %d; want 1", n)
			}
			if err := w.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			if n := w.InFlight(); n != 0 {
				t.Errorf("drained, InFlight = %d; want 0", n)
			}
			pending := 0
			w.View(func(m *world.Machine) { pending = len(m.Pending()) })
			if pending != 1 {
				t.Fatalf("drained: %d intents pending; want the next one, held", pending)
			}
			select {
			case <-a.started:
				t.Fatal("a drained world dispatched an effect")
			case <-time.After(300 * time.Millisecond):
			}
			if how == "resume" {
				w.Resume()
			} else {
				w.Close()
				w = open()
			}
			if err := w.WaitIdle(ctx); err != nil {
				t.Fatal(err)
			}
			w.Close()
			a.check(t, 5)
			if _, err := world.Rerun(ctx, world.RerunOptions{Name: "wf", Catalog: cat, Reducers: reducer.NewRegistry(), Storage: st, FromGenesis: true}); err != nil {
				t.Errorf("replay: %v", err)
			}
		})
	}
}

// TestDrainTimeout: Drain gives up when ctx ends, the world drained still;
// Resume goes on.
func TestDrainTimeout(t *testing.T) {
	ctx := t.Context()
	cat, err := schema.Load("testdata/bench5", nil)
	if err != nil {
		t.Fatal(err)
	}
	a := newRunCounter(500 * time.Millisecond)
	w, err := world.Open(ctx, world.Options{Name: "wf", Catalog: cat, Reducers: reducer.NewRegistry(), Storage: world.NewMemoryStorage(),
		Adapters: map[string]effects.Adapter{"bench.noop": a}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.SendJSON(ctx, "bench/StartSeq@1", []byte(`{"n": 1}`)); err != nil {
		t.Fatal(err)
	}
	<-a.started
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := w.Drain(dctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Drain = %v; want the deadline", err)
	}
	w.Resume()
	if err := w.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	a.check(t, 5)
}
