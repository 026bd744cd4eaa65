package cluster_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cluster"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/internal/pgtest"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/world"
)

const (
	benchWorlds   = 50
	benchPerWorld = 30 // workflows per world per run
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
}

// BenchmarkWorkflows runs 5-effect workflows (bench5's parallel plan, a
// trivial adapter) in 50 worlds, 30 each, as fast as the workers take
// them from their inboxes: on PostgreSQL with 1, 2 and 4 workers (in this
// process, each with its own connection pool; the server on the same 2
// cores, fsync on), and on bbolt (one process, one file, the same
// workflows sent to the worlds as the workers send them). The messages
// are put in the inboxes at once once every world is held. Metrics:
// workflows/s; CPU per workflow of this process and of the server
// (cores-busy: both over the wall time; the machine has 2); the worlds'
// commits per workflow and per second. pg-workers=4-nosync runs the
// workers' sessions with synchronous_commit=off: the same work without
// waiting for the WAL's fsync.
func BenchmarkWorkflows(b *testing.B) {
	for _, n := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("pg-workers=%d", n), func(b *testing.B) {
			for range b.N {
				benchPG(b, n, false)
			}
		})
	}
	// The same without waiting for the WAL's fsync at commit: how much of
	// the time is the disk's.
	b.Run("pg-workers=4-nosync", func(b *testing.B) {
		for range b.N {
			benchPG(b, 4, true)
		}
	})
	b.Run("bolt", func(b *testing.B) {
		for range b.N {
			benchBolt(b)
		}
	})
}

func benchPG(b *testing.B, workers int, noSync bool) {
	b.StopTimer()
	srv := pgtest.Shared(b)
	ctx := context.Background()
	u, err := srv.NewDatabase(ctx)
	if err != nil {
		b.Fatal(err)
	}
	s := openStore(b, u)
	cat := loadBench(b)
	var names []string
	for i := range benchWorlds {
		names = append(names, fmt.Sprintf("w%02d", i))
	}
	// Store the manifest and register the worlds.
	if _, err := cluster.Attach(ctx, cluster.RemoteOptions{Store: s, Name: names[0], Catalog: cat, Reducers: reducer.NewRegistry()}); err != nil {
		b.Fatal(err)
	}
	for _, name := range names {
		if err := s.Register(ctx, name, cat.ManifestRef()); err != nil {
			b.Fatal(err)
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var wks []*cluster.Worker
	var ended, commits atomic.Int64
	open := func(ctx context.Context, env cluster.Env) (*cluster.Runtime, error) {
		rt, err := benchOpen(ctx, env)
		rt.Options.OnCommit = func(recs []journal.Record) {
			commits.Add(1)
			for _, r := range recs {
				if r.Kind == world.KindPlanEnded {
					ended.Add(1)
				}
			}
		}
		return rt, err
	}
	wu := u
	if noSync {
		wu += "&synchronous_commit=off"
	}
	for i := range workers {
		ws := openStore(b, wu)
		wk, err := cluster.New(cluster.Options{Store: ws, Reducers: reducer.NewRegistry(), Open: open, ID: fmt.Sprintf("bench-%d", i)})
		if err != nil {
			b.Fatal(err)
		}
		wks = append(wks, wk)
		wg.Go(func() { _ = wk.Run(wctx) })
	}
	defer func() {
		cancel()
		wg.Wait()
	}()
	// Wait until the worlds are held and shared out (each worker within
	// one of its share) and opened.
	share := (benchWorlds + workers - 1) / workers
	for deadline := time.Now().Add(60 * time.Second); ; {
		total, balanced := 0, true
		for _, wk := range wks {
			k := len(wk.Worlds())
			total += k
			if k > share {
				balanced = false
			}
		}
		if total == benchWorlds && balanced {
			break
		}
		if time.Now().After(deadline) {
			var held []int
			for _, wk := range wks {
				held = append(held, len(wk.Worlds()))
			}
			b.Fatalf("the worlds were not shared out within 60s (%v held)", held)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, name := range names {
		for {
			h, err := s.Journal().Head(ctx, name)
			if err != nil {
				b.Fatal(err)
			}
			if h.Seq > 0 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	total := benchWorlds * benchPerWorld
	c0 := commits.Load()
	cpu0, srv0 := cpuTime(), srv.CPU()
	b.StartTimer()
	t0 := time.Now()
	// Every message at once, as clients would post them.
	if _, err := s.Pool().Exec(ctx, `INSERT INTO inbox (world, manifest, schema, value)
		SELECT w, $2, 'bench/Start@1', convert_to('{"n": ' || n || '}', 'UTF8')
		FROM unnest($1::text[]) AS w, generate_series(1, $3) AS n ORDER BY n, w`, names, digest(cat.ManifestRef()), benchPerWorld); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `SELECT pg_notify('demiurge:public', w) FROM unnest($1::text[]) AS w`, names); err != nil {
		b.Fatal(err)
	}
	// The workers are in this process: their worlds count the plans
	// that end (the journal says the same, checked after).
	for ended.Load() < int64(total) {
		if time.Since(t0) > 5*time.Minute {
			b.Fatalf("%d of %d workflows ended after 5 minutes", ended.Load(), total)
		}
		time.Sleep(2 * time.Millisecond)
	}
	elapsed := time.Since(t0)
	b.StopTimer()
	cpu, srvCPU := cpuTime()-cpu0, srv.CPU()-srv0
	c1 := commits.Load()
	var n int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM journal_records WHERE kind = 'PlanEnded'`).Scan(&n); err != nil || n != total {
		b.Fatalf("the journals hold %d ended plans, %v; want %d", n, err, total)
	}
	b.ReportMetric(float64(total)/elapsed.Seconds(), "workflows/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(total)/1000, "go-cpu-ms/workflow")
	b.ReportMetric(float64(srvCPU.Microseconds())/float64(total)/1000, "pg-cpu-ms/workflow")
	b.ReportMetric(float64(c1-c0)/float64(total), "commits/workflow")
	b.ReportMetric(float64(c1-c0)/elapsed.Seconds(), "commits/s")
	b.ReportMetric((cpu+srvCPU).Seconds()/elapsed.Seconds(), "cores-busy")
}

func digest(r interface{ Digest() [32]byte }) []byte {
	d := r.Digest()
	return d[:]
}

func benchBolt(b *testing.B) {
	b.StopTimer()
	ctx := context.Background()
	dir := b.TempDir()
	st, err := store.Open(filepath.Join(dir, "store"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	storage, err := world.NewBoltStorage(st.CAS(), st.Journal())
	if err != nil {
		b.Fatal(err)
	}
	cat := loadBench(b)
	var mu sync.Mutex
	ended := 0
	done := make(chan struct{})
	total := benchWorlds * benchPerWorld
	var ws []*world.World
	for i := range benchWorlds {
		w, err := world.Open(ctx, world.Options{Name: fmt.Sprintf("w%02d", i), Catalog: cat, Reducers: reducer.NewRegistry(), Storage: storage,
			Adapters: map[string]effects.Adapter{"bench.noop": effects.AdapterFunc(noop)},
			OnCommit: func(recs []journal.Record) {
				k := 0
				for _, r := range recs {
					if r.Kind == world.KindPlanEnded {
						k++
					}
				}
				if k == 0 {
					return
				}
				mu.Lock()
				ended += k
				if ended == total {
					close(done)
				}
				mu.Unlock()
			}})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		ws = append(ws, w)
	}
	cpu0 := cpuTime()
	b.StartTimer()
	t0 := time.Now()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() {
			for n := range benchPerWorld {
				if _, err := w.SendJSON(ctx, "bench/Start@1", fmt.Appendf(nil, `{"n": %d}`, n+1)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	<-done
	elapsed := time.Since(t0)
	b.StopTimer()
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(total)/elapsed.Seconds(), "workflows/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(total)/1000, "go-cpu-ms/workflow")
	b.ReportMetric(cpu.Seconds()/elapsed.Seconds(), "cores-busy")
}

// BenchmarkTakeover kills the worker process that runs a world (SIGKILL)
// and measures how long until a message posted at that moment is
// journaled by another worker process: the lease running out, the other
// worker's acquire, the world's recovery from its journal and the
// message's commit. Two workers (plus one started after each kill),
// DefaultLease. Metrics: p50 and max over the iterations; run it with
// -benchtime=Nx. For comparison, bolt-reopen-ms is how long reopening
// the same world from a bbolt file takes in a new process's place (there
// is no other worker to take over: until something restarts the process,
// the world is down).
func BenchmarkTakeover(b *testing.B) {
	srv := pgtest.Shared(b)
	ctx := context.Background()
	u, err := srv.NewDatabase(ctx)
	if err != nil {
		b.Fatal(err)
	}
	s := openStore(b, u)
	cat := loadBench(b)
	c := newCluster(b, u)
	startProc := c.start
	startProc()
	startProc()
	r, err := cluster.Attach(ctx, cluster.RemoteOptions{Store: s, Name: "t", Catalog: cat, Reducers: reducer.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := r.SendJSON(ctx, "bench/Start@1", []byte(`{"n": 0}`)); err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	n := 0
	for b.Loop() {
		n++
		infos, err := s.Worlds(ctx)
		if err != nil {
			b.Fatal(err)
		}
		var victim *proc
		for _, p := range c.procs {
			if p.cmd.ProcessState == nil && p.id == infos[0].Owner {
				victim = p
			}
		}
		if victim == nil {
			b.Fatalf("no live worker process owns world t (%q)", infos[0].Owner)
		}
		_ = victim.cmd.Process.Signal(syscall.SIGKILL)
		t0 := time.Now()
		id, err := s.Post(ctx, "t", cat.ManifestRef(), "bench/Start@1", fmt.Appendf(nil, `{"n": %d}`, n))
		if err != nil {
			b.Fatal(err)
		}
		for {
			m, err := s.Message(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			if m.Seq > 0 {
				break
			}
			if time.Since(t0) > time.Minute {
				b.Fatal("no takeover within a minute")
			}
			time.Sleep(2 * time.Millisecond)
		}
		lat = append(lat, time.Since(t0))
		_ = victim.cmd.Wait()
		b.StopTimer()
		startProc()
		time.Sleep(300 * time.Millisecond) // the new worker settles
		b.StartTimer()
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "takeover-p50-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "takeover-max-ms")
	b.ReportMetric(float64(cluster.DefaultLease.Milliseconds()), "lease-ms")
	// bbolt: reopen the world from its file, as a restarted process would.
	dir := b.TempDir()
	st, err := store.Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	storage, _ := world.NewBoltStorage(st.CAS(), st.Journal())
	w, err := world.Open(ctx, world.Options{Name: "t", Catalog: cat, Reducers: reducer.NewRegistry(), Storage: storage,
		Adapters: map[string]effects.Adapter{"bench.noop": effects.AdapterFunc(noop)}})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n + 1 {
		if _, err := w.SendJSON(ctx, "bench/Start@1", fmt.Appendf(nil, `{"n": %d}`, i)); err != nil {
			b.Fatal(err)
		}
	}
	_ = w.WaitIdle(ctx)
	w.Close()
	st.Close()
	t0 := time.Now()
	st, err = store.Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	storage, _ = world.NewBoltStorage(st.CAS(), st.Journal())
	w, err = world.Open(ctx, world.Options{Name: "t", Catalog: cat, Reducers: reducer.NewRegistry(), Storage: storage,
		Adapters: map[string]effects.Adapter{"bench.noop": effects.AdapterFunc(noop)}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := w.SendJSON(ctx, "bench/Start@1", []byte(`{"n": 999}`)); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(time.Since(t0).Microseconds())/1000, "bolt-reopen-ms")
	w.Close()
	st.Close()
}
