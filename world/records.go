package world

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"
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

// entryKV returns the journal entry of kind whose payload is the record
// of the fields kv (see encodeRec).
func entryKV(kind string, kv ...any) (journal.Entry, error) {
	b, err := encodeRec(kv...)
	if err != nil {
		return journal.Entry{}, fmt.Errorf("world: encode %s record: %w", kind, err)
	}
	return journal.Entry{Kind: kind, Payload: b}, nil
}

// maxRecFields bounds the fields of a record encodeRec encodes.
const maxRecFields = 16

// recBufs are encodeRec's scratch buffers.
var recBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// encodeRec returns the canonical encoding of rec(kv...), schema.Encode's
// bytes, without building the map: the record of kv's pairs (text keys,
// at most maxRecFields of them) whose values are not empty. A cas.Ref
// value is its text form.
func encodeRec(kv ...any) ([]byte, error) {
	// The kept pairs, in canonical key order: shorter keys first, then
	// bytewise (the order of their encodings).
	var order [maxRecFields]int
	n := 0
	for i := 0; i < len(kv); i += 2 {
		switch x := kv[i+1].(type) {
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
		if n == maxRecFields {
			return nil, fmt.Errorf("more than %d fields", maxRecFields)
		}
		k := kv[i].(string)
		j := n
		for ; j > 0; j-- {
			p := kv[order[j-1]].(string)
			if len(p) < len(k) || len(p) == len(k) && p < k {
				break
			}
			order[j] = order[j-1]
		}
		order[j] = i
		n++
	}
	bp := recBufs.Get().(*[]byte)
	defer recBufs.Put(bp)
	b := append((*bp)[:0], cas.SelfDescribePrefix...)
	b = appendCBORHead(b, 5, uint64(n))
	var err error
	for _, i := range order[:n] {
		k := kv[i].(string)
		b = append(appendCBORHead(b, 3, uint64(len(k))), k...)
		switch v := kv[i+1].(type) {
		case cas.Ref:
			b = append(b, 0x78, 0) // text of one length byte, set below
			at := len(b)
			if b, err = v.AppendText(b); err != nil {
				return nil, err
			}
			if len(b)-at > 0xff {
				return nil, fmt.Errorf("ref %s is too long", v)
			}
			b[at-1] = byte(len(b) - at)
		default:
			if b, err = schema.AppendBody(b, v); err != nil {
				return nil, err
			}
		}
	}
	*bp = b
	return bytes.Clone(b), nil
}

// appendCBORHead appends the head of a CBOR item of major type major and
// argument n, in its shortest form.
func appendCBORHead(b []byte, major byte, n uint64) []byte {
	major <<= 5
	switch {
	case n < 24:
		return append(b, major|byte(n))
	case n <= 0xff:
		return append(b, major|24, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, major|25), uint16(n))
	case n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, major|26), uint32(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, major|27), n)
	}
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
		return entryKV(KindManifest, "manifest", in.Manifest)
	case KindEvent:
		return entryKV(KindEvent, "schema", in.Schema, "value", in.Value, "key", in.Key, "stamp", stampValue(in.Stamp))
	case KindReceipt:
		var cost any
		if in.CostCents > 0 {
			cost = in.CostCents
		}
		return entryKV(KindReceipt, "intent", in.Intent, "status", in.Status, "payload", in.Payload,
			"error", in.Error, "adapter", in.AdapterID, "cost", cost, "stamp", stampValue(in.Stamp))
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
