package world_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// heldStorage holds a commit, once armed, until released: a commit whose
// fsync takes long.
type heldStorage struct {
	world.Storage
	mu      sync.Mutex
	entered chan struct{} // armed: the next commit says it has started...
	release chan struct{} // ...and waits for this to close
}

func (h *heldStorage) arm() (entered, release chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.entered, h.release = make(chan struct{}), make(chan struct{})
	return h.entered, h.release
}

func (h *heldStorage) Commit(ctx context.Context, name string, expect journal.Head, entries []journal.Entry, blobs [][]byte) (journal.Head, error) {
	h.mu.Lock()
	entered, release := h.entered, h.release
	h.entered, h.release = nil, nil
	h.mu.Unlock()
	if entered != nil {
		close(entered)
		<-release
	}
	return h.Storage.Commit(ctx, name, expect, entries, blobs)
}

// TestReadsDoNotWaitForCommit: while a batch's commit is under way (its
// fsync, say), State and Head answer at once, with what the last commit
// left (never the batch's state, which is not durable yet), and another
// event is taken; once the commit ends they show the batch.
func TestReadsDoNotWaitForCommit(t *testing.T) {
	ctx := t.Context()
	st := &heldStorage{Storage: world.NewMemoryStorage()}
	w, _, _ := pingWorld(t, st, &fakeHTTP{})
	ping := []byte(`{"who": "ann", "url": "https://pong.test/ok"}`)
	if _, err := w.SendJSON(ctx, "test/Ping@1", ping); err != nil {
		t.Fatal(err)
	}
	if err := w.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	tally := func() string {
		v, _, ok := w.State("test/Tally@1", "ann")
		if !ok {
			return "none"
		}
		return string(schema.ValueJSON(v))
	}
	const before = `{"pings":1,"pongs":1,"last_status":200}`
	if got := tally(); got != before {
		t.Fatalf("state %s; want %s", got, before)
	}
	head := w.Head()

	entered, release := st.arm()
	sent := make(chan error, 2)
	go func() { _, err := w.SendJSON(ctx, "test/Ping@1", ping); sent <- err }()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the commit did not start")
	}
	read := make(chan [2]any, 1)
	go func() { read <- [2]any{tally(), w.Head()} }()
	select {
	case r := <-read:
		if r[0] != before || r[1] != head {
			t.Errorf("during the commit: state %v at %v; want the last commit's, %s at %v", r[0], r[1], before, head)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("State and Head waited for the commit under way")
	}
	go func() { _, err := w.SendJSON(ctx, "test/Ping@1", ping); sent <- err }()
	close(release)
	for range 2 {
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := tally(), `{"pings":3,"pongs":3,"last_status":200}`; got != want {
		t.Errorf("after the commits: state %s; want %s", got, want)
	}
	var m, h string
	w.ViewAt(func(mm *world.Machine, hh journal.Head) {
		v, _, _ := mm.State("test/Tally@1", "ann")
		m, h = string(schema.ValueJSON(v)), hh.String()
	})
	if got := w.Head().String(); got != h || tally() != m {
		t.Errorf("State and Head (%s at %s) differ from the machine's (%s at %s)", tally(), got, m, h)
	}
}

// heldHTTP answers http.request like fakeHTTP once release is closed.
type heldHTTP struct {
	fakeHTTP
	release chan struct{}
}

func (h *heldHTTP) Run(ctx context.Context, c *effects.Call) effects.Receipt {
	select {
	case <-h.release:
	case <-ctx.Done():
		return effects.Errorf("fake", "%v", ctx.Err())
	}
	return h.fakeHTTP.Run(ctx, c)
}

// TestPlanInputPublished: PlanInput, read without the world's lock, is
// the running plan's input as the machine has it once its start is
// committed, and gone once its end is.
func TestPlanInputPublished(t *testing.T) {
	ctx := t.Context()
	h := &heldHTTP{release: make(chan struct{})}
	w, _, _ := pingWorld(t, world.NewMemoryStorage(), h)
	if _, err := w.SendJSON(ctx, "test/Ping@1", []byte(`{"who": "ann", "url": "https://pong.test/ok"}`)); err != nil {
		t.Fatal(err)
	}
	var running []world.RunningPlan
	w.View(func(m *world.Machine) { running = m.RunningPlans() })
	if len(running) != 1 {
		t.Fatalf("running plans: %+v", running)
	}
	id := running[0].ID
	got, ok := w.PlanInput(id)
	if !ok || string(schema.ValueJSON(got)) != string(schema.ValueJSON(running[0].Input)) {
		t.Errorf("PlanInput(%d) = %s, %v; want %s", id, schema.ValueJSON(got), ok, schema.ValueJSON(running[0].Input))
	}
	close(h.release)
	if err := w.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if got, ok := w.PlanInput(id); ok {
		t.Errorf("PlanInput(%d) after the plan ended: %s", id, schema.ValueJSON(got))
	}
}

// TestPublishedAtOpen: a world opened again reads its cells and running
// plans at once, as its journal left them, before any commit of its own.
func TestPublishedAtOpen(t *testing.T) {
	ctx := t.Context()
	st := world.NewMemoryStorage()
	w, _, _ := pingWorld(t, st, &heldHTTP{release: make(chan struct{})})
	if _, err := w.SendJSON(ctx, "test/Ping@1", []byte(`{"who": "ann", "url": "https://pong.test/ok"}`)); err != nil {
		t.Fatal(err)
	}
	var id uint64
	w.View(func(m *world.Machine) { id = m.RunningPlans()[0].ID })
	state, _, _ := w.State("test/Tally@1", "ann")
	head := w.Head()
	w.Close()
	again, _, _ := pingWorld(t, st, &heldHTTP{release: make(chan struct{})})
	got, _, ok := again.State("test/Tally@1", "ann")
	if !ok || string(schema.ValueJSON(got)) != string(schema.ValueJSON(state)) {
		t.Errorf("State after Open: %s, %v; want %s", schema.ValueJSON(got), ok, schema.ValueJSON(state))
	}
	if _, ok := again.PlanInput(id); !ok {
		t.Errorf("PlanInput(%d) after Open: the plan is running", id)
	}
	if got := again.Head(); got != head {
		t.Errorf("Head after Open: %v; want %v", got, head)
	}
}
