// Package counter is the reducer of the counter example world, demiurge's
// port of AgentOS's 00-counter: a Start{target} event sets a countdown,
// each Tick counts it down by one, and at zero the counter is Done.
//
// The world's AIR (manifest.air.json and the *.air.json files beside
// it) declares the schemas counter/State@1 and counter/Event@1 and the
// module counter/Counter@1, which names this reducer; Register adds it
// to a binary's reducer registry under that name.
//
// The reducer works on canonical schema values: the state is the record
// {pc: Idle|Counting|Done, remaining: nat}, the event the variant
// Start{target: nat} | Tick. It is deterministic: it reads nothing but
// its state and event.
package counter

import (
	"errors"
	"fmt"

	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
)

// ModuleName is the name of the defmodule the reducer is registered under.
const ModuleName = "counter/Counter@1"

// The arms of counter/Phase@1, the state's pc.
const (
	Idle     = "Idle"
	Counting = "Counting"
	Done     = "Done"
)

// State is the Go form of counter/State@1.
type State struct {
	PC        reducer.Variant `cbor:"pc"`
	Remaining uint64          `cbor:"remaining"`
}

// Reducer is the counter's reducer. The zero value is ready to use.
//
//   - Start{target} (re)starts the countdown: Counting with remaining =
//     target, or Done at once if target is 0.
//   - Tick counts down by one while Counting and switches to Done at 0.
//     A Tick before a Start or after Done changes nothing.
//
// It emits no events and no effects.
type Reducer struct{}

var _ reducer.Reducer = Reducer{}

// ErrBadEvent is returned (wrapped) for an event that is not a
// counter/Event@1 value.
var ErrBadEvent = errors.New("counter: bad event")

// Step implements reducer.Reducer. A nil state is a fresh counter: Idle
// with nothing remaining.
func (Reducer) Step(_ *reducer.Context, state, event schema.Value) (reducer.Output, error) {
	st := State{PC: reducer.Variant{Tag: Idle}}
	if state != nil {
		var err error
		if st, err = decodeState(state); err != nil {
			return reducer.Output{}, err
		}
	}
	ev, ok := event.(*schema.Map)
	if !ok {
		return reducer.Output{}, fmt.Errorf("%w: want a variant Start|Tick, got %s", ErrBadEvent, schema.String(event))
	}
	tag, v, ok := ev.VariantTag()
	if !ok {
		return reducer.Output{}, fmt.Errorf("%w: want a variant Start|Tick, got %s", ErrBadEvent, schema.String(event))
	}
	switch tag {
	case "Start":
		target, err := startTarget(v)
		if err != nil {
			return reducer.Output{}, err
		}
		st.Remaining = target
		st.PC = reducer.Variant{Tag: Counting}
		if target == 0 {
			st.PC = reducer.Variant{Tag: Done}
		}
	case "Tick":
		if st.PC.Tag == Counting && st.Remaining > 0 {
			st.Remaining--
			if st.Remaining == 0 {
				st.PC = reducer.Variant{Tag: Done}
			}
		}
	default:
		return reducer.Output{}, fmt.Errorf("%w: unknown variant tag %q (want Start|Tick)", ErrBadEvent, tag)
	}
	return reducer.Output{State: schema.Record("pc", schema.Variant(st.PC.Tag, nil), "remaining", st.Remaining)}, nil
}

// decodeState reads a counter/State@1 value. (The state is small and hot:
// it is read field by field rather than through reducer.ToGo.)
func decodeState(v schema.Value) (State, error) {
	bad := func(why string) (State, error) {
		return State{}, fmt.Errorf("counter: decode state %s: %s", schema.String(v), why)
	}
	m, ok := v.(*schema.Map)
	if !ok {
		return bad("not a record")
	}
	pc, _ := m.Field("pc")
	pm, ok := pc.(*schema.Map)
	if !ok {
		return bad("pc is not a variant")
	}
	tag, _, ok := pm.VariantTag()
	if !ok {
		return bad("pc is not a variant")
	}
	r, _ := m.Field("remaining")
	n, ok := schema.AsUint64(r)
	if !ok {
		return bad("remaining is not a nat")
	}
	return State{PC: reducer.Variant{Tag: tag}, Remaining: n}, nil
}

// startTarget reads the target of a Start{target: nat} payload.
func startTarget(v schema.Value) (uint64, error) {
	rec, ok := v.(*schema.Map)
	if !ok {
		return 0, fmt.Errorf("%w: Start wants a record {target: nat}, got %s", ErrBadEvent, schema.String(v))
	}
	t, ok := rec.Field("target")
	if !ok {
		return 0, fmt.Errorf("%w: Start has no field target", ErrBadEvent)
	}
	n, ok := schema.AsUint64(t)
	if !ok {
		return 0, fmt.Errorf("%w: Start.target wants a nat, got %s", ErrBadEvent, schema.String(t))
	}
	return n, nil
}

// Register adds the counter's reducer to r under ModuleName. It panics if
// the name is already registered: it is for program setup.
func Register(r *reducer.Registry) {
	r.MustRegister(ModuleName, Reducer{})
}
