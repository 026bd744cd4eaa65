package world_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/examples/counter"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// BenchmarkReadDuringCommits measures a read of a cell's state while
// another goroutine commits steps one after another (durable on bbolt,
// fsync each), two ways interleaved so that noise hits both alike:
// World.State, which reads the last commit's published cells without the
// world's lock, and the same read under the lock (World.View and
// Machine.State), which waits for the batch being applied and committed,
// its fsync included: how State read before it was published. Metrics:
// p50 and p99 of each, in µs, and the p99 ratio state / locked.
func BenchmarkReadDuringCommits(b *testing.B) {
	ctx := context.Background()
	st, closeFn := openBolt(b, b.TempDir())
	defer closeFn()
	cat, err := schema.Load("../examples/counter", nil)
	if err != nil {
		b.Fatal(err)
	}
	reg := reducer.NewRegistry()
	counter.Register(reg)
	w, err := world.Open(ctx, world.Options{Name: "bench", Catalog: cat, Reducers: reg, Storage: st, SnapshotEvery: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	start, _ := schema.NormalizeJSON(cat, schema.RefType("counter/Event@1"), []byte(`{"Start": {"target": 1000000000}}`))
	tick, _ := schema.NormalizeJSON(cat, schema.RefType("counter/Event@1"), []byte(`"Tick"`))
	if _, err := w.Send(ctx, "counter/Event@1", start, nil); err != nil {
		b.Fatal(err)
	}
	module := counter.ModuleName
	if _, _, ok := w.State(module, nil); !ok {
		b.Fatalf("no state of %s", module)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := w.Send(ctx, "counter/Event@1", tick, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
	var published, locked []time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if _, _, ok := w.State(module, nil); !ok {
			b.Fatal("no state")
		}
		t1 := time.Now()
		w.View(func(m *world.Machine) { m.State(module, nil) })
		t2 := time.Now()
		published = append(published, t1.Sub(t0))
		locked = append(locked, t2.Sub(t1))
		time.Sleep(100 * time.Microsecond) // reads at another pace than the commits
	}
	b.StopTimer()
	close(stop)
	wg.Wait()
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	p50s, p99s := pctl(published, .5), pctl(published, .99)
	p50l, p99l := pctl(locked, .5), pctl(locked, .99)
	b.ReportMetric(us(p50s), "state-p50-µs")
	b.ReportMetric(us(p99s), "state-p99-µs")
	b.ReportMetric(us(p50l), "locked-p50-µs")
	b.ReportMetric(us(p99l), "locked-p99-µs")
	b.ReportMetric(float64(p99s)/float64(p99l), "p99-ratio")
}

// pctl is the q quantile of ds.
func pctl(ds []time.Duration, q float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*q))]
}
