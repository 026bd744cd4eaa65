package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cluster"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/internal/pgtest"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/pgstore"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) != "" {
		os.Exit(workerProcess())
	}
	os.Exit(pgtest.Main(m))
}

func noop(ctx context.Context, c *effects.Call) effects.Receipt {
	return effects.OK("noop", schema.Record("ok", true))
}

// benchOpen runs the bench5 worlds: their noop effect answers at once.
func benchOpen(ctx context.Context, env cluster.Env) (*cluster.Runtime, error) {
	return &cluster.Runtime{Options: world.Options{
		Adapters: map[string]effects.Adapter{"bench.noop": effects.AdapterFunc(noop)},
	}}, nil
}

func loadBench(t testing.TB) *schema.Catalog {
	t.Helper()
	cat, err := schema.Load("testdata/bench5", nil)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func openStore(t testing.TB, u string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), u, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// startWorker runs a worker in this process until the test ends.
func startWorker(t *testing.T, s *pgstore.Store, id string, lease time.Duration) *cluster.Worker {
	t.Helper()
	wk, err := cluster.New(cluster.Options{Store: s, Reducers: reducer.NewRegistry(), Open: benchOpen, ID: id, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- wk.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker %s: %v", id, err)
		}
	})
	return wk
}

// planEnds counts a world's ended plans.
func planEnds(t testing.TB, s *pgstore.Store, name string) int {
	t.Helper()
	n := 0
	err := s.Journal().Read(context.Background(), name, 1, func(r journal.Record) error {
		if r.Kind == world.KindPlanEnded {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Two workers share ten worlds; clients send each world workflows and see
// them end, wherever the world runs.
func TestWorkersRunWorlds(t *testing.T) {
	u := pgtest.URL(t)
	s := openStore(t, u)
	cat := loadBench(t)
	a := startWorker(t, s, "A", time.Second)
	b := startWorker(t, s, "B", time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			r, err := cluster.Attach(ctx, cluster.RemoteOptions{Store: s, Name: fmt.Sprintf("w%d", i), Catalog: cat, Reducers: reducer.NewRegistry()})
			if err != nil {
				t.Error(err)
				return
			}
			for n := range 3 {
				if _, err := r.SendJSON(ctx, "bench/Start@1", fmt.Appendf(nil, `{"n": %d}`, n)); err != nil {
					t.Error(err)
					return
				}
				if err := r.WaitIdle(ctx); err != nil {
					t.Error(err)
					return
				}
			}
			// A value that does not fit is refused before it is posted.
			if _, err := r.SendJSON(ctx, "bench/Start@1", []byte(`{"n": "x"}`)); !errors.Is(err, world.ErrInvalidInput) {
				t.Errorf("a bad value: %v; want ErrInvalidInput", err)
			}
		})
	}
	wg.Wait()
	for i := range 10 {
		name := fmt.Sprintf("w%d", i)
		if n := planEnds(t, s, name); n != 3 {
			t.Errorf("world %s: %d workflows ended; want 3", name, n)
		}
		if _, err := world.Rerun(ctx, world.RerunOptions{Name: name, Catalog: cat, Reducers: reducer.NewRegistry(), Storage: s.Storage(), FromGenesis: true}); err != nil {
			t.Errorf("world %s does not replay: %v", name, err)
		}
	}
	if na, nb := len(a.Worlds()), len(b.Worlds()); na+nb != 10 {
		t.Errorf("workers hold %d + %d worlds; want 10", na, nb)
	}
	// A message whose value the worker finds bad (posted around the
	// client's check) is refused, and nothing of it is journaled.
	head, _ := s.Journal().Head(ctx, "w0")
	id, err := s.Post(ctx, "w0", cat.ManifestRef(), "bench/Start@1", []byte(`{"n": -1}`))
	if err != nil {
		t.Fatal(err)
	}
	for {
		m, err := s.Message(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if m.Error != "" {
			break
		}
		if m.Seq != 0 {
			t.Fatalf("a bad message was journaled: %+v", m)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if h, _ := s.Journal().Head(ctx, "w0"); h != head {
		t.Errorf("a refused message moved the head from %v to %v", head, h)
	}
}

// logBuffer is an io.Writer for a test's logs, safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A worker that cannot reach the database says so once (not at each of
// its five heartbeats a lease), and says when it can again.
func TestWorkerDownLogsOnce(t *testing.T) {
	srv, err := pgtest.Start(&pgtest.Options{NoFsync: true})
	if err != nil {
		pgtest.Unavailable(t, err)
	}
	defer srv.Close()
	s, err := pgstore.Open(t.Context(), srv.URL("postgres"), &pgstore.Options{ConnectTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var logs logBuffer
	wk, err := cluster.New(cluster.Options{Store: s, Reducers: reducer.NewRegistry(), Open: benchOpen, ID: "A",
		Lease: 500 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- wk.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	time.Sleep(300 * time.Millisecond)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // 20 heartbeats
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "heartbeat ok again") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	out := logs.String()
	if n := strings.Count(out, "heartbeat failed"); n != 1 || !strings.Contains(out, "heartbeat ok again") {
		t.Errorf("a 2s outage logged %d heartbeat failures (want 1) and then %v \"heartbeat ok again\" (want it):\n%s",
			n, strings.Contains(out, "heartbeat ok again"), out)
	}
}

// A second worker under the ID of a live one refuses to run.
func TestWorkerIDInUse(t *testing.T) {
	s := openStore(t, pgtest.URL(t))
	startWorker(t, s, "A", time.Minute)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok, err := s.WorkerSeen(t.Context(), "A"); err != nil {
			t.Fatal(err)
		} else if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("worker A never reported itself alive")
		}
		time.Sleep(20 * time.Millisecond)
	}
	wk, err := cluster.New(cluster.Options{Store: s, Reducers: reducer.NewRegistry(), Open: benchOpen, ID: "A", Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := wk.Run(ctx); !errors.Is(err, cluster.ErrIDInUse) || !strings.Contains(err.Error(), "its own ID") {
		t.Errorf("a second worker A: Run = %v; want ErrIDInUse saying to give each worker its own ID", err)
	}
}

// A client rides out a database restart: its reads fail while the server
// is down, and it goes on once the server is back, up to
// RemoteOptions.Outage; after that a read fails, saying for how long the
// database was unreachable. (run and send ended at the first failed read
// after the server went away, while the world's worker went on.)
func TestRemoteRidesOutRestart(t *testing.T) {
	srv, err := pgtest.Start(&pgtest.Options{NoFsync: true})
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
	startWorker(t, s, "A", time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	attach := func(outage time.Duration) *cluster.Remote {
		r, err := cluster.Attach(ctx, cluster.RemoteOptions{Store: s, Name: "w", Catalog: cat, Reducers: reducer.NewRegistry(), Outage: outage})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	patient, brief := attach(time.Minute), attach(300*time.Millisecond)
	send := func(n int) {
		t.Helper()
		if _, err := patient.SendJSON(ctx, "bench/Start@1", fmt.Appendf(nil, `{"n": %d}`, n)); err != nil {
			t.Fatal(err)
		}
		if err := patient.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	send(1)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	var briefErr error
	for start := time.Now(); time.Since(start) < time.Second; time.Sleep(50 * time.Millisecond) {
		if err := patient.Sync(ctx); err != nil {
			t.Fatalf("a read while the database is down, within the outage allowed: %v", err)
		}
		if briefErr == nil {
			briefErr = brief.Sync(ctx)
		}
	}
	if briefErr == nil || !strings.Contains(briefErr.Error(), "unreachable for") {
		t.Errorf("a read after the outage allowed: %v; want an error saying for how long the database was unreachable", briefErr)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	send(2)
	if n := planEnds(t, s, "w"); n != 2 {
		t.Errorf("world w: %d workflows ended; want 2", n)
	}
}
