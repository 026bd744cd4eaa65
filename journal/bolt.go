package journal

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// The layout of a journal inside a bbolt file, in top-level buckets:
//
//	journal                  format = "demiurge/journal/v1"
//	journal/<world>          one bucket per world with records:
//	  8-byte big-endian seq -> record bytes (see Record.Encode)
//	  ff ff ff ff ff ff ff ff 'h' -> head: 8-byte big-endian seq ++ 32-byte BLAKE3 digest
//
// World buckets are top-level, not nested in "journal", and the head key
// sorts after every seq key, so it sits on the page appends write anyway:
// a commit writes the same pages as a raw bbolt put of the records.
var (
	bucketJournal = []byte("journal")
	keyFormat     = []byte("format")
	formatV1      = []byte("demiurge/journal/v1")
	worldPrefix   = []byte("journal/")
	keyHead       = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 'h'}
)

// worldBucket returns the bucket of world, or nil if it has none.
func worldBucket(tx *bbolt.Tx, world string) *bbolt.Bucket {
	return tx.Bucket(worldBucketName(world))
}

func worldBucketName(world string) []byte {
	return append(append(make([]byte, 0, len(worldPrefix)+len(world)), worldPrefix...), world...)
}

const headSize = 8 + cas.Size

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
}

var _ Store = (*Bolt)(nil)

// OpenBolt opens (creating if needed) the bbolt file at path and the
// journal in it. Passing nil options opens it with the defaults. Close
// closes the file.
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
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: o.Timeout, ReadOnly: o.ReadOnly})
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
		db:       db,
		ownDB:    ownDB,
		readOnly: readOnly,
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	// Look first, so opening an existing journal writes nothing.
	missing := false
	err := db.View(func(tx *bbolt.Tx) error {
		top := tx.Bucket(bucketJournal)
		if top == nil {
			missing = true
			return nil
		}
		return checkFormat(top)
	})
	if err == nil && missing && !readOnly {
		err = db.Update(func(tx *bbolt.Tx) error {
			top, err := tx.CreateBucketIfNotExists(bucketJournal)
			if err != nil {
				return err
			}
			if top.Get(keyFormat) == nil {
				if err := top.Put(keyFormat, formatV1); err != nil {
					return err
				}
			}
			return checkFormat(top)
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

func checkFormat(top *bbolt.Bucket) error {
	if f := top.Get(keyFormat); !bytes.Equal(f, formatV1) {
		return fmt.Errorf("bucket %q holds format %q, want %q (not a demiurge journal, or a newer one)", bucketJournal, f, formatV1)
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
	for _, r := range recs {
		req.size += len(r)
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
	if from == 0 {
		from = 1
	}
	var c *chain
	var chunk []Record
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		chunk = chunk[:0]
		done, readErr := j.readChunk(world, from, &c, &chunk)
		for _, rec := range chunk {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := fn(rec); err != nil {
				return err
			}
		}
		if readErr != nil || done {
			return readErr
		}
		clear(chunk)
	}
}

// readChunk reads the next chunk of records of world into out, starting at
// from on the first call (when *c is nil) and after the last record of *c
// later. done reports that the records are exhausted (and checked against
// the head).
func (j *Bolt) readChunk(world string, from uint64, c **chain, out *[]Record) (done bool, err error) {
	err = j.view(world, func(tx *bbolt.Tx) error {
		b := worldBucket(tx, world)
		head, hasHead, err := loadHead(b, world)
		if err != nil {
			return err
		}
		if *c == nil {
			if err := checkPresence(world, head, hasHead, b); err != nil {
				return err
			}
			if !hasHead || from > head.Seq+1 {
				done = true
				return nil
			}
			prev := Genesis(world)
			if from > 1 {
				v := b.Get(seqKey(from - 1))
				if v == nil {
					return corruptf(world, from-1, "record %d is missing", from-1)
				}
				rec, err := DecodeRecord(v)
				if err != nil {
					return corruptf(world, from-1, "record %d does not decode: %v", from-1, err)
				}
				if rec.Seq != from-1 {
					return corruptf(world, from-1, "record stored as seq %d holds seq %d", from-1, rec.Seq)
				}
				prev = rec.Hash
			}
			*c = newChain(world, from, prev)
		}
		if b == nil {
			return corruptf(world, (*c).next, "the records of world %s are gone", world)
		}
		cur := b.Cursor()
		size := 0
		for k, v := cur.Seek(seqKey((*c).next)); k != nil && !bytes.Equal(k, keyHead); k, v = cur.Next() {
			if len(*out) >= readChunkRecords || size >= readChunkBytes {
				return nil
			}
			if len(k) != 8 || v == nil {
				return corruptf(world, (*c).next, "unexpected key %x among the records (after seq %d)", k, (*c).next-1)
			}
			rec, err := (*c).check(binary.BigEndian.Uint64(k), v)
			if err != nil {
				return err
			}
			rec.Payload = bytes.Clone(rec.Payload) // v lives in the mmap only during tx
			*out = append(*out, rec)
			size += len(v)
		}
		done = true
		return (*c).finish(head)
	})
	return done, err
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
		var err error
		head, _, err = loadHead(worldBucket(tx, world), world)
		return err
	})
	return head, err
}

// Worlds implements Lister. It also checks that every world's bucket has a
// head entry.
func (j *Bolt) Worlds(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var names []string
	err := j.view("", func(tx *bbolt.Tx) error {
		c := tx.Cursor()
		for k, v := c.Seek(worldPrefix); k != nil && bytes.HasPrefix(k, worldPrefix); k, v = c.Next() {
			world := string(k[len(worldPrefix):])
			if v != nil {
				return corruptf("", 0, "unexpected top-level key %q", k)
			}
			if err := ValidateWorld(world); err != nil {
				return corruptf(world, 0, "bucket %q is not named for a valid world: %v", k, err)
			}
			if _, hasHead, err := loadHead(tx.Bucket(k), world); err != nil {
				return err
			} else if !hasHead {
				return corruptf(world, 0, "world %s has no head entry", world)
			}
			names = append(names, world)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return names, nil
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
	if j.ownDB {
		if err := j.db.Close(); err != nil {
			return fmt.Errorf("close journal %s: %w", j.db.Path(), err)
		}
	}
	return nil
}

// view runs fn in a read transaction. A panic inside bbolt, which a
// damaged file can cause, is reported as corruption instead of crashing.
func (j *Bolt) view(world string, fn func(*bbolt.Tx) error) (err error) {
	if j.closed.Load() {
		return ErrClosed
	}
	tx, err := j.db.Begin(false)
	if err != nil {
		return dbError(err)
	}
	defer func() { _ = tx.Rollback() }()
	defer func() {
		if p := recover(); p != nil {
			err = corruptf(world, 0, "bbolt failed reading %s: %v", j.db.Path(), p)
		}
	}()
	return fn(tx)
}

// dbError maps bbolt's errors to the journal's.
func dbError(err error) error {
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return fmt.Errorf("%w (bbolt: %v)", ErrClosed, err)
	}
	return err
}

func seqKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), seq)
}

func encodeHead(h Head) []byte {
	b := make([]byte, 0, headSize)
	b = binary.BigEndian.AppendUint64(b, h.Seq)
	d := h.Hash.Digest()
	return append(b, d[:]...)
}

// loadHead reads the head entry of world from its bucket b (nil if the
// world has none).
func loadHead(b *bbolt.Bucket, world string) (Head, bool, error) {
	if b == nil {
		return Head{}, false, nil
	}
	v := b.Get(keyHead)
	if v == nil {
		return Head{}, false, nil
	}
	if len(v) != headSize {
		return Head{}, false, corruptf(world, 0, "head entry is %d bytes, want %d", len(v), headSize)
	}
	h := Head{Seq: binary.BigEndian.Uint64(v[:8]), Hash: cas.RefFromDigest(cas.BLAKE3, [cas.Size]byte(v[8:]))}
	if h.Seq == 0 {
		return Head{}, false, corruptf(world, 0, "head entry holds seq 0")
	}
	return h, true, nil
}

// checkPresence checks that a world's bucket b, if it exists, has a head
// entry and that its last record is the head's seq.
func checkPresence(world string, head Head, hasHead bool, b *bbolt.Bucket) error {
	if b == nil {
		return nil
	}
	if !hasHead {
		return corruptf(world, 0, "world %s has no head entry", world)
	}
	cur := b.Cursor()
	last, _ := cur.Last()
	if bytes.Equal(last, keyHead) {
		last, _ = cur.Prev()
	}
	switch {
	case last == nil:
		return corruptf(world, 1, "world %s has a head (seq %d) but no records", world, head.Seq)
	case len(last) != 8:
		return corruptf(world, head.Seq, "unexpected key %x among the records", last)
	case binary.BigEndian.Uint64(last) != head.Seq:
		return corruptf(world, head.Seq, "the head is seq %d, but the last stored record is %d", head.Seq, binary.BigEndian.Uint64(last))
	}
	return nil
}
