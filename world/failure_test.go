package world_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// errDiskFull stands for the error of a commit on a full disk.
var errDiskFull = errors.New("write demiurge.db: no space left on device")

// failingStorage fails every commit from the failAt-th one on (counting
// from 1), as a full disk would, and counts them.
type failingStorage struct {
	world.Storage
	failAt  int64
	err     error // the commit's error; nil means errDiskFull
	commits atomic.Int64
}

func (s *failingStorage) Commit(ctx context.Context, name string, expect journal.Head, entries []journal.Entry, blobs [][]byte) (journal.Head, error) {
	if s.commits.Add(1) >= s.failAt {
		if s.err != nil {
			return journal.Head{}, s.err
		}
		return journal.Head{}, errDiskFull
	}
	return s.Storage.Commit(ctx, name, expect, entries, blobs)
}

// TestConflictIsNotAnAlarm: a receipt's commit refused because another
// writer committed first (journal.ErrConflict: a worker took the world
// over) stops the world with a warning, not an error that reads as damage.
func TestConflictIsNotAnAlarm(t *testing.T) {
	ctx := t.Context()
	base := world.NewMemoryStorage()
	st := &failingStorage{Storage: base, failAt: 3, err: fmt.Errorf("world pp: lease lost: %w", journal.ErrConflict)}
	if _, err := base.CAS().Put(ctx, spec); err != nil {
		t.Fatal(err)
	}
	reg := reducer.NewRegistry()
	reg.MustRegister("test/Tally@1", tally{})
	cat, err := schema.Load("testdata/pingpong", &schema.LoadOptions{Reducers: reg.Names()})
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	w, err := world.Open(ctx, world.Options{
		Name: "pp", Catalog: cat, Reducers: reg, Storage: st,
		Adapters: map[string]effects.Adapter{"http.request": &gatedHTTP{}},
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.SendJSON(ctx, "test/Ping@1", []byte(`{"who": "ann", "url": "https://pong.test/ann"}`)); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); w.Err() == nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the world did not stop after the conflicting commit")
		}
	}
	got := logs.String()
	if !strings.Contains(got, "level=WARN") || !strings.Contains(got, "another writer committed") || strings.Contains(got, "level=ERROR") {
		t.Errorf("log:\n%s\nwant a warning that another writer committed, no error", got)
	}
}

// syncBuffer is a bytes.Buffer safe for the world's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// gatedHTTP answers like fakeHTTP once gate is closed. It reads the blob
// spec from its call's CAS first, as the model's adapter reads the tools
// it offers, and fails (as that adapter does) if it cannot.
type gatedHTTP struct {
	fakeHTTP
	gate   chan struct{}
	inline bool
}

// spec is the blob gatedHTTP reads.
var spec = []byte(`{"tools": []}`)

func (g *gatedHTTP) RunsInline(ctx context.Context, c *effects.Call) bool { return g.inline }

func (g *gatedHTTP) Run(ctx context.Context, c *effects.Call) effects.Receipt {
	if g.gate != nil {
		<-g.gate
	}
	if _, err := c.CAS.Get(ctx, cas.Sum(spec)); err != nil {
		return effects.Errorf("fake", "the model could not be reached: %v", err)
	}
	return g.fakeHTTP.Run(ctx, c)
}

// TestCommitFailureEndsWaits: when the commit of a receipt fails (the disk
// is full) while WaitIdle waits for the effect, WaitIdle returns the
// commit's error at once, though nothing more will ever happen. The
// journal is as it was before, and the world reopened on a disk with room
// runs the effect again and goes on. In a synctest bubble: if WaitIdle
// still waited, every goroutine would be blocked and the test would fail
// with a deadlock, whatever the machine's speed.
func TestCommitFailureEndsWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		base := world.NewMemoryStorage()
		st := &failingStorage{Storage: base, failAt: 3} // 1: the manifest, 2: the ping, 3: its receipt
		h := &gatedHTTP{gate: make(chan struct{})}
		if _, err := base.CAS().Put(ctx, spec); err != nil {
			t.Fatal(err)
		}
		w, cat, reg := pingWorld(t, st, h)
		if _, err := w.SendJSON(ctx, "test/Ping@1", []byte(`{"who": "ann", "url": "https://pong.test/ann"}`)); err != nil {
			t.Fatal(err)
		}
		before := kinds(t, base, "pp")
		waited := make(chan error, 1)
		go func() { waited <- w.WaitIdle(context.Background()) }()
		synctest.Wait() // WaitIdle waits for the effect, the effect for its gate
		select {
		case err := <-waited:
			t.Fatalf("WaitIdle returned %v with the effect in flight", err)
		default:
		}
		close(h.gate)
		synctest.Wait()
		select {
		case err := <-waited:
			if !errors.Is(err, errDiskFull) || !strings.Contains(err.Error(), "world pp: commit failed") {
				t.Errorf("WaitIdle: %v; want the commit's error", err)
			}
		default:
			t.Fatal("WaitIdle still waits after the commit of the receipt failed")
		}
		if err := w.WaitIdle(ctx); !errors.Is(err, errDiskFull) {
			t.Errorf("WaitIdle again: %v; want the commit's error", err)
		}
		if _, err := w.SendJSON(ctx, "test/Ping@1", []byte(`{"who": "bob", "url": "https://pong.test/bob"}`)); !errors.Is(err, errDiskFull) {
			t.Errorf("Send to the broken world: %v; want the commit's error", err)
		}
		if got := kinds(t, base, "pp"); got != before {
			t.Errorf("the journal changed: %s\nwas %s", got, before)
		}
		w.Close()

		// Reopened with room on the disk: the effect runs again.
		w2, _, _ := pingWorld(t, base, &gatedHTTP{})
		if err := w2.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
		if got, want := kinds(t, base, "pp"), before+" Receipt Event PlanEnded State"; got != want {
			t.Errorf("journal after reopening: %s\nwant %s", got, want)
		}
		w2.Close()
		if _, err := world.Rerun(ctx, world.RerunOptions{Name: "pp", Catalog: cat, Reducers: reg, Storage: base, FromGenesis: true}); err != nil {
			t.Errorf("replay: %v", err)
		}
	})
}

// damagedCAS fails reads of one blob as a damaged page of a bbolt file
// does.
type damagedCAS struct {
	cas.Store
	bad cas.Ref
}

func (d *damagedCAS) Get(ctx context.Context, ref cas.Ref) ([]byte, error) {
	if ref == d.bad {
		return nil, &cas.BoltDamageError{Path: "demiurge.db", Page: 7, Detail: "bbolt: assertion failed: Page expected to be: 7, but self identifies as 0"}
	}
	return d.Store.Get(ctx, ref)
}

// damagedStorage is storage whose CAS is damaged.
type damagedStorage struct {
	world.Storage
	cas *damagedCAS
}

func (s *damagedStorage) CAS() cas.Store { return s.cas }

// TestAdapterMeetsDamagedStore: an adapter that fails because the store it
// reads is damaged does not answer for the effect ("the model could not
// be reached"): the world stops, saying its store is damaged, WaitIdle
// returns that at once, and nothing is journaled. Reopened on a store
// that reads again, the effect runs and the world goes on. Run by the
// dispatcher and inside the step (inline).
func TestAdapterMeetsDamagedStore(t *testing.T) {
	for _, inline := range []bool{false, true} {
		t.Run(map[bool]string{false: "dispatched", true: "inline"}[inline], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				base := world.NewMemoryStorage()
				if _, err := base.CAS().Put(ctx, spec); err != nil {
					t.Fatal(err)
				}
				st := &damagedStorage{Storage: base, cas: &damagedCAS{Store: base.CAS(), bad: cas.Sum(spec)}}
				w, _, _ := pingWorld(t, st, &gatedHTTP{inline: inline})
				before := kinds(t, base, "pp")
				_, err := w.SendJSON(ctx, "test/Ping@1", []byte(`{"who": "ann", "url": "https://pong.test/ann"}`))
				if inline {
					// The effect runs inside the step of the ping, which
					// is not committed.
					if err == nil {
						t.Fatal("Send succeeded, though its effect met a damaged store inside its step")
					}
				} else {
					if err != nil {
						t.Fatal(err)
					}
					before = kinds(t, base, "pp")
					err = w.WaitIdle(ctx)
				}
				var d *cas.BoltDamageError
				if !errors.As(err, &d) || d.Page != 7 || !strings.Contains(err.Error(), "world pp stopped: its store is damaged: the http.request effect") ||
					strings.Contains(err.Error(), "could not be reached") {
					t.Fatalf("%v; want the world stopped, its store damaged at page 7", err)
				}
				if err := w.WaitIdle(ctx); !errors.As(err, &d) {
					t.Errorf("WaitIdle again: %v; want the damage", err)
				}
				if got := kinds(t, base, "pp"); got != before {
					t.Errorf("the journal changed: %s\nwas %s", got, before)
				}
				w.Close()

				w2, _, _ := pingWorld(t, base, &gatedHTTP{inline: inline})
				if inline {
					if _, err := w2.SendJSON(ctx, "test/Ping@1", []byte(`{"who": "ann", "url": "https://pong.test/ann"}`)); err != nil {
						t.Fatal(err)
					}
				}
				if err := w2.WaitIdle(ctx); err != nil {
					t.Fatal(err)
				}
				if got := kinds(t, base, "pp"); !strings.HasSuffix(got, "Receipt Event PlanEnded State") {
					t.Errorf("journal after reopening: %s; want the effect's receipt and what follows", got)
				}
			})
		})
	}
}

// TestReducerMeetsDamagedStore: a reducer whose read of the CAS finds the
// store damaged does not fail the step as its own error (a ReducerError
// record would make the damage part of the world's history, and a replay
// report it as diverging code): the input fails, nothing is journaled,
// and the world stops saying its store is damaged.
func TestReducerMeetsDamagedStore(t *testing.T) {
	ctx := t.Context()
	base := world.NewMemoryStorage()
	if _, err := base.CAS().Put(ctx, spec); err != nil {
		t.Fatal(err)
	}
	st := &damagedStorage{Storage: base, cas: &damagedCAS{Store: base.CAS(), bad: cas.Sum(spec)}}
	reg := reducer.NewRegistry()
	reg.MustRegister("test/Tally@1", reducer.Func(func(c *reducer.Context, state, event schema.Value) (reducer.Output, error) {
		if _, err := c.CAS.Get(context.Background(), cas.Sum(spec)); err != nil {
			return reducer.Output{}, fmt.Errorf("reading the spec: %w", err)
		}
		return tally{}.Step(c, state, event)
	}))
	cat, err := schema.Load("testdata/pingpong", &schema.LoadOptions{Reducers: reg.Names()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := world.Open(ctx, world.Options{Name: "pp", Catalog: cat, Reducers: reg, Storage: st,
		Adapters: map[string]effects.Adapter{"http.request": &fakeHTTP{}}, Now: fixedClock(1_700_000_000_000_000_000), Entropy: zeroReader{}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	before := kinds(t, base, "pp")
	_, err = w.SendJSON(ctx, "test/Ping@1", []byte(`{"who": "ann", "url": "https://pong.test/ann"}`))
	var d *cas.BoltDamageError
	if !errors.As(err, &d) || !strings.Contains(err.Error(), "reducer test/Tally@1 read a damaged store") {
		t.Fatalf("Send: %v; want the input failed on the damaged store", err)
	}
	if err := w.WaitIdle(ctx); !errors.As(err, &d) {
		t.Errorf("WaitIdle: %v; want the damage", err)
	}
	if got := kinds(t, base, "pp"); got != before {
		t.Errorf("the journal changed: %s\nwas %s", got, before)
	}
}
