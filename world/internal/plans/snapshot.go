package plans

import (
	"fmt"
	"sort"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/schema"
)

// Encode returns the instance as a value, for snapshots. The encoding is
// deterministic: equal instances encode to equal bytes.
func (in *Instance) Encode() schema.Value {
	states := make([]byte, len(in.states))
	for i, s := range in.states {
		states[i] = byte(s)
	}
	values := make([]schema.Value, len(in.values))
	copy(values, in.values)
	receipts := make([]schema.Value, 0, len(in.receipts))
	for _, ref := range sortedRefs(in.receipts) {
		r := in.receipts[ref]
		receipts = append(receipts, schema.Record("intent", ref.String(), "payload", r.Payload, "err", r.Err))
	}
	seen := make([]schema.Value, 0, len(in.seen))
	for _, ref := range sortedRefs(in.seen) {
		seen = append(seen, ref.String())
	}
	var perr schema.Value
	if in.Err != nil {
		perr = schema.Record("plan", in.Err.Plan, "step", in.Err.Step, "code", in.Err.Code, "msg", in.Err.Msg)
	}
	return schema.Record(
		"id", in.ID, "plan", in.Plan, "plan_ref", in.PlanRef.String(),
		"input", in.Input, "correlation", in.Correlation, "key", in.Key,
		"status", uint64(in.Status), "result", in.Result, "err", perr,
		"states", states, "values", values, "vars", in.vars, "handles", in.handles,
		"receipts", receipts, "seen", seen,
	)
}

func sortedRefs[V any](m map[cas.Ref]V) []cas.Ref {
	out := make([]cas.Ref, 0, len(m))
	for r := range m {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// DecodeInstance restores an instance encoded by Encode.
func DecodeInstance(v schema.Value) (*Instance, error) {
	m, ok := v.(*schema.Map)
	if !ok {
		return nil, fmt.Errorf("plans: instance is %T, want a record", v)
	}
	get := func(k string) schema.Value { x, _ := m.Get(k); return x }
	str := func(k string) string { s, _ := get(k).(string); return s }
	num := func(k string) uint64 { n, _ := get(k).(uint64); return n }
	in := &Instance{
		ID: num("id"), Plan: str("plan"), Input: get("input"), Correlation: get("correlation"), Key: get("key"),
		Status: Status(num("status")), Result: get("result"),
		receipts: map[cas.Ref]*Receipt{}, seen: map[cas.Ref]bool{},
	}
	var err error
	if in.PlanRef, err = cas.ParseRef(str("plan_ref")); err != nil {
		return nil, fmt.Errorf("plans: instance %d: %w", in.ID, err)
	}
	if e, ok := get("err").(*schema.Map); ok {
		f := func(k string) string { x, _ := e.Get(k); s, _ := x.(string); return s }
		in.Err = &PlanError{Plan: f("plan"), Step: f("step"), Code: f("code"), Msg: f("msg")}
	}
	states, _ := get("states").([]byte)
	values, _ := get("values").([]schema.Value)
	if len(states) != len(values) {
		return nil, fmt.Errorf("plans: instance %d: %d step states but %d values", in.ID, len(states), len(values))
	}
	in.states = make([]StepState, len(states))
	for i, s := range states {
		if s > byte(Skipped) {
			return nil, fmt.Errorf("plans: instance %d: bad step state %d", in.ID, s)
		}
		in.states[i] = StepState(s)
	}
	in.values = values
	var mok bool
	if in.vars, mok = get("vars").(*schema.Map); !mok {
		return nil, fmt.Errorf("plans: instance %d: vars missing", in.ID)
	}
	if in.handles, mok = get("handles").(*schema.Map); !mok {
		return nil, fmt.Errorf("plans: instance %d: handles missing", in.ID)
	}
	rs, _ := get("receipts").([]schema.Value)
	for _, rv := range rs {
		rm, ok := rv.(*schema.Map)
		if !ok {
			return nil, fmt.Errorf("plans: instance %d: bad receipt", in.ID)
		}
		iv, _ := rm.Get("intent")
		s, _ := iv.(string)
		ref, err := cas.ParseRef(s)
		if err != nil {
			return nil, fmt.Errorf("plans: instance %d: %w", in.ID, err)
		}
		p, _ := rm.Get("payload")
		ev, _ := rm.Get("err")
		es, _ := ev.(string)
		in.receipts[ref] = &Receipt{Payload: p, Err: es}
	}
	seen, _ := get("seen").([]schema.Value)
	for _, sv := range seen {
		s, _ := sv.(string)
		ref, err := cas.ParseRef(s)
		if err != nil {
			return nil, fmt.Errorf("plans: instance %d: %w", in.ID, err)
		}
		in.seen[ref] = true
	}
	return in, nil
}

// Check verifies that the instance fits the program it claims to run.
func (in *Instance) Check(p *Program) error {
	if p.Ref != in.PlanRef {
		return fmt.Errorf("plans: instance %d runs %s %s, but the manifest's plan is %s; a plan cannot change under a running instance", in.ID, in.Plan, in.PlanRef.Short(), p.Ref.Short())
	}
	if len(in.states) != len(p.Def.Steps) {
		return fmt.Errorf("plans: instance %d has %d steps, plan %s has %d", in.ID, len(in.states), in.Plan, len(p.Def.Steps))
	}
	return nil
}
