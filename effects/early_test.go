package effects

import (
	"context"
	"errors"
	"testing"
)

// TestEarlyContext: WaitDurable on an early call's context waits for the
// commit's outcome; a failed commit is ErrNotDurable (not the
// cancellation that comes with it); only the first outcome counts; a
// context of no early call does not wait.
func TestEarlyContext(t *testing.T) {
	if err := WaitDurable(context.Background()); err != nil {
		t.Errorf("WaitDurable outside an early call = %v", err)
	}
	for _, durable := range []bool{true, false} {
		for range 50 { // the failed case races its cancellation: try it often
			ctx, committed := EarlyContext(context.Background())
			done := make(chan error, 1)
			go func() { done <- WaitDurable(ctx) }()
			select {
			case err := <-done:
				t.Fatalf("WaitDurable returned %v before the commit ended", err)
			default:
			}
			committed(durable)
			committed(!durable) // ignored
			err := <-done
			if durable && err != nil || !durable && !errors.Is(err, ErrNotDurable) {
				t.Fatalf("durable=%v: WaitDurable = %v", durable, err)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	ectx, _ := EarlyContext(ctx)
	cancel()
	if err := WaitDurable(ectx); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitDurable on a cancelled context = %v", err)
	}
}
