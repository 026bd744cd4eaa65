package pgstore_test

import (
	"context"

	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/pgstore"
	"github.com/jackc/pgx/v5"
)

// A commit under a lease that changed hands writes nothing; concurrent
// Acquires share the worlds out without overlap.
func TestLeases(t *testing.T) {
	s, _ := open(t)
	ctx := t.Context()
	manifest := cas.Sum([]byte("manifest"))
	for i := range 20 {
		if err := s.Register(ctx, fmt.Sprintf("w%02d", i), manifest); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	got := map[string]string{}
	var wg sync.WaitGroup
	for a := range 4 {
		wg.Go(func() {
			owner := fmt.Sprintf("worker-%d", a)
			for {
				ls, err := s.Acquire(ctx, owner, 3, time.Minute, nil)
				if err != nil {
					t.Error(err)
					return
				}
				if len(ls) == 0 {
					return
				}
				mu.Lock()
				for _, l := range ls {
					if prev, ok := got[l.World]; ok {
						t.Errorf("world %s acquired by %s and %s", l.World, prev, owner)
					}
					got[l.World] = owner
					if l.Token != 1 || l.Manifest != manifest {
						t.Errorf("lease %+v; want token 1 and the registered manifest", l)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(got) != 20 {
		t.Fatalf("%d worlds acquired; want 20", len(got))
	}

	// A short lease, expired: renewing it works while no one took it.
	if err := s.Register(ctx, "fenced", manifest); err != nil {
		t.Fatal(err)
	}
	a, err := s.Acquire(ctx, "A", 1, time.Millisecond, nil)
	if err != nil || len(a) != 1 || a[0].World != "fenced" {
		t.Fatalf("Acquire = %+v, %v", a, err)
	}
	time.Sleep(5 * time.Millisecond)
	// A holds it: its own Acquire leaves the expired lease alone (it is
	// renewed in place, its token kept).
	if again, err := s.AcquireExpired(ctx, "A", 5, time.Minute, []string{"fenced"}); err != nil || len(again) != 0 {
		t.Fatalf("AcquireExpired by its holder = %+v, %v; want nothing taken", again, err)
	}
	if again, err := s.Acquire(ctx, "A", 5, time.Minute, []string{"fenced"}); err != nil || len(again) != 0 {
		t.Fatalf("Acquire by its holder = %+v, %v; want nothing taken", again, err)
	}
	if r, err := s.Renew(ctx, "A", a, time.Millisecond); err != nil || len(r) != 1 || r[0].Token != a[0].Token {
		t.Fatalf("Renew of an expired lease no one took = %+v, %v; want it renewed", r, err)
	}
	h, err := s.CommitWith(ctx, "fenced", journal.Head{}, entries(2, "A"), nil, pgstore.CommitOptions{Fence: a[0].Fence()})
	if err != nil {
		t.Fatalf("a commit under the lease: %v", err)
	}
	time.Sleep(5 * time.Millisecond)
	b, err := s.Acquire(ctx, "B", 5, time.Minute, nil)
	if err != nil || len(b) != 1 || b[0].Token != a[0].Token+1 {
		t.Fatalf("Acquire of the expired lease = %+v, %v; want it with token %d", b, err, a[0].Token+1)
	}
	// A, the zombie, cannot write, renew or refuse; B can.
	blob := []byte("a blob of the zombie's step")
	_, err = s.CommitWith(ctx, "fenced", h, entries(1, "A"), [][]byte{blob}, pgstore.CommitOptions{Fence: a[0].Fence()})
	var le *pgstore.LeaseError
	if !errors.As(err, &le) || !errors.Is(err, pgstore.ErrLeaseLost) || !errors.Is(err, journal.ErrConflict) || le.Owner != "B" || le.Token != b[0].Token {
		t.Fatalf("the zombie's commit: %v; want a *LeaseError naming B's lease", err)
	}
	if has, _ := s.CAS().Has(ctx, cas.Sum(blob)); has {
		t.Error("the zombie's refused commit stored its blob")
	}
	if r, err := s.Renew(ctx, "A", a, time.Minute); err != nil || len(r) != 0 {
		t.Fatalf("the zombie's Renew = %+v, %v; want nothing renewed", r, err)
	}
	if _, err := s.CommitWith(ctx, "fenced", h, entries(1, "B"), nil, pgstore.CommitOptions{Fence: b[0].Fence()}); err != nil {
		t.Fatalf("the new owner's commit: %v", err)
	}
	if err := s.Release(ctx, b[0]); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Acquire(ctx, "C", 5, time.Minute, nil); err != nil || len(c) != 1 || c[0].Token != b[0].Token+1 {
		t.Fatalf("Acquire after Release = %+v, %v", c, err)
	}
	infos, err := s.Worlds(ctx)
	if err != nil || len(infos) != 21 {
		t.Fatalf("Worlds = %d, %v", len(infos), err)
	}
}

// A message is taken by the commit that journals it, in the same
// transaction; a refused commit leaves it waiting.
func TestInbox(t *testing.T) {
	s, _ := open(t)
	ctx := t.Context()
	manifest := cas.Sum([]byte("manifest"))
	l, err := s.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	id, err := s.Post(ctx, "w", manifest, "app/Event@1", []byte(`{"n": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	if w, err := l.Wait(ctx); err != nil || w != "w" {
		t.Fatalf("Listener.Wait = %q, %v; want w", w, err)
	}
	lease, err := s.Acquire(ctx, "A", 1, time.Minute, nil)
	if err != nil || len(lease) != 1 {
		t.Fatalf("Acquire = %+v, %v", lease, err)
	}
	waiting, err := s.Waiting(ctx, "w", 10)
	if err != nil || len(waiting) != 1 || waiting[0].ID != id || string(waiting[0].Value) != `{"n": 1}` || waiting[0].Manifest != manifest {
		t.Fatalf("Waiting = %+v, %v", waiting, err)
	}
	opts := pgstore.CommitOptions{Fence: lease[0].Fence(), Taken: []pgstore.InboxTaken{{ID: id, Seq: 2}}}
	if _, err := s.CommitWith(ctx, "w", journal.Head{Seq: 1}, entries(2, "x"), nil, opts); !errors.Is(err, journal.ErrConflict) {
		t.Fatalf("a conflicting commit: %v", err)
	}
	if m, _ := s.Message(ctx, id); m.Seq != 0 {
		t.Fatalf("a refused commit took the message: %+v", m)
	}
	if _, err := s.CommitWith(ctx, "w", journal.Head{}, entries(2, "x"), nil, opts); err != nil {
		t.Fatal(err)
	}
	if m, err := s.Message(ctx, id); err != nil || m.Seq != 2 {
		t.Fatalf("Message after its commit = %+v, %v; want seq 2", m, err)
	}
	if w, _ := s.Waiting(ctx, "w", 10); len(w) != 0 {
		t.Fatalf("Waiting after the commit = %+v", w)
	}
	id2, _ := s.Post(ctx, "w", manifest, "app/Event@1", []byte(`nonsense`))
	if ok, err := s.Refuse(ctx, id2, "does not fit", pgstore.Fence{Owner: "Z", Token: 9}); ok || err != nil {
		t.Fatalf("Refuse without the lease = %v, %v", ok, err)
	}
	if ok, err := s.Refuse(ctx, id2, "does not fit", *lease[0].Fence()); !ok || err != nil {
		t.Fatalf("Refuse = %v, %v", ok, err)
	}
	if m, _ := s.Message(ctx, id2); m.Error != "does not fit" {
		t.Fatalf("refused message = %+v", m)
	}
	if _, err := s.Message(ctx, 12345); !errors.Is(err, pgstore.ErrNoMessage) {
		t.Fatalf("Message of an unknown id: %v", err)
	}
}

// A heartbeat forgets the workers not seen for long without waiting for
// a row another transaction holds: two workers back from an outage, each
// forgetting the other in the transaction that records itself, deadlocked
// (SQLSTATE 40P01, logged as a failed heartbeat).
func TestHeartbeatSkipsLockedWorkers(t *testing.T) {
	s, u := open(t)
	ctx := t.Context()
	if _, err := s.Heartbeat(ctx, "a", time.Second); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO workers (id, seen) VALUES ('a', now() - interval '1 hour'), ('b', now() - interval '1 hour')
		ON CONFLICT (id) DO UPDATE SET seen = EXCLUDED.seen`); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx) // worker b, recording itself: it holds its row
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `UPDATE workers SET seen = now() WHERE id = 'b'`); err != nil {
		t.Fatal(err)
	}
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := s.Heartbeat(hctx, "a", time.Second)
	if err != nil {
		t.Fatalf("heartbeat of a while b's row is held: %v; want it to skip b's row", err)
	}
	if c.Workers != 1 {
		t.Errorf("census %+v; want 1 worker seen (a; b's update is not committed)", c)
	}
}
