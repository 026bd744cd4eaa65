package cluster_test

import (
	"context"
	"math/rand/v2"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cluster"
	"github.com/demiurge-dev/demiurge/internal/pgtest"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/world"
)

// TestFailover runs worker processes over one database and many worlds
// that clients keep sending workflows, and kills a worker with SIGKILL at
// random points, starting a new one each time. Every world of a killed
// worker must be taken over within the lease plus one renewal period; at
// the end, no acknowledged message is lost, no receipt is journaled
// twice, no world was written under an old lease after a newer one, and
// every world replays byte for byte.
//
// By default (and with -short) it runs 3 workers, 12 worlds and 6 kills;
// DEMIURGE_FAILOVER_KILLS, _WORLDS and _WORKERS set the size (the full
// run of the issue: 30 kills, 50 worlds, 3 workers).
func TestFailover(t *testing.T) {
	kills := envInt("DEMIURGE_FAILOVER_KILLS", 6)
	nWorlds := envInt("DEMIURGE_FAILOVER_WORLDS", 12)
	nWorkers := envInt("DEMIURGE_FAILOVER_WORKERS", 3)
	url := pgtest.URL(t)
	s := openStore(t, url)
	cat := loadBench(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	lease, renew := cluster.DefaultLease, cluster.DefaultLease/3
	c := newCluster(t, url)
	for range nWorkers {
		c.start()
	}
	worlds := worldNames(nWorlds)
	stopClients := runClients(ctx, t, s, cat, worlds)
	defer stopClients()
	// Wait until every world is held.
	for deadline := time.Now().Add(30 * time.Second); ; {
		held := 0
		for _, w := range owners(t, s) {
			if w.Owner != "" {
				held++
			}
		}
		if held == nWorlds {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s, %d of %d worlds are held", held, nWorlds)
		}
		time.Sleep(20 * time.Millisecond)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	var takeovers []time.Duration
	for k := range kills {
		time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		// A live worker that holds worlds.
		before := owners(t, s)
		live := map[string]*proc{}
		for _, p := range c.procs {
			if p.cmd.ProcessState == nil {
				live[p.id] = p
			}
		}
		var victim *proc
		var lost []string
		for _, w := range worlds {
			if p := live[before[w].Owner]; p != nil && (victim == nil || victim == p) {
				victim = p
				lost = append(lost, w)
			}
		}
		if victim == nil {
			t.Fatalf("kill %d: no live worker holds a world", k)
		}
		victim.signal(t, syscall.SIGKILL)
		killed := time.Now()
		_ = victim.cmd.Wait()
		c.start() // keep the number of workers
		// Every world of the victim gets a new lease.
		pending := map[string]int64{}
		for _, w := range lost {
			pending[w] = before[w].Token
		}
		for len(pending) > 0 {
			now := owners(t, s)
			for w, tok := range pending {
				if i := now[w]; i.Token > tok && i.Owner != "" {
					takeovers = append(takeovers, time.Since(killed))
					delete(pending, w)
				}
			}
			if time.Since(killed) > 30*time.Second {
				t.Fatalf("kill %d: worlds %v not taken over after 30s", k, pending)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	acks := stopClients()
	waitIdle(ctx, t, s, cat, worlds)
	c.stopAll()
	events := map[string]map[uint64]uint64{}
	for _, w := range worlds {
		events[w] = audit(t, s, cat, w)
	}
	checkAcked(t, acks, events)
	checkOneWriter(t, c.commits())
	sort.Slice(takeovers, func(i, j int) bool { return takeovers[i] < takeovers[j] })
	if len(takeovers) == 0 {
		t.Fatal("no takeover measured")
	}
	p50, max := takeovers[len(takeovers)/2], takeovers[len(takeovers)-1]
	t.Logf("%d kills, %d worlds taken over: takeover after kill -9 p50 %v, max %v (lease %v, renewal every %v); %d messages acknowledged",
		kills, len(takeovers), p50.Round(time.Millisecond), max.Round(time.Millisecond), lease, renew, len(acks))
	// Polling the leases every 5 ms adds to what is measured; a loaded
	// machine (2 cores, other tests) delays the new owner's acquire.
	if bound := lease + renew; max > bound+250*time.Millisecond {
		t.Errorf("a world was taken over %v after its owner died; want within the lease plus one renewal period, %v", max, bound)
	}
	if len(acks) == 0 {
		t.Error("no message was acknowledged")
	}
}

// TestFencing pauses a worker (SIGSTOP) with an effect in flight past its
// lease, lets another worker take its world over and finish the workflow,
// then resumes it (SIGCONT): the paused worker's effect ends and its
// receipt's commit is refused by the database (its lease token is old),
// so nothing it did after the takeover reaches the journal.
func TestFencing(t *testing.T) {
	url := pgtest.URL(t)
	s := openStore(t, url)
	cat := loadBench(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c := newCluster(t, url, "TW_LEASE=1s")
	// The zombie: its effects take 2s, and it renews its lease only every
	// 10s, so that when it wakes it commits before it renews.
	zombie := c.start("TW_SLOW=2s", "TW_RENEW=10s")
	r, err := cluster.Attach(ctx, cluster.RemoteOptions{Store: s, Name: "f", Catalog: cat, Reducers: reducer.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.SendJSON(ctx, "bench/Start@1", []byte(`{"n": 1}`)); err != nil {
		t.Fatal(err)
	}
	// The zombie journaled the event and the first intent; its effect is
	// in flight.
	if owner := owners(t, s)["f"].Owner; owner != zombie.id {
		t.Fatalf("world f is held by %q; want %s", owner, zombie.id)
	}
	zombie.signal(t, syscall.SIGSTOP)
	paused := time.Now()
	time.Sleep(100 * time.Millisecond) // a commit the server was running ends
	atPause, err := s.Journal().Head(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	heir := c.start()
	if err := r.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if owner := owners(t, s)["f"].Owner; owner != heir.id {
		t.Fatalf("world f is held by %q; want %s", owner, heir.id)
	}
	t.Logf("taken over and finished %v after the pause", time.Since(paused).Round(time.Millisecond))
	head := r.Head()
	zombie.signal(t, syscall.SIGCONT)
	for !hasLine(zombie.stderr(), "lease lost") {
		if ctx.Err() != nil {
			t.Fatalf("the resumed worker never reported its lease lost:\n%s", zombie.stderr())
		}
		time.Sleep(10 * time.Millisecond)
	}
	out := zombie.stderr()
	if !hasLine(out, "lease lost: held by \\\"worker-2\\\"") && !hasLine(out, `lease lost: held by "worker-2"`) {
		t.Errorf("the resumed worker stopped, but not on a refused commit:\n%s", out)
	}
	time.Sleep(300 * time.Millisecond)
	if h, _ := s.Journal().Head(ctx, "f"); h != head {
		t.Errorf("the journal moved from %v to %v after the zombie woke", head, h)
	}
	c.stopAll()
	audit(t, s, cat, "f")
	cs := c.commits()
	checkOneWriter(t, cs)
	for _, cm := range cs {
		if cm.token == 1 && cm.last > atPause.Seq {
			t.Errorf("the zombie committed seqs %d-%d, after it was paused at seq %d", cm.first, cm.last, atPause.Seq)
		}
	}
	if _, err := world.Rerun(ctx, world.RerunOptions{Name: "f", Catalog: cat, Reducers: reducer.NewRegistry(), Storage: s.Storage(), FromGenesis: true}); err != nil {
		t.Fatal(err)
	}
}

// TestDatabaseRestart restarts the database server (an immediate
// shutdown, as a crash, then a start) twice while workers run worlds
// that clients keep sending workflows: the workers reconnect and carry
// on, nothing acknowledged is lost, and every world replays.
func TestDatabaseRestart(t *testing.T) {
	srv, err := pgtest.Start(nil)
	if err != nil {
		pgtest.Unavailable(t, err)
	}
	defer srv.Close()
	url, err := srv.NewDatabase(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s := openStore(t, url)
	cat := loadBench(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	c := newCluster(t, url)
	c.start()
	c.start()
	worlds := worldNames(8)
	stopClients := runClients(ctx, t, s, cat, worlds)
	defer stopClients()
	count := func() int {
		n := 0
		for _, w := range worlds {
			h, err := s.Journal().Head(ctx, w)
			if err == nil {
				n += int(h.Seq)
			}
		}
		return n
	}
	for round := range 2 {
		time.Sleep(time.Second)
		before := count()
		if err := srv.Crash(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		// The workers carry on: the journals grow again.
		for deadline := time.Now().Add(30 * time.Second); count() <= before+20; {
			if time.Now().After(deadline) {
				t.Fatalf("restart %d: the worlds did not move on within 30s of the restart (%d records before, %d now)", round, before, count())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	acks := stopClients()
	waitIdle(ctx, t, s, cat, worlds)
	c.stopAll()
	events := map[string]map[uint64]uint64{}
	for _, w := range worlds {
		events[w] = audit(t, s, cat, w)
	}
	checkAcked(t, acks, events)
	checkOneWriter(t, c.commits())
	t.Logf("%d messages acknowledged across two restarts", len(acks))
	_ = journal.Head{}
}
