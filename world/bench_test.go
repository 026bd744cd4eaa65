package world_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/examples/counter"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
	"go.etcd.io/bbolt"
)

// BenchmarkCounterStep measures one durable counter step (a DomainEvent,
// its State record and the new state blob, committed with fsync) side by
// side with a raw bbolt Update writing the same bytes to a second file of
// the same disk, interleaved so that noise hits both alike. Metric ratio:
// world step time / raw commit time (target ≤ 1.3).
func BenchmarkCounterStep(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	st, closeFn := openBolt(b, dir)
	defer closeFn()
	cat, err := schema.Load("../examples/counter", nil)
	if err != nil {
		b.Fatal(err)
	}
	reg := reducer.NewRegistry()
	counter.Register(reg)
	var last []journal.Record
	w, err := world.Open(ctx, world.Options{Name: "bench", Catalog: cat, Reducers: reg, Storage: st, SnapshotEvery: -1,
		OnCommit: func(recs []journal.Record) { last = recs }})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	start, _ := schema.NormalizeJSON(cat, schema.RefType("counter/Event@1"), []byte(`{"Start": {"target": 1000000000}}`))
	tick, _ := schema.NormalizeJSON(cat, schema.RefType("counter/Event@1"), []byte(`"Tick"`))
	if _, err := w.Send(ctx, "counter/Event@1", start, nil); err != nil {
		b.Fatal(err)
	}
	if _, err := w.Send(ctx, "counter/Event@1", tick, nil); err != nil {
		b.Fatal(err)
	}
	// The baseline writes what one step wrote: its records and the state
	// blob. OnCommit's records carry no prev; any BLAKE3 ref encodes to
	// the same size as the real one.
	var vals [][]byte
	for _, r := range last {
		r.Prev = w.Head().Hash
		enc, err := r.Encode()
		if err != nil {
			b.Fatal(err)
		}
		vals = append(vals, enc)
	}
	vals = append(vals, make([]byte, 24)) // the state node
	raw, err := bbolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	var key uint64
	rawCommit := func() {
		err := raw.Update(func(tx *bbolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists([]byte("j"))
			if err != nil {
				return err
			}
			for _, v := range vals {
				key++
				var k [8]byte
				binary.BigEndian.PutUint64(k[:], key)
				if err := bk.Put(k[:], v); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	var worldTimes, rawTimes []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if _, err := w.Send(ctx, "counter/Event@1", tick, nil); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		rawCommit()
		t2 := time.Now()
		worldTimes = append(worldTimes, t1.Sub(t0))
		rawTimes = append(rawTimes, t2.Sub(t1))
	}
	b.StopTimer()
	wm, rm := median(worldTimes), median(rawTimes)
	b.ReportMetric(float64(wm.Microseconds()), "world-µs/step")
	b.ReportMetric(float64(rm.Microseconds()), "bbolt-µs/commit")
	b.ReportMetric(float64(wm)/float64(rm), "ratio")
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func noop(ctx context.Context, c *effects.Call) effects.Receipt {
	return effects.OK("noop", schema.Record("ok", true))
}

// benchWorld opens a bench5 world on st whose OnCommit reports ended plans.
func benchWorld(b testing.TB, st world.Storage, name string, ended func(id uint64)) *world.World {
	cat, err := schema.Load("testdata/bench5", nil)
	if err != nil {
		b.Fatal(err)
	}
	w, err := world.Open(context.Background(), world.Options{Name: name, Catalog: cat, Reducers: reducer.NewRegistry(), Storage: st,
		Adapters: map[string]effects.Adapter{"bench.noop": effects.AdapterFunc(noop)}, SnapshotEvery: -1,
		OnCommit: func(recs []journal.Record) {
			for _, r := range recs {
				if r.Kind == world.KindPlanEnded {
					v, _ := schema.Decode(r.Payload)
					id, _ := v.(*schema.Map).Get("plan_id")
					ended(id.(uint64))
				}
			}
		}})
	if err != nil {
		b.Fatal(err)
	}
	return w
}

// BenchmarkWorkflow5 runs a workflow of 5 effects (trivial adapter),
// durable on bbolt with fsync: the start event, 5 intents, 5 receipts and
// the plan's end. It reports the p50 and p90 latency from sending the
// start event to the durable end of the plan (target p50 ≤ 3 ms), and the
// bytes stored per workflow (target ≤ 4 KB): journal-bytes, the encoded
// records; file-bytes, the growth of the bbolt file's high-water mark (its
// pages in use, free pages included: what the file must hold) after the
// first workflow; log-inuse-bytes and log-leaf-pages, the growth of the
// journal log's leaf pages and of the bytes bbolt uses in them (elements,
// keys and values: how well the log packs its pages). "parallel" emits the
// 5 effects at once; "sequential" awaits each before the next.
func BenchmarkWorkflow5(b *testing.B) {
	for _, mode := range []struct{ name, event string }{{"parallel", "bench/Start@1"}, {"sequential", "bench/StartSeq@1"}} {
		b.Run(mode.name, func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			st, closeFn := openBolt(b, dir)
			defer closeFn()
			done := make(chan uint64, 1)
			w := benchWorld(b, st, "wf", func(id uint64) { done <- id })
			defer w.Close()
			var lat []time.Duration
			var n uint64
			h0 := w.Head()
			var size0 int64
			var log0 bbolt.BucketStats
			for b.Loop() {
				n++
				t0 := time.Now()
				if _, err := w.SendJSON(ctx, mode.event, []byte(fmt.Sprintf(`{"n": %d}`, n))); err != nil {
					b.Fatal(err)
				}
				<-done
				lat = append(lat, time.Since(t0))
				if n == 1 {
					size0, log0 = fileSize(b, st), logStats(b, st)
				}
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds())/1000, "p90-ms")
			var bytes int
			err := st.Journal().Read(ctx, "wf", h0.Seq+1, func(r journal.Record) error {
				enc, err := r.Encode()
				if err != nil {
					return err
				}
				bytes += len(enc)
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(bytes)/float64(n), "journal-bytes/workflow")
			if n > 1 {
				b.ReportMetric(float64(fileSize(b, st)-size0)/float64(n-1), "file-bytes/workflow")
				log1 := logStats(b, st)
				b.ReportMetric(float64(log1.LeafInuse-log0.LeafInuse)/float64(n-1), "log-inuse-bytes/workflow")
				b.ReportMetric(float64(log1.LeafPageN-log0.LeafPageN)/float64(n-1), "log-leaf-pages/workflow")
			}
		})
	}
}

// fileSize returns the high-water mark of st's bbolt file: the bytes of
// its pages in use or free, which the file holds at least.
func fileSize(b *testing.B, st world.Storage) int64 {
	var size int64
	err := st.(*world.BoltStorage).CAS().(*cas.Bolt).DB().View(func(tx *bbolt.Tx) error {
		size = tx.Size()
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return size
}

// logStats returns bbolt's statistics of the journal's log bucket in st.
func logStats(b *testing.B, st world.Storage) bbolt.BucketStats {
	var s bbolt.BucketStats
	err := st.(*world.BoltStorage).CAS().(*cas.Bolt).DB().View(func(tx *bbolt.Tx) error {
		log := tx.Bucket([]byte("journal.log"))
		if log == nil {
			return fmt.Errorf("no journal.log bucket")
		}
		s = log.Stats()
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkWorkflowThroughput runs 5-effect workflows in 50 worlds at
// once, sharing one bbolt file (group commit), each world b.N of them back
// to back, and reports workflows per second (target ≥ 1000; ≥ 10× Restate
// for sequential, see bench/peers/durable), CPU time per workflow (target
// ≤ 1 ms), and the pages bbolt wrote per workflow (TxStats).
func BenchmarkWorkflowThroughput(b *testing.B) {
	for _, mode := range []struct{ name, event string }{{"parallel", "bench/Start@1"}, {"sequential", "bench/StartSeq@1"}} {
		b.Run(mode.name, func(b *testing.B) {
			const worlds = 50
			ctx := context.Background()
			dir := b.TempDir()
			st, closeFn := openBolt(b, dir)
			defer closeFn()
			type ww struct {
				w    *world.World
				done chan uint64
			}
			var ws []ww
			for i := range worlds {
				done := make(chan uint64, 1)
				w := benchWorld(b, st, fmt.Sprintf("w%d", i), func(id uint64) { done <- id })
				defer w.Close()
				ws = append(ws, ww{w, done})
			}
			db := st.(*world.BoltStorage).CAS().(*cas.Bolt).DB()
			tx0 := db.Stats().TxStats
			var ru0, ru1 syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			b.ResetTimer()
			var wg sync.WaitGroup
			for i := range ws {
				wg.Go(func() {
					for n := range b.N {
						if _, err := ws[i].w.SendJSON(ctx, mode.event, []byte(fmt.Sprintf(`{"n": %d}`, n))); err != nil {
							b.Error(err)
							return
						}
						<-ws[i].done
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
			cpu := time.Duration(syscall.TimevalToNsec(ru1.Utime)-syscall.TimevalToNsec(ru0.Utime)) +
				time.Duration(syscall.TimevalToNsec(ru1.Stime)-syscall.TimevalToNsec(ru0.Stime))
			total := float64(b.N * worlds)
			b.ReportMetric(total/b.Elapsed().Seconds(), "workflows/s")
			b.ReportMetric(float64(cpu.Microseconds())/total/1000, "cpu-ms/workflow")
			tx1 := db.Stats().TxStats
			b.ReportMetric(float64(tx1.GetWrite()-tx0.GetWrite())/total, "pages-written/workflow")
		})
	}
}

// BenchmarkRerun reruns a journal of about 100,000 records from genesis
// (a counter world; each step is a DomainEvent and a State record) and
// reports records per second (target ≥ 300,000).
func BenchmarkRerun(b *testing.B) {
	ctx := context.Background()
	st, cat, reg := counterJournal(b, 100_000, -1)
	var records uint64
	b.ResetTimer()
	for b.Loop() {
		res, err := world.Rerun(ctx, world.RerunOptions{Name: "r", Catalog: cat, Reducers: reg, Storage: st, FromGenesis: true})
		if err != nil {
			b.Fatal(err)
		}
		records += res.Records
	}
	b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
}

var _ = cas.Sum

// BenchmarkRecover measures recovering a world of 100,000 records that
// takes a snapshot every 256 inputs (the default): what Open does before
// the world runs. Beside it, full-scan-ms: reading the whole journal once,
// which is what finding the newest snapshot cost before Open read back
// from the head.
func BenchmarkRecover(b *testing.B) {
	ctx := context.Background()
	st, cat, reg := counterJournal(b, 100_000, 0)
	t0 := time.Now()
	if err := st.Journal().Read(ctx, "r", 1, func(journal.Record) error { return nil }); err != nil {
		b.Fatal(err)
	}
	scan := time.Since(t0)
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := world.Recover(ctx, "r", cat, reg, st); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "recover-ms")
	b.ReportMetric(float64(scan.Microseconds())/1000, "full-scan-ms")
}

// counterJournal runs a counter world "r" in memory until its journal
// holds n records, taking snapshots as snapshotEvery says (see
// world.Options), and returns its storage, catalog and reducers.
func counterJournal(b *testing.B, n uint64, snapshotEvery int) (world.Storage, *schema.Catalog, *reducer.Registry) {
	b.Helper()
	ctx := context.Background()
	st := world.NewMemoryStorage()
	cat, err := schema.Load("../examples/counter", nil)
	if err != nil {
		b.Fatal(err)
	}
	reg := reducer.NewRegistry()
	counter.Register(reg)
	w, err := world.Open(ctx, world.Options{Name: "r", Catalog: cat, Reducers: reg, Storage: st, SnapshotEvery: snapshotEvery})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	start, _ := schema.NormalizeJSON(cat, schema.RefType("counter/Event@1"), []byte(`{"Start": {"target": 1000000000}}`))
	tick, _ := schema.NormalizeJSON(cat, schema.RefType("counter/Event@1"), []byte(`"Tick"`))
	if _, err := w.Send(ctx, "counter/Event@1", start, nil); err != nil {
		b.Fatal(err)
	}
	for w.Head().Seq < n {
		if _, err := w.Send(ctx, "counter/Event@1", tick, nil); err != nil {
			b.Fatal(err)
		}
	}
	return st, cat, reg
}

// BenchmarkRerunBolt reruns a counter world's journal from genesis on
// bbolt (the store demiurge run opens), at 10,000 and 100,000 records, and
// reports µs per record (target ≤ 2.5).
//
// Beside it, on the same file in the same run, "floor" is the storage path
// alone (see rerunFloor): reading the records out of bbolt, decoding each
// with a general CBOR decoder and checking its hash chain with BLAKE3.
func BenchmarkRerunBolt(b *testing.B) {
	for _, n := range []uint64{10_000, 100_000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			ctx := context.Background()
			st, cat, reg := counterJournalBolt(b, n)
			b.Run("rerun", func(b *testing.B) {
				var records uint64
				b.ReportAllocs()
				for b.Loop() {
					res, err := world.Rerun(ctx, world.RerunOptions{Name: "r", Catalog: cat, Reducers: reg, Storage: st, FromGenesis: true})
					if err != nil {
						b.Fatal(err)
					}
					records += res.Records
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1000/float64(records), "µs/record")
				b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
			})
			b.Run("floor", func(b *testing.B) {
				db := st.(*world.BoltStorage).CAS().(*cas.Bolt).DB()
				var records uint64
				b.ReportAllocs()
				for b.Loop() {
					n, err := rerunFloor(db, "r")
					if err != nil {
						b.Fatal(err)
					}
					records += n
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1000/float64(records), "µs/record")
				b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
			})
		})
	}
}

// counterJournalBolt is counterJournal on a bbolt file (written without
// fsync, then reopened as a store is).
func counterJournalBolt(b *testing.B, n uint64) (world.Storage, *schema.Catalog, *reducer.Registry) {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	st, closeFn := openBolt(b, dir)
	b.Cleanup(closeFn)
	st.(*world.BoltStorage).CAS().(*cas.Bolt).DB().NoSync = true
	cat, err := schema.Load("../examples/counter", nil)
	if err != nil {
		b.Fatal(err)
	}
	reg := reducer.NewRegistry()
	counter.Register(reg)
	w, err := world.Open(ctx, world.Options{Name: "r", Catalog: cat, Reducers: reg, Storage: st, SnapshotEvery: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	start, _ := schema.NormalizeJSON(cat, schema.RefType("counter/Event@1"), []byte(`{"Start": {"target": 1000000000}}`))
	tick, _ := schema.NormalizeJSON(cat, schema.RefType("counter/Event@1"), []byte(`"Tick"`))
	if _, err := w.Send(ctx, "counter/Event@1", start, nil); err != nil {
		b.Fatal(err)
	}
	for w.Head().Seq < n {
		if _, err := w.Send(ctx, "counter/Event@1", tick, nil); err != nil {
			b.Fatal(err)
		}
	}
	st.(*world.BoltStorage).CAS().(*cas.Bolt).DB().NoSync = false
	return st, cat, reg
}
