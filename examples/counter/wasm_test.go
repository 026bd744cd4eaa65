package counter

import (
	"testing"

	"github.com/demiurge-dev/demiurge/examples/internal/exampletest"
	"github.com/demiurge-dev/demiurge/world"
)

// TestWASMJournal runs the scenario of AgentOS's 00-counter with the Go reducer
// and with the AssemblyScript module beside the manifest
// (modules/counter/Counter@1-<sha256>.wasm, built from
// examples/wasm/assembly/counter.ts): the journals are the same bytes.
func TestWASMJournal(t *testing.T) {
	exampletest.SameJournal(t, exampletest.Case{
		World: "counter", Dir: ".", Register: Register,
		Drive: func(t *testing.T, open func(world.Options) *world.World) {
			w := open(world.Options{})
			for _, ev := range []string{`{"Start": {"target": 3}}`, `"Tick"`, `"Tick"`, `{"Start": {"target": 0}}`, `{"Start": {"target": 2}}`, `"Tick"`, `"Tick"`, `"Tick"`} {
				exampletest.Send(t, w, "counter/Event@1", ev)
			}
		},
		Check: func(t *testing.T, m *world.Machine, recs []exampletest.Record) {
			if got, want := exampletest.State(m, ModuleName, nil), `{"pc":{"$tag":"Done"},"remaining":0}`; got != want {
				t.Errorf("state = %s; want %s", got, want)
			}
			if n := len(exampletest.Select(recs, world.KindState)); n != 7 {
				t.Errorf("%d State records; want 7", n)
			}
		},
	})
}
