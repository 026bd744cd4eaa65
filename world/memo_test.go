package world_test

import (
	"errors"
	"testing"

	"github.com/demiurge-dev/demiurge/examples/counter"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// TestReducerMemo: what a step returns as Output.Memo comes back as
// Context.Memo on the cell's next step, once; a failed step loses it, and
// a reopened world re-derives its journal with the same memos.
func TestReducerMemo(t *testing.T) {
	ctx := t.Context()
	cat, err := schema.Load("../examples/counter", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []any // the memo each step was given
	n, calls := 0, 0
	wrapped := reducer.Func(func(c *reducer.Context, state, event schema.Value) (reducer.Output, error) {
		got = append(got, c.Memo)
		if calls++; calls == 3 { // deterministic, so replay agrees
			return reducer.Output{}, errors.New("this step fails")
		}
		out, err := counter.Reducer{}.Step(c, state, event)
		n++
		out.Memo = n
		return out, err
	})
	st := world.NewMemoryStorage()
	open := func() *world.World {
		reg := reducer.NewRegistry()
		reg.MustRegister(counter.ModuleName, wrapped)
		w, err := world.Open(ctx, world.Options{Name: "c1", Catalog: cat, Reducers: reg, Storage: st,
			Now: fixedClock(1_700_000_000_000_000_000), Entropy: zeroReader{}})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	send := func(w *world.World, js string) {
		t.Helper()
		if _, err := w.SendJSON(ctx, "counter/Event@1", []byte(js)); err != nil {
			t.Fatal(err)
		}
		if err := w.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	w := open()
	send(w, `{"Start": {"target": 5}}`) // a new cell: no memo
	send(w, `"Tick"`)                   // the memo of the step before
	send(w, `"Tick"`)                   // given memo 2, fails: the cell keeps its state, not the memo
	send(w, `"Tick"`)                   // so no memo here
	send(w, `"Tick"`)                   // memo 3
	w.Close()
	got = append(got, "reopen")
	n, calls = 100, 0
	w = open() // replay from genesis steps the reducer again, memos and all
	send(w, `"Tick"`)
	w.Close()
	want := []any{nil, 1, 2, nil, 3, "reopen",
		nil, 101, 102, nil, 103, // the journal re-derived: the same steps
		104}
	if len(got) != len(want) {
		t.Fatalf("memos given = %v; want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("memos given = %v; want %v", got, want)
		}
	}
}
