package world_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/examples/counter"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// offByOne is the counter with a bug: one more remains than should.
type offByOne struct{}

func (offByOne) Step(c *reducer.Context, state, event schema.Value) (reducer.Output, error) {
	out, err := counter.Reducer{}.Step(c, state, event)
	if err != nil || out.State == nil {
		return out, err
	}
	st := out.State.(*schema.Map)
	n, _ := st.Get("remaining")
	out.State = st.With("remaining", n.(uint64)+1)
	return out, nil
}

// missingBlob is storage whose CAS has lost one blob.
type missingBlob struct {
	world.Storage
	ref cas.Ref
}

func (s missingBlob) CAS() cas.Store { return missingBlobCAS{s.Storage.CAS(), s.ref} }

type missingBlobCAS struct {
	cas.Store
	ref cas.Ref
}

func (c missingBlobCAS) Get(ctx context.Context, r cas.Ref) ([]byte, error) {
	if r == c.ref {
		return nil, fmt.Errorf("%w: %s", cas.ErrNotFound, r)
	}
	return c.Store.Get(ctx, r)
}

// TestDivergenceCarriesStates: when a replayed reducer derives another
// state, the divergence holds both states decoded, the journal's read from
// the store and the replayed one from what the step derived, which no
// store holds.
func TestDivergenceCarriesStates(t *testing.T) {
	ctx := t.Context()
	st := world.NewMemoryStorage()
	w := counterWorld(t, st, 0)
	if _, err := w.SendJSON(ctx, "counter/Event@1", []byte(`{"Start": {"target": 3}}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	w.Close()
	cat, err := schema.Load("../examples/counter", nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := reducer.NewRegistry()
	reg.MustRegister(counter.ModuleName, offByOne{})
	replay := func(st world.Storage) *world.DivergenceError {
		t.Helper()
		_, err := world.Rerun(ctx, world.RerunOptions{Name: "c1", Catalog: cat, Reducers: reg, Storage: st, FromGenesis: true})
		var d *world.DivergenceError
		if !errors.As(err, &d) {
			t.Fatalf("replay with a changed reducer: %v; want a divergence", err)
		}
		if d.Journal == nil || d.Journal.Kind != world.KindState || d.Derived == nil || d.Derived.Kind != world.KindState {
			t.Fatalf("diverged at %+v / %+v; want two State records", d.Journal, d.Derived)
		}
		return d
	}
	d := replay(st)
	jr, err := world.DecodeState(*d.Journal)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		side string
		sv   *world.StateValue
		want string
	}{
		{"journal", d.JournalState, `{"pc":{"$tag":"Counting"},"remaining":3}`},
		{"derived", d.DerivedState, `{"pc":{"$tag":"Counting"},"remaining":4}`},
	}
	for _, tc := range tests {
		if tc.sv == nil || tc.sv.Err != nil {
			t.Fatalf("%s state: %+v", tc.side, tc.sv)
		}
		if got := string(schema.ValueJSON(tc.sv.Value)); got != tc.want {
			t.Errorf("%s state = %s; want %s", tc.side, got, tc.want)
		}
		if r, _ := schema.Ref(tc.sv.Value); r != tc.sv.Ref {
			t.Errorf("%s state is %s, but its Ref says %s", tc.side, r, tc.sv.Ref)
		}
	}
	if d.JournalState.Ref != jr.State {
		t.Errorf("journal state ref %s; the record names %s", d.JournalState.Ref, jr.State)
	}
	if has, _ := st.CAS().Has(ctx, d.DerivedState.Ref); has {
		t.Error("the replayed state was stored: replay must only read")
	}

	// A journal state the store has lost is reported as such.
	d = replay(missingBlob{st, jr.State})
	if d.JournalState == nil || !errors.Is(d.JournalState.Err, cas.ErrNotFound) || d.JournalState.Value != nil {
		t.Fatalf("journal state with its blob missing: %+v; want cas.ErrNotFound", d.JournalState)
	}
	if d.DerivedState == nil || d.DerivedState.Err != nil {
		t.Fatalf("derived state: %+v", d.DerivedState)
	}
}
