package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/pgstore"
)

// DefaultPoll is how often Live.Wait looks at a store that no process
// serves (a bbolt file nobody writes, or a PostgreSQL store) by default.
const DefaultPoll = 250 * time.Millisecond

// retryLock is how long a reader waits between two looks for a writer
// that serves reads or a file it can lock.
const retryLock = 50 * time.Millisecond

// LiveOptions configure OpenLive. A nil *LiveOptions and the zero value
// mean the defaults.
type LiveOptions struct {
	// LockTimeout is how long a read waits when no process serves the
	// store and another holds its file (a writer starting, or one of a
	// demiurge that does not serve reads); 0 means DefaultLockTimeout.
	LockTimeout time.Duration
	// Poll is how often Wait looks at a store no process serves; 0 means
	// DefaultPoll.
	Poll time.Duration
	// OnSource, if set, is called with a sentence each time the reads
	// start going another way: through the process that writes the
	// store, or to the file itself (after that process stopped, say).
	OnSource func(msg string)
}

// Validate reports the first invalid option, or nil.
func (o *LiveOptions) Validate() error {
	if o == nil {
		return nil
	}
	if o.LockTimeout < 0 {
		return fmt.Errorf("store: LiveOptions.LockTimeout is %v, want >= 0", o.LockTimeout)
	}
	if o.Poll < 0 {
		return fmt.Errorf("store: LiveOptions.Poll is %v, want >= 0", o.Poll)
	}
	return nil
}

// Live reads a store that another process may be writing, for as long as
// it is open: what a command following a running world, or a web server
// showing one, uses. It implements journal.Reader, journal.Lister and
// cas.Getter, and adds Wait.
//
// Each read goes the way that works at that moment: through the process
// that writes the store (over the socket it serves, answered from what it
// has made durable), or, when no process serves the store, to the file,
// opened read-only for that read alone and closed after it, so that a
// Live never keeps a writer from starting for longer than one read. When
// the writer stops in the middle of a read (killed, say), the read goes
// on from the file, or through the next writer, where it stopped.
// A PostgreSQL store is read as it is: it allows reads beside writers.
//
// A Live is safe for concurrent use. Close releases it.
type Live struct {
	dir  string
	o    LiveOptions
	pg   *Handle // a PostgreSQL store, opened once
	name string

	mu     sync.Mutex
	rem    *remote // the writer reads go through; nil when there is none
	file   *Store  // the file, open while reads use it
	users  int     // reads using file
	source string  // the way reads went last, for OnSource
	closed bool
}

// OpenLive opens the store where names (a directory or a postgres://
// URL) for live reads. The store must exist: otherwise the error wraps
// ErrNotExist. Passing nil options uses the defaults. It does not hold
// the store's file open; the caller must Close the Live.
func OpenLive(ctx context.Context, where string, opts *LiveOptions) (*Live, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	var o LiveOptions
	if opts != nil {
		o = *opts
	}
	if o.LockTimeout == 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if o.Poll == 0 {
		o.Poll = DefaultPoll
	}
	if err := CheckWhere(where); err != nil {
		return nil, err
	}
	if IsURL(where) {
		h, err := OpenAt(ctx, where, &Options{ReadOnly: true})
		if err != nil {
			return nil, err
		}
		return &Live{o: o, pg: h, name: h.Dir()}, nil
	}
	if where == "" {
		return nil, errors.New("open store: empty directory name")
	}
	if err := checkFile(where); err != nil {
		return nil, err
	}
	return &Live{dir: where, o: o, name: where}, nil
}

// checkFile checks that the store in dir exists, as Open read-only does.
func checkFile(dir string) error {
	path := filepath.Join(dir, FileName)
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("open store %s: %w: %s not found", dir, ErrNotExist, path)
	case err != nil:
		return fmt.Errorf("open store %s: %w", dir, err)
	case !st.Mode().IsRegular():
		return fmt.Errorf("open store %s: %s is not a regular file", dir, path)
	}
	return nil
}

// Dir returns the store's directory, or its URL with the password
// redacted: the name to show in messages.
func (l *Live) Dir() string { return l.name }

// Postgres returns the PostgreSQL store a Live of a postgres:// URL reads
// (opened read-only), or nil for a store on disk.
func (l *Live) Postgres() *pgstore.Store {
	if l.pg == nil {
		return nil
	}
	return l.pg.Postgres()
}

// Writer returns the id of the process whose socket the last read went
// through, or 0 if it read the file (or a PostgreSQL store).
func (l *Live) Writer() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rem != nil {
		return l.rem.pid
	}
	return 0
}

// Close releases the Live: its connection to the writer, and the
// PostgreSQL store's connections. Closing again does nothing.
func (l *Live) Close() error {
	if l.pg != nil {
		return l.pg.Close()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.rem != nil {
		l.rem.close()
		l.rem = nil
	}
	var err error
	if l.file != nil && l.users == 0 {
		err = l.file.Close()
		l.file = nil
	}
	return err
}

// source is one way to read a store.
type source interface {
	worlds(ctx context.Context) ([]string, error)
	head(ctx context.Context, world string) (journal.Head, error)
	read(ctx context.Context, world string, from uint64, prev cas.Ref, fn func(journal.Record) error) (journal.Record, error)
	get1(ctx context.Context, ref cas.Ref) ([]byte, error)
	stat(ctx context.Context, ref cas.Ref) (int64, error)
	iterate(ctx context.Context, fn func(cas.Ref, int64) error) error
}

// local reads a store in this process: an open file, or PostgreSQL.
type local struct {
	j interface {
		journal.Reader
		journal.Lister
	}
	c cas.Store
}

func (s local) worlds(ctx context.Context) ([]string, error) { return s.j.Worlds(ctx) }
func (s local) head(ctx context.Context, world string) (journal.Head, error) {
	return s.j.Head(ctx, world)
}
func (s local) get1(ctx context.Context, ref cas.Ref) ([]byte, error) { return s.c.Get(ctx, ref) }
func (s local) stat(ctx context.Context, ref cas.Ref) (int64, error)  { return s.c.Stat(ctx, ref) }
func (s local) iterate(ctx context.Context, fn func(cas.Ref, int64) error) error {
	return s.c.Iterate(ctx, fn)
}

// read reads on from seq from; a read taken over from a writer that
// stopped checks that the first record links to prev.
func (s local) read(ctx context.Context, world string, from uint64, prev cas.Ref, fn func(journal.Record) error) (last journal.Record, err error) {
	err = s.j.Read(ctx, world, from, func(r journal.Record) error {
		if last.Seq == 0 && from > 1 && prev.Valid() && r.Prev != prev {
			return &remoteError{fmt.Sprintf("journal: world %s: record %d in the file links to %s, but the writer's record %d was %s", world, r.Seq, r.Prev, r.Seq-1, prev), journal.ErrCorrupt}
		}
		if err := fn(r); err != nil {
			return err
		}
		last = r
		return nil
	})
	return last, err
}

// acquire returns the way to read now, and the function to call with the
// read's outcome when done with it.
func (l *Live) acquire(ctx context.Context) (source, func(error), error) {
	if l.pg != nil {
		return local{l.pg.Journal(), l.pg.CAS()}, func(error) {}, nil
	}
	l.mu.Lock()
	switch {
	case l.closed:
		l.mu.Unlock()
		return nil, nil, fmt.Errorf("store %s: read after Close: %w", l.dir, journal.ErrClosed)
	case l.rem != nil:
		r := l.rem
		l.mu.Unlock()
		return r, l.releaseRemote(r), nil
	case l.file != nil:
		l.users++
		f := l.file
		l.mu.Unlock()
		return local{f.journal, f.cas}, l.releaseFile, nil
	}
	l.mu.Unlock()
	r, f, err := discover(ctx, l.dir, l.o.LockTimeout)
	if err != nil {
		return nil, nil, err
	}
	l.mu.Lock()
	if r != nil {
		if l.rem != nil { // another read found it first
			r.close()
			r = l.rem
		}
		l.rem = r
		msg := l.noteLocked(fmt.Sprintf("process %d", r.pid), fmt.Sprintf("reading store %s through process %d, which writes it", l.dir, r.pid))
		l.mu.Unlock()
		l.announce(msg)
		return r, l.releaseRemote(r), nil
	}
	if l.file != nil { // another read opened it first
		_ = f.Close()
		f = l.file
	}
	l.file = f
	l.users++
	msg := l.noteLocked("file", fmt.Sprintf("reading the file of store %s (no process writes it)", l.dir))
	l.mu.Unlock()
	l.announce(msg)
	return local{f.journal, f.cas}, l.releaseFile, nil
}

// noteLocked records the way reads go and returns the sentence to
// announce, or "" if it is the way they went before.
func (l *Live) noteLocked(source, msg string) string {
	if l.source == source {
		return ""
	}
	l.source = source
	return msg
}

func (l *Live) announce(msg string) {
	if msg != "" && l.o.OnSource != nil {
		l.o.OnSource(msg)
	}
}

func (l *Live) releaseRemote(r *remote) func(error) {
	return func(err error) {
		if !errors.Is(err, ErrWriterGone) {
			return
		}
		l.mu.Lock()
		if l.rem == r {
			l.rem = nil
			r.close()
			l.source = ""
		}
		l.mu.Unlock()
		l.announce(fmt.Sprintf("process %d stopped serving store %s", r.pid, l.dir))
	}
}

func (l *Live) releaseFile(error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.users--; l.users == 0 && l.file != nil {
		_ = l.file.Close()
		l.file = nil
	}
}

// discover finds the way to read the store in dir: through the process
// that writes it, or the file opened read-only if no process holds it.
// While a process holds the file without serving reads (one starting, or
// a demiurge that does not serve them), it looks again every retryLock,
// for up to timeout, and then fails with an error wrapping ErrLocked.
func discover(ctx context.Context, dir string, timeout time.Duration) (*remote, *Store, error) {
	deadline := time.Now().Add(timeout)
	for {
		r, err := dialWriter(ctx, dir)
		if err == nil {
			return r, nil, nil
		}
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if errors.Is(err, ErrOtherUser) { // it keeps the file locked, and will not serve us
			return nil, nil, err
		}
		s, err := Open(dir, &Options{ReadOnly: true, LockTimeout: time.Nanosecond})
		if err == nil {
			return nil, s, nil
		}
		if !errors.Is(err, ErrLocked) {
			return nil, nil, err
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("open store %s: %w: %s is held by another process that serves no reads (one still starting, a demiurge older than this one, or a store directory where no socket can be made); waited %v for it: try again, or stop that process",
				dir, ErrLocked, filepath.Join(dir, FileName), timeout)
		}
		t := time.NewTimer(retryLock)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, ctx.Err()
		case <-t.C:
		}
	}
}

// do runs op on the way to read now; if the writer stops during op, it
// runs op again on the next way (op picks up where it stopped).
func (l *Live) do(ctx context.Context, op func(source) error) error {
	for tries := 0; ; tries++ {
		src, release, err := l.acquire(ctx)
		if err != nil {
			return err
		}
		err = op(src)
		release(err)
		if !errors.Is(err, ErrWriterGone) || tries >= 3 || ctx.Err() != nil {
			return err
		}
	}
}

// Worlds implements journal.Lister: the worlds with durable records.
func (l *Live) Worlds(ctx context.Context) (names []string, err error) {
	err = l.do(ctx, func(s source) error {
		names, err = s.worlds(ctx)
		return err
	})
	return names, err
}

// Head implements journal.Reader: the world's newest durable record.
func (l *Live) Head(ctx context.Context, world string) (h journal.Head, err error) {
	err = l.do(ctx, func(s source) error {
		h, err = s.head(ctx, world)
		return err
	})
	return h, err
}

// Read implements journal.Reader. It reads the records durable when it
// starts (a writer's records committed meanwhile may be visited too). If
// the writer stops during the read, the read goes on from the record
// after the last one fn saw, checking that it links to it.
func (l *Live) Read(ctx context.Context, world string, from uint64, fn func(journal.Record) error) error {
	var prev cas.Ref
	return l.do(ctx, func(s source) error {
		last, err := s.read(ctx, world, from, prev, fn)
		if last.Seq != 0 {
			from, prev = last.Seq+1, last.Hash
		}
		return err
	})
}

// Get implements cas.Getter; the bytes are checked against ref.
func (l *Live) Get(ctx context.Context, ref cas.Ref) (b []byte, err error) {
	err = l.do(ctx, func(s source) error {
		b, err = s.get1(ctx, ref)
		return err
	})
	return b, err
}

// GetMany returns the blobs stored under refs, in order: blobs[i] is nil
// where the store does not hold refs[i]. Through a writer it takes one
// round trip for many blobs (a follower getting the blobs that a batch of
// records names), where Get takes one each. A blob whose bytes do not hash
// to its ref is an error (a *cas.CorruptError), as with Get.
func (l *Live) GetMany(ctx context.Context, refs []cas.Ref) ([][]byte, error) {
	blobs := make([][]byte, len(refs))
	done := make([]bool, len(refs))
	for start := 0; start < len(refs); {
		end := min(start+maxMany, len(refs))
		err := l.do(ctx, func(s source) error {
			r, ok := s.(*remote)
			if !ok {
				for i := start; i < end; i++ {
					b, err := s.get1(ctx, refs[i])
					if err != nil && !errors.Is(err, cas.ErrNotFound) {
						return err
					}
					blobs[i], done[i] = b, true
				}
				return nil
			}
			return r.getMany(ctx, refs[start:end], blobs[start:end], done[start:end])
		})
		if err != nil {
			return nil, err
		}
		// The writer answers the first ref asked at least, and leaves
		// refs out once its answer is full: ask again from the first.
		for start < end && done[start] {
			start++
		}
	}
	return blobs, nil
}

// Stat implements cas.Statter.
func (l *Live) Stat(ctx context.Context, ref cas.Ref) (n int64, err error) {
	err = l.do(ctx, func(s source) error {
		n, err = s.stat(ctx, ref)
		return err
	})
	return n, err
}

// Has implements cas.Haser.
func (l *Live) Has(ctx context.Context, ref cas.Ref) (bool, error) {
	_, err := l.Stat(ctx, ref)
	if errors.Is(err, cas.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Iterate implements cas.Iterator. If the writer stops during the walk,
// it goes on after the last blob fn saw.
func (l *Live) Iterate(ctx context.Context, fn func(cas.Ref, int64) error) error {
	var last cas.Ref
	return l.do(ctx, func(s source) error {
		skipping := last.Valid()
		return s.iterate(ctx, func(ref cas.Ref, size int64) error {
			if skipping { // refs come in ascending order: skip to where the walk stopped
				if ref == last {
					skipping = false
				}
				return nil
			}
			if err := fn(ref, size); err != nil {
				return err
			}
			last = ref
			return nil
		})
	})
}

// Wait returns the world's durable head once it is past seq after: at
// once if it already is. Through a writer it is told of each commit as it
// becomes durable; otherwise it looks every LiveOptions.Poll, opening the
// file only to look. It returns ctx.Err() when ctx is done first. A
// writer that stops, or starts, while it waits is taken in its stride.
func (l *Live) Wait(ctx context.Context, world string, after uint64) (journal.Head, error) {
	if err := journal.ValidateWorld(world); err != nil {
		return journal.Head{}, err
	}
	for {
		src, release, err := l.acquire(ctx)
		if err != nil {
			return journal.Head{}, err
		}
		var h journal.Head
		if r, ok := src.(*remote); ok {
			h, err = r.wait(ctx, world, after)
		} else {
			h, err = src.head(ctx, world)
		}
		release(err)
		switch {
		case ctx.Err() != nil:
			return journal.Head{}, ctx.Err()
		case errors.Is(err, ErrWriterGone):
			continue
		case err != nil:
			return journal.Head{}, err
		case h.Seq > after:
			return h, nil
		}
		if _, ok := src.(*remote); ok {
			continue // the writer's wait timed out: ask again
		}
		t := time.NewTimer(l.o.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return journal.Head{}, ctx.Err()
		case <-t.C:
		}
	}
}

var (
	_ journal.Reader = (*Live)(nil)
	_ journal.Lister = (*Live)(nil)
	_ cas.Getter     = (*Live)(nil)
	_ cas.Statter    = (*Live)(nil)
	_ cas.Iterator   = (*Live)(nil)
)

// liveJournal is a Live as the journal.Store of a read-only Handle.
type liveJournal struct{ *Live }

func (liveJournal) Append(context.Context, string, journal.Head, []journal.Entry) (journal.Head, error) {
	return journal.Head{}, journal.ErrReadOnly
}
func (liveJournal) Close() error { return nil }

// liveCAS is a Live as the cas.Store of a read-only Handle.
type liveCAS struct{ *Live }

func (liveCAS) Put(context.Context, []byte) (cas.Ref, error) { return cas.Ref{}, cas.ErrReadOnly }
func (liveCAS) Close() error                                 { return nil }
