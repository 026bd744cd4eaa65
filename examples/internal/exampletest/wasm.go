package exampletest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/builtin"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/reducer/wasm"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// RegisterWASM returns a register function that makes a registry run the
// WASM modules of defmodules no Go reducer serves (the modules found
// beside an example's manifest), on a host closed with the test.
func RegisterWASM(t testing.TB) func(*reducer.Registry) {
	t.Helper()
	h, err := wasm.New(wasm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return func(r *reducer.Registry) { r.SetModules(h) }
}

// SameJournal drives the case's world twice, in memory: with its Go
// reducers (c.Register) and with its WASM modules alone (RegisterWASM,
// no Go reducer registered), and checks that the two journals are the same
// bytes, record for record, and that the WASM run's journal replays. Drive
// must make the same inputs both times (a fixed clock, the same URLs).
func SameJournal(t *testing.T, c Case) {
	t.Helper()
	goRecs := c.journal(t, c.Register)
	wasmCase := c
	wasmCase.Register = RegisterWASM(t)
	wasmRecs := wasmCase.journal(t, wasmCase.Register)
	if len(goRecs) == 0 {
		t.Fatal("the Go run journaled nothing")
	}
	for i := range max(len(goRecs), len(wasmRecs)) {
		if i >= len(goRecs) || i >= len(wasmRecs) {
			t.Fatalf("the Go run journaled %d records, the WASM run %d", len(goRecs), len(wasmRecs))
		}
		g, w := goRecs[i], wasmRecs[i]
		if g.Kind != w.Kind || !bytes.Equal(g.Payload, w.Payload) || g.Hash != w.Hash {
			t.Fatalf("record %d differs:\n  Go:   %s %s\n  WASM: %s %s", g.Seq, g.Kind, show(g.Payload), w.Kind, show(w.Payload))
		}
	}
}

func show(payload []byte) string {
	v, err := schema.Decode(payload)
	if err != nil {
		return err.Error()
	}
	return string(schema.ValueJSON(v))
}

// journal drives the case in memory with register's reducers and returns
// its records, after checking that they replay from genesis.
func (c Case) journal(t *testing.T, register func(*reducer.Registry)) []journal.Record {
	t.Helper()
	st := world.NewMemoryStorage()
	cat, reg := Load(t, c.Dir, register)
	var w *world.World
	open := func(o world.Options) *world.World {
		t.Helper()
		o.Name, o.Catalog, o.Reducers, o.Storage = c.World, cat, reg, st
		o.Entropy, o.SnapshotEvery = zeroEntropy{}, -1
		if o.Adapters == nil {
			o.Adapters = builtin.Adapters(nil)
		}
		if o.Now == nil {
			o.Now = NewClock(defaultStart).Now
		}
		var err error
		if w, err = world.Open(t.Context(), o); err != nil {
			t.Fatalf("open world: %v", err)
		}
		return w
	}
	c.Drive(t, open)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := w.WaitIdle(ctx); err != nil {
		t.Fatalf("wait idle: %v", err)
	}
	w.View(func(m *world.Machine) { c.Check(t, m, Records(t, st, c.World)) })
	w.Close()
	if _, err := world.Rerun(t.Context(), world.RerunOptions{Name: c.World, Catalog: cat, Reducers: reg, Storage: st, FromGenesis: true}); err != nil {
		t.Fatalf("replay: %v", divergence(err))
	}
	var out []journal.Record
	if err := st.Journal().Read(t.Context(), c.World, 1, func(r journal.Record) error {
		out = append(out, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
