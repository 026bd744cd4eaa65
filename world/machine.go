package world

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world/internal/plans"
)

// Machine is the deterministic core of a world: its state and the
// function that turns one input into the derived records that follow it.
// It does no I/O besides reading the CAS; World journals what it derives
// and runs the effects, and replay feeds it recorded inputs. A Machine is
// not safe for concurrent use.
type Machine struct {
	cur *loadedCatalog // the catalog running now, one of loaded
	reg *reducer.Registry
	cas cas.Getter
	// loaded are the catalogs the machine has run, in the order it first
	// ran them: a Manifest record switches to its catalog (loaded from the
	// CAS the first time, see schema.LoadFromCAS), and a plan instance
	// started under an earlier one runs on with its own plan def.
	loaded []*loadedCatalog
	// pinned keeps the machine on its catalog whatever manifest the
	// journal records (RerunOptions.UnderManifest).
	pinned bool

	// State, all of it restored from snapshots.
	manifest      cas.Ref
	logical       uint64
	height        uint64
	cells         map[string]map[string]*cell // module → canonical key bytes → cell
	instances     map[uint64]*plans.Instance  // running plan instances
	nextPlanID    uint64
	pending       map[cas.Ref]*pendingIntent
	nextIntentSeq uint64

	stepper stepper // Apply's, reused

	// changed, when trackChanges is set, lists the cells Apply changed
	// (set or deleted; a cell may be listed more than once) since the
	// world last took them: a running world publishes their states once
	// they are committed (see World.State).
	changed      []cellID
	trackChanges bool
	// changedPlans, likewise, lists the plan instances started or ended.
	changedPlans []uint64
}

// cellID names a cell: its reducer and its canonical key bytes.
type cellID struct{ module, key string }

// loadedCatalog is a catalog with what the machine compiled of it.
type loadedCatalog struct {
	cat   *schema.Catalog
	gate  *effects.Gate
	progs *plans.Programs
	refs  map[string]*schema.Type // see normalize
}

func newLoadedCatalog(c *schema.Catalog) *loadedCatalog {
	return &loadedCatalog{cat: c, gate: effects.NewGate(c), progs: plans.NewPrograms(c), refs: map[string]*schema.Type{}}
}

// normalize normalizes v against the schema named name (schema.Normalize
// of schema.RefType(name), the ref type made once per name).
func (lc *loadedCatalog) normalize(name string, v schema.Value) (schema.Value, error) {
	t := lc.refs[name]
	if t == nil {
		t = schema.RefType(name)
		lc.refs[name] = t
	}
	return schema.Normalize(lc.cat, t, v)
}

type cell struct {
	key   schema.Value
	state schema.Value
	ref   cas.Ref
	memo  any // reducer.Output.Memo of the step that made state; handed out once
}

type pendingIntent struct {
	intent *effects.Intent
	seq    uint64 // emission order
}

// NewMachine returns the machine of a fresh world.
func NewMachine(cat *schema.Catalog, reg *reducer.Registry, store cas.Getter) *Machine {
	lc := newLoadedCatalog(cat)
	return &Machine{
		cur: lc, reg: reg, cas: store, loaded: []*loadedCatalog{lc},
		cells: map[string]map[string]*cell{}, instances: map[uint64]*plans.Instance{},
		pending: map[cas.Ref]*pendingIntent{}, nextPlanID: 1,
	}
}

// runManifest makes the machine run the catalog of manifest ref: the one
// it was made with, one it ran before, or one rebuilt from the CAS (a
// world whose manifest changed replays its older records with the
// definitions they were written under).
func (m *Machine) runManifest(ctx context.Context, ref cas.Ref) error {
	if m.pinned || m.cur.cat.ManifestRef() == ref {
		return nil
	}
	var lc *loadedCatalog
	for _, l := range m.loaded {
		if l.cat.ManifestRef() == ref {
			lc = l
		}
	}
	if lc == nil {
		c, err := schema.LoadFromCAS(ctx, m.cas, ref, m.reg.LoadOptions())
		if err != nil {
			return fmt.Errorf("world: the journal's manifest %s: %w", ref.Short(), err)
		}
		lc = newLoadedCatalog(c)
		m.loaded = append(m.loaded, lc)
	}
	m.cur = lc
	return nil
}

// nodes returns a getter of the def and manifest nodes of the catalogs
// the machine has run, then of its store: the nodes of a catalog loaded
// from files (a rerun under a manifest of its own) are in no store.
func (m *Machine) nodes() cas.Getter { return catalogNodes{m} }

type catalogNodes struct{ m *Machine }

func (c catalogNodes) Get(ctx context.Context, ref cas.Ref) ([]byte, error) {
	for _, l := range c.m.loaded {
		if b, ok := l.cat.Node(ref); ok {
			return bytes.Clone(b), nil
		}
	}
	return c.m.cas.Get(ctx, ref)
}

// program returns the program a plan instance runs: the plan def it
// started with (PlanRef), from the manifest running now or, when the
// manifest changed under the instance, from the one it started under.
func (m *Machine) program(in *plans.Instance) (*plans.Program, error) {
	p, err := m.cur.progs.Get(in.Plan)
	if err == nil && p.Ref == in.PlanRef {
		return p, nil
	}
	for _, l := range m.loaded {
		if _, ok := l.cat.Plan(in.Plan); !ok {
			continue
		}
		if q, qerr := l.progs.Get(in.Plan); qerr == nil && q.Ref == in.PlanRef {
			return q, nil
		}
	}
	if err != nil {
		return nil, err
	}
	return p, nil // Check reports the mismatch
}

// Catalog returns the loaded manifest the machine runs.
func (m *Machine) Catalog() *schema.Catalog { return m.cur.cat }

// Height returns the seq of the last record the machine has seen.
func (m *Machine) Height() uint64 { return m.height }

// LogicalNow returns the logical time of the last input.
func (m *Machine) LogicalNow() uint64 { return m.logical }

// Manifest returns the manifest the world last recorded.
func (m *Machine) Manifest() cas.Ref { return m.manifest }

// State returns a cell's state (key nil for reducers that are not keyed).
func (m *Machine) State(module string, key schema.Value) (schema.Value, cas.Ref, bool) {
	enc, err := keyBytes(key)
	if err != nil {
		return nil, cas.Ref{}, false
	}
	c, ok := m.cells[module][enc]
	if !ok {
		return nil, cas.Ref{}, false
	}
	return c.state, c.ref, true
}

// Cell is one reducer cell.
type Cell struct {
	Key   schema.Value
	State schema.Value
	Ref   cas.Ref
}

// Cells returns a reducer's cells in canonical key order.
func (m *Machine) Cells(module string) []Cell {
	keys := sortedKeys(m.cells[module])
	out := make([]Cell, 0, len(keys))
	for _, k := range keys {
		c := m.cells[module][k]
		out = append(out, Cell{Key: c.key, State: c.state, Ref: c.ref})
	}
	return out
}

// Pending returns the intents without receipts, in emission order.
func (m *Machine) Pending() []*effects.Intent {
	ps := make([]*pendingIntent, 0, len(m.pending))
	for _, p := range m.pending {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].seq < ps[j].seq })
	out := make([]*effects.Intent, len(ps))
	for i, p := range ps {
		out[i] = p.intent
	}
	return out
}

// IsPending reports whether an intent awaits its receipt.
func (m *Machine) IsPending(intent cas.Ref) bool { _, ok := m.pending[intent]; return ok }

// pendingSeq returns the emission seq of the pending intent h.
func (m *Machine) pendingSeq(h cas.Ref) (uint64, bool) {
	p, ok := m.pending[h]
	if !ok {
		return 0, false
	}
	return p.seq, true
}

// RunningPlan describes a running plan instance.
type RunningPlan struct {
	ID   uint64 // the instance's id, unique in the world
	Plan string // the plan's name
	// Steps is the state of each of its steps, in order, as
	// "step:state" ("emit:done await:waiting ..."); empty if the plan's
	// program cannot be found.
	Steps string
	// Input is the value the instance started with: its trigger event.
	Input schema.Value
}

// RunningPlans returns the running plan instances, by ascending id.
func (m *Machine) RunningPlans() []RunningPlan {
	out := make([]RunningPlan, 0, len(m.instances))
	for _, in := range m.running() {
		out = append(out, m.describe(in))
	}
	return out
}

// Plan returns the running plan instance id.
func (m *Machine) Plan(id uint64) (RunningPlan, bool) {
	in, ok := m.instances[id]
	if !ok {
		return RunningPlan{}, false
	}
	return m.describe(in), true
}

// PlanInput returns the value running plan instance id started with (its
// trigger event), without describing its steps as Plan does.
func (m *Machine) PlanInput(id uint64) (schema.Value, bool) {
	in, ok := m.instances[id]
	if !ok {
		return nil, false
	}
	return in.Input, true
}

func (m *Machine) describe(in *plans.Instance) RunningPlan {
	rp := RunningPlan{ID: in.ID, Plan: in.Plan, Input: in.Input}
	if p, err := m.program(in); err == nil {
		rp.Steps = in.Describe(p)
	}
	return rp
}

// running returns the running plan instances, by ascending id.
func (m *Machine) running() []*plans.Instance {
	if len(m.instances) == 0 {
		return nil
	}
	ids := make([]uint64, 0, len(m.instances))
	for id := range m.instances {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := make([]*plans.Instance, len(ids))
	for i, id := range ids {
		out[i] = m.instances[id]
	}
	return out
}

func sortedKeys[V any](mp map[string]V) []string {
	ks := make([]string, 0, len(mp))
	for k := range mp {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func keyBytes(key schema.Value) (string, error) {
	if key == nil {
		return "", nil
	}
	b, err := schema.EncodeBody(key)
	return string(b), err
}

// Step is what one input derives.
type Step struct {
	// Records are the input's record followed by every derived record, in
	// order: what World appends in one transaction.
	Records []journal.Entry
	// Blobs are new CAS nodes the records refer to (cell states,
	// snapshots), to commit with them.
	Blobs [][]byte
	// Dispatch are the intents to run once the records are durable, in
	// emission order.
	Dispatch []*effects.Intent
}

// stepper carries one step's work.
type stepper struct {
	m       *Machine
	ctx     context.Context
	stamp   reducer.Stamp
	out     *Step
	events  []queuedEvent
	runnabl []uint64
	queued  map[uint64]bool
	err     error
	reads   faultNoter // what a reducer reads the CAS through
}

// faultNoter is the CAS a reducer reads through: it notes the first read
// that found the store damaged (an error wrapping cas.ErrCorrupt: bytes
// that do not hash to their ref, a damaged page of the file). Such a read
// fails the input (see deliver): recorded as the reducer's error, it
// would make the store's damage part of the world's history, and a replay
// on a damaged store would report it as code that diverges.
type faultNoter struct {
	cas.Getter
	mu    sync.Mutex
	fault error
}

func (f *faultNoter) Get(ctx context.Context, ref cas.Ref) ([]byte, error) {
	b, err := f.Getter.Get(ctx, ref)
	if err != nil && errors.Is(err, cas.ErrCorrupt) {
		f.mu.Lock()
		if f.fault == nil {
			f.fault = err
		}
		f.mu.Unlock()
	}
	return b, err
}

// blobStager is a CAS that makes blobs readable before they are stored
// (a running world's overlay; see world/overlay.go).
type blobStager interface {
	stage(blobs [][]byte)
}

// addBlobs adds blobs to the step's output and, in a running world, makes
// them readable at once: a reducer or plan later in the same batch finds
// them, as it does in replay, where they are already stored.
func (s *stepper) addBlobs(blobs ...[]byte) {
	s.out.Blobs = append(s.out.Blobs, blobs...)
	if st, ok := s.m.cas.(blobStager); ok {
		st.stage(blobs)
	}
}

type queuedEvent struct {
	schema string
	value  schema.Value
	key    schema.Value
	// target, when set, delivers the event to one reducer cell only (the
	// results of a reducer's micro-effects).
	target string
}

// Apply processes one input and returns everything it derives. The
// machine's state moves on: on error the machine must be discarded, as
// its state may be half updated (World reopens from the journal).
// in.Stamp.JournalHeight must equal the machine's height.
func (m *Machine) Apply(ctx context.Context, in *Input) (*Step, error) {
	// The step and its first records are one allocation; the stepper is
	// the machine's, made again for each input (Apply is not reentrant).
	out := &struct {
		Step
		recs [4]journal.Entry
	}{}
	out.Records = out.recs[:0]
	s := &m.stepper
	*s = stepper{m: m, ctx: ctx, stamp: in.Stamp, out: &out.Step, events: s.events[:0], runnabl: s.runnabl[:0]}
	defer s.done()
	e, err := in.Encode()
	if err != nil {
		return nil, err
	}
	s.out.Records = append(s.out.Records, e)
	switch in.Kind {
	case KindManifest:
		if err := m.runManifest(ctx, in.Manifest); err != nil {
			return nil, err
		}
		m.manifest = in.Manifest
	case KindEvent:
		if in.Stamp.LogicalNowNS > m.logical {
			m.logical = in.Stamp.LogicalNowNS
		}
		s.stamp.ManifestHash = m.manifest
		v, err := m.cur.normalize(in.Schema, in.Value)
		if err != nil {
			return nil, fmt.Errorf("world: event %s: %w", in.Schema, err)
		}
		s.events = append(s.events, queuedEvent{schema: in.Schema, value: v, key: in.Key})
	case KindReceipt:
		if in.Stamp.LogicalNowNS > m.logical {
			m.logical = in.Stamp.LogicalNowNS
		}
		s.stamp.ManifestHash = m.manifest
		s.receipt(in)
	default:
		return nil, fmt.Errorf("world: %q is not an input", in.Kind)
	}
	s.drain()
	if s.err != nil {
		return nil, s.err
	}
	m.height += uint64(len(s.out.Records))
	return s.out, nil
}

// record adds a derived record of kind whose payload is the record of
// the fields kv (see encodeRec).
// done drops what the stepper refers to once Apply returns, keeping its
// queues' storage for the next input.
func (s *stepper) done() {
	clear(s.events[:cap(s.events)])
	*s = stepper{events: s.events[:0], runnabl: s.runnabl[:0]}
}

func (s *stepper) record(kind string, kv ...any) {
	if s.err != nil {
		return
	}
	e, err := entryKV(kind, kv...)
	if err != nil {
		s.err = err
		return
	}
	s.out.Records = append(s.out.Records, e)
}

func (s *stepper) drain() {
	for n := 0; s.err == nil; n++ {
		if err := s.ctx.Err(); err != nil {
			s.err = err
			return
		}
		if n == MaxDerived {
			last := "a plan run"
			if len(s.events) > 0 {
				last = "event " + s.events[0].schema
			}
			s.err = fmt.Errorf("world: one input derived %d events and plan runs without settling (next: %s): a reducer or plan loops, e.g. one that answers its own events; fix it and reopen the world", MaxDerived, last)
			return
		}
		if len(s.events) > 0 {
			ev := s.events[0]
			s.events = s.events[1:]
			s.handleEvent(ev)
			continue
		}
		if len(s.runnabl) > 0 {
			id := s.runnabl[0]
			s.runnabl = s.runnabl[1:]
			delete(s.queued, id)
			s.runPlan(id)
			continue
		}
		return
	}
}

// MaxDerived bounds what one input may derive: the events handled and the
// plan runs it causes, one after the other. An input that derives more is
// caught in a loop (a reducer that answers its own events, a plan that
// raises the event that starts it), and Apply fails with an error saying
// so instead of spinning for ever; the world stops with its journal as it
// was before the input.
const MaxDerived = 100_000

func (s *stepper) runnable(id uint64) {
	if s.queued == nil {
		s.queued = map[uint64]bool{}
	}
	if !s.queued[id] {
		s.queued[id] = true
		s.runnabl = append(s.runnabl, id)
	}
}

// ---- events and reducers ----

func (s *stepper) handleEvent(ev queuedEvent) {
	m := s.m
	if ev.target != "" {
		s.deliver(ev.target, ev.key, ev.schema, ev.value, "")
		return
	}
	for _, r := range m.cur.cat.Manifest.Routes {
		if r.Event == ev.schema {
			s.deliver(r.Reducer, ev.key, ev.schema, ev.value, r.KeyField)
		} else if arm := m.isArm(r.Event, ev.schema); arm != "" {
			s.deliver(r.Reducer, ev.key, r.Event, schema.Variant(arm, ev.value), r.KeyField)
		}
		if s.err != nil {
			return
		}
	}
	for _, in := range m.running() {
		p, err := m.program(in)
		if err != nil {
			continue
		}
		if in.OfferEvent(p, ev.schema, ev.value) {
			s.runnable(in.ID)
		}
	}
	for _, t := range m.cur.cat.Manifest.Triggers {
		if t.Event != ev.schema {
			continue
		}
		var corr schema.Value
		if t.CorrelateBy != "" {
			v, err := pathValue(ev.value, strings.Split(t.CorrelateBy, "."))
			if err != nil {
				s.record(KindPlanEnded, "plan", t.Plan, "status", "error",
					"error", rec("code", plans.CodeEval, "message", fmt.Sprintf("correlate_by %q: %v", t.CorrelateBy, err)))
				continue
			}
			corr = v
		}
		s.startPlan(t.Plan, ev.value, corr, ev.key)
	}
}

// isArm returns the arm name under which schema arm appears as a ref arm of
// the variant schema v, or "".
func (m *Machine) isArm(v, arm string) string {
	t, ok := m.cur.cat.SchemaType(v)
	if !ok || t.Kind != schema.KindVariant {
		return ""
	}
	for _, f := range t.Fields {
		if f.Type.Kind == schema.KindRef && f.Type.Ref == arm {
			return f.Name
		}
	}
	return ""
}

func pathValue(v schema.Value, path []string) (schema.Value, error) {
	for _, seg := range path {
		m, ok := v.(*schema.Map)
		if !ok {
			return nil, fmt.Errorf("no field %q in %s", seg, schema.String(v))
		}
		f, ok := m.Get(seg)
		if !ok {
			return nil, fmt.Errorf("no field %q", seg)
		}
		v = f
	}
	return v, nil
}

// deliver runs one reducer step on the cell the event belongs to.
func (s *stepper) deliver(module string, key schema.Value, evSchema string, value schema.Value, keyField string) {
	m := s.m
	fail := func(key schema.Value, format string, args ...any) {
		s.record(KindReducerError, "reducer", module, "key", key, "event", evSchema, "error", fmt.Sprintf(format, args...))
	}
	mod, ok := m.cur.cat.Module(module)
	if !ok || mod.Reducer == nil {
		fail(key, "module %s is not a reducer of the manifest", module)
		return
	}
	red, err := m.reg.Resolve(s.ctx, mod, m.nodes())
	if err != nil {
		if errors.Is(err, cas.ErrNotFound) || errors.Is(err, cas.ErrCorrupt) {
			// The code the manifest pins is not in the store: the
			// store's fault, not the module's.
			s.err = fmt.Errorf("world: reducer %s handling %s: %w", module, evSchema, err)
			return
		}
		if ctxErr := s.ctx.Err(); ctxErr != nil {
			s.err = ctxErr
			return
		}
		if errors.Is(err, reducer.ErrIrreproducible) {
			s.err = fmt.Errorf("world: reducer %s handling %s: %w", module, evSchema, err)
			return
		}
		fail(key, "%v", err)
		return
	}
	// The cell key: the value at the route's key_field, else the key the
	// event carries (results of effects, plan ends and events that reducers
	// and plans emit carry their cell's key).
	if mod.KeySchema == "" {
		key = nil
	} else {
		if keyField != "" {
			v, err := pathValue(value, strings.Split(keyField, "."))
			switch {
			case err == nil:
				key = v
			case key == nil:
				fail(nil, "key_field %q: %v", keyField, err)
				return
			}
		}
		if key == nil {
			fail(nil, "event %s carries no key and the route has no key_field", evSchema)
			return
		}
		nk, err := m.cur.normalize(mod.KeySchema, key)
		if err != nil {
			fail(key, "cell key does not fit %s: %v", mod.KeySchema, err)
			return
		}
		key = nk
	}
	kb, err := keyBytes(key)
	if err != nil {
		fail(key, "cell key: %v", err)
		return
	}
	// The event as the reducer takes it.
	abiEvent := mod.Reducer.Event
	if evSchema != abiEvent {
		arm := m.isArm(abiEvent, evSchema)
		if arm == "" {
			fail(key, "reducer %s takes %s, not %s", module, abiEvent, evSchema)
			return
		}
		value = schema.Variant(arm, value)
	}
	var old *cell
	if cs := m.cells[module]; cs != nil {
		old = cs[kb]
	}
	var state schema.Value
	var memo any
	if old != nil {
		// The memo goes to the reducer, which may modify it: whatever the
		// step's outcome, the cell no longer has one.
		state, memo, old.memo = old.state, old.memo, nil
	}
	s.reads.Getter = m.cas
	rc := &reducer.Context{Stamp: s.stamp, Module: module, Key: key, EventSchema: abiEvent, CAS: &s.reads, Memo: memo}
	out, err := safeStep(red, rc, state, value)
	if fault := s.reads.fault; fault != nil {
		s.err = fmt.Errorf("world: reducer %s read a damaged store handling %s: %w", module, evSchema, fault)
		return
	}
	if err != nil {
		if errors.Is(err, reducer.ErrIrreproducible) {
			// Journaled, the error would be history a replay may not
			// derive again.
			s.err = fmt.Errorf("world: reducer %s handling %s: %w", module, evSchema, err)
			return
		}
		fail(key, "%v", err)
		return
	}
	// Validate everything before applying anything.
	var newState schema.Value
	var newRef cas.Ref
	var blob []byte
	if out.State != nil {
		ns, err := m.cur.normalize(mod.Reducer.State, out.State)
		if err != nil {
			fail(key, "new state does not fit %s: %v", mod.Reducer.State, err)
			return
		}
		b, err := schema.Encode(ns)
		if err != nil {
			fail(key, "new state: %v", err)
			return
		}
		newState, newRef, blob = ns, cas.Sum(b), b
	}
	events := make([]queuedEvent, 0, len(out.Events))
	for i, e := range out.Events {
		if _, ok := m.cur.cat.SchemaType(e.Schema); !ok {
			fail(key, "event %d has schema %s, which the manifest does not know", i, e.Schema)
			return
		}
		v, err := m.cur.normalize(e.Schema, e.Value)
		if err != nil {
			fail(key, "event %d does not fit %s: %v", i, e.Schema, err)
			return
		}
		ek := e.Key
		if ek == nil {
			ek = key
		}
		events = append(events, queuedEvent{schema: e.Schema, value: v, key: ek})
	}
	for i, e := range out.Effects {
		if !slices.Contains(mod.Reducer.EffectsEmitted, e.Kind) {
			fail(key, "effect %d is %s, which %s does not declare in effects_emitted", i, e.Kind, module)
			return
		}
	}
	// Apply.
	changed := old == nil && newState != nil || old != nil && (newState == nil || old.ref != newRef)
	if changed && m.trackChanges {
		m.changed = append(m.changed, cellID{module, kb})
	}
	if changed {
		if newState == nil {
			delete(m.cells[module], kb)
			s.record(KindState, "reducer", module, "key", key)
		} else {
			if old != nil {
				old.state, old.ref, old.memo = newState, newRef, out.Memo // the cell's key is the same
			} else {
				if m.cells[module] == nil {
					m.cells[module] = map[string]*cell{}
				}
				m.cells[module][kb] = &cell{key: key, state: newState, ref: newRef, memo: out.Memo}
			}
			s.addBlobs(blob)
			s.record(KindState, "reducer", module, "key", key, "state", newRef)
		}
	} else if old != nil {
		old.memo = out.Memo // the same state, and a memo of it
	}
	s.addBlobs(out.Blobs...)
	for _, e := range events {
		s.record(KindRaised, "schema", e.schema, "value", e.value, "key", e.key, "origin", rec("reducer", module))
		s.events = append(s.events, e)
	}
	for _, e := range out.Effects {
		grant, err := m.slotGrant(mod, e)
		origin := effects.Origin{Kind: "reducer", Name: module, Key: key}
		if err != nil {
			s.record(KindDenied, "kind", e.Kind, "origin", origin.Value(), "stage", effects.StageGrant, "reason", err.Error())
			continue
		}
		s.emit(effects.Request{Kind: e.Kind, Params: e.Params, Grant: grant, IdempotencyKey: e.IdempotencyKey, Origin: origin, LogicalNowNS: m.logical})
	}
}

// safeStep runs a reducer, turning a panic into an error.
func safeStep(r reducer.Reducer, c *reducer.Context, state, event schema.Value) (out reducer.Output, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("reducer panicked: %v\n%s", p, panicFrames(debug.Stack()))
		}
	}()
	return r.Step(c, state, event)
}

// panicFrames keeps the frames of a panic's stack that locate it: the
// function and file:line lines after the runtime's own frames, at most 8.
func panicFrames(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	var out []string
	seenPanic := false
	for i := 0; i+1 < len(lines) && len(out) < 16; i++ {
		if strings.HasPrefix(lines[i], "panic(") {
			seenPanic = true
			i++
			continue
		}
		if seenPanic && strings.HasPrefix(lines[i+1], "\t") {
			out = append(out, lines[i], lines[i+1])
			i++
		}
	}
	return strings.Join(out, "\n")
}

// slotGrant finds the grant of a reducer's effect: the slot's binding in
// module_bindings, else the one grant whose cap type fits.
func (m *Machine) slotGrant(mod *schema.DefModule, e reducer.Effect) (string, error) {
	slot := e.CapSlot
	if slot == "" {
		slot = "default"
	}
	if g, ok := m.cur.cat.Manifest.SlotGrant(mod.Name, slot); ok {
		return g, nil
	}
	ef, ok := m.cur.cat.EffectKind(e.Kind)
	if !ok {
		return "", fmt.Errorf("effect kind %s is not declared", e.Kind)
	}
	capType := ef.CapType
	for _, cs := range mod.Reducer.CapSlots {
		if cs.Slot == slot {
			capType = cs.CapType
		}
	}
	var found []string
	for _, g := range m.cur.cat.Manifest.CapGrants {
		if cd, ok := m.cur.cat.Cap(g.Cap); ok && cd.CapType == capType {
			found = append(found, g.Name)
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("slot %q of %s is not bound in module_bindings and there are %d grants of cap type %s (want one)", slot, mod.Name, len(found), capType)
	}
	return found[0], nil
}

// ---- effects ----

// emit decides an effect and records the decision; it returns the intent
// or why it was denied.
func (s *stepper) emit(req effects.Request) (*effects.Intent, error) {
	m := s.m
	d := m.cur.gate.Check(req)
	if !d.Allowed {
		s.record(KindDenied, "kind", req.Kind, "grant", req.Grant, "origin", req.Origin.Value(),
			"stage", d.Stage, "reason", d.Reason)
		return nil, errors.New(d.Reason)
	}
	in := d.Intent
	if _, dup := m.pending[in.Hash]; dup {
		// The same intent is already in flight: at-least-once collapses.
		return in, nil
	}
	decision := rec("enforcer", d.Enforcer, "policy", d.Policy)
	if d.Rule >= 0 {
		decision = decision.With("rule", uint64(d.Rule))
	}
	var key any
	if len(in.IdempotencyKey) > 0 {
		key = in.IdempotencyKey
	}
	s.record(KindIntent, "intent", in.Hash, "kind", in.Kind, "params", in.Params, "grant", in.Grant,
		"origin", in.Origin.Value(), "key", key, "decision", decision)
	m.nextIntentSeq++
	m.pending[in.Hash] = &pendingIntent{intent: in, seq: m.nextIntentSeq}
	s.out.Dispatch = append(s.out.Dispatch, in)
	return in, nil
}

// receipt applies an effect's receipt.
func (s *stepper) receipt(in *Input) {
	m := s.m
	p, ok := m.pending[in.Intent]
	if !ok {
		s.record(KindRejected, "intent", in.Intent, "reason", "no pending intent has this hash (a late or duplicate receipt)")
		return
	}
	delete(m.pending, in.Intent)
	intent := p.intent
	r := plans.Receipt{}
	payload := in.Payload
	switch in.Status {
	case effects.StatusOK:
		ef, _ := m.cur.cat.Effect(intent.Effect)
		v, err := m.cur.normalize(ef.ReceiptSchema, in.Payload)
		if err != nil {
			reason := fmt.Sprintf("receipt of %s does not fit %s: %v", intent.Kind, ef.ReceiptSchema, err)
			s.record(KindRejected, "intent", in.Intent, "reason", reason)
			r.Err, payload = reason, nil
		} else {
			r.Payload, payload = v, v
		}
	case effects.StatusTimeout:
		r.Err = fmt.Sprintf("%s timed out: %s", intent.Kind, in.Error)
	default:
		r.Err = fmt.Sprintf("%s failed: %s", intent.Kind, in.Error)
	}
	switch intent.Origin.Kind {
	case "plan":
		inst, ok := m.instances[intent.Origin.PlanID]
		if !ok {
			return // the instance ended before its receipt came
		}
		inst.DeliverReceipt(intent.Hash, r)
		s.runnable(inst.ID)
	case "reducer":
		s.reducerReceipt(intent, in, payload)
	}
}

func (s *stepper) reducerReceipt(intent *effects.Intent, in *Input, payload schema.Value) {
	m := s.m
	evSchema, ok := schema.ReceiptEvent(intent.Kind) // it goes back to the cell that emitted the effect
	if !ok {
		return
	}
	ef, _ := m.cur.cat.Effect(intent.Effect)
	if payload == nil {
		payload = zeroReceipt(m.cur.cat, ef.ReceiptSchema, intent.Params)
	}
	status := in.Status
	var cost any
	if in.CostCents > 0 {
		cost = in.CostCents
	}
	v := rec("intent_hash", intent.Hash.String(), "reducer", intent.Origin.Name, "effect_kind", intent.Kind,
		"adapter_id", in.AdapterID, "status", status, "requested", intent.Params, "receipt", payload,
		"cost_cents", cost, "signature", []byte{})
	nv, err := m.cur.normalize(evSchema, v)
	if err != nil {
		s.record(KindRejected, "intent", intent.Hash, "reason", fmt.Sprintf("result event %s: %v", evSchema, err))
		return
	}
	s.record(KindRaised, "schema", evSchema, "value", nv, "key", intent.Origin.Key, "origin", rec("receipt", intent.Hash.String()))
	s.events = append(s.events, queuedEvent{schema: evSchema, value: nv, key: intent.Origin.Key, target: intent.Origin.Name})
}

// zeroReceipt builds the receipt a failed micro-effect reports: the
// requested blob ref or timer key, zero elsewhere, so the reducer still
// hears back (with status "error" or "timeout").
func zeroReceipt(cat *schema.Catalog, receiptSchema string, params schema.Value) schema.Value {
	get := func(k string) schema.Value {
		pm, _ := params.(*schema.Map)
		v, _ := pm.Get(k)
		return v
	}
	switch receiptSchema {
	case "sys/BlobPutReceipt@1":
		return schema.Record("blob_ref", get("blob_ref"), "size", uint64(0))
	case "sys/BlobGetReceipt@1":
		return schema.Record("blob_ref", get("blob_ref"), "size", uint64(0), "bytes", []byte{})
	case "sys/TimerSetReceipt@1":
		return schema.Record("delivered_at_ns", uint64(0), "key", get("key"))
	}
	return nil
}

// ---- plans ----

func (s *stepper) startPlan(name string, input, corr, key schema.Value) {
	m := s.m
	p, err := m.cur.progs.Get(name)
	if err != nil {
		s.record(KindPlanEnded, "plan", name, "status", "error", "error", rec("code", plans.CodeEval, "message", err.Error()))
		return
	}
	in, err := m.cur.normalize(p.Def.Input, input)
	if err != nil {
		s.record(KindPlanEnded, "plan", name, "status", "error", "error", rec("code", plans.CodeInvalid, "message", err.Error()))
		return
	}
	id := m.nextPlanID
	m.nextPlanID++
	inst := plans.Start(p, id, in, corr, key)
	m.instances[id] = inst
	if m.trackChanges {
		m.changedPlans = append(m.changedPlans, id)
	}
	s.record(KindPlanStarted, "plan", name, "plan_id", id)
	s.runnable(id)
}

func (s *stepper) runPlan(id uint64) {
	m := s.m
	inst, ok := m.instances[id]
	if !ok {
		return
	}
	p, err := m.program(inst)
	if err == nil {
		err = inst.Check(p)
	}
	if err != nil {
		inst.Status = plans.EndedError
		inst.Err = &plans.PlanError{Plan: inst.Plan, Code: plans.CodeInvalid, Msg: err.Error()}
	} else {
		inst.Run(p, &planHost{s: s})
	}
	if s.err != nil || inst.Status == plans.Running {
		return
	}
	delete(m.instances, id)
	if m.trackChanges {
		m.changedPlans = append(m.changedPlans, id)
	}
	status := "ok"
	var perr, perrEvent schema.Value
	if inst.Status == plans.EndedError {
		status = "error"
		perr = rec("step", inst.Err.Step, "code", inst.Err.Code, "message", inst.Err.Msg)
		perrEvent = schema.Record("step", inst.Err.Step, "code", inst.Err.Code, "message", inst.Err.Msg)
	}
	s.record(KindPlanEnded, "plan", inst.Plan, "plan_id", id, "status", status, "result", inst.Result, "error", perr)
	if status == "error" && m.consumes("sys/PlanEnded@1") {
		input, _ := schema.Encode(inst.Input)
		v := schema.Record("plan", inst.Plan, "plan_id", id, "status", status, "error", perrEvent, "input", input)
		s.record(KindRaised, "schema", "sys/PlanEnded@1", "value", v, "key", inst.Key, "origin", rec("plan", inst.Plan, "plan_id", id))
		s.events = append(s.events, queuedEvent{schema: "sys/PlanEnded@1", value: v, key: inst.Key})
	}
}

// consumes reports whether something routes, triggers on or could await
// events of a schema.
func (m *Machine) consumes(event string) bool {
	for _, r := range m.cur.cat.Manifest.Routes {
		if r.Event == event || m.isArm(r.Event, event) != "" {
			return true
		}
	}
	for _, t := range m.cur.cat.Manifest.Triggers {
		if t.Event == event {
			return true
		}
	}
	for _, in := range m.instances {
		if p, err := m.program(in); err == nil && in.WaitsFor(p, event) {
			return true
		}
	}
	return false
}

// planHost is the world as a plan instance sees it.
type planHost struct{ s *stepper }

func (h *planHost) SchemaType(name string) (*schema.Type, bool) {
	return h.s.m.cur.cat.SchemaType(name)
}

func (h *planHost) Emit(in *plans.Instance, step *schema.Step, params schema.Value, key []byte) (cas.Ref, error) {
	s := h.s
	intent, err := s.emit(effects.Request{
		Kind: step.Kind, Params: params, Grant: step.Cap, IdempotencyKey: key,
		Origin:       effects.Origin{Kind: "plan", Name: in.Plan, PlanID: in.ID, Step: step.ID},
		LogicalNowNS: s.m.logical,
	})
	if err != nil {
		return cas.Ref{}, err
	}
	return intent.Hash, nil
}

func (h *planHost) Raise(in *plans.Instance, step *schema.Step, event string, value schema.Value) error {
	s := h.s
	v, err := s.m.cur.normalize(event, value)
	if err != nil {
		return err
	}
	s.record(KindRaised, "schema", event, "value", v, "key", in.Key, "origin", rec("plan", in.Plan, "plan_id", in.ID))
	s.events = append(s.events, queuedEvent{schema: event, value: v, key: in.Key})
	return nil
}
