package cas_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cas/internal/boltlayout"
)

// damagedStore is a small Bolt store on disk, closed, and what it holds.
type damagedStore struct {
	path     string
	blobs    map[cas.Ref][]byte
	pageSize int
	pages    int // the high-water mark: pages 0 to pages-1 are in use
}

// newDamagedStore writes a store with small blobs and big ones (kept in
// buckets of their own, over several pages) for the damage tests to break.
func newDamagedStore(t *testing.T) *damagedStore {
	t.Helper()
	ds := &damagedStore{path: filepath.Join(t.TempDir(), "cas.db"), blobs: map[cas.Ref][]byte{}}
	s := openBolt(t, ds.path, &cas.BoltOptions{NoSync: true})
	for i := range 40 {
		b := bytes.Repeat([]byte{byte(i)}, 100+i*37)
		if i%8 == 0 {
			b = bytes.Repeat([]byte(fmt.Sprintf("big %d;", i)), (boltlayout.BlobBucketMin+i*1000)/6)
		}
		ref, err := s.Put(t.Context(), b)
		if err != nil {
			t.Fatal(err)
		}
		ds.blobs[ref] = b
	}
	err := s.DB().View(func(tx *bbolt.Tx) error {
		ds.pageSize = s.DB().Info().PageSize
		ds.pages = int(tx.Size()) / ds.pageSize
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return ds
}

// copyWith copies the store's file into a new one, changed by fn.
func (ds *damagedStore) copyWith(t *testing.T, fn func(b []byte) []byte) string {
	t.Helper()
	b, err := os.ReadFile(ds.path)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "damaged.db")
	if err := os.WriteFile(path, fn(b), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkReads opens the store at path and reads everything from it: each
// read either gives the right bytes or fails with an error wrapping
// cas.ErrCorrupt (a *BoltDamageError naming the file, when bbolt met the
// damage), or cas.ErrNotFound (the damage hid the blob's key). If any read
// failed but for bytes that do not hash to their ref (which every read
// checks), CheckFile must report the damage. It returns how many reads
// failed. Opening may fail too, with a *BoltDamageError.
func (ds *damagedStore) checkReads(t *testing.T, path string, readOnly bool) (failed int) {
	t.Helper()
	ctx := t.Context()
	s, err := cas.OpenBolt(path, &cas.BoltOptions{ReadOnly: readOnly, NoSync: !readOnly})
	if err != nil {
		wantDamage(t, "open", path, err)
		return 1
	}
	defer s.Close()
	structural := 0 // failures that are not a blob's bytes hashing wrong
	note := func(err error) {
		if _, ok := errors.AsType[*cas.CorruptError](err); !ok {
			structural++
		}
	}
	checked, bad, err := cas.Verify(ctx, s, func(ref cas.Ref, err error) {
		note(err)
		if !errors.Is(err, cas.ErrCorrupt) && !errors.Is(err, cas.ErrNotFound) {
			t.Errorf("Verify: %s: %v; want an error wrapping ErrCorrupt or ErrNotFound", ref, err)
		}
	})
	if err != nil {
		wantDamage(t, "Verify", path, err)
		failed++
		structural++
	} else if checked != len(ds.blobs) {
		t.Errorf("Verify checked %d blobs of %d without an error", checked, len(ds.blobs))
	}
	failed += bad
	for ref, want := range ds.blobs {
		got, err := s.Get(ctx, ref)
		if err != nil {
			note(err)
			if !errors.Is(err, cas.ErrCorrupt) && !errors.Is(err, cas.ErrNotFound) {
				t.Errorf("Get %s: %v; want an error wrapping ErrCorrupt or ErrNotFound", ref.Short(), err)
			}
			failed++
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("Get %s returned wrong bytes without an error", ref.Short())
		}
		if _, err := s.Stat(ctx, ref); err != nil && !errors.Is(err, cas.ErrCorrupt) {
			t.Errorf("Stat %s: %v", ref.Short(), err)
		}
		if _, err := s.Has(ctx, ref); err != nil && !errors.Is(err, cas.ErrCorrupt) {
			t.Errorf("Has %s: %v", ref.Short(), err)
		}
	}
	if err := s.CheckFile(ctx); err != nil {
		wantDamage(t, "CheckFile", path, err)
	} else if structural > 0 {
		t.Errorf("%d reads failed, and CheckFile found nothing wrong", structural)
	}
	if !readOnly {
		if _, err := s.Put(ctx, []byte("a new blob")); err != nil && !errors.Is(err, cas.ErrCorrupt) {
			t.Errorf("Put: %v; want success or an error wrapping ErrCorrupt", err)
		}
	}
	return failed
}

// wantDamage fails the test unless err is a *BoltDamageError about path.
func wantDamage(t *testing.T, op, path string, err error) {
	t.Helper()
	d, ok := errors.AsType[*cas.BoltDamageError](err)
	if !ok || d.Path != path || !errors.Is(err, cas.ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Errorf("%s: %v; want a *BoltDamageError about %s", op, err, path)
	}
}

// TestBoltZeroedPages zeroes each page of a store in turn (as a failed
// disk or a bad copy would) and reads everything back, read-only and
// read-write: bbolt's panics on the damaged page become errors, and no
// read returns wrong bytes.
func TestBoltZeroedPages(t *testing.T) {
	ds := newDamagedStore(t)
	if ds.pages < 10 {
		t.Fatalf("the store has only %d pages", ds.pages)
	}
	noticed := 0
	for page := 2; page < ds.pages; page++ { // 0 and 1 are the meta pages
		t.Run(fmt.Sprint(page), func(t *testing.T) {
			path := ds.copyWith(t, func(b []byte) []byte {
				clear(b[page*ds.pageSize : (page+1)*ds.pageSize])
				return b
			})
			ro := ds.checkReads(t, path, true)
			ds.checkReads(t, path, false)
			if ro > 0 {
				noticed++
			}
		})
	}
	// Most pages are in use: zeroing them must be noticed, not only pass.
	if noticed < (ds.pages-2)/2 {
		t.Errorf("the damage was noticed on %d of %d pages", noticed, ds.pages-2)
	}
}

// TestBoltTruncated cuts the file at every page boundary: a file shorter
// than its meta page says is refused when opened (bbolt would fault on the
// missing pages), one of 0 bytes is refused as empty, and one cut past the
// high-water mark reads back whole.
func TestBoltTruncated(t *testing.T) {
	ds := newDamagedStore(t)
	for page := 0; page <= ds.pages+1; page++ {
		t.Run(fmt.Sprint(page), func(t *testing.T) {
			path := ds.copyWith(t, func(b []byte) []byte { return b[:page*ds.pageSize] })
			for _, ro := range []bool{true, false} {
				s, err := cas.OpenBolt(path, &cas.BoltOptions{ReadOnly: ro})
				switch {
				case page == 0:
					if !errors.Is(err, cas.ErrEmptyFile) || !strings.Contains(err.Error(), "remove it to start over") {
						t.Errorf("read-only %v: %v; want ErrEmptyFile", ro, err)
					}
				case page < ds.pages:
					wantDamage(t, "open", path, err)
					if d, ok := errors.AsType[*cas.BoltDamageError](err); ok && page >= 2 && d.Page != int64(page) {
						t.Errorf("read-only %v: %v; want it at page %d", ro, err, page)
					}
				case err != nil:
					t.Errorf("read-only %v: %v", ro, err)
				default:
					s.Close()
					if n := ds.checkReads(t, path, ro); n != 0 {
						t.Errorf("read-only %v: %d reads failed", ro, n)
					}
				}
				if st, err := os.Stat(path); err != nil || st.Size() != int64(page*ds.pageSize) && page < ds.pages {
					t.Errorf("the file changed size: %v, %v", st.Size(), err)
				}
			}
		})
	}
}

// TestBoltEmptyFile: an existing empty file is refused, read-only or
// read-write, and left as it is: bbolt would make it a new store.
func TestBoltEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{true, false} {
		_, err := cas.OpenBolt(path, &cas.BoltOptions{ReadOnly: ro})
		if !errors.Is(err, cas.ErrEmptyFile) || !strings.Contains(err.Error(), path) {
			t.Errorf("read-only %v: %v; want ErrEmptyFile naming the file", ro, err)
		}
		if strings.Contains(fmt.Sprint(err), "bad file descriptor") {
			t.Errorf("read-only %v: %v", ro, err)
		}
	}
	if st, err := os.Stat(path); err != nil || st.Size() != 0 {
		t.Errorf("the empty file was written: %v, %v", st.Size(), err)
	}
}

// TestBoltFlippedBytes flips a byte in the stored bytes of each blob, in
// the file itself: each read of it fails as corrupt, the others are good.
func TestBoltFlippedBytes(t *testing.T) {
	ds := newDamagedStore(t)
	for ref, blob := range ds.blobs {
		t.Run(ref.Short(), func(t *testing.T) {
			path := ds.copyWith(t, func(b []byte) []byte {
				i := bytes.Index(b, blob)
				if i < 0 { // a big blob over several pages: its first bytes
					i = bytes.Index(b, blob[:512])
				}
				if i < 0 {
					t.Fatalf("blob %s not found in the file", ref.Short())
				}
				b[i+len(blob)/2%512] ^= 0x40
				return b
			})
			s := openBolt(t, path, &cas.BoltOptions{ReadOnly: true})
			defer s.Close()
			_, bad, err := cas.Verify(t.Context(), s, func(r cas.Ref, err error) {
				if r != ref || !errors.Is(err, cas.ErrCorrupt) {
					t.Errorf("Verify: %s: %v; want only %s corrupt", r.Short(), err, ref.Short())
				}
			})
			if err != nil || bad != 1 {
				t.Errorf("Verify: %d bad, %v; want 1", bad, err)
			}
			if _, err := s.Get(t.Context(), ref); !errors.Is(err, cas.ErrCorrupt) {
				t.Errorf("Get: %v; want ErrCorrupt", err)
			}
		})
	}
}

// TestBoltFileShrinksWhileOpen: reads of pages the file lost while mapped
// fault; the fault becomes a *BoltDamageError instead of killing the
// process (SIGBUS).
func TestBoltFileShrinksWhileOpen(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("relies on Linux raising SIGBUS for a mapped page past the end of its file")
	}
	ds := newDamagedStore(t)
	path := ds.copyWith(t, func(b []byte) []byte { return b })
	s := openBolt(t, path, &cas.BoltOptions{ReadOnly: true})
	defer s.Close()
	if err := os.Truncate(path, int64(2*ds.pageSize)); err != nil {
		t.Fatal(err)
	}
	_, _, err := cas.Verify(t.Context(), s, nil)
	wantDamage(t, "Verify", path, err)
	if !strings.Contains(fmt.Sprint(err), "memory fault") {
		t.Errorf("Verify: %v; want a memory fault", err)
	}
}

// TestBoltDamagePage reads the page out of bbolt's panic messages.
func TestBoltDamagePage(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		page int64
	}{
		{"assertion failed: Page expected to be: 60, but self identifies as 0", 60},
		{"assertion failed: page 61: has unexpected type/flags: 0", 61},
		{"invalid page type: 62: 10", 62},
		{"pgid (63) above high water mark (50)", 63},
		{"inode overflow: 9 (pgid=64)", 64},
		{"inline bucket non-zero page access(2): 65 != 0", 65},
		{"key[1]=(hex)00 on leaf page(66) needs to be > (found <) than previous element (hex)7c", 66},
		{"page 67: unreachable unfreed", 67},
		{"runtime error: index out of range [5] with length 3", -1},
	} {
		path := filepath.Join(t.TempDir(), "x.db")
		db, err := bbolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		e := cas.BoltDamage(db, tc.msg)
		db.Close()
		if e.Page != tc.page || e.Path != path || !strings.Contains(e.Error(), tc.msg) {
			t.Errorf("BoltDamage(%q) = %+v; want page %d", tc.msg, e, tc.page)
		}
	}
}
