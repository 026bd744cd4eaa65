// Package reducertest helps test reducers.
package reducertest

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
)

// Step is one event fed to a reducer, with the context it sees.
type Step struct {
	Context reducer.Context
	Event   schema.Value
}

// Deterministic runs r twice over the same steps, each run from the same
// initial state and feeding each step the state the previous one produced,
// and fails t if the two runs differ in any byte: a state, an event, an
// effect or an error. It returns the outputs of the first run.
func Deterministic(t testing.TB, r reducer.Reducer, initial schema.Value, steps []Step) []reducer.Output {
	t.Helper()
	first, err1 := run(r, initial, steps)
	second, err2 := run(r, initial, steps)
	if err1 != err2 {
		t.Fatalf("reducer is not deterministic: the runs end with %q and %q", err1, err2)
	}
	for i := range first {
		if !bytes.Equal(first[i].enc, second[i].enc) {
			t.Fatalf("reducer is not deterministic: step %d gives\n%s\nthen\n%s", i, first[i].text, second[i].text)
		}
	}
	outs := make([]reducer.Output, len(first))
	for i, o := range first {
		outs[i] = o.out
	}
	return outs
}

type result struct {
	out  reducer.Output
	enc  []byte
	text string
}

func run(r reducer.Reducer, state schema.Value, steps []Step) ([]result, string) {
	var res []result
	for i, s := range steps {
		c := s.Context
		out, err := r.Step(&c, state, s.Event)
		if err != nil {
			return res, fmt.Sprintf("step %d: %v", i, err)
		}
		v := encodeOutput(out)
		enc, err := schema.Encode(v)
		if err != nil {
			return res, fmt.Sprintf("step %d: output does not encode: %v", i, err)
		}
		res = append(res, result{out: out, enc: enc, text: string(schema.ValueJSON(v))})
		state = out.State
	}
	return res, ""
}

func encodeOutput(o reducer.Output) schema.Value {
	evs := make([]schema.Value, len(o.Events))
	for i, e := range o.Events {
		evs[i] = schema.Record("schema", e.Schema, "value", e.Value, "key", e.Key)
	}
	efs := make([]schema.Value, len(o.Effects))
	for i, e := range o.Effects {
		efs[i] = schema.Record("kind", e.Kind, "params", e.Params, "slot", e.CapSlot, "key", e.IdempotencyKey)
	}
	blobs := make([]schema.Value, len(o.Blobs))
	for i, b := range o.Blobs {
		blobs[i] = b
	}
	return schema.Record("state", o.State, "events", evs, "effects", efs, "blobs", blobs)
}
