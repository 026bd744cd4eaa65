// Package store opens the on-disk store of demiurge: one directory holding
// one bbolt file, shared by the content-addressed store and the journal.
//
// The CAS blobs and the journal records of a world live in the same file
// (demiurge.db) so that the world can commit a step's records and the
// blobs they name in one bbolt transaction (journal.Bolt.AppendWith with
// cas.Bolt.PutTx): after a crash either both are there or neither is.
//
// # Locking
//
// bbolt locks the file: a store opened read-write holds an exclusive lock
// for as long as it is open, a store opened read-only a shared one. One
// process writes a store at a time; Open read-write waits
// Options.LockTimeout for the lock and then fails with an error wrapping
// ErrLocked.
//
// # Reading while another process writes
//
// A process that opens a store read-write serves reads of it to other
// processes of the same user, over the unix socket SocketName in the store
// directory (mode 0600, in a directory of mode 0700; on Linux the writer
// and the reader also check each other's user id). It answers only from what is
// durable: the records of appends that have returned (the journal's
// Committed heads), never those of a transaction still committing, which
// bbolt would show to a read transaction before its fsync. A reader (Open
// read-only, OpenAt, OpenLive) reads through the socket when a process
// serves one, and otherwise opens the file as before; a socket left by a
// killed writer refuses connections, and the reader opens the file. The
// writer never opens a transaction for a reader while it commits, and
// each answer is read in short read transactions. Writes from a reader
// fail with cas.ErrReadOnly or journal.ErrReadOnly, as on a file opened
// read-only. Live follows a store that a writer may start and stop
// writing, and waits for records to land (Live.Wait).
//
// # Decisions from other processes
//
// The socket has one request that leads to a write: a user's decision on
// a tool call that waits for approval (Approval), which another process
// sends with SendApproval (demiurge approve beside a demiurge run). The
// store does not write it: it hands it to the handler that the process
// running the world registered (Store.HandleApprovals), and that process
// journals it in its world as its own terminal's answer would be, through
// the world's one writer. The single-writer rule stands: the lock is as
// exclusive as before, no other process touches the file, and what the
// sender can ask for is narrow (a world, a chat, a call that already
// waits, yes or no and why), checked by the handler against the world's
// state as any decision is. The same checks as for reads apply (the
// socket's mode, and on Linux the peer's user id); on Linux the handler
// also learns the sender's process id. Without a handler (a process that
// writes but runs no world that asks) decisions are refused with
// ErrNoApprovals.

package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
)

// FileName is the name of the bbolt file inside a store directory.
const FileName = "demiurge.db"

// DefaultLockTimeout is how long Open waits by default for a lock that
// another process holds.
const DefaultLockTimeout = time.Second

// Errors returned by Open.
var (
	// ErrLocked is returned (wrapped) when another process holds the
	// store's lock: a writer excludes everyone, a reader excludes writers.
	ErrLocked = errors.New("locked")
	// ErrNotExist is returned (wrapped) when a store opened read-only does
	// not exist. Opening read-write creates it instead.
	ErrNotExist = errors.New("no store there")
	// ErrWriterGone is returned (wrapped) when the process that served a
	// store's reads stopped during a read that cannot go on from the file
	// (a Handle read-only; a Live goes on by itself).
	ErrWriterGone = errors.New("store: the writer stopped")
	// ErrNoWriter is returned (wrapped) by SendApproval when no process
	// serves the store: none writes it, the one that does serves no
	// socket, or the socket is one a killed writer left.
	ErrNoWriter = errors.New("store: no process serves the store")
	// ErrOtherUser is returned (wrapped) when the process that writes the
	// store runs as another user: its socket answers only its own user,
	// so this one can neither read through it nor send it decisions, and
	// the file stays locked until it stops.
	ErrOtherUser = errors.New("store: written by a process of another user")
)

// Options configure Open. A nil *Options and the zero value mean the
// defaults: read-write (creating the store if needed), wait
// DefaultLockTimeout for another process's lock, fsync every commit.
type Options struct {
	// ReadOnly opens an existing store with a shared lock, so several
	// readers can use it at once. Nothing is ever written, not even the
	// directory or the file: a missing store is an error wrapping
	// ErrNotExist. Writes through the CAS or the journal return their
	// packages' ErrReadOnly.
	ReadOnly bool
	// LockTimeout is how long to wait for a lock another process holds;
	// 0 means DefaultLockTimeout.
	LockTimeout time.Duration
	// NoSync skips the fsync after each commit: faster, and commits may
	// be lost (never torn) on power failure. For tests and benchmarks.
	NoSync bool
	// Holder names this process for another that finds the store locked
	// ("demiurge serve"): a read-write open says it to the processes it
	// serves reads to (see Serving), so their LockedError names it.
	// Default: the program's file name.
	Holder string
}

// Validate reports the first invalid option, or nil.
func (o *Options) Validate() error {
	if o == nil {
		return nil
	}
	if o.LockTimeout < 0 {
		return fmt.Errorf("store: Options.LockTimeout is %v, want >= 0", o.LockTimeout)
	}
	if o.ReadOnly && o.NoSync {
		return errors.New("store: Options.NoSync makes no sense with ReadOnly")
	}
	return nil
}

// Store is an open store: a bbolt file and the CAS and journal inside it.
// Its methods are safe for concurrent use; the CAS and journal are too.
type Store struct {
	dir      string
	readOnly bool
	db       *bbolt.DB
	cas      *cas.Bolt
	journal  *journal.Bolt

	holder   string  // Options.Holder
	srv      *server // serves reads to other processes; nil read-only
	serveErr error   // why the store does not serve reads, if it does not

	release func() // ends this process's hold on the file (holdInProcess)

	closeOnce sync.Once
	closeErr  error
}

// Open opens the store in dir. Read-write (the default), it creates dir
// (mode 0700) and the file FileName in it (mode 0600) if they do not
// exist. Passing nil options opens it with the defaults. If another
// process holds the lock for longer than Options.LockTimeout, the error
// wraps ErrLocked; so it does if an open of this process that was not
// closed holds it that long (the error then says this process holds it). The caller must Close the store. Read-write, the store
// serves reads to other processes until Close (see Serving). Read-only,
// Open reads the file itself, so it waits for a writer's lock like a
// writer does: OpenAt and OpenLive read through the writer instead.
//
// A damaged file is refused, read-only or read-write, and left as it is:
// an empty one with an error wrapping cas.ErrEmptyFile (it is never made
// a new store: whatever it held would be forgotten without a word), one
// cut short or with a damaged page that opening reads with a
// *cas.BoltDamageError. Both wrap cas.ErrCorrupt or journal.ErrCorrupt,
// except the empty file.
func Open(dir string, opts *Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.LockTimeout == 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if dir == "" {
		return nil, errors.New("open store: empty directory name")
	}
	path := filepath.Join(dir, FileName)
	if o.ReadOnly {
		st, err := os.Stat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("open store %s: %w: %s not found", dir, ErrNotExist, path)
		case err != nil:
			return nil, fmt.Errorf("open store %s: %w", dir, err)
		case !st.Mode().IsRegular():
			return nil, fmt.Errorf("open store %s: %s is not a regular file", dir, path)
		}
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}

	release, err := holdInProcess(path, o.ReadOnly, o.LockTimeout)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	opened := false
	defer func() {
		if !opened {
			release()
		}
	}()
	bo := &bbolt.Options{
		Timeout:  o.LockTimeout,
		ReadOnly: o.ReadOnly,
		NoSync:   o.NoSync,
	}
	cas.TuneBolt(bo) // the CAS's blobs are most of the file's bytes
	db, err := cas.OpenBoltDB(path, 0o600, bo)
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, lockedBy("open store", dir, o.LockTimeout)
		}
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	s := &Store{dir: dir, readOnly: o.ReadOnly, db: db, holder: cmp.Or(o.Holder, filepath.Base(os.Args[0]))}
	if s.cas, err = cas.NewBolt(db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	if s.journal, err = journal.NewBolt(db, &journal.BoltOptions{ReadOnly: o.ReadOnly}); err != nil {
		_ = s.cas.Close()
		_ = db.Close()
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	if !o.ReadOnly {
		// A store that cannot serve reads (a file system without sockets)
		// is still written; readers then find it locked, as they did
		// before stores served reads.
		if s.srv, s.serveErr = serve(s); s.serveErr != nil {
			s.serveErr = fmt.Errorf("store %s: serve reads to other processes: %w", dir, s.serveErr)
		}
	}
	s.release = release
	opened = true
	return s, nil
}

// A LockedError says that another process holds a store's lock, which
// one when it serves the store's reads (its socket says so), and how long
// the open waited. It wraps ErrLocked.
type LockedError struct {
	// Op is what failed: "open store", "recover store".
	Op   string
	Dir  string
	Path string // the store's file
	// Holder names the process that holds it ("demiurge serve"), and PID
	// is its id: "" and 0 when not known (a process that serves no reads:
	// one that reads the store, one still starting, an older demiurge).
	Holder string
	PID    int
	Waited time.Duration
}

func (e *LockedError) Error() string {
	who := "another process (a demiurge run, serve, ui or worker; or one that reads the store, such as replay)"
	if e.PID > 0 {
		who = fmt.Sprintf("%s (pid %d)", cmp.Or(e.Holder, "another process"), e.PID)
	}
	return fmt.Sprintf("%s %s: %v: %s is held by %s; waited %v for it", e.Op, e.Dir, ErrLocked, e.Path, who, e.Waited)
}

// Unwrap returns ErrLocked.
func (e *LockedError) Unwrap() error { return ErrLocked }

// lockedBy is the LockedError of op on the store in dir, which another
// process held for waited: it asks that process who it is, if it serves
// the store.
func lockedBy(op, dir string, waited time.Duration) *LockedError {
	e := &LockedError{Op: op, Dir: dir, Path: filepath.Join(dir, FileName), Waited: waited}
	// A writer answers at once; one that does not is left unnamed rather
	// than delay the error (discover opens in a loop).
	ctx, cancel := context.WithTimeout(context.Background(), holderWait)
	defer cancel()
	if r, err := dialWriter(ctx, dir); err == nil {
		e.Holder, e.PID = r.holder, r.pid
		r.close()
	}
	return e
}

// holderWait bounds how long lockedBy asks the writer who it is.
const holderWait = 500 * time.Millisecond

// inProcess counts the opens of each store file in this process that are
// not closed yet: -1 for one read-write, n > 0 for n read-only. The file
// lock is an flock, which a second open of the same file in the same
// process waits for as another process's would: waiting here instead lets
// the error say that this process holds it. changed is closed, and
// replaced, whenever an open is released.
var inProcess = struct {
	sync.Mutex
	opens   map[string]int
	changed chan struct{}
}{opens: map[string]int{}, changed: make(chan struct{})}

// holdInProcess records an open of the store file path, waiting up to
// timeout while an open of this process that the file lock would exclude
// is still there, and then refusing; release undoes it.
func holdInProcess(path string, readOnly bool, timeout time.Duration) (release func(), err error) {
	key, err := filepath.Abs(path)
	if err != nil {
		key = filepath.Clean(path)
	}
	var timer <-chan time.Time
	inProcess.Lock()
	for {
		n := inProcess.opens[key]
		if n == 0 || n > 0 && readOnly {
			break
		}
		if timer == nil {
			t := time.NewTimer(timeout)
			defer t.Stop()
			timer = t.C
		}
		changed := inProcess.changed
		inProcess.Unlock()
		select {
		case <-changed:
			inProcess.Lock()
			continue
		case <-timer:
		}
		how := "read-write"
		if n > 0 {
			how = "read-only"
		}
		return nil, fmt.Errorf("%w: %s is held by this process (opened %s and not closed yet); waited %v for it: share that open store, or close it first",
			ErrLocked, path, how, timeout)
	}
	if readOnly {
		inProcess.opens[key]++
	} else {
		inProcess.opens[key] = -1
	}
	inProcess.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			inProcess.Lock()
			defer inProcess.Unlock()
			if n := inProcess.opens[key]; n > 1 {
				inProcess.opens[key] = n - 1
			} else {
				delete(inProcess.opens, key)
			}
			close(inProcess.changed)
			inProcess.changed = make(chan struct{})
		})
	}, nil
}

// Serving returns nil if the store serves reads to other processes (see
// "Reading while another process writes"), or why it does not: a store
// opened read-only never does.
func (s *Store) Serving() error {
	if s.readOnly {
		return errors.New("store: opened read-only: it serves no reads")
	}
	return s.serveErr
}

// Dir returns the store's directory, as given to Open.
func (s *Store) Dir() string { return s.dir }

// Path returns the path of the store's bbolt file.
func (s *Store) Path() string { return filepath.Join(s.dir, FileName) }

// ReadOnly reports whether the store was opened read-only.
func (s *Store) ReadOnly() bool { return s.readOnly }

// CAS returns the content-addressed store. It is valid until Close.
func (s *Store) CAS() *cas.Bolt { return s.cas }

// Journal returns the journal. It is valid until Close.
func (s *Store) Journal() *journal.Bolt { return s.journal }

// DB returns the bbolt file the CAS and the journal share, for callers
// that write both in one transaction (journal.Bolt.AppendWith and
// cas.Bolt.PutTx). Close closes it; callers must not.
func (s *Store) DB() *bbolt.DB { return s.db }

// Close stops serving reads (ending those being served and removing the
// socket), stops the journal (waiting for pending appends to commit),
// closes the CAS and then the bbolt file, releasing the lock. It returns
// every error it met, joined; closing again returns the same result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.srv != nil {
			s.srv.close() // before the lock goes: no other process serves it meanwhile
		}
		s.closeErr = errors.Join(s.journal.Close(), s.cas.Close())
		if err := s.db.Close(); err != nil {
			s.closeErr = errors.Join(s.closeErr, err)
		}
		if s.release != nil {
			s.release()
		}
		if s.closeErr != nil {
			s.closeErr = fmt.Errorf("close store %s: %w", s.dir, s.closeErr)
		}
	})
	return s.closeErr
}
