package cluster_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cluster"
	"github.com/demiurge-dev/demiurge/internal/pgtest"
	"github.com/demiurge-dev/demiurge/reducer"
)

// TestHandover: workers join and leave (SIGTERM, no crash) while every
// world has slow effects in flight. A world moves only when its worker
// hands it over, once the effects it has in flight are answered (the
// intents their receipts emit wait in the journal for the next owner), so
// every effect runs exactly once: a joining worker took worlds whose
// effects were running and ran them again (9 of 12 slow MCP calls ran 2
// or 3 times), and a worker that left cut its effects short. No world
// goes back to a worker it left, and nothing acknowledged is lost.
func TestHandover(t *testing.T) {
	url := pgtest.URL(t)
	s := openStore(t, url)
	cat := loadBench(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	// Leases long enough that a busy machine renews them in time: a lease
	// lost to a late renewal is a worker gone, whose effects run again.
	c := newCluster(t, url, "TW_LEASE=2s", "TW_RENEW=300ms", "TW_SLOW=700ms", "TW_HANDOVER=20s")
	worlds := worldNames(12)
	first := c.start()

	// Clients: each world gets a workflow (5 slow effects at once) every
	// second or so.
	cctx, stopClients := context.WithCancel(ctx)
	var mu sync.Mutex
	var acks []acked
	var wg sync.WaitGroup
	for i, name := range worlds {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			r, err := cluster.Attach(cctx, cluster.RemoteOptions{Store: s, Name: name, Catalog: cat, Reducers: reducer.NewRegistry()})
			if err != nil {
				t.Errorf("attach %s: %v", name, err)
				return
			}
			for n := uint64(1); cctx.Err() == nil; n++ {
				h, err := r.SendJSON(cctx, "bench/Start@1", fmt.Appendf(nil, `{"n": %d}`, n))
				if err != nil {
					if cctx.Err() == nil {
						t.Errorf("send to %s: %v", name, err)
					}
					return
				}
				mu.Lock()
				acks = append(acks, acked{name, n, h.Seq})
				mu.Unlock()
				select {
				case <-time.After(time.Duration(500+rng.IntN(800)) * time.Millisecond):
				case <-cctx.Done():
				}
			}
		})
	}
	// Who holds each world, as it changes.
	held := map[string][]string{}
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for watchCtx.Err() == nil {
			for w, info := range owners(t, s) {
				if h := held[w]; info.Owner != "" && (len(h) == 0 || h[len(h)-1] != info.Owner) {
					held[w] = append(h, info.Owner)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	waitHeld := func(what string, ok func(byOwner map[string]int) bool) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); ; {
			by := map[string]int{}
			for _, w := range owners(t, s) {
				by[w.Owner]++
			}
			if ok(by) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: after 60s the worlds are held %v", what, by)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	leave := func(p *proc) {
		t.Helper()
		p.signal(t, syscall.SIGTERM)
		exited := make(chan error, 1)
		go func() { exited <- p.cmd.Wait() }()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("%s exited with %v", p.id, err)
			}
		case <-time.After(40 * time.Second):
			t.Fatalf("%s did not stop within 40s of SIGTERM", p.id)
		}
	}

	waitHeld("the first worker", func(by map[string]int) bool { return by[first.id] == len(worlds) })
	time.Sleep(1500 * time.Millisecond)
	second := c.start() // joins while effects run in every world
	waitHeld("a worker joined", func(by map[string]int) bool { return by[second.id] >= 4 && by[""] == 0 })
	time.Sleep(1500 * time.Millisecond)
	leave(first) // leaves while its effects run
	waitHeld("a worker left", func(by map[string]int) bool { return by[second.id] == len(worlds) })
	third := c.start()
	waitHeld("another joined", func(by map[string]int) bool { return by[third.id] >= 4 && by[""] == 0 })
	time.Sleep(1500 * time.Millisecond)
	leave(second)
	waitHeld("the last worker", func(by map[string]int) bool { return by[third.id] == len(worlds) })
	time.Sleep(time.Second)

	stopClients()
	wg.Wait()
	waitIdle(ctx, t, s, cat, worlds)
	stopWatch()
	<-watched
	c.stopAll()

	runs := c.runs()
	twice := 0
	for intent, n := range runs {
		if n != 1 {
			twice++
			if twice <= 10 {
				t.Errorf("effect %s ran %d times; want once", intent, n)
			}
		}
	}
	t.Logf("%d effects ran, %d of them more than once; %d messages acknowledged", len(runs), twice, len(acks))
	events := map[string]map[uint64]uint64{}
	for _, w := range worlds {
		events[w] = audit(t, s, cat, w)
	}
	checkAcked(t, acks, events)
	checkOneWriter(t, c.commits())
	for w, h := range held {
		seen := map[string]bool{}
		for _, o := range h {
			if seen[o] {
				t.Errorf("world %s went back to a worker it had left: held by %s", w, strings.Join(h, " → "))
				break
			}
			seen[o] = true
		}
	}
	if !hasLine(first.stderr(), "handed world over") || !hasLine(second.stderr(), "handed world over") {
		t.Errorf("the workers did not say they handed worlds over:\n%s\n%s", tail(first.stderr(), 2000), tail(second.stderr(), 2000))
	}
}
