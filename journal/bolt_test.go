package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

var bucketBlobs = []byte("test-blobs")

func openTestBolt(t *testing.T) *Bolt {
	t.Helper()
	j, err := OpenBolt(filepath.Join(t.TempDir(), "j.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// blocker holds the committer inside a transaction until released, so the
// appends a test makes meanwhile pile up and commit as one group.
type blocker struct {
	entered, release chan struct{}
	done             chan error
}

func block(t *testing.T, j *Bolt) *blocker {
	t.Helper()
	b := &blocker{entered: make(chan struct{}), release: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		_, err := j.AppendWith(context.Background(), "blocker", Head{}, []Entry{{Kind: "Block"}}, func(*bbolt.Tx) error {
			close(b.entered)
			<-b.release
			return nil
		})
		b.done <- err
	}()
	<-b.entered
	return b
}

func (b *blocker) unblock(t *testing.T) {
	t.Helper()
	close(b.release)
	if err := <-b.done; err != nil {
		t.Fatalf("blocking append: %v", err)
	}
}

// waitPending waits until n appends are queued for the committer.
func waitPending(t *testing.T, j *Bolt, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		j.mu.Lock()
		got := len(j.pending)
		j.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d appends pending after 10 s; want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

type appendOutcome struct {
	head  Head
	err   error
	panic any
}

// goAppend starts an AppendWith and returns where its outcome arrives.
func goAppend(ctx context.Context, j *Bolt, world string, expect Head, es []Entry, fn func(*bbolt.Tx) error) <-chan appendOutcome {
	ch := make(chan appendOutcome, 1)
	go func() {
		var out appendOutcome
		defer func() {
			out.panic = recover()
			ch <- out
		}()
		out.head, out.err = j.AppendWith(ctx, world, expect, es, fn)
	}()
	return ch
}

func stepEntries(step int) []Entry {
	return []Entry{{Kind: "A", Payload: fmt.Appendf(nil, "step %d a", step)}, {Kind: "B", Payload: fmt.Appendf(nil, "step %d b", step)}}
}

// TestGroupSameWorld queues several appends of one world in one group:
// each is checked against the head the earlier ones left.
func TestGroupSameWorld(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	j := openTestBolt(t)
	// The heads the appends must produce, computed on a memory journal.
	m := NewMemory()
	var want []Head
	var h Head
	for step := range 3 {
		var err error
		if h, err = m.Append(ctx, "w", h, stepEntries(step)); err != nil {
			t.Fatal(err)
		}
		want = append(want, h)
	}

	b := block(t, j)
	commits := j.nCommits.Load()
	outs := []<-chan appendOutcome{goAppend(ctx, j, "w", Head{}, stepEntries(0), nil)}
	waitPending(t, j, 1)
	outs = append(outs, goAppend(ctx, j, "w", want[0], stepEntries(1), nil))
	waitPending(t, j, 2)
	stale := goAppend(ctx, j, "w", Head{}, stepEntries(9), nil)
	waitPending(t, j, 3)
	outs = append(outs, goAppend(ctx, j, "w", want[1], stepEntries(2), nil))
	waitPending(t, j, 4)
	b.unblock(t)

	for i, ch := range outs {
		if out := <-ch; out.err != nil || out.head != want[i] {
			t.Fatalf("append %d: %v, %v; want %v", i, out.head, out.err, want[i])
		}
	}
	if out := <-stale; !errors.Is(out.err, ErrConflict) {
		t.Fatalf("stale append: %v; want ErrConflict", out.err)
	}
	if n := j.nCommits.Load() - commits; n != 2 {
		t.Fatalf("%d commits; want 2 (the blocker's and one group)", n)
	}
	if got, err := Verify(ctx, j, "w"); err != nil || got != want[2] {
		t.Fatalf("Verify = %v, %v; want %v", got, err, want[2])
	}
}

// TestAppendWith checks that fn's writes commit with the records, and that
// a failing or panicking fn fails only its own append.
func TestAppendWith(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	j := openTestBolt(t)
	putBlob := func(key string, err error) func(*bbolt.Tx) error {
		return func(tx *bbolt.Tx) error {
			b, e := tx.CreateBucketIfNotExists(bucketBlobs)
			if e != nil {
				return e
			}
			if e := b.Put([]byte(key), []byte("data")); e != nil {
				return e
			}
			if err != nil {
				return err
			}
			if key == "panics" {
				panic("boom")
			}
			return nil
		}
	}
	errFn := errors.New("the callback failed")

	b := block(t, j)
	commits := j.nCommits.Load()
	okA := goAppend(ctx, j, "a", Head{}, stepEntries(0), putBlob("a1", nil))
	waitPending(t, j, 1)
	failB := goAppend(ctx, j, "b", Head{}, stepEntries(0), putBlob("b1", errFn))
	waitPending(t, j, 2)
	panicC := goAppend(ctx, j, "c", Head{}, stepEntries(0), putBlob("panics", nil))
	waitPending(t, j, 3)
	conflictD := goAppend(ctx, j, "d", Head{Seq: 5}, stepEntries(0), putBlob("d1", nil))
	waitPending(t, j, 4)
	okE := goAppend(ctx, j, "e", Head{}, stepEntries(0), putBlob("e1", nil))
	waitPending(t, j, 5)
	b.unblock(t)

	for name, ch := range map[string]<-chan appendOutcome{"a": okA, "e": okE} {
		if out := <-ch; out.err != nil || out.head.Seq != 2 || out.panic != nil {
			t.Errorf("append to %s: %v, %v, panic %v; want seq 2", name, out.head, out.err, out.panic)
		}
	}
	if out := <-failB; out.err != errFn || out.head != (Head{}) {
		t.Errorf("append with a failing fn: %v, %v; want the fn's error itself", out.head, out.err)
	}
	if out := <-panicC; out.panic != "boom" {
		t.Errorf("append with a panicking fn: panic %v, err %v; want panic boom in the caller", out.panic, out.err)
	}
	if out := <-conflictD; !errors.Is(out.err, ErrConflict) {
		t.Errorf("conflicting append: %v; want ErrConflict", out.err)
	}
	// The group fails at b, then at c, and commits without them.
	if n := j.nCommits.Load() - commits; n != 2 {
		t.Errorf("%d commits; want 2 (the blocker's and the group without the failed appends)", n)
	}
	_ = j.db.View(func(tx *bbolt.Tx) error {
		blobs := tx.Bucket(bucketBlobs)
		for key, want := range map[string]bool{"a1": true, "e1": true, "b1": false, "panics": false, "d1": false} {
			if got := blobs.Get([]byte(key)) != nil; got != want {
				t.Errorf("blob %s stored = %v; want %v", key, got, want)
			}
		}
		return nil
	})
	for world, seq := range map[string]uint64{"a": 2, "b": 0, "c": 0, "d": 0, "e": 2} {
		if h, err := j.Head(ctx, world); err != nil || h.Seq != seq {
			t.Errorf("Head(%s) = %v, %v; want seq %d", world, h, err, seq)
		}
	}
	worlds, _ := j.Worlds(ctx)
	if strings.Join(worlds, ",") != "a,blocker,e" {
		t.Errorf("Worlds() = %q; want a, blocker, e", worlds)
	}
}

// TestAppendCanceled cancels an append while it waits in the queue (it is
// not written) and while it commits (it is, and Append says so).
func TestAppendCanceled(t *testing.T) {
	t.Parallel()
	j := openTestBolt(t)

	ctx, cancel := context.WithCancel(t.Context())
	entered := make(chan struct{})
	release := make(chan struct{})
	committing := goAppend(ctx, j, "committing", Head{}, stepEntries(0), func(*bbolt.Tx) error {
		close(entered)
		<-release
		return nil
	})
	<-entered
	queued := goAppend(ctx, j, "queued", Head{}, stepEntries(0), nil)
	waitPending(t, j, 1)
	cancel()
	if out := <-queued; !errors.Is(out.err, context.Canceled) {
		t.Fatalf("append canceled in the queue: %v; want context.Canceled", out.err)
	}
	close(release)
	if out := <-committing; out.err != nil || out.head.Seq != 2 {
		t.Fatalf("append canceled while committing: %v, %v; want it committed", out.head, out.err)
	}
	if h, _ := j.Head(t.Context(), "queued"); h != (Head{}) {
		t.Fatalf("the canceled append was written: head %v", h)
	}
	if h, _ := j.Head(t.Context(), "committing"); h.Seq != 2 {
		t.Fatalf("the committed append is missing: head %v", h)
	}
}

// TestNewBoltSharedDB checks that a journal in a caller's DB leaves the DB
// open and coexists with the caller's own writes.
func TestNewBoltSharedDB(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "shared.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	j, err := NewBolt(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 50 {
			_ = db.Update(func(tx *bbolt.Tx) error {
				b, err := tx.CreateBucketIfNotExists(bucketBlobs)
				if err != nil {
					return err
				}
				return b.Put(fmt.Appendf(nil, "k%d", i), []byte("v"))
			})
		}
	})
	var h Head
	for step := range 50 {
		if h, err = j.Append(ctx, "w", h, stepEntries(step)); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.View(func(tx *bbolt.Tx) error { return nil }); err != nil {
		t.Fatalf("the caller's DB was closed with the journal: %v", err)
	}
	j2, err := NewBolt(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Verify(ctx, j2, "w"); err != nil || got != h {
		t.Fatalf("Verify after reopening = %v, %v; want %v", got, err, h)
	}
	j2.Close()
}

func TestBoltReadOnly(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()

	// A bbolt file without a journal reads as empty and stays unchanged.
	plain := filepath.Join(dir, "plain.db")
	db, err := bbolt.Open(plain, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	before, _ := os.ReadFile(plain)
	j, err := OpenBolt(plain, &BoltOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if ws, err := j.Worlds(ctx); err != nil || len(ws) != 0 {
		t.Fatalf("Worlds of a file without a journal = %q, %v", ws, err)
	}
	if h, err := j.Head(ctx, "w"); err != nil || h != (Head{}) {
		t.Fatalf("Head = %v, %v", h, err)
	}
	if err := j.Read(ctx, "w", 1, func(Record) error { return errors.New("called") }); err != nil {
		t.Fatalf("Read: %v", err)
	}
	if _, err := j.Append(ctx, "w", Head{}, stepEntries(0)); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Append read-only: %v; want ErrReadOnly", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(plain); !bytes.Equal(before, after) {
		t.Fatal("a read-only journal changed the file")
	}

	// A journal written before reads fine read-only, next to another reader.
	path := filepath.Join(dir, "j.db")
	w, err := OpenBolt(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := w.Append(ctx, "w", Head{}, stepEntries(0))
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	r1, err := OpenBolt(path, &BoltOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	r2, err := OpenBolt(path, &BoltOptions{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatalf("second read-only open: %v", err)
	}
	defer r2.Close()
	if got, err := Verify(ctx, r2, "w"); err != nil || got != h {
		t.Fatalf("Verify read-only = %v, %v; want %v", got, err, h)
	}
}

func TestOpenBoltErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "j.db")
	j, err := OpenBolt(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := OpenBolt(path, &BoltOptions{Timeout: 50 * time.Millisecond}); err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("second OpenBolt: %v; want a lock error", err)
	}
	if _, err := OpenBolt(filepath.Join(dir, "x.db"), &BoltOptions{Timeout: -1}); err == nil || !strings.Contains(err.Error(), "Timeout") {
		t.Fatalf("negative Timeout: %v; want an options error", err)
	}
	if _, err := OpenBolt(filepath.Join(dir, "missing", "j.db"), nil); err == nil || !strings.Contains(err.Error(), "open journal") {
		t.Fatalf("OpenBolt in a missing directory: %v", err)
	}

	other := filepath.Join(dir, "other.db")
	db, err := bbolt.Open(other, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Update(func(tx *bbolt.Tx) error {
		b, _ := tx.CreateBucket(bucketJournal)
		return b.Put(keyFormat, []byte("something else"))
	})
	db.Close()
	if _, err := OpenBolt(other, nil); err == nil || !strings.Contains(err.Error(), `holds format "something else"`) {
		t.Fatalf("OpenBolt on a foreign journal bucket: %v", err)
	}

	notDB := filepath.Join(dir, "text.db")
	if err := os.WriteFile(notDB, bytes.Repeat([]byte("not a database "), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenBolt(notDB, nil); err == nil || !strings.Contains(err.Error(), notDB) {
		t.Fatalf("OpenBolt on a text file: %v", err)
	}
}

// TestReopenWritesNothing checks that opening and closing an existing
// journal, without appends, leaves the file as it was.
func TestReopenWritesNothing(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "j.db")
	j, err := OpenBolt(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Append(t.Context(), "w", Head{}, stepEntries(0)); err != nil {
		t.Fatal(err)
	}
	j.Close()
	before, _ := os.ReadFile(path)
	for range 2 {
		j, err := OpenBolt(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Verify(t.Context(), j, "w"); err != nil {
			t.Fatal(err)
		}
		j.Close()
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("reopening the journal changed the file")
	}
}
