package reducertest_test

import (
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/examples/counter"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/reducer/reducertest"
	"github.com/demiurge-dev/demiurge/schema"
)

func TestCounterIsDeterministic(t *testing.T) {
	ev := func(tag string, v schema.Value) reducertest.Step {
		return reducertest.Step{Event: schema.Variant(tag, v)}
	}
	outs := reducertest.Deterministic(t, counter.Reducer{}, nil, []reducertest.Step{
		ev("Start", schema.Record("target", uint64(2))), ev("Tick", nil), ev("Tick", nil),
	})
	if got := string(schema.ValueJSON(outs[2].State)); got != `{"pc":{"$tag":"Done"},"remaining":0}` {
		t.Fatalf("state %s", got)
	}
}

// clockReader reads the clock: Deterministic must catch it.
type clockReader struct{}

func (clockReader) Step(c *reducer.Context, state, event schema.Value) (reducer.Output, error) {
	return reducer.Output{State: schema.Record("t", uint64(time.Now().UnixNano()))}, nil
}

type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Fatalf(format string, args ...any) { r.failed = format }
func (r *recorder) Helper()                           {}

func TestDeterministicCatchesTheClock(t *testing.T) {
	rec := &recorder{TB: t}
	reducertest.Deterministic(rec, clockReader{}, nil, []reducertest.Step{{Event: nil}})
	if rec.failed == "" {
		t.Fatal("a reducer reading the clock passed")
	}
}
