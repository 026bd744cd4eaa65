package cas

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// ErrEmptyFile is returned (wrapped) by OpenBoltDB for an existing file of
// 0 bytes: bbolt would silently make it a new, empty database, and
// whatever the file held before would be forgotten without a word.
var ErrEmptyFile = errors.New("cas: empty store file")

// BoltDamageError reports a bbolt file damaged below the data it holds: a
// page that is not what the tree says it is (zeroed or overwritten), or a
// file shorter than its meta page says. bbolt panics on such pages, or
// faults reading past the end of the file; Bolt and OpenBoltDB turn both
// into this error. It wraps ErrCorrupt: nothing read from a damaged page
// is returned as good data.
type BoltDamageError struct {
	Path string // the bbolt file
	// Page is the damaged page, or the first one missing from a file cut
	// short; -1 if bbolt did not say.
	Page int64
	// Detail says what is wrong, in bbolt's words where it has some.
	Detail string
}

func (e *BoltDamageError) Error() string {
	s := "bbolt file " + e.Path + " is damaged"
	if e.Page >= 0 {
		s += " at page " + strconv.FormatInt(e.Page, 10)
	}
	return s + ": " + e.Detail
}

// Unwrap makes errors.Is(err, ErrCorrupt) true.
func (e *BoltDamageError) Unwrap() error { return ErrCorrupt }

// bboltPage finds the page number in bbolt's panic messages ("assertion
// failed: Page expected to be: 60, but self identifies as 0", "page 60:
// has unexpected type/flags", "invalid page type: 60: 10", "pgid (60)
// above high water mark (59)", "inode overflow: 9 (pgid=60)", and from
// Tx.Check: "page 60: unreachable unfreed", "key[1]=… on leaf page(60)
// needs to be > …").
var bboltPage = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(?:page expected to be: |page |page\(|invalid page type: |pgid \(|pgid=|page access\(2\): )(\d+)`)
})

// BoltDamage turns what bbolt panicked with (the value recover returned)
// while reading or writing db into a *BoltDamageError naming the file and,
// where bbolt's message or the faulting address tells it, the page. Use it
// in a deferred function around bbolt calls, with
// debug.SetPanicOnFault(true) set so that a fault on the memory-mapped
// file panics rather than killing the process.
func BoltDamage(db *bbolt.DB, panicked any) *BoltDamageError {
	e := damage(db.Path(), panicked)
	if e.Page < 0 {
		if f, ok := panicked.(interface{ Addr() uintptr }); ok {
			if data, pageSize, ok := mapping(db); ok && f.Addr() >= data && pageSize > 0 {
				e.Page = int64((f.Addr() - data) / uintptr(pageSize))
			}
		}
	}
	return e
}

// damage is BoltDamage without the database: the page comes from the
// message only.
func damage(path string, panicked any) *BoltDamageError {
	msg := fmt.Sprint(panicked)
	e := &BoltDamageError{Path: path, Page: -1, Detail: "bbolt: " + msg}
	if m := bboltPage().FindStringSubmatch(msg); m != nil {
		if n, err := strconv.ParseInt(m[1], 10, 64); err == nil {
			e.Page = n
		}
	}
	if _, ok := panicked.(interface{ Addr() uintptr }); ok {
		e.Detail = "memory fault reading the mapped file (" + msg + "): it is shorter than its pages say, or changed while open"
	}
	return e
}

// mapping returns where db's file is mapped and its page size.
func mapping(db *bbolt.DB) (data uintptr, pageSize int, ok bool) {
	defer func() {
		if recover() != nil { // a closed DB has no mapping
			ok = false
		}
	}()
	info := db.Info()
	return info.Data, info.PageSize, true
}

// recoverDamage, deferred, turns a panic of bbolt on a damaged db into a
// *BoltDamageError in *errp.
func recoverDamage(db *bbolt.DB, errp *error) {
	if p := recover(); p != nil {
		*errp = BoltDamage(db, p)
	}
}

// OpenBoltDB opens the bbolt file at path as bbolt.Open does (nil options
// are bbolt's defaults), refusing what bbolt would silently re-initialise
// or crash on:
//
//   - an existing file of 0 bytes: an error wrapping ErrEmptyFile (bbolt
//     would make it a new database). If another process holds the file's
//     lock (it may be creating the store right now), OpenBoltDB waits for
//     it as bbolt does and fails as bbolt does if it must;
//   - a file whose two meta pages are both invalid, or that is shorter than
//     its meta page says, or whose meta page names pages past its end: a
//     *BoltDamageError, before bbolt maps the file (bbolt would fault on
//     the missing pages, a SIGBUS no recover catches);
//   - a panic inside bbolt.Open on a damaged page (the freelist, which it
//     reads when it opens a file read-write): a *BoltDamageError. The
//     file is closed, releasing its lock; its mapping is not undone.
//
// Other errors are bbolt's, returned as they are (berrors.ErrTimeout when
// another process holds the lock past Options.Timeout).
func OpenBoltDB(path string, mode os.FileMode, o *bbolt.Options) (*bbolt.DB, error) {
	var opts bbolt.Options
	if o != nil {
		opts = *o
	} else {
		opts = *bbolt.DefaultOptions
	}
	if err := checkBoltFile(path); errors.Is(err, ErrEmptyFile) {
		if err := waitEmpty(path, opts.Timeout); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	return openBolt(path, mode, &opts)
}

// waitEmpty decides about an empty file at path: a store another process
// is creating (it holds the lock and is writing the first pages; wait for
// it, as bbolt does, for up to timeout) or an empty file (ErrEmptyFile).
func waitEmpty(path string, timeout time.Duration) error {
	db, err := bbolt.Open(path, 0, &bbolt.Options{ReadOnly: true, Timeout: timeout})
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return err
	case err == nil: // written meanwhile
		_ = db.Close()
		return checkBoltFile(path)
	}
	// bbolt got the shared lock and could not initialise the file
	// read-only: nobody is writing it.
	if err := checkBoltFile(path); !errors.Is(err, ErrEmptyFile) {
		return err
	}
	return fmt.Errorf("%w %s (0 bytes, not a bbolt file): restore it, or remove it to start over", ErrEmptyFile, path)
}

// openBolt is bbolt.Open with its panics turned into errors.
func openBolt(path string, mode os.FileMode, o *bbolt.Options) (db *bbolt.DB, err error) {
	var file *os.File
	open := o.OpenFile
	if open == nil {
		open = os.OpenFile
	}
	o.OpenFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := open(name, flag, perm)
		file = f
		return f, err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			if file != nil {
				_ = file.Close()
			}
			db, err = nil, damage(path, p)
		}
	}()
	return bbolt.Open(path, mode, o)
}

// boltMeta is what checkBoltFile reads from a meta page.
type boltMeta struct {
	pageSize, root, freelist, pgid, txid uint64
}

// boltMetaSize is the size of a page header and a meta page's fields.
const boltMetaSize = 16 + 64

// parseBoltMeta reads the meta page at the start of b, if it is a valid
// one: bbolt's magic and version, and a checksum that matches.
func parseBoltMeta(b []byte) (boltMeta, bool) {
	if len(b) < boltMetaSize {
		return boltMeta{}, false
	}
	m := b[16:boltMetaSize]
	ne := binary.NativeEndian // bbolt writes its structs in the machine's order
	if ne.Uint32(m[0:]) != 0xED0CDAED || ne.Uint32(m[4:]) != 2 {
		return boltMeta{}, false
	}
	h := fnv.New64a()
	h.Write(m[:56])
	if h.Sum64() != ne.Uint64(m[56:]) {
		return boltMeta{}, false
	}
	bm := boltMeta{pageSize: uint64(ne.Uint32(m[8:])), root: ne.Uint64(m[16:]), freelist: ne.Uint64(m[32:]),
		pgid: ne.Uint64(m[40:]), txid: ne.Uint64(m[48:])}
	return bm, bm.pageSize >= 512
}

// noFreelist is bbolt's freelist page id when the freelist is not kept.
const noFreelist = ^uint64(0)

// checkBoltFile checks that the bbolt file at path can be mapped without
// reading past its end: it has a valid meta page (the one bbolt would use,
// of the highest transaction), and it is at least as long as that meta
// page says. It returns nil for a file that does not exist or cannot be
// read (bbolt will say why), an error wrapping ErrEmptyFile for an empty
// one, and a *BoltDamageError otherwise.
func checkBoltFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	// The meta pages first, the size after: a writer grows the file before
	// it writes a meta page naming the new pages, and never shrinks it.
	var buf [0x1000]byte
	var metas []boltMeta
	n, err := f.ReadAt(buf[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil
	}
	if m, ok := parseBoltMeta(buf[:n]); ok {
		metas = append(metas, m)
		if n, _ := f.ReadAt(buf[:boltMetaSize], int64(m.pageSize)); n == boltMetaSize {
			if m1, ok := parseBoltMeta(buf[:n]); ok && m1.pageSize == m.pageSize {
				metas = append(metas, m1)
			}
		}
	} else {
		// As bbolt does: without meta 0, look for meta 1 at every page
		// size it may have been written with.
		for i := range 15 {
			n, _ := f.ReadAt(buf[:boltMetaSize], 1024<<i)
			if m1, ok := parseBoltMeta(buf[:n]); ok && m1.pageSize == 1024<<i {
				metas = append(metas, m1)
				break
			}
		}
	}
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	size := st.Size()
	if size == 0 {
		return fmt.Errorf("%w %s (0 bytes)", ErrEmptyFile, path)
	}
	if len(metas) == 0 {
		return &BoltDamageError{Path: path, Page: -1, Detail: fmt.Sprintf(
			"neither of its meta pages (0 and 1) is valid: it is %d bytes, cut short or overwritten, or not a bbolt file", size)}
	}
	m := metas[0]
	for _, o := range metas[1:] {
		if o.txid > m.txid {
			m = o
		}
	}
	switch want := m.pgid * m.pageSize; {
	case m.pgid < 2 || m.root >= m.pgid || m.root < 2 || (m.freelist >= m.pgid && m.freelist != noFreelist):
		return &BoltDamageError{Path: path, Page: -1, Detail: fmt.Sprintf(
			"its meta page (transaction %d) names the root page %d and the freelist page %d, but only %d pages", m.txid, m.root, m.freelist, m.pgid)}
	case uint64(size) < want:
		return &BoltDamageError{Path: path, Page: size / int64(m.pageSize), Detail: fmt.Sprintf(
			"the file is %d bytes, but its meta page (transaction %d) says it holds %d pages of %d bytes (%d bytes): it was cut short",
			size, m.txid, m.pgid, m.pageSize, want)}
	}
	return nil
}
