package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/demiurge-dev/demiurge/cas"
)

// DefaultLockTimeout is how long OpenBolt waits for another process to
// release the file when BoltOptions.Timeout is 0.
const DefaultLockTimeout = 2 * time.Second

// Limits of one read transaction in Read: records are copied out in chunks
// so no read transaction stays open while fn runs.
const (
	readChunkRecords = 512
	readChunkBytes   = 1 << 20
)

// BoltOptions configure a Bolt journal. The zero value (and nil) means the
// defaults.
type BoltOptions struct {
	// ReadOnly opens the journal for reading only: OpenBolt takes a shared
	// lock on the file, nothing is ever written (not even the journal's
	// buckets in a file that lacks them), and appends return ErrReadOnly.
	// NewBolt also treats a DB opened read-only as ReadOnly.
	ReadOnly bool
	// Timeout is how long OpenBolt waits for a file locked by another
	// process; 0 means DefaultLockTimeout. NewBolt ignores it.
	Timeout time.Duration
}

// Validate reports whether the options are usable.
func (o *BoltOptions) Validate() error {
	if o == nil {
		return nil
	}
	if o.Timeout < 0 {
		return fmt.Errorf("journal: BoltOptions.Timeout is %v, want >= 0", o.Timeout)
	}
	return nil
}

// Bolt is a Store in a bbolt file. Commits are serial. Appends (from any
// number of goroutines and worlds) that arrive while a commit runs queue
// up, and the committer goroutine commits all of them in the next bbolt
// transaction (one fsync) and then acknowledges each: group commit. An
// append that finds no commit running commits at once in the caller's
// goroutine, taking along anything queued. Reads run in their own read
// transactions, concurrently with appends. It is safe for concurrent use.
type Bolt struct {
	db       *bbolt.DB
	ownDB    bool // Close closes db
	readOnly bool
	missing  bool // opened read-only in a file without a journal

	mu       sync.Mutex
	pending  []*appendReq // appends waiting for the committer, in arrival order
	stopping bool         // Close was called: no new appends

	// commitMu is held by whoever commits: the committer goroutine, or an
	// appending goroutine that found no commit running (see AppendWith).
	// Commits are serial and take the pending appends in arrival order.
	commitMu sync.Mutex

	wake   chan struct{} // cap 1: there may be pending appends
	done   chan struct{} // closed when the committer has exited
	closed atomic.Bool   // Close has stopped the commits; reads fail

	// counters for benchmarks and tests
	nCommits atomic.Uint64 // bbolt transactions committed with appends
	nAppends atomic.Uint64 // appends acknowledged

	// What readers may see (see Committed and Changed), guarded by pubMu.
	pubMu     sync.Mutex
	committed map[string]Head // each world's newest durable head, for the worlds appended to here
	commits   uint64          // commits begun
	inCommit  bool            // a commit is running: the file may show what is not durable yet
	changed   chan struct{}   // closed when the running (or next) commit ends; nil until asked for
}

var _ Store = (*Bolt)(nil)

// OpenBolt opens (creating if needed) the bbolt file at path and the
// journal in it. Passing nil options opens it with the defaults. Close
// closes the file. A damaged or empty file is refused as cas.OpenBoltDB
// refuses it.
func OpenBolt(path string, opts *BoltOptions) (*Bolt, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	var o BoltOptions
	if opts != nil {
		o = *opts
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultLockTimeout
	}
	db, err := cas.OpenBoltDB(path, 0o600, &bbolt.Options{Timeout: o.Timeout, ReadOnly: o.ReadOnly})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("open journal %s: locked by another process (waited %v): %w", path, o.Timeout, err)
		}
		return nil, fmt.Errorf("open journal %s: %w", path, err)
	}
	j, err := newBolt(db, o.ReadOnly, true)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open journal %s: %w", path, err)
	}
	return j, nil
}

// NewBolt opens the journal inside db, a bbolt file the caller shares with
// other data (the world keeps its CAS blobs in the same file), creating the
// journal's buckets if needed. Passing nil options uses the defaults. Close
// stops the journal but does not close db; the caller closes db after it.
//
// Durability follows db: if the caller sets db.NoSync, appends are not
// durable when acknowledged.
func NewBolt(db *bbolt.DB, opts *BoltOptions) (*Bolt, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	readOnly := db.IsReadOnly() || (opts != nil && opts.ReadOnly)
	j, err := newBolt(db, readOnly, false)
	if err != nil {
		return nil, fmt.Errorf("open journal in %s: %w", db.Path(), err)
	}
	return j, nil
}

func newBolt(db *bbolt.DB, readOnly, ownDB bool) (*Bolt, error) {
	j := &Bolt{
		db:        db,
		ownDB:     ownDB,
		readOnly:  readOnly,
		committed: map[string]Head{},
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	// Look first, so opening an existing journal writes nothing.
	var format []byte
	err := guard(db, db.View, func(tx *bbolt.Tx) error {
		if top := tx.Bucket(bucketJournal); top != nil {
			format = bytes.Clone(top.Get(keyFormat))
			if format == nil {
				format = []byte{}
			}
		}
		return nil
	})
	switch {
	case err != nil:
	case format == nil && readOnly:
		j.missing = true // nothing to read: every world is empty
	case format == nil:
		err = guard(db, db.Update, func(tx *bbolt.Tx) error {
			top, err := tx.CreateBucket(bucketJournal)
			if err != nil {
				return err
			}
			if err := top.Put(keyFormat, formatV2); err != nil {
				return err
			}
			return createLogBuckets(tx)
		})
	case bytes.Equal(format, formatV1) && readOnly:
		err = fmt.Errorf("the journal is in format %q, which this demiurge reads only after upgrading it: open it once read-write to upgrade it (any command that writes to the store does, e.g. demiurge run or demiurge cas put)", formatV1)
	case bytes.Equal(format, formatV1):
		err = guard(db, db.Update, upgradeV1)
	case !bytes.Equal(format, formatV2):
		err = fmt.Errorf("bucket %q holds format %q, want %q (not a demiurge journal, or a newer one)", bucketJournal, format, formatV2)
	default:
		err = guard(db, db.View, func(tx *bbolt.Tx) error {
			for _, name := range [][]byte{bucketLog, bucketAnchors} {
				if tx.Bucket(name) == nil {
					return fmt.Errorf("journal bucket %q is missing", name)
				}
			}
			return nil
		})
	}
	if err != nil {
		return nil, err
	}
	if readOnly {
		close(j.done)
	} else {
		go j.commitLoop()
	}
	return j, nil
}

func createLogBuckets(tx *bbolt.Tx) error {
	for _, name := range [][]byte{bucketLog, bucketAnchors} {
		if _, err := tx.CreateBucket(name); err != nil {
			return fmt.Errorf("create bucket %q: %w", name, err)
		}
	}
	return nil
}

// DB returns the bbolt database the journal lives in.
func (j *Bolt) DB() *bbolt.DB { return j.db }

// Append implements Appender: the append is committed together with the
// other appends pending at the time, in one transaction, and Append
// returns once that transaction is durable. It may run the commit in the
// caller's goroutine.
func (j *Bolt) Append(ctx context.Context, world string, expect Head, entries []Entry) (Head, error) {
	return j.AppendWith(ctx, world, expect, entries, nil)
}

// AppendWith is Append that also calls fn inside the same bbolt write
// transaction, so that data the caller writes with tx (such as the CAS
// blobs of a world step, through the CAS store's PutTx) commits in the
// same fsync as the records, or not at all.
//
// fn is called only if expect matches the world's head. If fn returns an
// error, nothing of this append (neither records nor fn's writes) is
// written and AppendWith returns fn's error as it is; other appends
// committed in the same group are not affected. If fn panics, the append
// fails the same way and AppendWith panics with the same value in the
// caller's goroutine.
//
// fn runs on the goroutine that commits (the committer goroutine or an
// appending one) while the transaction also holds other appends. It must
// only write its own data through tx, must not commit, roll back or keep
// tx, and must not call the journal (that would deadlock). fn may be
// called more than once: if the group transaction it ran in is rolled back
// (because another append's fn failed, or the commit failed), it runs
// again in a later transaction, and only the writes of the committed run
// persist. A nil fn makes AppendWith Append.
func (j *Bolt) AppendWith(ctx context.Context, world string, expect Head, entries []Entry, fn func(tx *bbolt.Tx) error) (Head, error) {
	if err := ValidateWorld(world); err != nil {
		return Head{}, err
	}
	if err := validateEntries(entries); err != nil {
		return Head{}, err
	}
	if err := ctx.Err(); err != nil {
		return Head{}, err
	}
	if j.readOnly {
		return Head{}, ErrReadOnly
	}
	// Encode here, in parallel with other callers, not in the committer:
	// the records are right exactly when expect is the head, which is the
	// only case in which they are written.
	recs, next, err := encodeEntries(world, expect, entries)
	if err != nil {
		return Head{}, err
	}
	req := &appendReq{world: world, expect: expect, next: next, records: recs, fn: fn, done: make(chan appendResult, 1)}
	if len(recs) > 0 {
		req.step = encodeStep(world, expect.Seq+1, len(recs))
		req.size = len(req.step)
		for _, r := range recs {
			req.size += len(r)
		}
	}
	j.mu.Lock()
	if j.stopping {
		j.mu.Unlock()
		return Head{}, ErrClosed
	}
	j.pending = append(j.pending, req)
	j.mu.Unlock()
	if j.commitMu.TryLock() {
		// No commit is running: commit the pending appends (this one and
		// any queued meanwhile) in this goroutine. A single writer thus
		// commits like a raw bbolt Update, without the switch to the
		// committer goroutine and back, which costs up to ~100 µs of
		// thread wake-ups on a loaded machine.
		func() {
			defer j.commitMu.Unlock()
			j.commitGroup()
		}()
	} else {
		// A commit is running: the committer goroutine takes this append,
		// with every other one queued meanwhile, when it ends.
		select {
		case j.wake <- struct{}{}:
		default:
		}
	}

	var res appendResult
	select {
	case res = <-req.done:
	case <-ctx.Done():
		j.mu.Lock()
		if !req.taken {
			if i := slices.Index(j.pending, req); i >= 0 {
				j.pending = slices.Delete(j.pending, i, i+1)
			}
			j.mu.Unlock()
			return Head{}, ctx.Err()
		}
		j.mu.Unlock()
		res = <-req.done // the commit has started: wait for its outcome
	}
	if res.panicked {
		panic(res.panicVal)
	}
	return res.head, res.err
}

// Read implements Reader. Records are read in chunks, each in its own read
// transaction, so fn never runs while a transaction is open and may call
// the journal.
func (j *Bolt) Read(ctx context.Context, world string, from uint64, fn func(Record) error) error {
	if err := ValidateWorld(world); err != nil {
		return err
	}
	if j.missing {
		return ctx.Err()
	}
	r := &logReader{world: world, from: max(from, 1)}
	var chunk []Record
	// A record is delivered once the link of the record after it (or the
	// head) confirms its hash: one changed in place never reaches fn. The
	// last record of a chunk waits for the next chunk.
	var held Record
	holding := false
	deliver := func(rec Record) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return fn(rec)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		chunk = chunk[:0]
		var done bool
		readErr := j.view(world, func(tx *bbolt.Tx) error {
			var err error
			done, err = r.chunk(tx, &chunk)
			return err
		})
		all := r.verified // every record read is confirmed, the last by the head
		if holding && (len(chunk) > 0 || all) {
			if err := deliver(held); err != nil { // confirmed by chunk[0]'s link
				return err
			}
		}
		holding = false
		confirmed := chunk
		if len(chunk) > 0 && !all {
			held, holding = chunk[len(chunk)-1], true
			confirmed = chunk[:len(chunk)-1]
		}
		for _, rec := range confirmed {
			if err := deliver(rec); err != nil {
				return err
			}
		}
		if readErr != nil || done {
			return readErr
		}
		clear(chunk)
	}
}

// Head implements Reader.
func (j *Bolt) Head(ctx context.Context, world string) (Head, error) {
	if err := ValidateWorld(world); err != nil {
		return Head{}, err
	}
	if err := ctx.Err(); err != nil {
		return Head{}, err
	}
	var head Head
	err := j.view(world, func(tx *bbolt.Tx) error {
		wh, _, err := loadWorldHead(tx, world)
		head = wh.head
		return err
	})
	return head, err
}

// Worlds implements Lister: the worlds with a head entry, and those with
// anchors (records) whose head entry is lost, which Read, Head and Verify
// then report. A head entry or anchor that names no valid world is an
// error wrapping ErrCorrupt, returned with the other names.
func (j *Bolt) Worlds(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var names []string
	var bad error // the first entry naming no valid world
	err := j.view("", func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketLog).Cursor()
		for k, _ := c.Seek([]byte{headMark}); k != nil; k, _ = c.Next() {
			world := string(k[1:])
			if err := ValidateWorld(world); err != nil {
				if bad == nil {
					bad = corruptf("", 0, "head entry %q is not named for a valid world: %v", k, err)
				}
				continue
			}
			names = append(names, world)
		}
		// One seek per world with anchors: a world whose head entry is
		// lost still has records.
		heads := len(names)
		ac := tx.Bucket(bucketAnchors).Cursor()
		for k, _ := ac.First(); k != nil; {
			i := bytes.IndexByte(k, 0)
			if i <= 0 {
				if bad == nil {
					bad = corruptf("", 0, "anchor key %x names no world", k)
				}
				k, _ = ac.Next()
				continue
			}
			world := string(k[:i])
			if err := ValidateWorld(world); err != nil {
				if bad == nil {
					bad = corruptf("", 0, "anchor key %x is not named for a valid world: %v", k, err)
				}
			} else if _, found := slices.BinarySearch(names[:heads], world); !found {
				names = append(names, world)
			}
			k, _ = ac.Seek(append([]byte(world), 1))
		}
		return nil
	})
	slices.Sort(names)
	if err != nil {
		return names, err
	}
	return names, bad
}

// Committed returns the head of world that readers may see: the newest
// head an append made durable, never one of a transaction still being
// committed. bbolt shows a transaction to new read transactions as soon
// as it writes its meta page, before the fsync that makes it durable;
// Head reads the file and may return such a head while Append has not
// returned. Committed returns what this journal has acknowledged for
// the worlds it appended to, and for the others what the file holds once
// no commit is running. It waits for a running commit to end when it
// has to, and returns ctx.Err() if ctx is done first.
//
// Every record up to the returned head is durable: a reader in another
// process (see internal/store) reads up to it and no further.
func (j *Bolt) Committed(ctx context.Context, world string) (Head, error) {
	if err := ValidateWorld(world); err != nil {
		return Head{}, err
	}
	for {
		j.pubMu.Lock()
		h, ok := j.committed[world]
		n, busy := j.commits, j.inCommit
		var wait <-chan struct{}
		if !ok && busy {
			wait = j.changedLocked()
		}
		j.pubMu.Unlock()
		if ok {
			return h, nil
		}
		if !busy {
			// No commit runs: the file's head is durable, unless a commit
			// began while it was read.
			h, err := j.Head(ctx, world)
			if err != nil {
				return Head{}, err
			}
			j.pubMu.Lock()
			h2, ok := j.committed[world]
			n2 := j.commits
			j.pubMu.Unlock()
			switch {
			case ok:
				return h2, nil
			case n2 == n:
				return h, nil
			}
			continue
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return Head{}, ctx.Err()
		}
		if j.closed.Load() {
			return Head{}, ErrClosed
		}
	}
}

// Changed returns a channel that is closed when the next commit of
// appends ends, once what it made durable shows in Committed (or when
// the journal is closed). To wait for a world to move past a head, take
// the channel first, then check Committed, then wait on it: a commit
// between the two is not missed.
func (j *Bolt) Changed() <-chan struct{} {
	j.pubMu.Lock()
	defer j.pubMu.Unlock()
	if j.closed.Load() {
		c := make(chan struct{})
		close(c)
		return c
	}
	return j.changedLocked()
}

func (j *Bolt) changedLocked() chan struct{} {
	if j.changed == nil {
		j.changed = make(chan struct{})
	}
	return j.changed
}

// Close implements Store: it waits for pending appends to commit, stops the
// committer, and closes the file if OpenBolt opened it (a DB passed to
// NewBolt stays open). A second Close returns nil.
func (j *Bolt) Close() error {
	j.mu.Lock()
	if j.stopping {
		j.mu.Unlock()
		<-j.done
		return nil
	}
	j.stopping = true
	j.mu.Unlock()
	select {
	case j.wake <- struct{}{}:
	default:
	}
	<-j.done
	j.commitMu.Lock() // wait for a commit running in an appending goroutine
	j.closed.Store(true)
	j.commitMu.Unlock()
	j.pubMu.Lock()
	if j.changed != nil {
		close(j.changed) // waiters wake and find the journal closed
		j.changed = nil
	}
	j.pubMu.Unlock()
	if j.ownDB {
		if err := j.db.Close(); err != nil {
			return fmt.Errorf("close journal %s: %w", j.db.Path(), err)
		}
	}
	return nil
}

// view runs fn in a read transaction. A panic inside bbolt, which a
// damaged file can cause (or a fault on the mapped file), is reported as
// corruption instead of crashing: a *CorruptError whose Err is a
// *cas.BoltDamageError naming the file and the page.
func (j *Bolt) view(world string, fn func(*bbolt.Tx) error) (err error) {
	if j.closed.Load() {
		return ErrClosed
	}
	if j.missing {
		return nil
	}
	tx, err := j.db.Begin(false)
	if err != nil {
		return dbError(err)
	}
	defer func() { _ = tx.Rollback() }()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = damaged(world, cas.BoltDamage(j.db, p))
		}
	}()
	return fn(tx)
}

// damaged is the *CorruptError of world for a damaged file.
func damaged(world string, d *cas.BoltDamageError) *CorruptError {
	return &CorruptError{World: world, Problem: d.Error(), Err: d}
}

// guard runs fn in a transaction of db, through run (db.View or
// db.Update), turning a panic of bbolt on a damaged file into a
// *CorruptError.
func guard(db *bbolt.DB, run func(func(*bbolt.Tx) error) error, fn func(*bbolt.Tx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = damaged("", cas.BoltDamage(db, p))
		}
	}()
	return run(fn)
}

// dbError maps bbolt's errors to the journal's.
func dbError(err error) error {
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return fmt.Errorf("%w (bbolt: %v)", ErrClosed, err)
	}
	return err
}
