// Package exampletest runs the example worlds under test: it opens a world
// on the example's AIR with the real built-in adapters, a clock the test
// controls and fixed entropy, and checks the conformance every example
// owes: the run ends in the state the example promises, the journal
// replays from genesis without divergence, and the same run on a bbolt
// store recovers the same state after a reopen.
//
// It is for tests only: it calls t.Fatal on every error.
package exampletest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/builtin"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// Clock is a clock the test controls, for a world's ingress stamps and its
// dispatcher. It moves only when Sleep moves it, so timers fire at once
// and at exactly the time they were set for. It is safe for concurrent
// use.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Time
}

// NewClock returns a clock that reads start until it is moved.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep records t and returns at once, after moving the clock to t if t is
// later than now. It is an effects.DispatcherOptions.Sleep.
func (c *Clock) Sleep(ctx context.Context, t time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, t)
	if t.After(c.now) {
		c.now = t
	}
	return nil
}

// Sleeps returns the times Sleep was asked to wait for, in call order.
func (c *Clock) Sleeps() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.sleeps...)
}

type zeroEntropy struct{}

func (zeroEntropy) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// Load loads the AIR in dir with the reducers register adds, failing the
// test on any problem or warning.
func Load(t testing.TB, dir string, register func(*reducer.Registry)) (*schema.Catalog, *reducer.Registry) {
	t.Helper()
	reg := reducer.NewRegistry()
	register(reg)
	cat, err := schema.Load(dir, reg.LoadOptions())
	if err != nil {
		t.Fatalf("load %s:\n%v", dir, err)
	}
	if len(cat.Warnings) > 0 {
		t.Errorf("load %s: warnings:\n%v", dir, cat.Warnings)
	}
	return cat, reg
}

// Case is one example's conformance scenario.
type Case struct {
	// World is the world's name in the journal.
	World string
	// Dir holds the example's AIR.
	Dir string
	// Register adds the example's reducers.
	Register func(*reducer.Registry)
	// Drive runs the scenario: it opens the world with open, sends events
	// and waits until the world is idle. It runs once per storage backend,
	// so it must start fresh test servers and clocks each time. open fills
	// in the name, catalog, reducers, storage, entropy and snapshot
	// interval; the rest of o is the scenario's (nil Adapters: the
	// built-in ones; nil Now: a clock stopped at 2023-11-14T22:13:20Z).
	Drive func(t *testing.T, open func(o world.Options) *world.World)
	// Check checks the outcome: the state of the machine and the records
	// of the journal. It runs on the live world, on the world replayed from
	// genesis and on the world recovered from bbolt after a reopen.
	Check func(t *testing.T, m *world.Machine, recs []Record)
}

// Run runs the case on memory storage and on a bbolt store (with a snapshot
// every other input), checking after each run that the final state is the
// promised one, that no reducer step failed and no receipt was rejected,
// that the journal replays from genesis (and, on bbolt, from its newest
// snapshot) without divergence to the same cell states, and, for bbolt,
// that reopening the store recovers the same state and head.
func (c Case) Run(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		st := world.NewMemoryStorage()
		live := c.drive(t, st, 0)
		c.replay(t, st, live, true)
	})
	t.Run("bolt", func(t *testing.T) {
		dir := t.TempDir()
		s, err := store.Open(dir, &store.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		st, err := world.NewBoltStorage(s.CAS(), s.Journal())
		if err != nil {
			t.Fatal(err)
		}
		live := c.drive(t, st, 2)
		if err := s.Close(); err != nil {
			t.Fatalf("close store: %v", err)
		}
		// Reopen the file and the world: recovery starts from the newest
		// snapshot and re-derives the records after it.
		s, err = store.Open(dir, &store.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		st, err = world.NewBoltStorage(s.CAS(), s.Journal())
		if err != nil {
			t.Fatal(err)
		}
		cat, reg := Load(t, c.Dir, c.Register)
		w, err := world.Open(t.Context(), world.Options{Name: c.World, Catalog: cat, Reducers: reg, Storage: st,
			Adapters: builtin.Adapters(nil), Now: NewClock(defaultStart).Now, Entropy: zeroEntropy{}, SnapshotEvery: -1})
		if err != nil {
			t.Fatalf("reopen: %v", divergence(err))
		}
		if w.Head() != live.head {
			t.Errorf("reopen moved the head: %v, was %v", w.Head(), live.head)
		}
		var got outcome
		w.View(func(m *world.Machine) {
			got = snapshotOf(reg, m)
			c.Check(t, m, Records(t, st, c.World))
		})
		w.Close()
		if got.cells != live.cells {
			t.Errorf("reopened world's cells differ:\n got %s\nwant %s", got.cells, live.cells)
		}
		c.replay(t, st, live, true)
		c.replay(t, st, live, false)
	})
}

var defaultStart = time.Unix(1_700_000_000, 0)

// outcome is what a run left: its head and every cell's state ref.
type outcome struct {
	head  journal.Head
	cells string
}

func snapshotOf(reg *reducer.Registry, m *world.Machine) outcome {
	var b strings.Builder
	for _, mod := range reg.Names() {
		for _, cell := range m.Cells(mod) {
			fmt.Fprintf(&b, "%s[%s]=%s ", mod, schema.String(cell.Key), cell.Ref)
		}
	}
	return outcome{cells: b.String()}
}

// drive runs the scenario on st and checks the live world.
func (c Case) drive(t *testing.T, st world.Storage, snapEvery int) outcome {
	t.Helper()
	cat, reg := Load(t, c.Dir, c.Register)
	var w *world.World
	open := func(o world.Options) *world.World {
		t.Helper()
		if w != nil {
			t.Fatal("exampletest: Drive opened the world twice")
		}
		o.Name, o.Catalog, o.Reducers, o.Storage = c.World, cat, reg, st
		o.Entropy = zeroEntropy{}
		o.SnapshotEvery = snapEvery
		if snapEvery == 0 {
			o.SnapshotEvery = -1
		}
		if o.Adapters == nil {
			o.Adapters = builtin.Adapters(nil)
		}
		if o.Now == nil {
			o.Now = NewClock(defaultStart).Now
		}
		var err error
		w, err = world.Open(t.Context(), o)
		if err != nil {
			t.Fatalf("open world: %v", err)
		}
		t.Cleanup(func() { w.Close() })
		return w
	}
	c.Drive(t, open)
	if w == nil {
		t.Fatal("exampletest: Drive did not open the world")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := w.WaitIdle(ctx); err != nil {
		t.Fatalf("wait idle: %v", err)
	}
	var out outcome
	w.View(func(m *world.Machine) {
		recs := Records(t, st, c.World)
		for _, r := range recs {
			if r.Kind == world.KindReducerError || r.Kind == world.KindRejected {
				t.Errorf("journal record %d: %s", r.Seq, r)
			}
		}
		c.Check(t, m, recs)
		out = snapshotOf(reg, m)
	})
	out.head = w.Head()
	w.Close()
	return out
}

// replay replays the journal on st and checks it re-derives every record
// and ends in the live world's state.
func (c Case) replay(t *testing.T, st world.Storage, live outcome, fromGenesis bool) {
	t.Helper()
	cat, reg := Load(t, c.Dir, c.Register)
	rep, err := world.Rerun(t.Context(), world.RerunOptions{Name: c.World, Catalog: cat, Reducers: reg, Storage: st, FromGenesis: fromGenesis})
	if err != nil {
		t.Fatalf("replay (from genesis: %v): %v", fromGenesis, divergence(err))
	}
	if fromGenesis && rep.FromSeq != 1 {
		t.Errorf("replay from genesis started at seq %d", rep.FromSeq)
	}
	if rep.Head != live.head {
		t.Errorf("replay ended at %v; the live world at %v", rep.Head, live.head)
	}
	if got := snapshotOf(reg, rep.Machine); got.cells != live.cells {
		t.Errorf("replayed cells (from genesis: %v) differ:\n got %s\nwant %s", fromGenesis, got.cells, live.cells)
	}
	c.Check(t, rep.Machine, Records(t, st, c.World))
}

// divergence spells out a *world.DivergenceError with both sides.
func divergence(err error) string {
	var d *world.DivergenceError
	if !errors.As(err, &d) {
		return err.Error()
	}
	show := func(kind string, payload []byte) string {
		v, derr := schema.Decode(payload)
		if derr != nil {
			return fmt.Sprintf("%s <%v>", kind, derr)
		}
		return kind + " " + string(schema.ValueJSON(v))
	}
	s := err.Error()
	if d.Journal != nil {
		s += "\n journal: " + show(d.Journal.Kind, d.Journal.Payload)
	}
	if d.Derived != nil {
		s += "\n derived: " + show(d.Derived.Kind, d.Derived.Payload)
	}
	return s
}

// Record is a journal record with its payload decoded.
type Record struct {
	Seq   uint64
	Kind  string
	Value schema.Value
}

// Get returns the value at a path of field names inside the record's
// payload, or nil if there is none.
func (r Record) Get(path ...string) schema.Value { return Field(r.Value, path...) }

// String returns the record as "Kind {json}".
func (r Record) String() string { return r.Kind + " " + string(schema.ValueJSON(r.Value)) }

// Records reads a world's whole journal.
func Records(t testing.TB, st world.Storage, name string) []Record {
	t.Helper()
	var out []Record
	err := st.Journal().Read(t.Context(), name, 1, func(r journal.Record) error {
		v, err := schema.Decode(r.Payload)
		if err != nil {
			return fmt.Errorf("record %d: %w", r.Seq, err)
		}
		out = append(out, Record{Seq: r.Seq, Kind: r.Kind, Value: v})
		return nil
	})
	if err != nil {
		t.Fatalf("read journal: %v", err)
	}
	return out
}

// Select returns the records of one kind.
func Select(recs []Record, kind string) []Record {
	var out []Record
	for _, r := range recs {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

// Field returns the value at a path of field names (or map keys) inside
// v, or nil if there is none.
func Field(v schema.Value, path ...string) schema.Value {
	for _, p := range path {
		m, ok := v.(*schema.Map)
		if !ok {
			return nil
		}
		v, _ = m.Get(p)
	}
	return v
}

// State returns a cell's state as JSON, or "<none>".
func State(m *world.Machine, module string, key schema.Value) string {
	v, _, ok := m.State(module, key)
	if !ok {
		return "<none>"
	}
	return string(schema.ValueJSON(v))
}

// Send sends an event given in AIR JSON (either form) and fails the test if
// the world refuses it.
func Send(t testing.TB, w *world.World, schemaName, js string) {
	t.Helper()
	if _, err := w.SendJSON(t.Context(), schemaName, []byte(js)); err != nil {
		t.Fatalf("send %s %s: %v", schemaName, js, err)
	}
}

// WaitIdle waits until the world is idle, at most 30 seconds.
func WaitIdle(t testing.TB, w *world.World) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := w.WaitIdle(ctx); err != nil {
		t.Fatalf("wait idle: %v", err)
	}
}

// Step feeds one event to red as the world would: event, given in AIR
// JSON (a string) or as a value, is normalized to the event schema of the
// module c.Module names, and the new state must fit the module's state
// schema. It returns the new state, normalized, and the step's output.
func Step(t testing.TB, cat *schema.Catalog, red reducer.Reducer, c *reducer.Context, state schema.Value, event any) (schema.Value, reducer.Output) {
	t.Helper()
	mod, ok := cat.Module(c.Module)
	if !ok || mod.Reducer == nil {
		t.Fatalf("%s is not a reducer module", c.Module)
	}
	evType, _ := cat.SchemaType(mod.Reducer.Event)
	stType, _ := cat.SchemaType(mod.Reducer.State)
	var ev schema.Value
	var err error
	js, isJSON := event.(string)
	if isJSON {
		ev, err = schema.NormalizeJSON(cat, evType, []byte(js))
	} else {
		js = schema.String(event)
		ev, err = schema.Normalize(cat, evType, event)
	}
	if err != nil {
		t.Fatalf("normalize %s: %v", js, err)
	}
	out, err := red.Step(c, state, ev)
	if err != nil {
		t.Fatalf("Step(%s): %v", js, err)
	}
	if state, err = schema.Normalize(cat, stType, out.State); err != nil {
		t.Fatalf("state after %s does not fit %s: %v", js, mod.Reducer.State, err)
	}
	return state, out
}

// FuzzReducer fuzzes a reducer's Step with states and events decoded from
// canonical CBOR. Step must never panic; when the state (or its absence)
// and the event fit the module's schemas — as the world guarantees — Step
// must succeed, and its new state, raised events and effect params must fit
// theirs.
//
// The corpus is seeded with the states and events met while stepping the
// reducer through each sequence of events given in AIR JSON, from a fresh
// cell. The reducer's CAS is an empty store.
func FuzzReducer(f *testing.F, dir string, register func(*reducer.Registry), module string, sequences ...[]string) {
	f.Helper()
	cat, reg := Load(f, dir, register)
	red, ok := reg.Lookup(module)
	mod, ok2 := cat.Module(module)
	if !ok || !ok2 || mod.Reducer == nil {
		f.Fatalf("%s is not a registered reducer module of %s", module, dir)
	}
	stateType := schema.RefType(mod.Reducer.State)
	eventType := schema.RefType(mod.Reducer.Event)
	ctx := func() *reducer.Context {
		return &reducer.Context{Module: module, EventSchema: mod.Reducer.Event, CAS: cas.NewMemory()}
	}
	encode := func(v schema.Value) []byte {
		if v == nil {
			return nil
		}
		b, err := schema.Encode(v)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	for _, seq := range sequences {
		var state schema.Value
		for _, js := range seq {
			ev, err := schema.NormalizeJSON(cat, eventType, []byte(js))
			if err != nil {
				f.Fatalf("seed %s: %v", js, err)
			}
			f.Add(encode(state), encode(ev))
			out, err := red.Step(ctx(), state, ev)
			if err != nil {
				f.Fatalf("seed %s: %v", js, err)
			}
			state = out.State
		}
	}
	f.Fuzz(func(t *testing.T, stateCBOR, eventCBOR []byte) {
		var state schema.Value
		if len(stateCBOR) > 0 {
			s, err := schema.Decode(stateCBOR)
			if err != nil {
				return
			}
			state = s
		}
		event, err := schema.Decode(eventCBOR)
		if err != nil {
			return
		}
		step := func(state, event schema.Value) (out reducer.Output, err error) {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("Step(%s, %s) panicked: %v", schema.String(state), schema.String(event), p)
				}
			}()
			return red.Step(ctx(), state, event)
		}
		step(state, event) // anything goes, but no panic
		if state != nil {
			if state, err = schema.Normalize(cat, stateType, state); err != nil {
				return
			}
		}
		if event, err = schema.Normalize(cat, eventType, event); err != nil {
			return
		}
		out, err := step(state, event)
		if err != nil {
			t.Fatalf("Step(%s, %s) of values that fit: %v", schema.String(state), schema.String(event), err)
		}
		if out.State != nil {
			if _, err := schema.Normalize(cat, stateType, out.State); err != nil {
				t.Fatalf("Step(%s, %s): new state does not fit %s: %v", schema.String(state), schema.String(event), mod.Reducer.State, err)
			}
		}
		for _, e := range out.Events {
			if _, err := schema.Normalize(cat, schema.RefType(e.Schema), e.Value); err != nil {
				t.Fatalf("Step(%s, %s): raised %s does not fit: %v", schema.String(state), schema.String(event), e.Schema, err)
			}
		}
		for _, e := range out.Effects {
			ef, ok := cat.EffectKind(e.Kind)
			if !ok {
				t.Fatalf("Step(%s, %s): emitted %s, which no defeffect declares", schema.String(state), schema.String(event), e.Kind)
			}
			if _, err := schema.Normalize(cat, schema.RefType(ef.ParamsSchema), e.Params); err != nil {
				t.Fatalf("Step(%s, %s): %s params do not fit: %v", schema.String(state), schema.String(event), e.Kind, err)
			}
		}
	})
}
