package cluster_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cluster"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/pgstore"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// The test binary is a worker process when workerEnv is set: it runs the
// bench5 worlds of the store at $TW_URL and appends a line to $TW_LOG for
// every commit of a world ("commit WORLD FIRST LAST TOKEN"), written
// once the commit is durable, and for every run of an effect as it starts
// ("run WORLD INTENT").
const workerEnv = "DEMIURGE_CLUSTER_TEST_WORKER"

func workerProcess() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dur := func(k string) time.Duration {
		d, _ := time.ParseDuration(os.Getenv(k))
		return d
	}
	s, err := pgstore.Open(ctx, os.Getenv("TW_URL"), nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	logf, err := os.OpenFile(os.Getenv("TW_LOG"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	slow := dur("TW_SLOW")
	adapter := func(name string) effects.Adapter {
		return effects.AdapterFunc(func(ctx context.Context, c *effects.Call) effects.Receipt {
			fmt.Fprintf(logf, "run %s %s\n", name, c.Intent.Hash)
			if slow > 0 {
				select {
				case <-time.After(slow):
				case <-ctx.Done():
				}
			}
			return effects.OK("noop", schema.Record("ok", true))
		})
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	wk, err := cluster.New(cluster.Options{Store: s, Reducers: reducer.NewRegistry(), ID: os.Getenv("TW_ID"),
		Lease: dur("TW_LEASE"), Renew: dur("TW_RENEW"), Handover: dur("TW_HANDOVER"), Logger: log,
		Open: func(ctx context.Context, env cluster.Env) (*cluster.Runtime, error) {
			return &cluster.Runtime{Options: world.Options{
				Adapters: map[string]effects.Adapter{"bench.noop": adapter(env.Name)},
				OnCommit: func(recs []journal.Record) {
					fmt.Fprintf(logf, "commit %s %d %d %d\n", env.Name, recs[0].Seq, recs[len(recs)-1].Seq, env.Lease.Token)
				},
			}}, nil
		}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "worker %s up\n", wk.ID())
	if err := wk.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// proc is a worker process.
type proc struct {
	id  string
	cmd *exec.Cmd
	mu  sync.Mutex
	out bytes.Buffer
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *proc) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v to worker %s: %v", sig, p.id, err)
	}
}

// cluster is the worker processes of one test and their commit log.
type testCluster struct {
	t     testing.TB
	url   string
	log   string // the commit log all workers append to
	env   []string
	next  int
	procs []*proc
}

func newCluster(t testing.TB, url string, env ...string) *testCluster {
	return &testCluster{t: t, url: url, log: t.TempDir() + "/commits.log", env: env}
}

// start starts a worker process with env added to the cluster's.
func (c *testCluster) start(env ...string) *proc {
	c.t.Helper()
	c.next++
	p := &proc{id: fmt.Sprintf("worker-%d", c.next)}
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	p.cmd.Env = append(os.Environ(), workerEnv+"=1", "TW_URL="+c.url, "TW_LOG="+c.log, "TW_ID="+p.id)
	p.cmd.Env = append(append(p.cmd.Env, c.env...), env...)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.procs = append(c.procs, p)
	c.t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		if c.t.Failed() {
			c.t.Logf("%s:\n%s", p.id, tail(p.stderr(), 3000))
		}
	})
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// stopAll stops the workers cleanly (SIGTERM) and waits for them.
func (c *testCluster) stopAll() {
	for _, p := range c.procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range c.procs {
		_ = p.cmd.Wait()
	}
}

// commit is a line of the commit log.
type commit struct {
	world       string
	first, last uint64
	token       int64
}

func (c *testCluster) commits() []commit {
	c.t.Helper()
	f, err := os.Open(c.log)
	if err != nil {
		c.t.Fatal(err)
	}
	defer f.Close()
	var out []commit
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if !strings.HasPrefix(sc.Text(), "commit ") {
			continue
		}
		var cm commit
		if _, err := fmt.Sscanf(sc.Text(), "commit %s %d %d %d", &cm.world, &cm.first, &cm.last, &cm.token); err != nil {
			c.t.Fatalf("commit log line %q: %v", sc.Text(), err)
		}
		out = append(out, cm)
	}
	return out
}

// runs returns how many times each effect ran, by world and intent.
func (c *testCluster) runs() map[string]int {
	c.t.Helper()
	b, err := os.ReadFile(c.log)
	if err != nil {
		c.t.Fatal(err)
	}
	out := map[string]int{}
	for line := range strings.Lines(string(b)) {
		if w, ok := strings.CutPrefix(strings.TrimSpace(line), "run "); ok {
			out[w]++
		}
	}
	return out
}

// checkOneWriter checks that the commits of each world were made under
// non-decreasing lease tokens, in seq order, without overlap: no commit
// under an old lease came after one under a newer lease, so no two
// workers ever appended to a world in turns.
func checkOneWriter(t *testing.T, cs []commit) {
	t.Helper()
	byWorld := map[string][]commit{}
	for _, c := range cs {
		byWorld[c.world] = append(byWorld[c.world], c)
	}
	for w, l := range byWorld {
		sort.Slice(l, func(i, j int) bool { return l[i].first < l[j].first })
		for i := 1; i < len(l); i++ {
			if l[i].first <= l[i-1].last {
				t.Errorf("world %s: commits of seqs %d-%d (token %d) and %d-%d (token %d) overlap", w, l[i-1].first, l[i-1].last, l[i-1].token, l[i].first, l[i].last, l[i].token)
			}
			if l[i].token < l[i-1].token {
				t.Errorf("world %s: seqs %d-%d committed under token %d after seqs %d-%d under token %d: two writers", w, l[i].first, l[i].last, l[i].token, l[i-1].first, l[i-1].last, l[i-1].token)
			}
		}
	}
}

// audit checks a world's journal: every event journaled once, every
// intent with exactly one receipt, every workflow ended, the chain sound,
// and a replay from genesis deriving every record byte for byte. It
// returns the n of each journaled Start event by seq.
func audit(t *testing.T, s *pgstore.Store, cat *schema.Catalog, name string) map[uint64]uint64 {
	t.Helper()
	ctx := context.Background()
	events := map[uint64]uint64{}
	seen := map[uint64]uint64{}
	intents := map[cas.Ref]int{}
	receipts := map[cas.Ref]int{}
	ends := 0
	err := s.Journal().Read(ctx, name, 1, func(r journal.Record) error {
		switch r.Kind {
		case world.KindEvent:
			in, err := world.DecodeInput(r)
			if err != nil {
				return err
			}
			n, _ := in.Value.(*schema.Map).Get("n")
			nv := n.(uint64)
			if prev, dup := seen[nv]; dup {
				t.Errorf("world %s: event n=%d journaled twice, at seqs %d and %d", name, nv, prev, r.Seq)
			}
			seen[nv] = r.Seq
			events[r.Seq] = nv
		case world.KindIntent:
			v, _ := schema.Decode(r.Payload)
			iv, _ := v.(*schema.Map).Get("intent")
			intents[cas.MustParseRef(iv.(string))]++
		case world.KindReceipt:
			in, err := world.DecodeInput(r)
			if err != nil {
				return err
			}
			receipts[in.Intent]++
		case world.KindPlanEnded:
			ends++
		}
		return nil
	})
	if err != nil {
		t.Fatalf("world %s: %v", name, err)
	}
	for ref, n := range receipts {
		if n > 1 {
			t.Errorf("world %s: intent %s has %d receipts", name, ref.Short(), n)
		}
		if intents[ref] == 0 {
			t.Errorf("world %s: a receipt of intent %s, which was never journaled", name, ref.Short())
		}
	}
	for ref := range intents {
		if receipts[ref] == 0 {
			t.Errorf("world %s: intent %s has no receipt", name, ref.Short())
		}
	}
	if ends != len(events) {
		t.Errorf("world %s: %d workflows started, %d ended", name, len(events), ends)
	}
	if _, err := journal.Verify(ctx, s.Journal(), name); err != nil {
		t.Errorf("world %s: %v", name, err)
	}
	if _, err := world.Rerun(ctx, world.RerunOptions{Name: name, Catalog: cat, Reducers: reducer.NewRegistry(), Storage: s.Storage(), FromGenesis: true}); err != nil {
		t.Errorf("world %s does not replay: %v", name, err)
	}
	return events
}

// acked is a message a client saw journaled: the event n of world became
// the record at seq.
type acked struct {
	world string
	n     uint64
	seq   uint64
}

// clients send Start events to worlds, each world's client one at a
// time, until stop; they note the messages acknowledged (journaled).
func runClients(ctx context.Context, t *testing.T, s *pgstore.Store, cat *schema.Catalog, worlds []string) (stop func() []acked) {
	cctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	var acks []acked
	var wg sync.WaitGroup
	for _, name := range worlds {
		wg.Go(func() {
			var r *cluster.Remote
			for n := uint64(1); cctx.Err() == nil; n++ {
				if r == nil {
					var err error
					if r, err = cluster.Attach(cctx, cluster.RemoteOptions{Store: s, Name: name, Catalog: cat, Reducers: reducer.NewRegistry()}); err != nil {
						time.Sleep(50 * time.Millisecond)
						continue
					}
				}
				h, err := r.SendJSON(cctx, "bench/Start@1", fmt.Appendf(nil, `{"n": %d}`, n))
				if err != nil {
					// Not acknowledged (the database may be restarting):
					// the next message gets another n.
					time.Sleep(20 * time.Millisecond)
					continue
				}
				mu.Lock()
				acks = append(acks, acked{name, n, h.Seq})
				mu.Unlock()
			}
		})
	}
	return func() []acked {
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return acks
	}
}

// checkAcked checks that every acknowledged message is in its world's
// journal where the client was told it is.
func checkAcked(t *testing.T, acks []acked, events map[string]map[uint64]uint64) {
	t.Helper()
	for _, a := range acks {
		ev := events[a.world]
		// SendJSON returns the head it read up to: the event is at or
		// before it.
		found := false
		for seq, n := range ev {
			if n == a.n && seq <= a.seq {
				found = true
			}
		}
		if !found {
			t.Errorf("world %s: acknowledged message n=%d (head %d) is not in the journal", a.world, a.n, a.seq)
		}
	}
}

// waitIdle waits until every world's workflows have ended.
func waitIdle(ctx context.Context, t *testing.T, s *pgstore.Store, cat *schema.Catalog, worlds []string) {
	t.Helper()
	for _, name := range worlds {
		r, err := cluster.Attach(ctx, cluster.RemoteOptions{Store: s, Name: name, Catalog: cat, Reducers: reducer.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		for {
			if err := r.WaitIdle(ctx); err != nil {
				t.Fatalf("world %s never became idle: %v", name, err)
			}
			w, err := s.Waiting(ctx, name, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(w) == 0 {
				break
			}
			time.Sleep(20 * time.Millisecond) // messages posted but not journaled yet
		}
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// owners returns who holds each world now, and its token.
func owners(t *testing.T, s *pgstore.Store) map[string]pgstore.WorldInfo {
	t.Helper()
	ws, err := s.Worlds(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]pgstore.WorldInfo{}
	for _, w := range ws {
		out[w.World] = w
	}
	return out
}

func worldNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("w%02d", i)
	}
	return names
}

func hasLine(out, substr string) bool { return strings.Contains(out, substr) }
