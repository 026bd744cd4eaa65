package wasm

import (
	"fmt"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
)

// Reducer is a reducer module as a defmodule names it: the compiled module
// and the def's interface (whether it takes a context). It implements
// reducer.Reducer.
type Reducer struct {
	Module *Module
	Def    *schema.DefModule
}

var _ reducer.Reducer = (*Reducer)(nil)

// Step runs one step of the module: it sends the state, the event (as the
// module's ABI event), the cell key and, if the module declares a
// context, sys/ReducerContext@1, and turns the output envelope into the
// step's output. The world normalizes the state, events and effect
// params and checks the effects, as for any reducer. A trap, a deadline,
// an exit or a malformed envelope is the step's error.
func (r *Reducer) Step(c *reducer.Context, state, event schema.Value) (reducer.Output, error) {
	in := Input{EventSchema: c.EventSchema}
	var err error
	if state != nil {
		if in.State, err = schema.Encode(state); err != nil {
			return reducer.Output{}, fmt.Errorf("encode state: %w", err)
		}
	}
	if in.Event, err = schema.Encode(event); err != nil {
		return reducer.Output{}, fmt.Errorf("encode event: %w", err)
	}
	if c.Key != nil {
		if in.Key, err = schema.Encode(c.Key); err != nil {
			return reducer.Output{}, fmt.Errorf("encode key: %w", err)
		}
	}
	if r.Def.Reducer != nil && r.Def.Reducer.Context != "" {
		if in.Ctx, err = ContextBytes(c, &in); err != nil {
			return reducer.Output{}, err
		}
	}
	raw, _, err := r.Module.call(AppendInput(nil, &in))
	if err != nil {
		return reducer.Output{}, r.wrap(err)
	}
	env, err := DecodeOutput(raw)
	if err != nil {
		return reducer.Output{}, r.wrap(err)
	}
	out, err := convert(env)
	if err != nil {
		return reducer.Output{}, r.wrap(err)
	}
	return out, nil
}

func (r *Reducer) wrap(err error) error {
	return fmt.Errorf("wasm module %s (%s): %w", r.Def.Name, r.Module.ref.Short(), err)
}

// convert turns an output envelope into a reducer's output.
func convert(env *Output) (reducer.Output, error) {
	var out reducer.Output
	var err error
	if !env.StateNull {
		if out.State, err = schema.Decode(env.State); err != nil {
			return out, fmt.Errorf("%w: state: %v", ErrEnvelope, err)
		}
	}
	for i, e := range env.Events {
		ev := reducer.Event{Schema: e.Schema}
		if ev.Value, err = schema.Decode(e.Value); err != nil {
			return out, fmt.Errorf("%w: domain_events[%d].value: %v", ErrEnvelope, i, err)
		}
		if e.Key != nil {
			if ev.Key, err = schema.Decode(e.Key); err != nil {
				return out, fmt.Errorf("%w: domain_events[%d].key: %v", ErrEnvelope, i, err)
			}
		}
		out.Events = append(out.Events, ev)
	}
	for i, e := range env.Effects {
		ef := reducer.Effect{Kind: e.Kind, CapSlot: e.CapSlot, IdempotencyKey: e.IdempotencyKey}
		if ef.Params, err = schema.Decode(e.Params); err != nil {
			return out, fmt.Errorf("%w: effects[%d].params_cbor: %v", ErrEnvelope, i, err)
		}
		out.Effects = append(out.Effects, ef)
	}
	return out, nil
}

// ContextBytes returns the canonical CBOR of the sys/ReducerContext@1 of a
// step: the ingress stamp, the hash of the event as the module receives
// it ({schema, value, key?}, its value and key as CBOR bytes), the
// manifest, the reducer's name, the cell key and whether the reducer is
// keyed.
func ContextBytes(c *reducer.Context, in *Input) ([]byte, error) {
	ev := []any{"schema", in.EventSchema, "value", in.Event}
	if in.Key != nil {
		ev = append(ev, "key", in.Key)
	}
	eb, err := schema.Encode(schema.Record(ev...))
	if err != nil {
		return nil, fmt.Errorf("encode the event's hash: %w", err)
	}
	var key any
	if in.Key != nil {
		key = in.Key
	}
	entropy := c.Stamp.Entropy
	if entropy == nil {
		entropy = []byte{}
	}
	v := schema.Record(
		"now_ns", c.Stamp.NowNS,
		"logical_now_ns", c.Stamp.LogicalNowNS,
		"journal_height", c.Stamp.JournalHeight,
		"entropy", entropy,
		"event_hash", cas.Sum(eb).String(),
		"manifest_hash", c.Stamp.ManifestHash.String(),
		"reducer", c.Module,
		"key", key,
		"cell_mode", c.Key != nil,
	)
	b, err := schema.Encode(v)
	if err != nil {
		return nil, fmt.Errorf("encode the context: %w", err)
	}
	return b, nil
}

// Run runs a pure module (module_kind pure, exporting run): it sends the
// envelope {version: 1, input, ctx?} with input (and ctx, if not nil) as
// CBOR, and returns the CBOR of the module's output. A trap, a deadline or
// a malformed envelope is the error, as for a step.
func (m *Module) Run(input, ctx []byte) ([]byte, error) {
	if !m.pure {
		return nil, fmt.Errorf("wasm: module %s is not pure (it exports step, not run)", m.name)
	}
	raw, _, err := m.call(AppendPureInput(nil, input, ctx))
	if err != nil {
		return nil, fmt.Errorf("wasm module %s (%s): %w", m.name, m.ref.Short(), err)
	}
	out, err := DecodePureOutput(raw)
	if err != nil {
		return nil, fmt.Errorf("wasm module %s (%s): %w", m.name, m.ref.Short(), err)
	}
	if e := cborValue(out.Output, "output"); e != nil {
		return nil, fmt.Errorf("wasm module %s (%s): %w", m.name, m.ref.Short(), e)
	}
	return out.Output, nil
}
