package journal

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestCommitted: while a commit runs, Committed gives the head before it
// (Head, which reads the file, may already give the new one once bbolt
// has written its meta page), and the new head once the append is
// durable; Changed is closed when it is.
func TestCommitted(t *testing.T) {
	ctx := t.Context()
	j := openTestBolt(t)
	h1, err := j.Append(ctx, "w", Head{}, stepEntries(1))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := j.Committed(ctx, "w"); err != nil || got != h1 {
		t.Fatalf("Committed = %v, %v; want %v", got, err, h1)
	}
	if got, err := j.Committed(ctx, "other"); err != nil || got != (Head{}) {
		t.Fatalf("Committed of a world without records = %v, %v", got, err)
	}
	if _, err := j.Committed(ctx, "bad/name"); !errors.Is(err, ErrInvalidWorld) {
		t.Errorf("Committed of a bad name: %v; want ErrInvalidWorld", err)
	}

	changed := j.Changed()
	b := block(t, j) // a commit runs, and holds its transaction open
	select {
	case <-changed:
		t.Fatal("Changed closed before the commit ended")
	default:
	}
	if got, err := j.Committed(ctx, "w"); err != nil || got != h1 {
		t.Errorf("Committed during another world's commit = %v, %v; want %v", got, err, h1)
	}
	// The blocking world's first append is running: Committed waits for it.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if got, err := j.Committed(short, "blocker"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Committed of a world whose first commit runs = %v, %v; want to wait", got, err)
	}
	b.unblock(t)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("Changed not closed after the commit")
	}
	if got, err := j.Committed(ctx, "blocker"); err != nil || got.Seq != 1 {
		t.Errorf("Committed after the commit = %v, %v; want seq 1", got, err)
	}

	// A failed append publishes nothing.
	if _, err := j.Append(ctx, "w", Head{}, stepEntries(2)); !errors.Is(err, ErrConflict) {
		t.Fatalf("Append with a stale head: %v", err)
	}
	if got, _ := j.Committed(ctx, "w"); got != h1 {
		t.Errorf("Committed after a conflict = %v; want %v", got, h1)
	}

	changed = j.Changed()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	default:
		t.Error("Changed not closed by Close")
	}
}

// TestCommittedBeforeAck holds a commit after bbolt has committed it and
// before the journal acknowledges it: the file (Head) shows the new
// record already, Committed does not until the append is acknowledged.
// bbolt shows a commit to new read transactions from its meta page write,
// before its fsync: readers in other processes read up to Committed.
func TestCommittedBeforeAck(t *testing.T) {
	ctx := t.Context()
	j := openTestBolt(t)
	h1, err := j.Append(ctx, "w", Head{}, stepEntries(1))
	if err != nil {
		t.Fatal(err)
	}
	held, release := make(chan struct{}), make(chan struct{})
	testHookBeforePublish = func() {
		close(held)
		<-release
	}
	out := goAppend(ctx, j, "w", h1, stepEntries(2), nil)
	<-held
	testHookBeforePublish = nil
	released := false
	defer func() {
		if !released {
			close(release) // let the commit end, so that Close does
		}
	}()
	if h, err := j.Head(ctx, "w"); err != nil || h.Seq != h1.Seq+2 {
		t.Fatalf("Head while the commit is held = %v, %v; want the file to show seq %d", h, err, h1.Seq+2)
	}
	if h, err := j.Committed(ctx, "w"); err != nil || h != h1 {
		t.Errorf("Committed while the commit is held = %v, %v; want %v", h, err, h1)
	}
	changed := j.Changed()
	close(release)
	released = true
	o := <-out
	if o.err != nil {
		t.Fatal(o.err)
	}
	<-changed
	if h, err := j.Committed(ctx, "w"); err != nil || h != o.head {
		t.Errorf("Committed after the ack = %v, %v; want %v", h, err, o.head)
	}
}
