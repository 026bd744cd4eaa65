package world_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/examples/counter"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// counterCatalogs returns the counter's catalog and a changed one in which
// counter/Event@1 reaches no reducer.
func counterCatalogs(t *testing.T) (before, after *schema.Catalog) {
	t.Helper()
	var srcs []schema.Source
	files, _ := filepath.Glob("../examples/counter/*.air.json")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, schema.Source{Name: f, Data: b})
	}
	before, err := schema.LoadSources(srcs, nil)
	if err != nil {
		t.Fatal(err)
	}
	changed := make([]schema.Source, len(srcs))
	copy(changed, srcs)
	for i, s := range changed {
		if strings.HasSuffix(s.Name, "manifest.air.json") {
			d := strings.Replace(string(s.Data), `{"event": "counter/Event@1", "reducer": "counter/Counter@1"}`, ``, 1)
			if d == string(s.Data) {
				t.Fatal("the counter's manifest has no route to change")
			}
			changed[i].Data = []byte(d)
		}
	}
	after, err = schema.LoadSources(changed, nil)
	if err != nil {
		t.Fatal(err)
	}
	return before, after
}

// TestManifestChange: a world reopened with a changed manifest recovers
// its records with the manifest they were written under, records the new
// one, and runs it from then on; replay agrees with either manifest given,
// from genesis and from a snapshot.
func TestManifestChange(t *testing.T) {
	ctx := t.Context()
	before, after := counterCatalogs(t)
	reg := reducer.NewRegistry()
	counter.Register(reg)
	st := world.NewMemoryStorage()
	open := func(cat *schema.Catalog) *world.World {
		t.Helper()
		w, err := world.Open(ctx, world.Options{Name: "c1", Catalog: cat, Reducers: reg, Storage: st,
			Now: fixedClock(1_700_000_000_000_000_000), Entropy: zeroReader{}, SnapshotEvery: 3})
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
	w := open(before)
	send(w, `{"Start": {"target": 3}}`)
	send(w, `"Tick"`)
	want := `{"pc":{"$tag":"Counting"},"remaining":2}`
	if got := state(t, w, counter.ModuleName); got != want {
		t.Fatalf("state = %s; want %s", got, want)
	}
	w.Close()

	// Under the new manifest the events reach no reducer: the state stays.
	w = open(after)
	if got := state(t, w, counter.ModuleName); got != want {
		t.Fatalf("reopened under the new manifest: state = %s; want %s", got, want)
	}
	send(w, `"Tick"`)
	if got := state(t, w, counter.ModuleName); got != want {
		t.Fatalf("a tick under the new manifest: state = %s; want %s (no route)", got, want)
	}
	var running cas.Ref
	w.View(func(m *world.Machine) { running = m.Manifest() })
	if running != after.ManifestRef() {
		t.Fatalf("the world runs %s; want the new manifest %s", running.Short(), after.ManifestRef().Short())
	}
	w.Close()

	for _, cat := range []*schema.Catalog{before, after} {
		for _, genesis := range []bool{true, false} {
			res, err := world.Rerun(ctx, world.RerunOptions{Name: "c1", Catalog: cat, Reducers: reg, Storage: st, FromGenesis: genesis})
			if err != nil {
				t.Fatalf("replay (genesis %v) given manifest %s: %v", genesis, cat.ManifestRef().Short(), err)
			}
			if res.Machine.Manifest() != after.ManifestRef() {
				t.Errorf("replay ends on manifest %s", res.Machine.Manifest().Short())
			}
		}
	}

	// Reopened under the first manifest again: recorded as a third change.
	w = open(before)
	send(w, `"Tick"`)
	if got, want := state(t, w, counter.ModuleName), `{"pc":{"$tag":"Counting"},"remaining":1}`; got != want {
		t.Fatalf("back under the first manifest: state = %s; want %s", got, want)
	}
	w.Close()
}

// TestManifestMissingFromStore: a journal whose earlier manifest is not in
// the store cannot be recovered, and the error says which and why.
func TestManifestMissingFromStore(t *testing.T) {
	ctx := t.Context()
	before, after := counterCatalogs(t)
	reg := reducer.NewRegistry()
	counter.Register(reg)
	st := world.NewMemoryStorage()
	w, err := world.Open(ctx, world.Options{Name: "c1", Catalog: before, Reducers: reg, Storage: st, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	// A store holding the journal but not the first manifest's nodes.
	bare := world.NewMemoryStorage()
	if err := copyJournal(ctx, st, bare, "c1"); err != nil {
		t.Fatal(err)
	}
	_, err = world.Open(ctx, world.Options{Name: "c1", Catalog: after, Reducers: reg, Storage: bare, SnapshotEvery: -1})
	if err == nil || !strings.Contains(err.Error(), before.ManifestRef().Short()) || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("open = %v; want an error naming manifest %s not found", err, before.ManifestRef().Short())
	}
}

// copyJournal appends the records of world in from to the same world in to.
func copyJournal(ctx context.Context, from, to world.Storage, name string) error {
	var entries []journal.Entry
	if err := from.Journal().Read(ctx, name, 1, func(r journal.Record) error {
		entries = append(entries, journal.Entry{Kind: r.Kind, Payload: r.Payload})
		return nil
	}); err != nil {
		return err
	}
	_, err := to.Journal().Append(ctx, name, journal.Head{}, entries)
	return err
}

// seqCatalogs returns the catalog of testdata/bench5 and one whose
// sequential plan emits i=20 where the original emits i=2.
func seqCatalogs(t *testing.T) (before, after *schema.Catalog) {
	t.Helper()
	read := func(dir string) []schema.Source {
		var srcs []schema.Source
		files, _ := filepath.Glob(filepath.Join(dir, "*.air.json"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			srcs = append(srcs, schema.Source{Name: f, Data: b})
		}
		return srcs
	}
	srcs := read("testdata/bench5")
	var err error
	before, err = schema.LoadSources(srcs, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The new sequential plan emits i=20 where the old one emits i=2.
	changed := make([]schema.Source, len(srcs))
	copy(changed, srcs)
	n := 0
	for i, s := range changed {
		var defs []map[string]any
		if json.Unmarshal(s.Data, &defs) != nil {
			continue
		}
		for _, d := range defs {
			if d["name"] != "bench/sequential@1" {
				continue
			}
			for _, st := range d["steps"].([]any) {
				step := st.(map[string]any)
				if step["id"] == "e2" {
					step["params"].(map[string]any)["record"].(map[string]any)["i"] = map[string]any{"nat": 20}
					n++
				}
			}
		}
		changed[i].Data, _ = json.Marshal(defs)
	}
	if n != 1 {
		t.Fatalf("changed %d steps", n)
	}
	after, err = schema.LoadSources(changed, nil)
	if err != nil {
		t.Fatal(err)
	}
	return before, after
}

// TestPlanInFlightAcrossManifestChange: a plan waiting for a receipt when
// its world is reopened with a manifest that changes the plan runs on with
// the def it started with; new instances run the new def.
func TestPlanInFlightAcrossManifestChange(t *testing.T) {
	ctx := t.Context()
	before, after := seqCatalogs(t)
	st := world.NewMemoryStorage()
	// First run: the effect i=1 never completes.
	waiting := make(chan struct{})
	var once sync.Once
	hang := effects.AdapterFunc(func(ctx context.Context, c *effects.Call) effects.Receipt {
		if i, _ := c.Params.(*schema.Map).Get("i"); i == uint64(1) {
			once.Do(func() { close(waiting) })
			<-ctx.Done()
			return effects.Errorf("noop", "cancelled")
		}
		return effects.OK("noop", schema.Record("ok", true))
	})
	w, err := world.Open(ctx, world.Options{Name: "p", Catalog: before, Reducers: reducer.NewRegistry(), Storage: st, SnapshotEvery: -1,
		Adapters: map[string]effects.Adapter{"bench.noop": hang}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.SendJSON(ctx, "bench/StartSeq@1", []byte(`{"n": 7}`)); err != nil {
		t.Fatal(err)
	}
	<-waiting
	w.Close()

	// Reopened under the changed plan: the instance finishes its own def.
	var mu sync.Mutex
	var emitted []uint64
	noop := effects.AdapterFunc(func(ctx context.Context, c *effects.Call) effects.Receipt {
		i, _ := c.Params.(*schema.Map).Get("i")
		mu.Lock()
		emitted = append(emitted, i.(uint64))
		mu.Unlock()
		return effects.OK("noop", schema.Record("ok", true))
	})
	w, err = world.Open(ctx, world.Options{Name: "p", Catalog: after, Reducers: reducer.NewRegistry(), Storage: st, SnapshotEvery: -1,
		Adapters: map[string]effects.Adapter{"bench.noop": noop}, Dispatch: effects.DispatcherOptions{Workers: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	// A new instance runs the new def.
	if _, err := w.SendJSON(ctx, "bench/StartSeq@1", []byte(`{"n": 8}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if want := []uint64{1, 2, 3, 4, 0, 1, 20, 3, 4}; !slices.Equal(emitted, want) {
		t.Errorf("effects emitted after the change: i = %v; want %v", emitted, want)
	}
	if ended := plansEnded(t, st, "p"); !slices.Equal(ended, []string{"ok", "ok"}) {
		t.Errorf("plans ended %v; want [ok ok]", ended)
	}
	if _, err := world.Rerun(ctx, world.RerunOptions{Name: "p", Catalog: after, Reducers: reducer.NewRegistry(), Storage: st, FromGenesis: true}); err != nil {
		t.Fatal(err)
	}
}

// TestPlanInFlightAcrossManifestChangeAndSnapshot is the test above with a
// snapshot taken after the change while the old instance still runs: the
// world restored from that snapshot still finds the old plan def, and the
// snapshot replays from genesis to the same bytes.
func TestPlanInFlightAcrossManifestChangeAndSnapshot(t *testing.T) {
	ctx := t.Context()
	before, after := seqCatalogs(t)
	st := world.NewMemoryStorage()
	var mu sync.Mutex
	var emitted []uint64
	adapter := func(hangOn1 bool, called chan<- struct{}) effects.Adapter {
		return effects.AdapterFunc(func(ctx context.Context, c *effects.Call) effects.Receipt {
			i, _ := c.Params.(*schema.Map).Get("i")
			if hangOn1 && i == uint64(1) {
				select {
				case called <- struct{}{}:
				default:
				}
				<-ctx.Done()
				return effects.Errorf("noop", "cancelled")
			}
			mu.Lock()
			emitted = append(emitted, i.(uint64))
			mu.Unlock()
			return effects.OK("noop", schema.Record("ok", true))
		})
	}
	open := func(cat *schema.Catalog, every int, a effects.Adapter) *world.World {
		t.Helper()
		w, err := world.Open(ctx, world.Options{Name: "p", Catalog: cat, Reducers: reducer.NewRegistry(), Storage: st, SnapshotEvery: every,
			Adapters: map[string]effects.Adapter{"bench.noop": a}, Dispatch: effects.DispatcherOptions{Workers: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	// First run, old manifest: the effect i=1 never completes.
	called := make(chan struct{}, 1)
	w := open(before, -1, adapter(true, called))
	if _, err := w.SendJSON(ctx, "bench/StartSeq@1", []byte(`{"n": 7}`)); err != nil {
		t.Fatal(err)
	}
	<-called
	w.Close()
	// Second run, new manifest, a snapshot after every input: the old
	// instance still waits for i=1 when the snapshot is taken.
	w = open(after, 1, adapter(true, make(chan struct{}, 1)))
	if _, err := w.SendJSON(ctx, "bench/StartSeq@1", []byte(`{"n": 8}`)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	snaps := 0
	_ = st.Journal().Read(ctx, "p", 1, func(r journal.Record) error {
		if r.Kind == world.KindSnapshot {
			snaps++
		}
		return nil
	})
	if snaps == 0 {
		t.Fatal("no snapshot was taken")
	}
	// Third run, restored from that snapshot: both instances finish, each
	// with its own def.
	mu.Lock()
	emitted = nil
	mu.Unlock()
	w = open(after, -1, adapter(false, nil))
	if err := w.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if !slices.Contains(emitted, 2) || !slices.Contains(emitted, 20) {
		t.Errorf("effects emitted after the restore: i = %v; want the old def's i=2 and the new def's i=20", emitted)
	}
	if ended := plansEnded(t, st, "p"); !slices.Equal(ended, []string{"ok", "ok"}) {
		t.Errorf("plans ended %v; want [ok ok]", ended)
	}
	for _, genesis := range []bool{true, false} {
		if _, err := world.Rerun(ctx, world.RerunOptions{Name: "p", Catalog: after, Reducers: reducer.NewRegistry(), Storage: st, FromGenesis: genesis}); err != nil {
			t.Fatalf("replay (from genesis: %v): %v", genesis, err)
		}
	}
}

// plansEnded returns the status of each PlanEnded record of world, in
// journal order.
func plansEnded(t *testing.T, st world.Storage, name string) []string {
	t.Helper()
	var ended []string
	for _, v := range planEnds(t, st, name) {
		s, _ := v.(*schema.Map).Get("status")
		ended = append(ended, fmt.Sprint(s))
	}
	return ended
}

// planEnds returns the PlanEnded records of a world's journal, decoded.
func planEnds(t *testing.T, st world.Storage, name string) []schema.Value {
	t.Helper()
	var ended []schema.Value
	err := st.Journal().Read(t.Context(), name, 1, func(r journal.Record) error {
		if r.Kind == world.KindPlanEnded {
			v, err := schema.Decode(r.Payload)
			if err != nil {
				return err
			}
			ended = append(ended, v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ended
}
