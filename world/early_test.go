package world_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/world"
)

// earlyHTTP answers http.request like fakeHTTP, starting before its
// intent is durable: it tells started that it runs, waits for the intent
// to be durable, and checks that the journal has it before it answers.
type earlyHTTP struct {
	fakeHTTP
	st      world.Storage
	started chan struct{}

	mu    sync.Mutex
	notes []string
}

func (e *earlyHTTP) StartsEarly() bool { return true }

func (e *earlyHTTP) note(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.notes = append(e.notes, s)
}

func (e *earlyHTTP) Run(ctx context.Context, c *effects.Call) effects.Receipt {
	e.note("started")
	e.started <- struct{}{}
	if err := effects.WaitDurable(ctx); err != nil {
		if errors.Is(err, effects.ErrNotDurable) {
			e.note("not durable")
		} else {
			e.note(fmt.Sprintf("WaitDurable: %v", err))
		}
		return effects.Errorf("fake", "%v", err)
	}
	journaled := false
	err := e.st.Journal().Read(ctx, "pp", 1, func(r journal.Record) error {
		journaled = journaled || r.Kind == world.KindIntent
		return nil
	})
	e.note(fmt.Sprintf("durable; intent journaled %v (%v)", journaled, err))
	return e.fakeHTTP.Run(ctx, c)
}

// gatedStorage holds the next commit until an early adapter has started,
// and then makes it fail if fail is set.
type gatedStorage struct {
	world.Storage
	gate chan struct{} // armed: the next commit waits for a value on it
	fail bool
}

func (g *gatedStorage) Commit(ctx context.Context, name string, expect journal.Head, entries []journal.Entry, blobs [][]byte) (journal.Head, error) {
	if g.gate != nil {
		gate := g.gate
		g.gate = nil
		select {
		case <-gate:
		case <-time.After(10 * time.Second):
			return journal.Head{}, errors.New("the early adapter did not start before the commit ended")
		}
		if g.fail {
			return journal.Head{}, errors.New("disk on fire")
		}
	}
	return g.Storage.Commit(ctx, name, expect, entries, blobs)
}

// TestEarlyEffect: an effect whose adapter starts early runs while its
// intent's commit is under way (the commit waits here until it has
// started), and past WaitDurable it finds its intent in the journal.
func TestEarlyEffect(t *testing.T) {
	for _, bolt := range []bool{false, true} {
		t.Run(fmt.Sprintf("bolt=%v", bolt), func(t *testing.T) {
			ctx := t.Context()
			var base world.Storage = world.NewMemoryStorage()
			if bolt {
				bst, closeBolt := openBolt(t, t.TempDir())
				t.Cleanup(closeBolt)
				base = bst
			}
			st := &gatedStorage{Storage: base}
			h := &earlyHTTP{st: base, started: make(chan struct{}, 1)}
			w, cat, reg := pingWorld(t, st, h)
			st.gate = h.started
			if _, err := w.SendJSON(ctx, "test/Ping@1", []byte(`{"who": "ann", "url": "https://pong.test/ann"}`)); err != nil {
				t.Fatal(err)
			}
			if err := w.WaitIdle(ctx); err != nil {
				t.Fatal(err)
			}
			want := []string{"started", "durable; intent journaled true (<nil>)"}
			if h.mu.Lock(); !slices.Equal(h.notes, want) {
				t.Errorf("the adapter: %q; want %q", h.notes, want)
			}
			h.mu.Unlock()
			if got, want := kinds(t, st, "pp"), "Manifest DomainEvent State PlanStarted Intent Receipt Event PlanEnded State"; got != want {
				t.Fatalf("journal: %s\nwant %s", got, want)
			}
			w.Close()
			if _, err := world.Rerun(ctx, world.RerunOptions{Name: "pp", Catalog: cat, Reducers: reg, Storage: st, FromGenesis: true}); err != nil {
				t.Fatalf("replay: %v", err)
			}
		})
	}
}

// TestEarlyEffectCommitFails: when the commit of its intent fails, an
// effect started early learns it in WaitDurable and does nothing outside.
func TestEarlyEffectCommitFails(t *testing.T) {
	ctx := t.Context()
	base := world.NewMemoryStorage()
	st := &gatedStorage{Storage: base, fail: true}
	h := &earlyHTTP{st: base, started: make(chan struct{}, 1)}
	w, _, _ := pingWorld(t, st, h)
	st.gate = h.started
	if _, err := w.SendJSON(ctx, "test/Ping@1", []byte(`{"who": "ann", "url": "https://pong.test/ann"}`)); err == nil {
		t.Fatal("Send succeeded although the commit failed")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.mu.Lock()
		notes := slices.Clone(h.notes)
		h.mu.Unlock()
		if len(notes) == 2 {
			if want := []string{"started", "not durable"}; !slices.Equal(notes, want) {
				t.Errorf("the adapter: %q; want %q", notes, want)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the adapter never learned that its intent is not durable: %q", notes)
		}
		time.Sleep(time.Millisecond)
	}
	if n := h.calls.Load(); n != 0 {
		t.Errorf("the adapter reached outside %d times for an intent that is not durable", n)
	}
}
