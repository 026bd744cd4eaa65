package world

import (
	"context"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
)

// TestWaitIdleWokenByTheLastAnswer: a waiter that saw an input still
// running after the commit that woke it (the input's Send had not
// returned yet) is woken when that input is answered, not left waiting
// for a commit that may never come.
func TestWaitIdleWokenByTheLastAnswer(t *testing.T) {
	cat, err := schema.Load("../examples/counter", nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Open(t.Context(), Options{Name: "idle", Catalog: cat, Reducers: reducer.NewRegistry(),
		Storage: NewMemoryStorage(), SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, wait := range []struct {
		name string
		fn   func(context.Context) error
	}{{"WaitIdle", w.WaitIdle}, {"Drain", w.Drain}} {
		// An input committed and its wake-up given, but its Send not
		// returned yet: what a waiter sees between the two.
		w.qmu.Lock()
		w.running++
		w.qmu.Unlock()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		done := make(chan error, 1)
		go func() { done <- wait.fn(ctx) }()
		select {
		case err := <-done:
			t.Fatalf("%s returned (%v) while an input was still running", wait.name, err)
		case <-time.After(50 * time.Millisecond):
		}
		w.answered()
		if err := <-done; err != nil {
			t.Errorf("%s: %v: the last answer did not wake it", wait.name, err)
		}
		cancel()
	}
	w.Resume()
}
