package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// runawayAIR is a world of three modules that take the same event, a nat
// n: fib computes fib(n) by naive recursion, loop loops for ever (with
// more fuel than the host gives, from its AIR), recurse recurses for ever.
// Each module's wasm_hash is filled in by the test.
const runawayAIR = `[
  {"$kind": "defschema", "name": "test/N@1", "type": {"nat": {}}},
  {"$kind": "defmodule", "name": "test/Fib@1", "module_kind": "reducer", "wasm_hash": %q,
   "abi": {"reducer": {"state": "test/N@1", "event": "test/N@1"}}},
  {"$kind": "defmodule", "name": "test/Loop@1", "module_kind": "reducer", "wasm_hash": %q,
   "abi": {"reducer": {"state": "test/N@1", "event": "test/N@1"}}, "limits": {"fuel": %d}},
  {"$kind": "defmodule", "name": "test/Recurse@1", "module_kind": "reducer", "wasm_hash": %q,
   "abi": {"reducer": {"state": "test/N@1", "event": "test/N@1"}}},
  {"$kind": "manifest", "air_version": "1",
   "schemas": [{"name": "test/N@1"}],
   "modules": [{"name": "test/Fib@1"}, {"name": "test/Loop@1"}, {"name": "test/Recurse@1"}],
   "routing": {"events": [
     {"event": "test/N@1", "reducer": "test/Fib@1"},
     {"event": "test/N@1", "reducer": "test/Loop@1"},
     {"event": "test/N@1", "reducer": "test/Recurse@1"}]}}
]`

// runawayWorld loads runawayAIR, with loopFuel as the loop's fuel, and a
// store holding its modules' code.
func runawayWorld(t *testing.T, loopFuel uint64) (*schema.Catalog, *world.MemoryStorage) {
	t.Helper()
	st := world.NewMemoryStorage()
	var refs []any
	for _, f := range []string{"fib", "loop", "recurse"} {
		ref, err := st.CAS().Put(t.Context(), readModule(t, f))
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref.String())
		if f == "loop" {
			refs = append(refs, loopFuel)
		}
	}
	cat, err := schema.LoadSources([]schema.Source{{Name: "runaway.air.json", Data: fmt.Appendf(nil, runawayAIR, refs...)}},
		&schema.LoadOptions{WASM: true})
	if err != nil {
		t.Fatal(err)
	}
	return cat, st
}

// wasmRegistry is a registry that runs WASM modules only, on a host of
// the engine asked for, closed with the test.
func wasmRegistry(t *testing.T, opts Options) *reducer.Registry {
	h := newHost(t, opts)
	reg := reducer.NewRegistry()
	reg.SetModules(h)
	return reg
}

// fixedEntropy is the ingress entropy of the tests: zeros.
type fixedEntropy struct{}

func (fixedEntropy) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestLimitsReplay runs a world whose modules end at their limits (fuel,
// the depth of calls) in each engine: the journals are the same bytes, each
// replays from genesis in the other engine, and the failures are journaled
// as ReducerErrors that name the limit, while the world goes on.
func TestLimitsReplay(t *testing.T) {
	opts := Options{Limits: Limits{Fuel: 200_000}}
	var journals [][]journal.Record
	for _, e := range engines {
		cat, st := runawayWorld(t, 300_000)
		o := opts
		o.Interpreter = e.interpreter
		start := time.Unix(1_700_000_000, 0)
		w, err := world.Open(t.Context(), world.Options{Name: "w", Catalog: cat, Reducers: wasmRegistry(t, o), Storage: st,
			Now: func() time.Time { return start }, Entropy: fixedEntropy{}, SnapshotEvery: -1})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []uint64{10, 23} {
			if _, err := w.Send(t.Context(), "test/N@1", n, nil); err != nil {
				t.Fatalf("%s: send %d: %v", e.name, n, err)
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		if err := w.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		var fib schema.Value
		w.View(func(m *world.Machine) { fib, _, _ = m.State("test/Fib@1", nil) })
		w.Close()
		if fib != uint64(55) {
			t.Errorf("%s: fib's state is %v; want 55 (fib(23) ran out of fuel, so fib(10) stands)", e.name, fib)
		}
		var recs []journal.Record
		var errs []string
		if err := st.Journal().Read(t.Context(), "w", 1, func(r journal.Record) error {
			recs = append(recs, r)
			if r.Kind == world.KindReducerError {
				v, _ := schema.Decode(r.Payload)
				msg, _ := v.(*schema.Map).Get("error")
				errs = append(errs, msg.(string))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		journals = append(journals, recs)
		want := []string{
			"test/Loop@1 (blake3:…): step ran out of fuel after 300000 instructions",
			"test/Recurse@1 (blake3:…): step nested calls more than 1000 deep",
			"test/Fib@1 (blake3:…): step ran out of fuel after 200000 instructions",
			"test/Loop@1 (blake3:…): step ran out of fuel after 300000 instructions",
			"test/Recurse@1 (blake3:…): step nested calls more than 1000 deep",
		}
		if len(errs) != len(want) {
			t.Fatalf("%s: the journal's ReducerErrors are %q; want %d", e.name, errs, len(want))
		}
		for i, msg := range errs {
			before, after, _ := strings.Cut(want[i], "…")
			if !strings.HasPrefix(msg, "wasm module "+before) || !strings.Contains(msg, after) {
				t.Errorf("%s: ReducerError %d is %q; want %q", e.name, i, msg, want[i])
			}
		}
		// The other engine replays the journal to the same bytes.
		other := o
		other.Interpreter = !e.interpreter
		if _, err := world.Rerun(t.Context(), world.RerunOptions{Name: "w", Catalog: cat, Reducers: wasmRegistry(t, other), Storage: st, FromGenesis: true}); err != nil {
			t.Errorf("%s's journal does not replay in the other engine: %v", e.name, err)
		}
	}
	a, b := journals[0], journals[1]
	if len(a) != len(b) {
		t.Fatalf("the compiler journaled %d records, the interpreter %d", len(a), len(b))
	}
	for i := range a {
		if a[i].Hash != b[i].Hash || !bytes.Equal(a[i].Payload, b[i].Payload) {
			t.Fatalf("record %d (%s) differs between the engines", a[i].Seq, a[i].Kind)
		}
	}
}

// TestBackstopJournalsNothing sends an event to a module that would loop
// for a very long time with fuel left: the wall-clock backstop stops it,
// and the world journals nothing of the input (Send's input fails), since
// a faster machine might have finished the step.
func TestBackstopJournalsNothing(t *testing.T) {
	cat, st := runawayWorld(t, 1<<60)
	reg := wasmRegistry(t, Options{Limits: Limits{Deadline: 50 * time.Millisecond}})
	w, err := world.Open(t.Context(), world.Options{Name: "w", Catalog: cat, Reducers: reg, Storage: st, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	before, err := st.Journal().Head(t.Context(), "w")
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Send(t.Context(), "test/N@1", uint64(10), nil)
	if err == nil {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		err = w.WaitIdle(ctx)
		cancel()
	}
	if !errors.Is(err, ErrDeadline) || !errors.Is(err, reducer.ErrIrreproducible) {
		t.Fatalf("send: %v; want the backstop's error", err)
	}
	after, err := st.Journal().Head(t.Context(), "w")
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("the journal moved from %d to %d: the input was journaled", before.Seq, after.Seq)
	}
}
