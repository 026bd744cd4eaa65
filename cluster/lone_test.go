package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cluster"
	"github.com/demiurge-dev/demiurge/internal/pgtest"
	"github.com/demiurge-dev/demiurge/reducer"
)

// tookAgain matches a worker taking a world (again).
var tookAgain = regexp.MustCompile(`took world .*token=([2-9]|\d\d)`)

// TestLoneWorkerPaused: a worker alone, paused (SIGSTOP) past its lease
// while effects are in flight, then resumed, finds its lease expired but
// nobody else's: it renews it in place and goes on, its effects in flight
// untouched. Before, it took its own world over (a new token), reopened
// it and dispatched its effects in flight again: a model call was sent
// twice.
func TestLoneWorkerPaused(t *testing.T) {
	url := pgtest.URL(t)
	s := openStore(t, url)
	cat := loadBench(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c := newCluster(t, url, "TW_LEASE=1s", "TW_SLOW=3s")
	wk := c.start()
	r, err := cluster.Attach(ctx, cluster.RemoteOptions{Store: s, Name: "stall1", Catalog: cat, Reducers: reducer.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.SendJSON(ctx, "bench/Start@1", []byte(`{"n": 1}`)); err != nil {
		t.Fatal(err)
	}
	// Pause the worker while its first effect runs.
	for len(c.runs()) == 0 {
		if ctx.Err() != nil {
			t.Fatal("no effect ever ran")
		}
		time.Sleep(10 * time.Millisecond)
	}
	wk.signal(t, syscall.SIGSTOP)
	time.Sleep(2500 * time.Millisecond)
	if info := owners(t, s)["stall1"]; info.Owner != wk.id || !info.Expires.Before(time.Now()) {
		t.Fatalf("during the pause the world is held by %q until %v; want %s's lease expired", info.Owner, info.Expires, wk.id)
	}
	wk.signal(t, syscall.SIGCONT)
	if err := r.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	c.stopAll()
	checkOnce(t, c)
	if info := owners(t, s)["stall1"]; info.Token != 1 {
		t.Errorf("the world's token is %d; want 1 (never taken again)", info.Token)
	}
	if m := tookAgain.FindString(wk.stderr()); m != "" {
		t.Errorf("the worker took its own world again (%s):\n%s", m, tail(wk.stderr(), 3000))
	}
	audit(t, s, cat, "stall1")
	checkOneWriter(t, c.commits())
}

// TestLoneWorkerStarved: a worker alone with many worlds, starved of CPU
// again and again past its lease while effects are in flight (as on a
// loaded machine; here by SIGSTOP and SIGCONT, so that it happens every
// time), keeps its worlds under their first tokens and runs every effect
// once. Before, each time its leases lapsed it took its own worlds again,
// dispatching their effects in flight again.
func TestLoneWorkerStarved(t *testing.T) {
	if testing.Short() {
		t.Skip("stalls a worker for 10s")
	}
	url := pgtest.URL(t)
	s := openStore(t, url)
	cat := loadBench(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	c := newCluster(t, url, "TW_SLOW=400ms", "TW_LEASE=500ms")
	wk := c.start()
	worlds := worldNames(11)
	cctx, stopClients := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, name := range worlds {
		wg.Go(func() {
			r, err := cluster.Attach(cctx, cluster.RemoteOptions{Store: s, Name: name, Catalog: cat, Reducers: reducer.NewRegistry()})
			if err != nil {
				t.Errorf("attach %s: %v", name, err)
				return
			}
			for n := uint64(1); cctx.Err() == nil; n++ {
				if _, err := r.SendJSON(cctx, "bench/Start@1", fmt.Appendf(nil, `{"n": %d}`, n)); err != nil {
					if cctx.Err() == nil {
						t.Errorf("send to %s: %v", name, err)
					}
					return
				}
				select {
				case <-time.After(300 * time.Millisecond):
				case <-cctx.Done():
				}
			}
		})
	}
	// Starve the worker: stalls of 1.5 leases, 1s apart.
	for range 5 {
		time.Sleep(time.Second)
		wk.signal(t, syscall.SIGSTOP)
		time.Sleep(750 * time.Millisecond)
		wk.signal(t, syscall.SIGCONT)
	}
	time.Sleep(time.Second)
	stopClients()
	wg.Wait()
	waitIdle(ctx, t, s, cat, worlds)
	c.stopAll()
	checkOnce(t, c)
	for w, info := range owners(t, s) {
		if info.Token != 1 {
			t.Errorf("world %s: token %d; want 1 (a lone worker never takes its own world again)", w, info.Token)
		}
	}
	if m := tookAgain.FindString(wk.stderr()); m != "" {
		t.Errorf("the worker took its own world again (%s):\n%s", m, tail(wk.stderr(), 3000))
	}
	checkOneWriter(t, c.commits())
}

// checkOnce checks that every effect the cluster's workers ran ran once.
func checkOnce(t *testing.T, c *testCluster) {
	t.Helper()
	twice := 0
	runs := c.runs()
	for intent, n := range runs {
		if n != 1 {
			twice++
			if twice <= 10 {
				t.Errorf("effect %s ran %d times; want once", intent, n)
			}
		}
	}
	t.Logf("%d effects ran, %d of them more than once", len(runs), twice)
}

// TestLeaseLostOnCommit: a world whose commit finds its lease taken (its
// worker renews too seldom to notice first) stops and is forgotten, its
// goroutine ended. Before, it dropped itself from the worker by waiting
// for its own end, in its own goroutine: that goroutine never ended.
func TestLeaseLostOnCommit(t *testing.T) {
	url := pgtest.URL(t)
	s := openStore(t, url)
	cat := loadBench(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	wk, err := cluster.New(cluster.Options{Store: s, Reducers: reducer.NewRegistry(), Open: benchOpen, ID: "slow-renewer",
		Lease: 300 * time.Millisecond, Renew: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- wk.Run(wctx) }()
	defer func() { stop(); <-done }()
	r, err := cluster.Attach(ctx, cluster.RemoteOptions{Store: s, Name: "ll", Catalog: cat, Reducers: reducer.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.SendJSON(ctx, "bench/Start@1", []byte(`{"n": 1}`)); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond) // the lease expires: nothing renews it
	if l, err := s.AcquireExpired(ctx, "thief", 1, time.Hour, nil); err != nil || len(l) != 1 {
		t.Fatalf("the thief's AcquireExpired = %+v, %v", l, err)
	}
	if _, err := s.Post(ctx, "ll", cat.ManifestRef(), "bench/Start@1", []byte(`{"n": 2}`)); err != nil {
		t.Fatal(err)
	}
	for len(wk.Worlds()) != 0 {
		if ctx.Err() != nil {
			t.Fatal("the worker never let the world go")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var stuck string
	for range 50 { // its goroutine ends within a second
		var b bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
		if stuck = stuckIn(b.String(), "cluster.(*held).stop", "cluster.(*held).run"); stuck == "" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the world's goroutine waits on itself:\n%s", stuck)
}

// stuckIn returns the goroutine of dump whose stack holds both frames.
func stuckIn(dump, inner, outer string) string {
	for g := range strings.SplitSeq(dump, "\n\n") {
		if strings.Contains(g, inner) && strings.Contains(g, outer) {
			return g
		}
	}
	return ""
}
