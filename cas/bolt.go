package cas

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/demiurge-dev/demiurge/cas/internal/boltlayout"
)

var (
	boltBucket  = []byte(boltlayout.Bucket)
	boltBlobKey = []byte(boltlayout.BlobKey)
)

// DefaultBoltTimeout is how long OpenBolt waits by default for the file
// lock that another process holds.
const DefaultBoltTimeout = 5 * time.Second

// BoltOptions configure OpenBolt. A nil *BoltOptions and the zero value
// mean the defaults: wait DefaultBoltTimeout for the lock, fsync every
// commit, read-write, new files with mode 0600.
type BoltOptions struct {
	// Timeout is how long to wait for the file lock another process
	// holds; 0 means DefaultBoltTimeout.
	Timeout time.Duration
	// NoSync skips the fsync after each commit. Puts are faster and may be
	// lost (never torn) on power failure or an OS crash. For tests and
	// benchmarks.
	NoSync bool
	// ReadOnly opens the file with a shared lock, so several readers (for
	// example `demiurge cas verify`) can share it; Put then returns
	// ErrReadOnly. The file must exist.
	ReadOnly bool
	// Mode is the permission of a new file; 0 means 0600.
	Mode os.FileMode
}

// Validate reports the first invalid option, or nil.
func (o *BoltOptions) Validate() error {
	if o == nil {
		return nil
	}
	if o.Timeout < 0 {
		return fmt.Errorf("cas: bolt options: Timeout %v is negative", o.Timeout)
	}
	if o.Mode&^os.ModePerm != 0 {
		return fmt.Errorf("cas: bolt options: Mode %v has bits other than permissions", o.Mode)
	}
	return nil
}

// Bolt is a Store kept in a bbolt file, in the bucket boltlayout.Bucket. It is
// safe for concurrent use. Each Put is one bbolt transaction, durable when
// Put returns (unless BoltOptions.NoSync); PutTx writes inside the
// caller's transaction instead, so blobs commit together with other
// records.
type Bolt struct {
	db       *bbolt.DB
	owned    bool // Close closes db
	readOnly bool
	closed   atomic.Bool
}

var _ Store = (*Bolt)(nil)

// OpenBolt opens the bbolt file at path, creating it (but not its
// directory) if it does not exist, and the bucket boltlayout.Bucket in it.
// Passing nil options opens it with the defaults. Close closes the file.
// A damaged or empty file is refused as OpenBoltDB refuses it.
func OpenBolt(path string, opts *BoltOptions) (*Bolt, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	var o BoltOptions
	if opts != nil {
		o = *opts
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultBoltTimeout
	}
	if o.Mode == 0 {
		o.Mode = 0o600
	}
	bo := &bbolt.Options{
		Timeout:  o.Timeout,
		NoSync:   o.NoSync,
		ReadOnly: o.ReadOnly,
	}
	TuneBolt(bo)
	db, err := OpenBoltDB(path, o.Mode, bo)
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("cas: open bolt store %s: file still locked after %v (is another process using it?): %w", path, o.Timeout, err)
		}
		return nil, fmt.Errorf("cas: open bolt store %s: %w", path, err)
	}
	s, err := newBolt(db, true)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("cas: open bolt store %s: %w", path, err)
	}
	return s, nil
}

// BoltInitialMmapSize is the InitialMmapSize TuneBolt sets: how much of
// the file bbolt maps from the start. Until the file outgrows it, a commit
// never has to remap the file, which waits for every open read
// transaction to end. It costs address space, not memory.
const BoltInitialMmapSize = 1 << 30

// TuneBolt sets in o the bbolt options a file holding a Bolt store is
// opened with (by OpenBolt, and by whoever opens a file it shares with a
// Bolt store, through NewBolt): InitialMmapSize = BoltInitialMmapSize for
// a read-write file on a 64-bit system other than Windows (where bbolt
// would grow the file itself to that size). It leaves every other option
// as it is. The options bbolt offers besides were measured and not
// taken; docs/BENCHMARKS.md ("cas") has the figures and the reasons.
func TuneBolt(o *bbolt.Options) {
	if o.ReadOnly || runtime.GOOS == "windows" || strconv.IntSize < 64 {
		return
	}
	o.InitialMmapSize = max(o.InitialMmapSize, BoltInitialMmapSize)
}

// NewBolt returns a Bolt store in db, an open bbolt database that other
// packages share (the journal keeps its records in the same file). It
// creates the bucket boltlayout.Bucket unless db is read-only. Close does not
// close db: its opener does.
func NewBolt(db *bbolt.DB) (*Bolt, error) {
	if db == nil {
		return nil, errors.New("cas: NewBolt: nil *bbolt.DB")
	}
	s, err := newBolt(db, false)
	if err != nil {
		return nil, fmt.Errorf("cas: bolt store in %s: %w", db.Path(), err)
	}
	return s, nil
}

func newBolt(db *bbolt.DB, owned bool) (*Bolt, error) {
	s := &Bolt{db: db, owned: owned, readOnly: db.IsReadOnly()}
	if !s.readOnly {
		err := s.update(func(tx *bbolt.Tx) error {
			_, err := tx.CreateBucketIfNotExists(boltBucket)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("create bucket %q: %w", boltlayout.Bucket, err)
		}
	}
	return s, nil
}

// DB returns the bbolt database the store lives in, for callers that
// write blobs inside their own transactions (see PutTx).
func (s *Bolt) DB() *bbolt.DB { return s.db }

// Put stores data and returns its ref. Bytes already stored are not
// written again, and cost a read transaction, not a commit. bbolt copies
// data into its pages when the transaction commits, before Put returns;
// Put makes no copy of its own.
func (s *Bolt) Put(ctx context.Context, data []byte) (Ref, error) {
	if err := s.usable(ctx); err != nil {
		return Ref{}, err
	}
	if s.readOnly {
		return Ref{}, ErrReadOnly
	}
	ref := Sum(data) // outside any transaction: concurrent puts hash in parallel
	var have bool
	err := s.view(func(tx *bbolt.Tx) error {
		have = stored(tx, ref)
		return nil
	})
	if err != nil {
		return Ref{}, s.wrap("put", ref, err)
	}
	if have {
		return ref, nil
	}
	if err := s.update(func(tx *bbolt.Tx) error { return putIn(tx, ref, data) }); err != nil {
		return Ref{}, s.wrap("put", ref, err)
	}
	return ref, nil
}

// PutTx stores data inside tx, a read-write transaction on s.DB(), and
// returns its ref. The blob commits or rolls back with tx. Bytes already
// stored (or put earlier in tx) are not written again.
//
// As with bbolt's Bucket.Put, data must not be modified until tx has
// committed or rolled back: bbolt copies it only at commit. An error
// wrapping ErrCorrupt (a *BoltDamageError: bbolt met a damaged page) may
// leave tx half changed: roll it back.
func (s *Bolt) PutTx(tx *bbolt.Tx, data []byte) (ref Ref, err error) {
	if err := s.checkTx(tx); err != nil {
		return Ref{}, err
	}
	if !tx.Writable() {
		return Ref{}, errors.New("cas: PutTx needs a read-write transaction")
	}
	ref = Sum(data)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverDamage(s.db, &err)
	if err := putIn(tx, ref, data); err != nil {
		return Ref{}, fmt.Errorf("cas: put %s: %w", ref, err)
	}
	return ref, nil
}

// Get returns the bytes stored under ref, re-hashed and found to match.
// The returned slice is the caller's.
func (s *Bolt) Get(ctx context.Context, ref Ref) ([]byte, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	var out []byte
	err := s.view(func(tx *bbolt.Tx) error {
		v, err := lookup(tx, ref)
		out = bytes.Clone(v) // v lives in the mmap only until the tx ends
		return err
	})
	if err != nil {
		return nil, s.wrap("get", ref, err)
	}
	return verified(ref, out)
}

// GetTx is Get inside tx, a transaction on s.DB(): it sees blobs put
// earlier in tx. The returned slice is a verified copy, valid after tx
// ends.
func (s *Bolt) GetTx(tx *bbolt.Tx, ref Ref) (b []byte, err error) {
	if err := s.checkTx(tx); err != nil {
		return nil, err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverDamage(s.db, &err)
	v, err := lookup(tx, ref)
	if err != nil {
		return nil, err
	}
	return verified(ref, bytes.Clone(v))
}

// verified returns b if it is present and hashes to ref.
func verified(ref Ref, b []byte) ([]byte, error) {
	if b == nil {
		return nil, notFound(ref)
	}
	if got := Sum(b); got != ref {
		return nil, &CorruptError{Ref: ref, Got: got}
	}
	return b, nil
}

// Has reports whether the store holds ref, without reading its bytes.
func (s *Bolt) Has(ctx context.Context, ref Ref) (bool, error) {
	if err := s.usable(ctx); err != nil {
		return false, err
	}
	var have bool
	err := s.view(func(tx *bbolt.Tx) error {
		have = stored(tx, ref)
		return nil
	})
	if err != nil {
		return false, s.wrap("has", ref, err)
	}
	return have, nil
}

// Stat returns the size of the blob stored under ref.
func (s *Bolt) Stat(ctx context.Context, ref Ref) (int64, error) {
	if err := s.usable(ctx); err != nil {
		return 0, err
	}
	size := int64(-1)
	err := s.view(func(tx *bbolt.Tx) error {
		v, err := lookup(tx, ref)
		if v != nil {
			size = int64(len(v))
		}
		return err
	})
	if err != nil {
		return 0, s.wrap("stat", ref, err)
	}
	if size < 0 {
		return 0, notFound(ref)
	}
	return size, nil
}

// iterateBatch is how many entries Iterate reads per read transaction.
const iterateBatch = 1024

// Iterate calls fn for every blob in ascending order of ref digest. It
// reads the bucket in batches, one short read transaction each, and calls
// fn outside any transaction, so fn may use the store (bbolt deadlocks if
// one goroutine holds a read transaction while waiting for another).
// A key that is not a 32-byte digest, or a damaged page of the bucket
// (a *BoltDamageError), stops the walk with an error wrapping ErrCorrupt;
// a big blob whose own pages are damaged is listed with size 0, and Get
// reports the damage.
func (s *Bolt) Iterate(ctx context.Context, fn func(ref Ref, size int64) error) error {
	type entry struct {
		ref  Ref
		size int64
	}
	batch := make([]entry, 0, iterateBatch)
	var after []byte
	for {
		if err := s.usable(ctx); err != nil {
			return err
		}
		batch = batch[:0]
		err := s.view(func(tx *bbolt.Tx) error {
			b := tx.Bucket(boltBucket)
			if b == nil {
				return nil
			}
			c := b.Cursor()
			var k, v []byte
			if after == nil {
				k, v = c.First()
			} else if k, v = c.Seek(after); bytes.Equal(k, after) {
				k, v = c.Next()
			}
			for ; k != nil && len(batch) < iterateBatch; k, v = c.Next() {
				if len(k) != Size {
					return fmt.Errorf("%w: bucket %q holds key %x, not a blob under a %d-byte digest", ErrCorrupt, boltlayout.Bucket, k, Size)
				}
				if v == nil { // a blob in a bucket of its own
					// A bucket without the blob's bytes, or on a damaged
					// page, is listed with size 0; Get reports it.
					v = nestedBlobOrNil(b, k)
				}
				batch = append(batch, entry{Ref{algo: BLAKE3, digest: [Size]byte(k)}, int64(len(v))})
			}
			return nil
		})
		if err != nil {
			return s.wrap("iterate", Ref{}, err)
		}
		for _, e := range batch {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := fn(e.ref, e.size); err != nil {
				return err
			}
		}
		if len(batch) < iterateBatch {
			return nil
		}
		last := batch[len(batch)-1].ref.digest
		after = last[:]
	}
}

// maxFileProblems bounds the problems CheckFile reports.
const maxFileProblems = 10

// CheckFile checks the structure of the bbolt file the store lives in, page
// by page, with bbolt's own consistency check (Tx.Check): every page in
// use is well formed and reachable once, the keys of every page are in
// order, and the freelist agrees. Damage there can hide blobs (Get then
// reports them as not found) without any blob reading back wrong. It
// returns nil, or a *BoltDamageError (which wraps ErrCorrupt) listing the
// first problems found. It reads every page, the other data of a shared
// file included: use it to verify a store, not on every open. On a
// read-write store it holds the write lock while it runs.
func (s *Bolt) CheckFile(ctx context.Context) (err error) {
	if err := s.usable(ctx); err != nil {
		return err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverDamage(s.db, &err)
	// bbolt checks a read-only transaction safely only if nothing writes
	// meanwhile: a read-write store checks in a write transaction.
	tx, err := s.db.Begin(!s.readOnly)
	if err != nil {
		return s.wrap("check file", Ref{}, err)
	}
	defer func() { _ = tx.Rollback() }()
	var problems []string
	n := 0
	for e := range tx.Check() { // drained whole: Check's goroutine ends with it
		if n++; n <= maxFileProblems {
			problems = append(problems, e.Error())
		}
	}
	if n == 0 {
		return nil
	}
	d := damage(s.db.Path(), strings.Join(problems, "; "))
	if n > maxFileProblems {
		d.Detail += fmt.Sprintf("; and %d more problems", n-maxFileProblems)
	}
	return d
}

// Close marks the store closed; later calls return ErrClosed. It closes
// the bbolt file if OpenBolt opened it, not a DB given to NewBolt.
// Closing again is a no-op.
func (s *Bolt) Close() error {
	if s.closed.Swap(true) || !s.owned {
		return nil
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("cas: close bolt store %s: %w", s.db.Path(), err)
	}
	return nil
}

// view runs fn in a read transaction, turning a panic of bbolt on a
// damaged page (or a fault on the mapped file) into a *BoltDamageError.
func (s *Bolt) view(fn func(*bbolt.Tx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverDamage(s.db, &err)
	return s.db.View(fn)
}

// update is view for a read-write transaction; bbolt has rolled it back
// when the panic reaches update.
func (s *Bolt) update(fn func(*bbolt.Tx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverDamage(s.db, &err)
	return s.db.Update(fn)
}

func (s *Bolt) usable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

func (s *Bolt) checkTx(tx *bbolt.Tx) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if tx == nil || tx.DB() == nil {
		return errors.New("cas: transaction is nil or already closed")
	}
	if tx.DB() != s.db {
		return fmt.Errorf("cas: transaction on %s, not on the store's database %s", tx.DB().Path(), s.db.Path())
	}
	return nil
}

// wrap adds context to an error of bbolt or of a damaged file; a closed
// database is ErrClosed.
func (s *Bolt) wrap(op string, ref Ref, err error) error {
	if errors.Is(err, berrors.ErrDatabaseNotOpen) || s.closed.Load() {
		return ErrClosed
	}
	if _, ok := errors.AsType[*CorruptError](err); ok {
		return err // it names the blob
	}
	if ref.Valid() {
		return fmt.Errorf("cas: %s %s in %s: %w", op, ref, s.db.Path(), err)
	}
	return fmt.Errorf("cas: %s in %s: %w", op, s.db.Path(), err)
}

// lookup returns the stored bytes of ref in tx, or nil if it is not
// stored. SHA256 refs are never stored. The bytes are valid only until tx
// ends. A nested bucket under the key without the blob's bytes is an error
// wrapping ErrCorrupt.
func lookup(tx *bbolt.Tx, ref Ref) ([]byte, error) {
	if ref.algo != BLAKE3 {
		return nil, nil
	}
	b := tx.Bucket(boltBucket)
	if b == nil {
		return nil, nil
	}
	key := ref.digest[:]
	k, v := b.Cursor().Seek(key)
	if !bytes.Equal(k, key) {
		return nil, nil
	}
	if v != nil {
		return v, nil
	}
	if v, ok := nestedBlob(b, key); ok {
		return v, nil
	}
	return nil, &CorruptError{Ref: ref, Got: Sum(nil),
		Err: fmt.Errorf("its nested bucket in %q holds no value under %q", boltlayout.Bucket, boltlayout.BlobKey)}
}

// nestedBlob returns the bytes of the blob kept in the nested bucket key
// of b, and whether it found them.
func nestedBlob(b *bbolt.Bucket, key []byte) ([]byte, bool) {
	sub := b.Bucket(key)
	if sub == nil {
		return nil, false
	}
	v := sub.Get(boltBlobKey)
	return v, v != nil
}

// nestedBlobOrNil is nestedBlob that returns nil for a nested bucket on a
// damaged page. bbolt panics in a read transaction without changing it,
// so the caller's cursors go on.
func nestedBlobOrNil(b *bbolt.Bucket, key []byte) (v []byte) {
	defer func() {
		if recover() != nil {
			v = nil
		}
	}()
	v, _ = nestedBlob(b, key)
	return v
}

// stored reports whether tx holds ref, as a value or a nested bucket,
// without reading its bytes.
func stored(tx *bbolt.Tx, ref Ref) bool {
	if ref.algo != BLAKE3 {
		return false
	}
	b := tx.Bucket(boltBucket)
	if b == nil {
		return false
	}
	k, _ := b.Cursor().Seek(ref.digest[:])
	return bytes.Equal(k, ref.digest[:])
}

// emptyBlob is stored for an empty blob: bbolt reads a nil value put in
// the same transaction back as missing.
var emptyBlob = []byte{}

// putIn writes data under ref in tx unless it is already there: as the
// key's value if it is smaller than boltlayout.BlobBucketMin, else in a nested
// bucket of its own.
func putIn(tx *bbolt.Tx, ref Ref, data []byte) error {
	b := tx.Bucket(boltBucket)
	if b == nil {
		var err error
		if b, err = tx.CreateBucket(boltBucket); err != nil {
			return err
		}
	}
	key := ref.digest[:]
	if k, _ := b.Cursor().Seek(key); bytes.Equal(k, key) {
		return nil // content-addressed: the same key always has the same bytes
	}
	if len(data) < boltlayout.BlobBucketMin {
		if data == nil {
			data = emptyBlob
		}
		return b.Put(key, data)
	}
	sub, err := b.CreateBucket(key)
	if err != nil {
		return err
	}
	return sub.Put(boltBlobKey, data)
}
