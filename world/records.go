package world

import (
	"fmt"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
)

// Journal record kinds. Inputs enter the world from outside and carry an
// ingress stamp; every other record is derived from the inputs before it,
// and replay re-derives it byte for byte.
const (
	// Inputs.
	KindManifest = "Manifest"    // the world runs a manifest: {manifest}
	KindEvent    = "DomainEvent" // an event from outside: {schema, value, key?, stamp}
	KindReceipt  = "Receipt"     // an effect's outcome: {intent, status, payload?, error?, adapter, cost?, stamp}

	// Derived.
	KindRaised       = "Event"        // an event a reducer or plan emitted: {schema, value, key?, origin}
	KindState        = "State"        // a cell's new state: {reducer, key?, state: ref or null}
	KindReducerError = "ReducerError" // a reducer step failed; its output was discarded: {reducer, key?, event, error}
	KindPlanStarted  = "PlanStarted"  // {plan, plan_id}
	KindPlanEnded    = "PlanEnded"    // {plan, plan_id, status, result?, error?}
	KindIntent       = "Intent"       // an allowed effect: {intent, kind, params, grant, origin, key?, decision}
	KindDenied       = "Denied"       // a refused effect: {kind, grant, origin, stage, reason}
	KindRejected     = "Rejected"     // a receipt that did not fit its schema: {intent, reason}
	KindSnapshot     = "Snapshot"     // the world's state at this point: {snapshot}
	// KindFork marks where a world forked from another ends and its own
	// records begin: the records before it are the first seq records of
	// world, whose record seq has hash hash: {world, seq, hash}. See Fork.
	KindFork = "Fork"
)

// IsInput reports whether records of kind enter the world from outside.
func IsInput(kind string) bool {
	return kind == KindManifest || kind == KindEvent || kind == KindReceipt
}

// rec builds a record payload, leaving out nil members.
func rec(kv ...any) *schema.Map {
	es := make([]schema.MapEntry, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		v := kv[i+1]
		switch x := v.(type) {
		case nil:
			continue
		case []byte:
			if x == nil {
				continue
			}
		case string:
			if x == "" {
				continue
			}
		}
		es = append(es, schema.MapEntry{Key: kv[i].(string), Value: v})
	}
	return schema.NewMap(es...)
}

func entry(kind string, payload *schema.Map) (journal.Entry, error) {
	b, err := schema.Encode(payload)
	if err != nil {
		return journal.Entry{}, fmt.Errorf("world: encode %s record: %w", kind, err)
	}
	return journal.Entry{Kind: kind, Payload: b}, nil
}

func stampValue(s reducer.Stamp) *schema.Map {
	return schema.Record("now", s.NowNS, "logical", s.LogicalNowNS, "height", s.JournalHeight, "entropy", s.Entropy)
}

// Input is an input record, decoded.
type Input struct {
	Kind string
	// Manifest
	Manifest cas.Ref
	// DomainEvent
	Schema string
	Value  schema.Value
	Key    schema.Value
	// Receipt
	Intent    cas.Ref
	Status    string
	Payload   schema.Value
	Error     string
	AdapterID string
	CostCents uint64
	// DomainEvent and Receipt
	Stamp reducer.Stamp

	// raw, if set, is the input's journaled payload: Encode returns it as
	// it is (replay feeds recorded inputs without re-encoding them).
	raw []byte
	// arrived, if set, is when the input came to be (an inline effect's
	// receipt: when its run ended); its stamp's wall time is that instead
	// of the time it is applied.
	arrived time.Time
}

// Encode returns the input as a journal entry.
func (in *Input) Encode() (journal.Entry, error) {
	if in.raw != nil {
		return journal.Entry{Kind: in.Kind, Payload: in.raw}, nil
	}
	switch in.Kind {
	case KindManifest:
		return entry(KindManifest, rec("manifest", in.Manifest.String()))
	case KindEvent:
		return entry(KindEvent, rec("schema", in.Schema, "value", in.Value, "key", in.Key, "stamp", stampValue(in.Stamp)))
	case KindReceipt:
		var cost any
		if in.CostCents > 0 {
			cost = in.CostCents
		}
		return entry(KindReceipt, rec("intent", in.Intent.String(), "status", in.Status, "payload", in.Payload,
			"error", in.Error, "adapter", in.AdapterID, "cost", cost, "stamp", stampValue(in.Stamp)))
	}
	return journal.Entry{}, fmt.Errorf("world: %q is not an input kind", in.Kind)
}

// StateRecord is a decoded State record: a cell's new state.
type StateRecord struct {
	Reducer string
	Key     schema.Value // nil for a reducer that is not keyed
	// State names the new state's blob; the zero Ref when the cell was
	// deleted.
	State cas.Ref
}

// DecodeState decodes a State record.
func DecodeState(r journal.Record) (StateRecord, error) {
	if r.Kind != KindState {
		return StateRecord{}, fmt.Errorf("world: record %d is a %s record, not %s", r.Seq, r.Kind, KindState)
	}
	v, err := schema.Decode(r.Payload)
	if err != nil {
		return StateRecord{}, fmt.Errorf("world: record %d (%s): %w", r.Seq, r.Kind, err)
	}
	m, ok := v.(*schema.Map)
	if !ok {
		return StateRecord{}, fmt.Errorf("world: record %d (%s) is not a record", r.Seq, r.Kind)
	}
	var sr StateRecord
	red, _ := m.Get("reducer")
	sr.Reducer, _ = red.(string)
	sr.Key, _ = m.Get("key")
	if st, _ := m.Get("state"); st != nil {
		s, _ := st.(string)
		if sr.State, err = cas.ParseRef(s); err != nil {
			return StateRecord{}, fmt.Errorf("world: record %d (%s): state: %w", r.Seq, r.Kind, err)
		}
	}
	return sr, nil
}

// DecodeInput decodes an input record.
func DecodeInput(r journal.Record) (*Input, error) {
	v, err := schema.Decode(r.Payload)
	if err != nil {
		return nil, fmt.Errorf("world: record %d (%s): %w", r.Seq, r.Kind, err)
	}
	m, ok := v.(*schema.Map)
	if !ok {
		return nil, fmt.Errorf("world: record %d (%s) is not a record", r.Seq, r.Kind)
	}
	get := func(k string) schema.Value { x, _ := m.Get(k); return x }
	str := func(k string) string { s, _ := get(k).(string); return s }
	ref := func(k string) (cas.Ref, error) {
		r, err := cas.ParseRef(str(k))
		if err != nil {
			return cas.Ref{}, fmt.Errorf("%s: %w", k, err)
		}
		return r, nil
	}
	in := &Input{Kind: r.Kind}
	bad := func(err error) (*Input, error) {
		return nil, fmt.Errorf("world: record %d (%s): %w", r.Seq, r.Kind, err)
	}
	switch r.Kind {
	case KindManifest:
		if in.Manifest, err = ref("manifest"); err != nil {
			return bad(err)
		}
		return in, nil
	case KindEvent:
		in.Schema, in.Value, in.Key = str("schema"), get("value"), get("key")
	case KindReceipt:
		if in.Intent, err = ref("intent"); err != nil {
			return bad(err)
		}
		in.Status, in.Payload, in.Error, in.AdapterID = str("status"), get("payload"), str("error"), str("adapter")
		in.CostCents, _ = get("cost").(uint64)
	default:
		return bad(fmt.Errorf("not an input"))
	}
	sm, ok := get("stamp").(*schema.Map)
	if !ok {
		return bad(fmt.Errorf("no stamp"))
	}
	sv := func(k string) uint64 { x, _ := sm.Get(k); n, _ := x.(uint64); return n }
	in.Stamp.NowNS, in.Stamp.LogicalNowNS, in.Stamp.JournalHeight = sv("now"), sv("logical"), sv("height")
	e, _ := sm.Get("entropy")
	in.Stamp.Entropy, _ = e.([]byte)
	return in, nil
}
