package introspect_test

import (
	"fmt"
	"testing"

	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/introspect"
	"github.com/demiurge-dev/demiurge/world"
)

// longCounter runs the counter through Start{n} and n Ticks: 2n+3 records.
func longCounter(b *testing.B, n int) (*world.World, introspect.View) {
	w, v, _ := counterWorld(b)
	send(b, w, "counter/Event@1", fmt.Sprintf(`{"Start": {"target": %d}}`, n))
	for range n {
		send(b, w, "counter/Event@1", `"Tick"`)
	}
	return w, v
}

// BenchmarkStateHead reads a cell at the head through the tool (argument
// validation, a consistent read, JSON rendering) beside the raw accessor
// it wraps.
func BenchmarkStateHead(b *testing.B) {
	w, v := longCounter(b, 10)
	b.Run("tool", func(b *testing.B) {
		tl := toolNamed(b, v, introspect.ToolState)
		req := tools.Request{Arguments: []byte(`{"reducer": "counter/Counter@1"}`)}
		b.ReportAllocs()
		for b.Loop() {
			if r := tl.Run(b.Context(), req, nil); r.ExitCode != 0 {
				b.Fatal(r.Stderr)
			}
		}
	})
	b.Run("world.State", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, ok := w.State("counter/Counter@1", nil); !ok {
				b.Fatal("no state")
			}
		}
	})
}

// BenchmarkStateExact reads a cell at the middle of a journal of ~2000
// records, which scans the journal up to there, beside a bare read of the
// same records.
func BenchmarkStateExact(b *testing.B) {
	_, v := longCounter(b, 1000)
	head, err := v.Head(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	mid := head.Height / 2
	b.Run("tool", func(b *testing.B) {
		tl := toolNamed(b, v, introspect.ToolState)
		req := tools.Request{Arguments: fmt.Appendf(nil, `{"reducer": "counter/Counter@1", "consistency": "exact:%d"}`, mid)}
		b.ReportAllocs()
		for b.Loop() {
			if r := tl.Run(b.Context(), req, nil); r.ExitCode != 0 {
				b.Fatal(r.Stderr)
			}
		}
		b.ReportMetric(float64(mid)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	})
	b.Run("journal.Read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n := uint64(0)
			_ = v.Journal().Read(b.Context(), v.Name(), 1, func(r journal.Record) error {
				if n++; r.Seq >= mid {
					return errDone
				}
				return nil
			})
		}
		b.ReportMetric(float64(mid)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	})
}
