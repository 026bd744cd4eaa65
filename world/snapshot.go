package world

import (
	"context"
	"fmt"
	"slices"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world/internal/plans"
)

const snapshotFormat = "demiurge/snapshot/v1"

func intentValue(in *effects.Intent) schema.Value {
	return rec("hash", in.Hash.String(), "kind", in.Kind, "params", in.Params, "grant", in.Grant, "cap", in.Cap,
		"cap_type", in.CapType, "grant_params", in.GrantParams, "key", in.IdempotencyKey, "origin", in.Origin.Value(),
		"effect", in.Effect, "now", in.LogicalNowNS)
}

func decodeIntent(v schema.Value) (*effects.Intent, error) {
	m, ok := v.(*schema.Map)
	if !ok {
		return nil, fmt.Errorf("intent is not a record")
	}
	get := func(k string) schema.Value { x, _ := m.Get(k); return x }
	str := func(k string) string { s, _ := get(k).(string); return s }
	h, err := cas.ParseRef(str("hash"))
	if err != nil {
		return nil, err
	}
	in := &effects.Intent{Hash: h, Kind: str("kind"), Params: get("params"), Grant: str("grant"), Cap: str("cap"),
		CapType: str("cap_type"), GrantParams: get("grant_params"), Effect: str("effect")}
	in.IdempotencyKey, _ = get("key").([]byte)
	in.LogicalNowNS, _ = get("now").(uint64)
	om, _ := get("origin").(*schema.Map)
	og := func(k string) schema.Value { x, _ := om.Get(k); return x }
	in.Origin.Kind, _ = og("kind").(string)
	in.Origin.Name, _ = og("name").(string)
	in.Origin.PlanID, _ = og("plan_id").(uint64)
	in.Origin.Step, _ = og("step").(string)
	in.Origin.Key = og("key")
	return in, nil
}

// snapshotValue is the machine's whole state as a value. Cell states are
// referred to by ref (they are already in CAS).
func (m *Machine) snapshotValue(height uint64) schema.Value {
	var cells []schema.Value
	for _, mod := range sortedKeys(m.cells) {
		for _, k := range sortedKeys(m.cells[mod]) {
			c := m.cells[mod][k]
			cells = append(cells, schema.Record("reducer", mod, "key", c.key, "state", c.ref.String()))
		}
	}
	var insts []schema.Value
	for _, in := range m.running() {
		insts = append(insts, in.Encode())
	}
	var pending []schema.Value
	for _, in := range m.Pending() {
		pending = append(pending, schema.Record("seq", m.pending[in.Hash].seq, "intent", intentValue(in)))
	}
	v := schema.Record("format", snapshotFormat, "manifest", m.manifest.String(), "logical", m.logical,
		"height", height, "next_plan_id", m.nextPlanID, "next_intent_seq", m.nextIntentSeq,
		"cells", nonNil(cells), "plans", nonNil(insts), "pending", nonNil(pending))
	if pm := m.planManifests(); len(pm) > 0 {
		v = v.With("plan_manifests", pm)
	}
	return v
}

// planManifests returns the manifests, other than the one running, whose
// plan defs running instances still run because the manifest changed
// under them, in ascending order. For each such instance it names the
// smallest ref among the loaded manifests that hold its def: a machine
// restored from the snapshot loads exactly those, and then names the same
// ones as a machine that replayed every record, so their snapshots agree.
func (m *Machine) planManifests() []schema.Value {
	var refs []string
	for _, in := range m.running() {
		if p, err := m.cur.progs.Get(in.Plan); err == nil && p.Ref == in.PlanRef {
			continue
		}
		best := ""
		for _, l := range m.loaded {
			if _, ok := l.cat.Plan(in.Plan); !ok {
				continue
			}
			if p, err := l.progs.Get(in.Plan); err == nil && p.Ref == in.PlanRef {
				if r := l.cat.ManifestRef().String(); best == "" || r < best {
					best = r
				}
			}
		}
		if best != "" && !slices.Contains(refs, best) {
			refs = append(refs, best)
		}
	}
	slices.Sort(refs)
	out := make([]schema.Value, len(refs))
	for i, r := range refs {
		out[i] = r
	}
	return out
}

func nonNil(l []schema.Value) []schema.Value {
	if l == nil {
		return []schema.Value{}
	}
	return l
}

// Snapshot returns a Snapshot record of the machine's state, to append
// right after the records of the last input, and the snapshot node to store
// with it. The machine counts the record. A world takes snapshots when it
// chooses to (World: every Options.SnapshotEvery inputs); replay checks each
// journaled snapshot against the state it re-derived.
func (m *Machine) Snapshot() (journal.Entry, []byte, error) {
	height := m.height + 1 // the Snapshot record's own seq
	b, err := schema.Encode(m.snapshotValue(height))
	if err != nil {
		return journal.Entry{}, nil, fmt.Errorf("world: encode snapshot: %w", err)
	}
	e, err := entryKV(KindSnapshot, "snapshot", cas.Sum(b))
	if err != nil {
		return journal.Entry{}, nil, err
	}
	m.height = height
	return e, b, nil
}

// RestoreMachine rebuilds a machine from a snapshot node in the store. The
// machine then continues with the records after the snapshot's.
func RestoreMachine(ctx context.Context, cat *schema.Catalog, reg *reducer.Registry, store cas.Getter, snap cas.Ref) (*Machine, error) {
	b, err := store.Get(ctx, snap)
	if err != nil {
		return nil, fmt.Errorf("world: load snapshot: %w", err)
	}
	v, err := schema.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("world: snapshot %s: %w", snap, err)
	}
	sm, ok := v.(*schema.Map)
	if !ok {
		return nil, fmt.Errorf("world: snapshot %s is not a record", snap)
	}
	get := func(k string) schema.Value { x, _ := sm.Get(k); return x }
	if f, _ := get("format").(string); f != snapshotFormat {
		return nil, fmt.Errorf("world: snapshot %s has format %q, want %q", snap, f, snapshotFormat)
	}
	m := NewMachine(cat, reg, store)
	if m.manifest, err = cas.ParseRef(fmt.Sprint(get("manifest"))); err != nil {
		return nil, fmt.Errorf("world: snapshot %s: manifest: %w", snap, err)
	}
	// First the manifests whose plan defs running instances still run,
	// then the one the world ran at the snapshot.
	pms, _ := get("plan_manifests").([]schema.Value)
	for _, pv := range pms {
		ref, err := cas.ParseRef(fmt.Sprint(pv))
		if err != nil {
			return nil, fmt.Errorf("world: snapshot %s: plan_manifests: %w", snap, err)
		}
		if err := m.runManifest(ctx, ref); err != nil {
			return nil, fmt.Errorf("world: snapshot %s: a running plan's manifest: %w", snap, err)
		}
	}
	if err := m.runManifest(ctx, m.manifest); err != nil {
		return nil, fmt.Errorf("world: snapshot %s: %w", snap, err)
	}
	m.logical, _ = get("logical").(uint64)
	m.height, _ = get("height").(uint64)
	m.nextPlanID, _ = get("next_plan_id").(uint64)
	m.nextIntentSeq, _ = get("next_intent_seq").(uint64)
	cells, _ := get("cells").([]schema.Value)
	for _, cv := range cells {
		c, _ := cv.(*schema.Map)
		mod, _ := c.Get("reducer")
		key, _ := c.Get("key")
		sr, _ := c.Get("state")
		ref, err := cas.ParseRef(fmt.Sprint(sr))
		if err != nil {
			return nil, fmt.Errorf("world: snapshot %s: cell state: %w", snap, err)
		}
		sb, err := store.Get(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("world: snapshot %s: cell state: %w", snap, err)
		}
		state, err := schema.Decode(sb)
		if err != nil {
			return nil, fmt.Errorf("world: snapshot %s: cell state %s: %w", snap, ref, err)
		}
		kb, err := keyBytes(key)
		if err != nil {
			return nil, err
		}
		name, _ := mod.(string)
		if m.cells[name] == nil {
			m.cells[name] = map[string]*cell{}
		}
		m.cells[name][kb] = &cell{key: key, state: state, ref: ref}
	}
	insts, _ := get("plans").([]schema.Value)
	for _, iv := range insts {
		in, err := plans.DecodeInstance(iv)
		if err != nil {
			return nil, fmt.Errorf("world: snapshot %s: %w", snap, err)
		}
		m.instances[in.ID] = in
	}
	pend, _ := get("pending").([]schema.Value)
	for _, pv := range pend {
		p, _ := pv.(*schema.Map)
		seqv, _ := p.Get("seq")
		iv, _ := p.Get("intent")
		in, err := decodeIntent(iv)
		if err != nil {
			return nil, fmt.Errorf("world: snapshot %s: pending intent: %w", snap, err)
		}
		seq, _ := seqv.(uint64)
		m.pending[in.Hash] = &pendingIntent{intent: in, seq: seq}
	}
	return m, nil
}
