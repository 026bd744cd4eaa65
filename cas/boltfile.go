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
	"slices"
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
	// Meta is set when the damage is to a meta page, which RecoverBoltMeta
	// can get past (errors.Is(err, ErrMetaDamaged) is then true).
	Meta bool
}

// ErrMetaDamaged is what a *BoltDamageError about a meta page also is
// (errors.Is): the file can be made usable again, going back to the
// state of the other meta page (RecoverBoltMeta).
var ErrMetaDamaged = errors.New("cas: a meta page of the bbolt file is damaged")

// Is makes errors.Is(err, ErrMetaDamaged) true for damage to a meta page.
func (e *BoltDamageError) Is(target error) bool { return e.Meta && target == ErrMetaDamaged }

func (e *BoltDamageError) Error() string {
	s := "bbolt file " + e.Path + " is damaged"
	if e.Page >= 0 {
		s += " at page " + strconv.FormatInt(e.Page, 10)
	}
	s += ": " + e.Detail
	if e.Meta {
		s += ": " + RecoverHint
	}
	return s
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

// openBolt is bbolt.Open with its panics turned into errors, refusing a
// file whose meta pages are damaged (checkBoltMetas).
func openBolt(path string, mode os.FileMode, o *bbolt.Options) (*bbolt.DB, error) {
	db, err := openBoltRaw(path, mode, o)
	if err != nil {
		return nil, err
	}
	// The lock is held now: no writer is writing a meta page as we read
	// them (a reader without the lock could see one half written).
	if err := checkBoltMetas(path); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

// openBoltRaw is bbolt.Open with its panics turned into errors.
func openBoltRaw(path string, mode os.FileMode, o *bbolt.Options) (db *bbolt.DB, err error) {
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

// checkBoltMetas compares the two meta pages of the bbolt file at path,
// which the caller holds the lock of, and returns a *BoltDamageError
// unless they are what bbolt leaves behind: two valid meta pages of
// consecutive transactions, each in its slot (transaction t is written to
// meta page t%2). bbolt writes a transaction's meta page to the slot of
// the older one and reads the newest valid one; a meta page that is not
// valid it takes for a torn write and silently falls back to the other,
// an older state of the file, which loses the last commit if the damaged
// page was the newer one. A torn meta page cannot happen on a disk that
// writes a sector at once (its fields are the first 80 bytes of the
// page): a damaged meta page is damage, of the newer page or of the
// older, and which of them cannot be told from a zeroed page. Refusing
// both keeps a lost commit from being read as the last one and from being
// made permanent by the next write; Recover (demiurge recover) goes on from
// the valid page when the user says so.
func checkBoltMetas(path string) error {
	metas, err := readBoltMetas(path)
	if err != nil {
		return nil // bbolt read the file; what we cannot read here, it will say
	}
	return metas.check(path)
}

// boltMetaSlot is one of a file's two meta pages as read from it.
type boltMetaSlot struct {
	meta  boltMeta
	valid bool
	raw   []byte // its first boltMetaSize bytes
}

// boltMetas are a file's two meta pages, and the page size.
type boltMetas struct {
	slot     [2]boltMetaSlot
	pageSize int64
}

// readBoltMetas reads both meta pages of the bbolt file at path.
func readBoltMetas(path string) (*boltMetas, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ms := &boltMetas{}
	read := func(i int, off int64) {
		b := make([]byte, boltMetaSize)
		n, _ := f.ReadAt(b, off)
		b = b[:n]
		m, ok := parseBoltMeta(b)
		ms.slot[i] = boltMetaSlot{meta: m, valid: ok, raw: b}
	}
	read(0, 0)
	if ms.slot[0].valid {
		ms.pageSize = int64(ms.slot[0].meta.pageSize)
	} else {
		// As bbolt does: without meta 0, look for meta 1 at every page
		// size it may have been written with.
		for i := range 15 {
			if read(1, 1024<<i); ms.slot[1].valid && ms.slot[1].meta.pageSize == 1024<<i {
				ms.pageSize = 1024 << i
				return ms, nil
			}
		}
		ms.pageSize = int64(os.Getpagesize())
	}
	read(1, ms.pageSize)
	return ms, nil
}

// check returns a *BoltDamageError unless the two meta pages are what
// bbolt leaves behind (see checkBoltMetas); nil too if neither is valid,
// which bbolt itself refuses.
func (ms *boltMetas) check(path string) error {
	s0, s1 := &ms.slot[0], &ms.slot[1]
	if !s0.valid && !s1.valid {
		return nil
	}
	what := func(page int, detail string) error {
		return &BoltDamageError{Path: path, Page: int64(page), Detail: detail, Meta: true}
	}
	if s0.valid && s1.valid {
		t0, t1 := s0.meta.txid, s1.meta.txid
		for i, s := range ms.slot {
			if s.meta.txid%2 != uint64(i) {
				return what(i, fmt.Sprintf("meta page %d holds transaction %d, which bbolt writes to meta page %d: it is a copy of the other meta page, from an older state of the file",
					i, s.meta.txid, s.meta.txid%2))
			}
		}
		if t0+1 != t1 && t1+1 != t0 {
			older := 0
			if t1 < t0 {
				older = 1
			}
			return what(older, fmt.Sprintf("its meta pages hold transactions %d and %d, which bbolt always leaves consecutive: meta page %d was overwritten with an older copy, and bbolt would go on from transaction %d without knowing whether a newer one was lost",
				t0, t1, older, max(t0, t1)))
		}
		return nil
	}
	good, bad := 0, 1
	if !s0.valid {
		good, bad = 1, 0
	}
	g, b := ms.slot[good], ms.slot[bad]
	detail := fmt.Sprintf("meta page %d is %s, and meta page %d holds transaction %d: ", bad, describeBadMeta(b.raw), good, g.meta.txid)
	switch raw, ok := rawTxid(b.raw); {
	case ok && raw == g.meta.txid+1:
		detail += fmt.Sprintf("bbolt would go back to transaction %d without a word, and lose transaction %d, the last commit, which meta page %d held",
			g.meta.txid, raw, bad)
	case ok && raw+1 == g.meta.txid:
		detail += fmt.Sprintf("meta page %d held the transaction before (%d), so bbolt would read the last commit, but the next commit would write over the only valid meta page",
			bad, raw)
	default:
		// Which of the two was newer cannot be read from the page: it
		// held transaction txid-1 (nothing is lost) or txid+1 (the last
		// commit is).
		detail += fmt.Sprintf("bbolt would go on from transaction %d without a word; nothing is lost if meta page %d held the transaction before it (%d), but the last commit (transaction %d) is if it held that one, and which it held cannot be told from the page",
			g.meta.txid, bad, g.meta.txid-1, g.meta.txid+1)
	}
	return what(bad, detail)
}

// rawTxid reads the transaction id field of a meta page that may not be
// valid; false if the page is too short or not a meta page at all.
func rawTxid(raw []byte) (uint64, bool) {
	if len(raw) < boltMetaSize || binary.NativeEndian.Uint32(raw[16:]) != 0xED0CDAED {
		return 0, false
	}
	return binary.NativeEndian.Uint64(raw[16+48:]), true
}

// describeBadMeta says what is wrong with a meta page that is not valid.
func describeBadMeta(raw []byte) string {
	switch {
	case len(raw) < boltMetaSize:
		return "missing (the file ends before it)"
	case !slices.ContainsFunc(raw, func(b byte) bool { return b != 0 }):
		return "zeroed"
	case binary.NativeEndian.Uint32(raw[16:]) != 0xED0CDAED:
		return "overwritten (it is not a meta page)"
	case binary.NativeEndian.Uint32(raw[20:]) != 2:
		return fmt.Sprintf("overwritten (it says bbolt format version %d)", binary.NativeEndian.Uint32(raw[20:]))
	}
	return "damaged (its checksum does not match)"
}

// RecoverHint is what the message of a damaged meta page tells the user
// to do.
const RecoverHint = "restore the file from a backup; or, to go on from the older state and lose what came after it, run `demiurge recover` on the store (it keeps a copy of the damaged file)"

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

// ErrNoMetaDamage is returned (wrapped) by RecoverBoltMeta for a file
// whose meta pages are as bbolt leaves them: there is nothing to recover.
var ErrNoMetaDamage = errors.New("cas: the meta pages are not damaged")

// MetaRecovery is what RecoverBoltMeta did.
type MetaRecovery struct {
	// Damage is what was wrong, as opening the file said it.
	Damage *BoltDamageError
	// Txid is the transaction the file went on from: the newest one a
	// valid meta page held.
	Txid uint64
	// Kept is the copy of the damaged file, as it was.
	Kept string
}

// RecoverBoltMeta makes usable again a bbolt file that opening refuses for
// a damaged meta page (see OpenBoltDB): it copies the file as it is to
// keep (synced), then goes on from the newest valid meta page, losing
// whatever commit a damaged newer one held, and writes both meta pages
// anew (empty commits), so they are consecutive again. The tree it goes on
// from is checked (bbolt's Tx.Check) first: a file damaged elsewhere too is
// refused, and left as it was. It waits up to timeout for the file's lock.
// A file whose meta pages are not damaged is left alone, with an error
// wrapping ErrNoMetaDamage.
func RecoverBoltMeta(path, keep string, timeout time.Duration) (rec *MetaRecovery, err error) {
	if err := checkBoltFile(path); err != nil {
		return nil, fmt.Errorf("recover %s: %w", path, err)
	}
	db, err := openBoltRaw(path, 0o600, &bbolt.Options{Timeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("recover %s: %w", path, err)
	}
	defer func() {
		if cerr := db.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("recover %s: %w", path, cerr)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverDamage(db, &err)
	damage, ok := errors.AsType[*BoltDamageError](checkBoltMetas(path))
	if !ok {
		return nil, fmt.Errorf("recover %s: %w", path, ErrNoMetaDamage)
	}
	rec = &MetaRecovery{Damage: damage, Kept: keep}
	if err := copySynced(path, keep, false); err != nil {
		return nil, fmt.Errorf("recover %s: keep a copy of it: %w", path, err)
	}
	for i := 0; ; i++ {
		if err := db.Update(func(tx *bbolt.Tx) error {
			if i == 0 {
				rec.Txid = uint64(tx.ID()) - 1 // the state it goes on from
			}
			return nil
		}); err != nil {
			return nil, fmt.Errorf("recover %s: %w", path, err)
		}
		if checkBoltMetas(path) == nil {
			break
		}
		if i == 1 {
			return nil, fmt.Errorf("recover %s: its meta pages are still not consecutive after two commits (a bug): %v", path, checkBoltMetas(path))
		}
	}
	// bbolt checks the meta pages too, so the tree is checked once they
	// are whole again; if it is damaged, the file is put back as it was.
	var problem error
	err = db.View(func(tx *bbolt.Tx) error {
		for err := range tx.Check() { // read to the end: the check runs on tx
			if problem == nil {
				problem = err
			}
		}
		return nil
	})
	if err == nil && problem != nil {
		err = &BoltDamageError{Path: path, Page: -1, Detail: fmt.Sprintf(
			"besides its meta page, the state of transaction %d is damaged too (%v): it cannot be gone on from; restore the file from a backup", rec.Txid, problem)}
	}
	if err != nil {
		cerr := db.Close()
		if rerr := copySynced(keep, path, true); rerr != nil || cerr != nil {
			return nil, fmt.Errorf("recover %s: %w; and putting it back as it was failed: %w (%s holds it as it was)", path, err, errors.Join(cerr, rerr), keep)
		}
		return nil, fmt.Errorf("recover %s: %w (the file is as it was)", path, err)
	}
	return rec, nil
}

// copySynced copies the file src to dst and syncs it. dst must not exist
// unless overwrite is set.
func copySynced(src, dst string, overwrite bool) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	flag := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if overwrite {
		flag = os.O_WRONLY | os.O_TRUNC
	}
	out, err := os.OpenFile(dst, flag, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
