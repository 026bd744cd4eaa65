package timer

import (
	"context"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/builtin"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/examples/internal/exampletest"
	"github.com/demiurge-dev/demiurge/world"
)

// TestWASMJournal runs the timer's scenarios with the Go reducer and with
// the AssemblyScript module beside the manifest
// (modules/timer/Timer@1-<sha256>.wasm, built from
// examples/wasm/assembly/timer.ts): the journals are the same bytes.
func TestWASMJournal(t *testing.T) {
	t.Run("fires", func(t *testing.T) {
		exampletest.SameJournal(t, exampletest.Case{
			World: "hello-timer", Dir: ".", Register: Register,
			Drive: func(t *testing.T, open func(world.Options) *world.World) {
				clock := exampletest.NewClock(time.Unix(0, 0))
				w := open(world.Options{Now: clock.Now, Dispatch: effects.DispatcherOptions{Sleep: clock.Sleep}})
				exampletest.Send(t, w, EventSchema, `{"Start": {"deliver_at_ns": 1000000, "key": "hello"}}`)
				exampletest.WaitIdle(t, w)
				// A second Start once Done sets a new timer, without a key.
				exampletest.Send(t, w, EventSchema, `{"Start": {"deliver_at_ns": 3000000, "key": null}}`)
				exampletest.WaitIdle(t, w)
			},
			Check: func(t *testing.T, m *world.Machine, recs []exampletest.Record) {
				want := `{"pc":{"$tag":"Done"},"key":null,"error":null,"fired_key":null,"deadline_ns":3000000,"fired_at_ns":3000000}`
				if got := exampletest.State(m, ModuleName, nil); got != want {
					t.Errorf("state = %s\nwant    %s", got, want)
				}
			},
		})
	})
	t.Run("fails", func(t *testing.T) {
		failing := builtin.Adapters(nil)
		failing["timer.set"] = effects.AdapterFunc(func(ctx context.Context, c *effects.Call) effects.Receipt {
			return effects.Errorf("timer", "timer.set: the clock broke")
		})
		exampletest.SameJournal(t, exampletest.Case{
			World: "broken-timer", Dir: ".", Register: Register,
			Drive: func(t *testing.T, open func(world.Options) *world.World) {
				w := open(world.Options{Adapters: failing})
				exampletest.Send(t, w, EventSchema, `{"Start": {"deliver_at_ns": 5, "key": "k"}}`)
				exampletest.WaitIdle(t, w)
			},
			Check: func(t *testing.T, m *world.Machine, recs []exampletest.Record) {
				want := `{"pc":{"$tag":"Failed"},"key":"k","error":"timer.set ended with status \"error\"","fired_key":null,"deadline_ns":5,"fired_at_ns":null}`
				if got := exampletest.State(m, ModuleName, nil); got != want {
					t.Errorf("state = %s\nwant    %s", got, want)
				}
			},
		})
	})
}
