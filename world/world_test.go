package world_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/examples/counter"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// fixedClock returns a clock that starts at t0 and moves 1 ms per call.
// It is safe for concurrent use (the dispatcher reads it from adapters'
// goroutines).
func fixedClock(t0 int64) func() time.Time {
	var n atomic.Int64
	n.Store(t0)
	return func() time.Time {
		return time.Unix(0, n.Add(int64(time.Millisecond)))
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 0
	}
	return len(p), nil
}

func counterWorld(t *testing.T, st world.Storage, snapEvery int) *world.World {
	t.Helper()
	cat, err := schema.Load("../examples/counter", nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := reducer.NewRegistry()
	counter.Register(reg)
	w, err := world.Open(t.Context(), world.Options{
		Name: "c1", Catalog: cat, Reducers: reg, Storage: st,
		Now: fixedClock(1_700_000_000_000_000_000), Entropy: zeroReader{}, SnapshotEvery: snapEvery,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func state(t *testing.T, w *world.World, module string) string {
	t.Helper()
	var out string
	w.View(func(m *world.Machine) {
		v, _, ok := m.State(module, nil)
		if !ok {
			out = "<none>"
			return
		}
		out = string(schema.ValueJSON(v))
	})
	return out
}

func TestCounter(t *testing.T) {
	ctx := t.Context()
	st := world.NewMemoryStorage()
	w := counterWorld(t, st, 0)
	send := func(js string) {
		t.Helper()
		if _, err := w.SendJSON(ctx, "counter/Event@1", []byte(js)); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"Start": {"target": 3}}`)
	for range 3 {
		send(`"Tick"`)
	}
	if err := w.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := state(t, w, counter.ModuleName), `{"pc":{"$tag":"Done"},"remaining":0}`; got != want {
		t.Fatalf("state = %s; want %s", got, want)
	}
	// A bad event is refused and journals nothing.
	head := w.Head()
	if _, err := w.SendJSON(ctx, "counter/Event@1", []byte(`{"Stop": null}`)); err == nil {
		t.Fatal("a bad event was accepted")
	}
	if w.Head() != head {
		t.Fatal("a refused event changed the journal")
	}
	w.Close()
	// Reopening recovers the same state by re-deriving the journal.
	w2 := counterWorld(t, st, 0)
	if got, want := state(t, w2, counter.ModuleName), `{"pc":{"$tag":"Done"},"remaining":0}`; got != want {
		t.Fatalf("after reopen: state = %s; want %s", got, want)
	}
	if w2.Head() != head {
		t.Fatalf("reopen changed the head: %v then %v", head, w2.Head())
	}
}

// TestSnapshotAgreesWithGenesis runs a world with snapshots, then recovers
// it from its newest snapshot and from genesis: both must agree.
func TestSnapshotAgreesWithGenesis(t *testing.T) {
	ctx := t.Context()
	st := world.NewMemoryStorage()
	w := counterWorld(t, st, 3)
	for i := range 10 {
		js := `"Tick"`
		if i%4 == 0 {
			js = fmt.Sprintf(`{"Start": {"target": %d}}`, 5+i)
		}
		if _, err := w.SendJSON(ctx, "counter/Event@1", []byte(js)); err != nil {
			t.Fatal(err)
		}
	}
	want := state(t, w, counter.ModuleName)
	w.Close()
	snaps := 0
	err := st.Journal().Read(ctx, "c1", 1, func(r journal.Record) error {
		if r.Kind == world.KindSnapshot {
			snaps++
		}
		return nil
	})
	if err != nil || snaps < 3 {
		t.Fatalf("want at least 3 snapshots, got %d (%v)", snaps, err)
	}
	w2 := counterWorld(t, st, 3) // recovers from the newest snapshot
	if got := state(t, w2, counter.ModuleName); got != want {
		t.Fatalf("from snapshot: %s; want %s", got, want)
	}
	w2.Close()
	cat, _ := schema.Load("../examples/counter", nil)
	reg := reducer.NewRegistry()
	counter.Register(reg)
	rep, err := world.Rerun(ctx, world.RerunOptions{Name: "c1", Catalog: cat, Reducers: reg, Storage: st, FromGenesis: true})
	if err != nil {
		t.Fatal(err)
	}
	v, _, _ := rep.Machine.State(counter.ModuleName, nil)
	if got := string(schema.ValueJSON(v)); got != want {
		t.Fatalf("from genesis: %s; want %s", got, want)
	}
	if rep.FromSeq != 1 || rep.Records == 0 {
		t.Fatalf("replay from genesis started at %d and read %d records", rep.FromSeq, rep.Records)
	}
}
