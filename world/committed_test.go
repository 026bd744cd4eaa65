package world_test

import (
	"context"
	"sync"
	"testing"
	"time"

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
