package cas_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
)

// metaStore is a store whose last commit put one blob, and where its two
// meta pages are in the file.
type metaStore struct {
	path        string
	file        []byte
	pageSize    int
	newer       int    // the meta page of the last commit: 0 or 1
	txid        uint64 // the last commit's transaction
	first, last cas.Ref
}

// newMetaStore writes a store with a blob in each of its two last commits.
func newMetaStore(t *testing.T) *metaStore {
	t.Helper()
	ms := &metaStore{path: filepath.Join(t.TempDir(), "cas.db")}
	s := openBolt(t, ms.path, nil)
	var err error
	if ms.first, err = s.Put(t.Context(), []byte("the blob of the commit before the last")); err != nil {
		t.Fatal(err)
	}
	if ms.last, err = s.Put(t.Context(), []byte("the blob of the last commit")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if ms.file, err = os.ReadFile(ms.path); err != nil {
		t.Fatal(err)
	}
	ne := binary.NativeEndian
	ms.pageSize = int(ne.Uint32(ms.file[24:]))
	t0, t1 := ne.Uint64(ms.file[16+48:]), ne.Uint64(ms.file[ms.pageSize+16+48:])
	ms.txid = max(t0, t1)
	if t1 > t0 {
		ms.newer = 1
	}
	return ms
}

// damaged writes a copy of the file changed by fn and returns its path.
func (ms *metaStore) damaged(t *testing.T, fn func(meta func(page int) []byte)) string {
	t.Helper()
	file := bytes.Clone(ms.file)
	fn(func(page int) []byte { return file[page*ms.pageSize : page*ms.pageSize+ms.pageSize] })
	path := filepath.Join(t.TempDir(), "damaged.db")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBoltMetaDamage: a store whose meta page is damaged (zeroed, its
// checksum wrong, or overwritten by an older copy) is refused, read-only
// and read-write, with an error naming the page and what would be lost,
// and left as it is. bbolt would silently go back to the other meta page:
// the state before the last commit, as if it had never been.
func TestBoltMetaDamage(t *testing.T) {
	ms := newMetaStore(t)
	older := 1 - ms.newer
	last, before := ms.txid, ms.txid-1
	tests := []struct {
		name string
		page int // the damaged meta page
		fn   func(meta func(int) []byte)
		want string
	}{
		// A zeroed page does not say which transaction it held: the
		// message says both what is lost if it was the newer and that
		// nothing is if it was the older, never "go back" for certain.
		{"newer zeroed", ms.newer, func(meta func(int) []byte) { clear(meta(ms.newer)) }, fmt.Sprintf(
			"meta page %d is zeroed, and meta page %d holds transaction %d: bbolt would go on from transaction %d without a word; nothing is lost if meta page %d held the transaction before it (%d), but the last commit (transaction %d) is if it held that one, and which it held cannot be told from the page",
			ms.newer, older, before, before, ms.newer, before-1, last)},
		{"older zeroed", older, func(meta func(int) []byte) { clear(meta(older)) }, fmt.Sprintf(
			"meta page %d is zeroed, and meta page %d holds transaction %d: bbolt would go on from transaction %d without a word; nothing is lost if meta page %d held the transaction before it (%d), but the last commit (transaction %d) is if it held that one, and which it held cannot be told from the page",
			older, ms.newer, last, last, older, before, last+1)},
		{"older checksum", older, func(meta func(int) []byte) { meta(older)[16+56] ^= 1 }, fmt.Sprintf(
			"meta page %d is damaged (its checksum does not match), and meta page %d holds transaction %d: meta page %d held the transaction before (%d), so bbolt would read the last commit, but the next commit would write over the only valid meta page",
			older, ms.newer, last, older, before)},
		{"newer checksum", ms.newer, func(meta func(int) []byte) { meta(ms.newer)[16+56] ^= 1 }, fmt.Sprintf(
			"meta page %d is damaged (its checksum does not match), and meta page %d holds transaction %d: bbolt would go back to transaction %d without a word, and lose transaction %d, the last commit, which meta page %d held",
			ms.newer, older, before, before, last, ms.newer)},
		{"newer not a meta page", ms.newer, func(meta func(int) []byte) { copy(meta(ms.newer)[16:], "not a meta page") }, fmt.Sprintf(
			"meta page %d is overwritten (it is not a meta page)", ms.newer)},
		{"newer overwritten by the older", ms.newer, func(meta func(int) []byte) { copy(meta(ms.newer), meta(older)) }, fmt.Sprintf(
			"meta page %d holds transaction %d, which bbolt writes to meta page %d: it is a copy of the other meta page", ms.newer, before, older)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := ms.damaged(t, tc.fn)
			damaged, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, ro := range []bool{true, false} {
				_, err := cas.OpenBolt(path, &cas.BoltOptions{ReadOnly: ro, Timeout: time.Second})
				wantDamage(t, "open", path, err)
				if d, ok := errors.AsType[*cas.BoltDamageError](err); ok && d.Page != int64(tc.page) {
					t.Errorf("read-only %v: damage at page %d; want %d", ro, d.Page, tc.page)
				}
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "`demiurge recover`") {
					t.Errorf("read-only %v: %v\nwant it to say: %s, and what to do", ro, err, tc.want)
				}
			}
			if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, damaged) {
				t.Errorf("opening changed the damaged file (%v)", err)
			}
		})
	}
}

// TestBoltMetaRecover: RecoverBoltMeta keeps a copy of the damaged file
// and goes on from the valid meta page: the store opens again, without
// the last commit's blob, which the damage lost, and with the one before.
func TestBoltMetaRecover(t *testing.T) {
	ms := newMetaStore(t)
	path := ms.damaged(t, func(meta func(int) []byte) { clear(meta(ms.newer)) })
	damaged, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	keep := path + ".damaged"
	rec, err := cas.RecoverBoltMeta(path, keep, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Txid != ms.txid-1 || rec.Damage == nil || rec.Damage.Page != int64(ms.newer) || rec.Kept != keep {
		t.Errorf("RecoverBoltMeta = %+v; want transaction %d, damage at page %d", rec, ms.txid-1, ms.newer)
	}
	if kept, err := os.ReadFile(keep); err != nil || !bytes.Equal(kept, damaged) {
		t.Errorf("the copy kept differs from the damaged file (%v)", err)
	}
	s := openBolt(t, path, &cas.BoltOptions{ReadOnly: true})
	defer s.Close()
	if _, err := s.Get(t.Context(), ms.first); err != nil {
		t.Errorf("the blob of the commit before the last: %v", err)
	}
	if _, err := s.Get(t.Context(), ms.last); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("the blob of the lost commit: %v; want ErrNotFound", err)
	}
	if err := s.CheckFile(t.Context()); err != nil {
		t.Error(err)
	}
	// An undamaged file is left alone.
	if _, err := cas.RecoverBoltMeta(ms.path, ms.path+".copy", time.Second); !errors.Is(err, cas.ErrNoMetaDamage) {
		t.Errorf("RecoverBoltMeta of an undamaged file: %v; want ErrNoMetaDamage", err)
	}
	if _, err := os.Stat(ms.path + ".copy"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a copy of an undamaged file was made: %v", err)
	}
}
