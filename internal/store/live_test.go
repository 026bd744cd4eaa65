package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
)

// appendN appends n records to world, one step each, and returns the head.
func appendN(t *testing.T, s *Store, world string, head journal.Head, n int) journal.Head {
	t.Helper()
	for range n {
		var err error
		head, err = s.Journal().Append(t.Context(), world, head, []journal.Entry{{Kind: "Note", Payload: fmt.Appendf(nil, "%s %d", world, head.Seq+1)}})
		if err != nil {
			t.Fatal(err)
		}
	}
	return head
}

// readAll reads a world's records through r.
func readAll(t *testing.T, r journal.Reader, world string, from uint64) []journal.Record {
	t.Helper()
	var recs []journal.Record
	if err := r.Read(t.Context(), world, from, func(rec journal.Record) error {
		recs = append(recs, rec)
		return nil
	}); err != nil {
		t.Fatalf("Read %s from %d: %v", world, from, err)
	}
	return recs
}

// TestReadThroughWriter reads a store that a writer holds: every read of
// the read-only handle goes through the writer, and writes are refused.
func TestReadThroughWriter(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	w := mustOpen(t, dir, &Options{NoSync: true})
	if err := w.Serving(); err != nil {
		t.Fatalf("Serving: %v", err)
	}
	big := bytes.Repeat([]byte("big blob "), 1<<16)
	ref, err := w.CAS().Put(ctx, big)
	if err != nil {
		t.Fatal(err)
	}
	head := appendN(t, w, "w1", journal.Head{}, 600) // more than a page
	appendN(t, w, "w2", journal.Head{}, 1)

	// The file is locked: Open read-only fails as it always did.
	if _, err := Open(dir, &Options{ReadOnly: true, LockTimeout: time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Fatalf("Open read-only of a held store: %v; want ErrLocked", err)
	}
	h, err := OpenAt(ctx, dir, &Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("OpenAt read-only of a held store: %v", err)
	}
	defer h.Close()
	if pid := h.Served(); pid != os.Getpid() {
		t.Errorf("Served() = %d; want this process, %d", pid, os.Getpid())
	}
	if h.Bolt() != nil {
		t.Error("Bolt() of a store read through its writer is not nil")
	}
	worlds, err := h.Journal().Worlds(ctx)
	if err != nil || strings.Join(worlds, ",") != "w1,w2" {
		t.Errorf("Worlds = %q, %v; want w1,w2", worlds, err)
	}
	if got, err := h.Journal().Head(ctx, "w1"); err != nil || got != head {
		t.Errorf("Head = %v, %v; want %v", got, err, head)
	}
	recs := readAll(t, h.Journal(), "w1", 1)
	if len(recs) != 600 || recs[599].Hash != head.Hash || string(recs[9].Payload) != "w1 10" {
		t.Errorf("Read from 1: %d records; want 600 ending at the head", len(recs))
	}
	if recs := readAll(t, h.Journal(), "w1", 590); len(recs) != 11 || recs[0].Seq != 590 {
		t.Errorf("Read from 590: %d records; want 11 from 590", len(recs))
	}
	if recs := readAll(t, h.Journal(), "nobody", 1); len(recs) != 0 {
		t.Errorf("Read of a world without records: %d records", len(recs))
	}
	if _, err := journal.Verify(ctx, h.Journal(), "w1"); err != nil {
		t.Errorf("Verify: %v", err)
	}
	if b, err := h.CAS().Get(ctx, ref); err != nil || !bytes.Equal(b, big) {
		t.Errorf("Get = %d bytes, %v; want %d bytes", len(b), err, len(big))
	}
	if n, err := h.CAS().Stat(ctx, ref); err != nil || n != int64(len(big)) {
		t.Errorf("Stat = %d, %v; want %d", n, err, len(big))
	}
	missing := cas.Sum([]byte("not there"))
	if _, err := h.CAS().Get(ctx, missing); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("Get of a missing blob: %v; want cas.ErrNotFound", err)
	}
	if ok, err := h.CAS().Has(ctx, missing); ok || err != nil {
		t.Errorf("Has of a missing blob = %v, %v", ok, err)
	}
	n := 0
	if err := h.CAS().Iterate(ctx, func(r cas.Ref, size int64) error {
		if r != ref || size != int64(len(big)) {
			t.Errorf("Iterate: %s %d", r, size)
		}
		n++
		return nil
	}); err != nil || n != 1 {
		t.Errorf("Iterate: %d blobs, %v; want 1", n, err)
	}
	if _, err := h.Journal().Head(ctx, "bad/name"); !errors.Is(err, journal.ErrInvalidWorld) {
		t.Errorf("Head of a bad name: %v; want journal.ErrInvalidWorld", err)
	}
	if _, err := h.CAS().Put(ctx, []byte("x")); !errors.Is(err, cas.ErrReadOnly) {
		t.Errorf("Put: %v; want cas.ErrReadOnly", err)
	}
	if _, err := h.Journal().Append(ctx, "w1", head, []journal.Entry{{Kind: "K"}}); !errors.Is(err, journal.ErrReadOnly) {
		t.Errorf("Append: %v; want journal.ErrReadOnly", err)
	}
	if err := h.CheckFile(ctx); !errors.Is(err, ErrServed) {
		t.Errorf("CheckFile: %v; want ErrServed", err)
	}
	st, err := os.Stat(filepath.Join(dir, SocketName))
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm != 0o600 {
		t.Errorf("socket mode = %v; want 0600", perm)
	}
}

// TestNoWriter: a store nobody writes is read from its file, as before.
func TestNoWriter(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	w := mustOpen(t, dir, &Options{NoSync: true})
	head := appendN(t, w, "w", journal.Head{}, 3)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, SocketName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket is still there after Close: %v", err)
	}
	h, err := OpenAt(ctx, dir, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.Bolt() == nil || h.Served() != 0 {
		t.Fatalf("a store nobody writes is not read from its file")
	}
	if got, err := h.Journal().Head(ctx, "w"); err != nil || got != head {
		t.Errorf("Head = %v, %v; want %v", got, err, head)
	}
}

// TestStaleSocket: a socket left by a killed writer does not stop readers
// (they read the file) nor the next writer (which serves in its place).
func TestStaleSocket(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	w := mustOpen(t, dir, &Options{NoSync: true})
	head := appendN(t, w, "w", journal.Head{}, 2)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// What a killed writer leaves: a socket file that nothing listens on.
	ln, err := net.Listen("unix", filepath.Join(dir, SocketName))
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()

	h, err := OpenAt(ctx, dir, &Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("OpenAt beside a stale socket: %v", err)
	}
	if h.Bolt() == nil {
		t.Error("a stale socket was taken for a writer")
	}
	if got, err := h.Journal().Head(ctx, "w"); err != nil || got != head {
		t.Errorf("Head = %v, %v; want %v", got, err, head)
	}
	h.Close()

	w2 := mustOpen(t, dir, &Options{NoSync: true})
	if err := w2.Serving(); err != nil {
		t.Fatalf("a writer beside a stale socket does not serve: %v", err)
	}
	head = appendN(t, w2, "w", head, 1)
	h, err = OpenAt(ctx, dir, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.Served() == 0 {
		t.Error("the new writer does not serve reads")
	}
	if got, err := h.Journal().Head(ctx, "w"); err != nil || got != head {
		t.Errorf("Head = %v, %v; want %v", got, err, head)
	}
}

// TestLongPath serves and reads a store whose socket path is longer than
// a socket address holds.
func TestLongPath(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	w := mustOpen(t, dir, &Options{NoSync: true})
	if err := w.Serving(); err != nil {
		t.Skipf("no socket at a long path here: %v", err)
	}
	head := appendN(t, w, "w", journal.Head{}, 1)
	h, err := OpenAt(ctx, dir, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if got, err := h.Journal().Head(ctx, "w"); err != nil || got != head || h.Served() == 0 {
		t.Errorf("Head = %v, %v (served by %d); want %v through the writer", got, err, h.Served(), head)
	}
}

// TestLiveFollows follows a world through a writer, then through the file
// once the writer has gone, then through the next writer: two readers at
// once, each seeing every record once and in order.
func TestLiveFollows(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	w := mustOpen(t, dir, &Options{NoSync: true})
	head := appendN(t, w, "w", journal.Head{}, 1)

	type follower struct {
		live    *Live
		mu      sync.Mutex
		seen    []journal.Record
		sources []string
	}
	follow := func(f *follower, until uint64) error {
		var last uint64
		for last < until {
			h, err := f.live.Wait(ctx, "w", last)
			if err != nil {
				return err
			}
			if err := f.live.Read(ctx, "w", last+1, func(r journal.Record) error {
				if r.Seq > h.Seq {
					return nil // committed meanwhile: the next round reads it
				}
				f.mu.Lock()
				f.seen = append(f.seen, r)
				f.mu.Unlock()
				last = r.Seq
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	}
	const total = 30
	fs := make([]*follower, 2)
	errs := make(chan error, len(fs))
	for i := range fs {
		f := &follower{}
		l, err := OpenLive(ctx, dir, &LiveOptions{Poll: 10 * time.Millisecond, OnSource: func(msg string) {
			f.mu.Lock()
			f.sources = append(f.sources, msg)
			f.mu.Unlock()
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		f.live = l
		fs[i] = f
		go func() { errs <- follow(f, total) }()
	}
	waitSeen := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for _, f := range fs {
			for {
				f.mu.Lock()
				got := len(f.seen)
				f.mu.Unlock()
				if got >= n {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("a follower saw %d records; want %d", got, n)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	waitSeen(1)
	head = appendN(t, w, "w", head, 9)
	waitSeen(10)
	if err := w.Close(); err != nil { // the writer goes: the followers read the file
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	w2 := mustOpen(t, dir, &Options{NoSync: true, LockTimeout: 5 * time.Second})
	appendN(t, w2, "w", head, 20)
	for range fs {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatalf("follow: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the followers did not see every record")
		}
	}
	for i, f := range fs {
		for j, r := range f.seen {
			if r.Seq != uint64(j+1) {
				t.Fatalf("follower %d: record %d has seq %d", i, j, r.Seq)
			}
		}
		if len(f.seen) != total {
			t.Errorf("follower %d saw %d records; want %d", i, len(f.seen), total)
		}
		t.Logf("follower %d: %q", i, f.sources)
		if len(f.sources) == 0 || !strings.Contains(f.sources[0], "through process") {
			t.Errorf("follower %d did not start through the writer: %q", i, f.sources)
		}
	}
}

// TestNeverBeforeDurable: while a commit runs, a reader through the
// writer sees the head before it, and sees the new head only once the
// commit has returned.
func TestNeverBeforeDurable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first bool // the world's first append (no durable head known yet)
	}{{"next append", false}, {"first append", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			dir := t.TempDir()
			w := mustOpen(t, dir, nil)
			var head journal.Head
			if !tc.first {
				head = appendN(t, w, "w", head, 1)
			}
			h, err := OpenAt(ctx, dir, &Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			var committed atomic.Bool
			type seen struct {
				head      journal.Head
				committed bool // the commit had returned when the reader got head
			}
			got := make(chan seen, 1)
			next, err := w.Journal().AppendWith(ctx, "w", head, []journal.Entry{{Kind: "Note"}}, func(tx *bbolt.Tx) error {
				tx.OnCommit(func() { committed.Store(true) })
				go func() {
					r, err := h.Journal().Head(ctx, "w")
					if err != nil {
						t.Error(err)
					}
					got <- seen{r, committed.Load()}
				}()
				time.Sleep(50 * time.Millisecond) // hold the transaction open
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			s := <-got
			switch {
			case s.head == head:
			case s.head == next && s.committed:
			default:
				t.Errorf("a reader saw head %v (commit returned: %v) during the commit of %v over %v", s.head, s.committed, next, head)
			}
			if r, err := h.Journal().Head(ctx, "w"); err != nil || r != next {
				t.Errorf("Head after the commit = %v, %v; want %v", r, err, next)
			}
		})
	}
}

// TestWriterGoneDuringRead: a handle read through a writer goes on from
// the file when the writer stops.
func TestWriterGoneDuringRead(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	w := mustOpen(t, dir, &Options{NoSync: true})
	appendN(t, w, "w", journal.Head{}, 1200)
	h, err := OpenAt(ctx, dir, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	n := 0
	err = h.Journal().Read(ctx, "w", 1, func(r journal.Record) error {
		if n++; n == 100 {
			if err := w.Close(); err != nil {
				return err
			}
		}
		if r.Seq != uint64(n) {
			return fmt.Errorf("record %d has seq %d", n, r.Seq)
		}
		return nil
	})
	if err != nil || n != 1200 {
		t.Fatalf("Read across the writer's end: %d records, %v; want 1200", n, err)
	}
	if h.Served() != 0 {
		t.Errorf("Served() = %d after the writer stopped", h.Served())
	}
}

// TestWaitCancel: Wait returns when its context is done.
func TestWaitCancel(t *testing.T) {
	for _, writer := range []bool{true, false} {
		t.Run(fmt.Sprintf("writer=%v", writer), func(t *testing.T) {
			dir := t.TempDir()
			w := mustOpen(t, dir, &Options{NoSync: true})
			appendN(t, w, "w", journal.Head{}, 1)
			if !writer {
				w.Close()
			}
			l, err := OpenLive(t.Context(), dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer cancel()
			if _, err := l.Wait(ctx, "w", 1); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Wait: %v; want context.DeadlineExceeded", err)
			}
			if h, err := l.Wait(t.Context(), "w", 0); err != nil || h.Seq != 1 {
				t.Errorf("Wait past 0 = %v, %v; want seq 1", h, err)
			}
		})
	}
}

// TestOpenLiveMissing: a store that does not exist is an error at once.
func TestOpenLiveMissing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	if _, err := OpenLive(t.Context(), dir, nil); !errors.Is(err, ErrNotExist) {
		t.Errorf("OpenLive: %v; want ErrNotExist", err)
	}
	if _, err := OpenAt(t.Context(), dir, &Options{ReadOnly: true}); !errors.Is(err, ErrNotExist) {
		t.Errorf("OpenAt: %v; want ErrNotExist", err)
	}
	if _, err := OpenLive(t.Context(), dir, &LiveOptions{Poll: -1}); err == nil {
		t.Error("OpenLive with a negative Poll: no error")
	}
}

// TestGetMany gets blobs in one request through the writer (more bytes
// than one answer holds, and a missing one), and from the file.
func TestGetMany(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	w := mustOpen(t, dir, &Options{NoSync: true})
	var refs []cas.Ref
	var want [][]byte
	for i, size := range []int{6 << 20, 0, 10, 6 << 20, 6 << 20} {
		if size == 0 { // a ref the store does not hold
			refs, want = append(refs, cas.Sum([]byte("missing"))), append(want, nil)
			continue
		}
		b := bytes.Repeat([]byte{byte(i)}, size)
		ref, err := w.CAS().Put(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		refs, want = append(refs, ref), append(want, b)
	}
	check := func(t *testing.T, l *Live) {
		got, err := l.GetMany(ctx, refs)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("GetMany gave %d blobs; want %d", len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) || (got[i] == nil) != (want[i] == nil) {
				t.Errorf("blob %d: %d bytes; want %d", i, len(got[i]), len(want[i]))
			}
		}
	}
	t.Run("writer", func(t *testing.T) {
		l, err := OpenLive(ctx, dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		check(t, l)
		if l.Writer() == 0 {
			t.Error("not read through the writer")
		}
	})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	t.Run("file", func(t *testing.T) {
		l, err := OpenLive(ctx, dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		check(t, l)
	})
}

// TestWireErrors: an error the writer's store returns reaches the reader
// as the same kind of error (errors.Is and errors.As see it), with its
// message.
func TestWireErrors(t *testing.T) {
	ref, got := cas.Sum([]byte("a")), cas.Sum([]byte("b"))
	r := &remote{dir: "d", pid: 7}
	for _, tc := range []struct {
		err  error
		want error
	}{
		{fmt.Errorf("%w: %s", cas.ErrNotFound, ref), cas.ErrNotFound},
		{&cas.CorruptError{Ref: ref, Got: got}, cas.ErrCorrupt},
		{fmt.Errorf("journal: world w: %w", journal.ErrCorrupt), journal.ErrCorrupt},
		{fmt.Errorf("%w: bad", journal.ErrInvalidWorld), journal.ErrInvalidWorld},
		{journal.ErrClosed, ErrWriterGone},
		{errors.New("disk on fire"), nil},
	} {
		_, we := errorToWire(tc.err)
		back := r.fromWire(we)
		if tc.want != nil && !errors.Is(back, tc.want) {
			t.Errorf("%v came back as %v, which is not %v", tc.err, back, tc.want)
		}
		if !strings.Contains(back.Error(), tc.err.Error()) {
			t.Errorf("%v came back as %q", tc.err, back)
		}
	}
	_, we := errorToWire(&cas.CorruptError{Ref: ref, Got: got})
	if ce, ok := errors.AsType[*cas.CorruptError](r.fromWire(we)); !ok || ce.Ref != ref || ce.Got != got {
		t.Errorf("a corrupt blob came back as %v", r.fromWire(we))
	}
}

// TestWriterServesNoReads: a process that holds the file without serving
// reads (an older demiurge) leaves readers locked out, as before, with an
// error that says so.
func TestWriterServesNoReads(t *testing.T) {
	dir := t.TempDir()
	w := mustOpen(t, dir, &Options{NoSync: true})
	appendN(t, w, "w", journal.Head{}, 1)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(filepath.Join(dir, FileName), 0o600, nil) // holds the lock, serves nothing
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = OpenAt(t.Context(), dir, &Options{ReadOnly: true, LockTimeout: 100 * time.Millisecond})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "serves no reads") {
		t.Errorf("OpenAt beside a writer that serves no reads: %v; want ErrLocked saying so", err)
	}
	l, err := OpenLive(t.Context(), dir, &LiveOptions{LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Head(t.Context(), "w"); !errors.Is(err, ErrLocked) {
		t.Errorf("Live.Head beside a writer that serves no reads: %v; want ErrLocked", err)
	}
}
