package cas_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cas/castest"
	"github.com/demiurge-dev/demiurge/cas/internal/boltlayout"
)

// corruptBolt rewrites the bytes under ref behind the store's back, in
// whichever layout they are stored.
func corruptBolt(t *testing.T, s cas.Store, ref cas.Ref) {
	t.Helper()
	db := s.(*cas.Bolt).DB()
	err := db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(boltlayout.Bucket))
		d := ref.Digest()
		key := d[:]
		if nested := b.Bucket(key); nested != nil {
			b, key = nested, []byte(boltlayout.BlobKey)
		}
		v := b.Get(key)
		if v == nil {
			return errors.New("corruptBolt: ref not stored")
		}
		bad := append([]byte("x"), v...)
		return b.Put(key, bad)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func openBolt(t *testing.T, path string, opts *cas.BoltOptions) *cas.Bolt {
	t.Helper()
	s, err := cas.OpenBolt(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestBolt(t *testing.T) {
	// NoSync keeps the suite fast; TestBoltDurable covers the default.
	opts := &cas.BoltOptions{NoSync: true}
	castest.TestOpt(t, func(t *testing.T) cas.Store {
		return openBolt(t, filepath.Join(t.TempDir(), "cas.db"), opts)
	}, castest.Options{
		Corrupt: corruptBolt,
		Reopen: func(t *testing.T, s cas.Store) cas.Store {
			path := s.(*cas.Bolt).DB().Path()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return openBolt(t, path, opts)
		},
	})
}

func TestBoltShared(t *testing.T) {
	castest.TestOpt(t, func(t *testing.T) cas.Store {
		db, err := bbolt.Open(filepath.Join(t.TempDir(), "shared.db"), 0o600, &bbolt.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		s, err := cas.NewBolt(db)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, castest.Options{Corrupt: corruptBolt, Blobs: 1100})
}

func TestBoltDurable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cas.db")
	s := openBolt(t, path, nil)
	ctx := t.Context()
	ref, err := s.Put(ctx, []byte("durable"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("new file mode = %v; want 0600", perm)
	}
	s = openBolt(t, path, nil)
	defer s.Close()
	if got, err := s.Get(ctx, ref); err != nil || string(got) != "durable" {
		t.Errorf("after reopening: Get = %q, %v", got, err)
	}
}

func TestNewBoltLeavesDBOpen(t *testing.T) {
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "shared.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := cas.NewBolt(nil); err == nil {
		t.Error("NewBolt(nil) succeeded")
	}
	s, err := cas.NewBolt(db)
	if err != nil {
		t.Fatal(err)
	}
	if s.DB() != db {
		t.Error("DB() is not the DB given to NewBolt")
	}
	ref, err := s.Put(t.Context(), []byte("shared"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(t.Context(), ref); !errors.Is(err, cas.ErrClosed) {
		t.Errorf("Get after Close: %v; want ErrClosed", err)
	}
	// The DB is still open, and a second store on it finds the blob.
	if err := db.View(func(*bbolt.Tx) error { return nil }); err != nil {
		t.Fatalf("DB closed by the store's Close: %v", err)
	}
	s2, err := cas.NewBolt(db)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s2.Get(t.Context(), ref); err != nil || string(got) != "shared" {
		t.Errorf("second store: Get = %q, %v", got, err)
	}
}

// TestBoltTx is how the journal uses the store: blobs and records commit in
// one transaction, or not at all.
func TestBoltTx(t *testing.T) {
	s := openBolt(t, filepath.Join(t.TempDir(), "cas.db"), &cas.BoltOptions{NoSync: true})
	defer s.Close()
	db := s.DB()
	ctx := t.Context()

	var a, empty cas.Ref
	err := db.Update(func(tx *bbolt.Tx) error {
		j, err := tx.CreateBucketIfNotExists([]byte("journal"))
		if err != nil {
			return err
		}
		if a, err = s.PutTx(tx, []byte("blob a")); err != nil {
			return err
		}
		if empty, err = s.PutTx(tx, nil); err != nil {
			return err
		}
		if again, err := s.PutTx(tx, []byte("blob a")); err != nil || again != a {
			t.Errorf("second PutTx in the same tx = %v, %v; want %v", again, err, a)
		}
		// Visible inside the transaction, before commit.
		if got, err := s.GetTx(tx, a); err != nil || string(got) != "blob a" {
			t.Errorf("GetTx before commit = %q, %v", got, err)
		}
		if got, err := s.GetTx(tx, empty); err != nil || got == nil || len(got) != 0 {
			t.Errorf("GetTx(empty blob) before commit = %#v, %v; want an empty slice", got, err)
		}
		d := a.Digest()
		return j.Put([]byte("seq1"), d[:])
	})
	if err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[cas.Ref]string{a: "blob a", empty: ""} {
		if got, err := s.Get(ctx, ref); err != nil || string(got) != want {
			t.Errorf("Get(%s) after commit = %q, %v; want %q", ref.Short(), got, err, want)
		}
	}

	// A rolled back transaction leaves no blob behind.
	var b cas.Ref
	rollback := errors.New("step failed")
	err = db.Update(func(tx *bbolt.Tx) error {
		var err error
		if b, err = s.PutTx(tx, []byte("blob b")); err != nil {
			return err
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatalf("Update = %v; want %v", err, rollback)
	}
	if has, err := s.Has(ctx, b); has || err != nil {
		t.Errorf("Has(rolled back blob) = %v, %v; want false", has, err)
	}

	// GetTx in a read transaction, misuse of PutTx.
	err = db.View(func(tx *bbolt.Tx) error {
		if got, err := s.GetTx(tx, a); err != nil || string(got) != "blob a" {
			t.Errorf("GetTx in View = %q, %v", got, err)
		}
		if _, err := s.GetTx(tx, b); !errors.Is(err, cas.ErrNotFound) {
			t.Errorf("GetTx(missing) = %v; want ErrNotFound", err)
		}
		if _, err := s.PutTx(tx, []byte("c")); err == nil || !strings.Contains(err.Error(), "read-write transaction") {
			t.Errorf("PutTx in a read transaction: %v; want an error", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	other, err := bbolt.Open(filepath.Join(t.TempDir(), "other.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	err = other.Update(func(tx *bbolt.Tx) error {
		_, err := s.PutTx(tx, []byte("c"))
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "not on the store's database") {
		t.Errorf("PutTx with another DB's transaction: %v; want an error", err)
	}
	if _, err := s.PutTx(nil, []byte("c")); err == nil {
		t.Error("PutTx(nil tx) succeeded")
	}
}

// TestBoltPutDoesNotRewrite checks that a Put of stored bytes writes
// nothing: no commit, and no repair of a value changed behind the store's
// back (content addressing: a key's bytes never change).
func TestBoltPutDoesNotRewrite(t *testing.T) {
	s := openBolt(t, filepath.Join(t.TempDir(), "cas.db"), &cas.BoltOptions{NoSync: true})
	defer s.Close()
	ctx := t.Context()
	data := []byte("once")
	ref, err := s.Put(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	txid := func() int {
		var id int
		if err := s.DB().View(func(tx *bbolt.Tx) error { id = tx.ID(); return nil }); err != nil {
			t.Fatal(err)
		}
		return id
	}
	before := txid()
	if _, err := s.Put(ctx, data); err != nil {
		t.Fatal(err)
	}
	if after := txid(); after != before {
		t.Errorf("Put of stored bytes committed a transaction (txid %d -> %d)", before, after)
	}
	corruptBolt(t, s, ref)
	if _, err := s.Put(ctx, data); err != nil {
		t.Fatal(err)
	}
	err = s.DB().Update(func(tx *bbolt.Tx) error {
		_, err := s.PutTx(tx, data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, ref); !errors.Is(err, cas.ErrCorrupt) {
		t.Errorf("Get after re-putting over a corrupt value: %v; want ErrCorrupt (Put must not rewrite)", err)
	}
}

func TestBoltReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cas.db")
	if _, err := cas.OpenBolt(path, &cas.BoltOptions{ReadOnly: true}); err == nil {
		t.Error("OpenBolt(missing file, ReadOnly) succeeded")
	}
	s := openBolt(t, path, nil)
	ref, err := s.Put(t.Context(), []byte("ro"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r1 := openBolt(t, path, &cas.BoltOptions{ReadOnly: true})
	defer r1.Close()
	r2 := openBolt(t, path, &cas.BoltOptions{ReadOnly: true, Timeout: time.Second})
	defer r2.Close()
	for _, r := range []*cas.Bolt{r1, r2} {
		if got, err := r.Get(t.Context(), ref); err != nil || string(got) != "ro" {
			t.Errorf("read-only Get = %q, %v", got, err)
		}
		if _, err := r.Put(t.Context(), []byte("new")); !errors.Is(err, cas.ErrReadOnly) {
			t.Errorf("read-only Put: %v; want ErrReadOnly", err)
		}
	}
	if checked, bad, err := cas.Verify(t.Context(), r1, nil); checked != 1 || bad != 0 || err != nil {
		t.Errorf("Verify read-only = %d, %d, %v", checked, bad, err)
	}
}

func TestBoltReadOnlyWithoutBucket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.db")
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	s := openBolt(t, path, &cas.BoltOptions{ReadOnly: true})
	defer s.Close()
	ref := cas.Sum([]byte("x"))
	if _, err := s.Get(t.Context(), ref); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("Get in a file without the cas bucket: %v; want ErrNotFound", err)
	}
	if checked, _, err := cas.Verify(t.Context(), s, nil); checked != 0 || err != nil {
		t.Errorf("Verify = %d, %v; want 0, nil", checked, err)
	}
}

func TestBoltLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cas.db")
	s := openBolt(t, path, nil)
	defer s.Close()
	_, err := cas.OpenBolt(path, &cas.BoltOptions{Timeout: 50 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "is another process using it?") || !strings.Contains(err.Error(), path) {
		t.Errorf("OpenBolt of a locked file: %v; want a timeout naming the file", err)
	}
}

func TestBoltOpenErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no", "such", "dir", "cas.db")
	if _, err := cas.OpenBolt(missing, nil); err == nil || !strings.Contains(err.Error(), "cas: open bolt store "+missing) {
		t.Errorf("OpenBolt in a missing directory: %v", err)
	}
	notBolt := filepath.Join(dir, "text.db")
	if err := os.WriteFile(notBolt, []byte(strings.Repeat("not a bolt file\n", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cas.OpenBolt(notBolt, nil); err == nil || !strings.Contains(err.Error(), notBolt) {
		t.Errorf("OpenBolt of a text file: %v", err)
	}
}

func TestBoltOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts *cas.BoltOptions
		err  string
	}{
		{"nil", nil, ""},
		{"zero", &cas.BoltOptions{}, ""},
		{"all set", &cas.BoltOptions{Timeout: time.Second, NoSync: true, Mode: 0o640}, ""},
		{"negative timeout", &cas.BoltOptions{Timeout: -time.Second}, "cas: bolt options: Timeout -1s is negative"},
		{"mode with type bits", &cas.BoltOptions{Mode: os.ModeDir | 0o700}, "cas: bolt options: Mode drwx------ has bits other than permissions"},
	}
	for _, tc := range tests {
		err := tc.opts.Validate()
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || err.Error() != tc.err) {
			t.Errorf("%s: Validate() = %v; want %q", tc.name, err, tc.err)
		}
		if tc.err != "" {
			if _, err := cas.OpenBolt(filepath.Join(t.TempDir(), "x.db"), tc.opts); err == nil || err.Error() != tc.err {
				t.Errorf("%s: OpenBolt = %v; want %q", tc.name, err, tc.err)
			}
		}
	}
}

func TestBoltBadKey(t *testing.T) {
	s := openBolt(t, filepath.Join(t.TempDir(), "cas.db"), &cas.BoltOptions{NoSync: true})
	defer s.Close()
	if _, err := s.Put(t.Context(), []byte("fine")); err != nil {
		t.Fatal(err)
	}
	err := s.DB().Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte(boltlayout.Bucket)).Put([]byte("short"), []byte("v"))
	})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = cas.Verify(t.Context(), s, nil)
	if !errors.Is(err, cas.ErrCorrupt) || !strings.Contains(err.Error(), "73686f7274") {
		t.Errorf("Verify over a bad key: %v; want ErrCorrupt naming the key", err)
	}
}

// sized returns n bytes that differ for each seed.
func sized(seed byte, n int) []byte {
	b := bytes.Repeat([]byte{seed}, n)
	if n > 0 {
		b[n-1] ^= 0x5a
	}
	return b
}

// TestBoltLayout checks where blobs go: below BoltBlobBucketMin as the
// value of their digest, from it on in a nested bucket of their own
// holding the bytes under BoltBlobKey.
func TestBoltLayout(t *testing.T) {
	s := openBolt(t, filepath.Join(t.TempDir(), "cas.db"), &cas.BoltOptions{NoSync: true})
	defer s.Close()
	tests := []struct {
		n      int
		nested bool
	}{
		{0, false},
		{1 << 10, false},
		{boltlayout.BlobBucketMin - 1, false},
		{boltlayout.BlobBucketMin, true},
		{1 << 20, true},
	}
	for _, tc := range tests {
		data := sized(byte(tc.n), tc.n)
		ref, err := s.Put(t.Context(), data)
		if err != nil {
			t.Fatal(err)
		}
		err = s.DB().View(func(tx *bbolt.Tx) error {
			b := tx.Bucket([]byte(boltlayout.Bucket))
			d := ref.Digest()
			v, sub := b.Get(d[:]), b.Bucket(d[:])
			switch {
			case tc.nested && (v != nil || sub == nil):
				t.Errorf("%d bytes: value %v, nested bucket %v; want a nested bucket", tc.n, v != nil, sub != nil)
			case tc.nested && !bytes.Equal(sub.Get([]byte(boltlayout.BlobKey)), data):
				t.Errorf("%d bytes: the nested bucket does not hold the bytes under %q", tc.n, boltlayout.BlobKey)
			case !tc.nested && (sub != nil || !bytes.Equal(v, data) || v == nil):
				t.Errorf("%d bytes: value %v, nested bucket %v; want the bytes as the value", tc.n, v != nil, sub != nil)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := getTx(t, s, ref); err != nil || !bytes.Equal(got, data) {
			t.Errorf("%d bytes: GetTx = %d bytes, %v", tc.n, len(got), err)
		}
	}
}

// TestBoltPutTxBigTwice: a big blob put twice in one transaction is
// stored once, and readable before the commit.
func TestBoltPutTxBigTwice(t *testing.T) {
	s := openBolt(t, filepath.Join(t.TempDir(), "cas.db"), &cas.BoltOptions{NoSync: true})
	defer s.Close()
	data := sized(7, 1<<20)
	err := s.DB().Update(func(tx *bbolt.Tx) error {
		for range 2 {
			if _, err := s.PutTx(tx, data); err != nil {
				return err
			}
		}
		got, err := s.GetTx(tx, cas.Sum(data))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("GetTx before commit = %d bytes, %v", len(got), err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked, bad, err := cas.Verify(t.Context(), s, nil); checked != 1 || bad != 0 || err != nil {
		t.Errorf("Verify = %d, %d, %v; want 1, 0, nil", checked, bad, err)
	}
}

// getTx is GetTx in a read transaction of its own.
func getTx(t *testing.T, s *cas.Bolt, ref cas.Ref) (got []byte, err error) {
	t.Helper()
	if verr := s.DB().View(func(tx *bbolt.Tx) error {
		got, err = s.GetTx(tx, ref)
		return nil
	}); verr != nil {
		t.Fatal(verr)
	}
	return got, err
}

// TestBoltReadsEitherLayout: a file written by another layout rule (big
// blobs as plain values, as the store wrote them before nested buckets,
// or a small blob in a nested bucket) reads back whole, and a Put of the
// same bytes leaves it as it is.
func TestBoltReadsEitherLayout(t *testing.T) {
	s := openBolt(t, filepath.Join(t.TempDir(), "cas.db"), &cas.BoltOptions{NoSync: true})
	defer s.Close()
	ctx := t.Context()
	flatBig, nestedSmall := sized(1, 1<<20), sized(2, 100)
	want := map[cas.Ref][]byte{cas.Sum(flatBig): flatBig, cas.Sum(nestedSmall): nestedSmall}
	err := s.DB().Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(boltlayout.Bucket))
		d := cas.Sum(flatBig).Digest()
		if err := b.Put(d[:], flatBig); err != nil {
			return err
		}
		d = cas.Sum(nestedSmall).Digest()
		sub, err := b.CreateBucket(d[:])
		if err != nil {
			return err
		}
		return sub.Put([]byte(boltlayout.BlobKey), nestedSmall)
	})
	if err != nil {
		t.Fatal(err)
	}
	writes := func() int64 { st := s.DB().Stats(); return st.TxStats.GetWrite() }
	before := writes()
	for ref, data := range want {
		if again, err := s.Put(ctx, data); err != nil || again != ref {
			t.Errorf("Put(stored %d bytes) = %v, %v; want %v", len(data), again, err, ref)
		}
		if got, err := s.Get(ctx, ref); err != nil || !bytes.Equal(got, data) {
			t.Errorf("Get(%d bytes) = %d bytes, %v", len(data), len(got), err)
		}
		if has, err := s.Has(ctx, ref); !has || err != nil {
			t.Errorf("Has(%d bytes) = %v, %v", len(data), has, err)
		}
		if n, err := s.Stat(ctx, ref); n != int64(len(data)) || err != nil {
			t.Errorf("Stat(%d bytes) = %d, %v", len(data), n, err)
		}
	}
	if after := writes(); after != before {
		t.Errorf("Put of stored bytes wrote %d pages", after-before)
	}
	sizes := map[cas.Ref]int64{}
	if err := s.Iterate(ctx, func(ref cas.Ref, size int64) error { sizes[ref] = size; return nil }); err != nil {
		t.Fatal(err)
	}
	for ref, data := range want {
		if sizes[ref] != int64(len(data)) {
			t.Errorf("Iterate: %s has size %d; want %d", ref.Short(), sizes[ref], len(data))
		}
	}
	if checked, bad, err := cas.Verify(ctx, s, nil); checked != 2 || bad != 0 || err != nil {
		t.Errorf("Verify = %d, %d, %v; want 2, 0, nil", checked, bad, err)
	}
}

// TestBoltBigCorrupt: a blob in a nested bucket whose bytes changed, or
// whose bucket lost them, is corrupt, and Verify reports both and goes on.
func TestBoltBigCorrupt(t *testing.T) {
	s := openBolt(t, filepath.Join(t.TempDir(), "cas.db"), &cas.BoltOptions{NoSync: true})
	defer s.Close()
	ctx := t.Context()
	var refs []cas.Ref
	for i := range 4 {
		ref, err := s.Put(ctx, sized(byte(10+i), 100<<10))
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}
	changed, emptied := refs[1], refs[2]
	corruptBolt(t, s, changed)
	err := s.DB().Update(func(tx *bbolt.Tx) error {
		d := emptied.Digest()
		return tx.Bucket([]byte(boltlayout.Bucket)).Bucket(d[:]).Delete([]byte(boltlayout.BlobKey))
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []cas.Ref{changed, emptied} {
		got, err := s.Get(ctx, ref)
		var ce *cas.CorruptError
		if got != nil || !errors.As(err, &ce) || ce.Ref != ref {
			t.Errorf("Get(corrupt %s) = %d bytes, %v; want a *CorruptError", ref.Short(), len(got), err)
		}
		if has, err := s.Has(ctx, ref); !has || err != nil {
			t.Errorf("Has(corrupt %s) = %v, %v; want true", ref.Short(), has, err)
		}
	}
	if _, err := s.Get(ctx, emptied); err == nil || !strings.Contains(err.Error(), "holds no value") {
		t.Errorf("Get(bucket without bytes) = %v; want it to say the bucket holds no value", err)
	}
	if _, err := s.Stat(ctx, emptied); !errors.Is(err, cas.ErrCorrupt) {
		t.Errorf("Stat(bucket without bytes) = %v; want ErrCorrupt", err)
	}
	if _, err := getTx(t, s, emptied); !errors.Is(err, cas.ErrCorrupt) {
		t.Errorf("GetTx(bucket without bytes) = %v; want ErrCorrupt", err)
	}
	reported := map[cas.Ref]bool{}
	checked, bad, err := cas.Verify(ctx, s, func(ref cas.Ref, err error) { reported[ref] = errors.Is(err, cas.ErrCorrupt) })
	if checked != 4 || bad != 2 || err != nil || !reported[changed] || !reported[emptied] {
		t.Errorf("Verify = %d checked, %d bad, %v, reported %v; want 4, 2, nil and both corrupt blobs", checked, bad, err, reported)
	}
	if _, err := s.Put(ctx, sized(12, 100<<10)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, emptied); !errors.Is(err, cas.ErrCorrupt) {
		t.Errorf("Get after re-putting the bytes of a corrupt blob: %v; want ErrCorrupt (Put must not rewrite)", err)
	}
}

func TestTuneBolt(t *testing.T) {
	mmap := cas.BoltInitialMmapSize
	if runtime.GOOS == "windows" || strconv.IntSize < 64 {
		mmap = 0 // bbolt would grow the file to the mapping, or lack the address space
	}
	tests := []struct {
		name string
		in   bbolt.Options
		want bbolt.Options
	}{
		{"read-write", bbolt.Options{NoSync: true}, bbolt.Options{NoSync: true, InitialMmapSize: mmap}},
		{"read-only is left alone", bbolt.Options{ReadOnly: true}, bbolt.Options{ReadOnly: true}},
		{"a bigger mapping is kept", bbolt.Options{InitialMmapSize: 4 << 30}, bbolt.Options{InitialMmapSize: 4 << 30}},
	}
	for _, tc := range tests {
		got := tc.in
		cas.TuneBolt(&got)
		if got.String() != tc.want.String() {
			t.Errorf("%s: TuneBolt(%v) = %v; want %v", tc.name, &tc.in, &got, &tc.want)
		}
	}
}

// TestBoltPutWhileReading: with the mapping TuneBolt asks for, a Put that
// grows the file does not wait for a read transaction another goroutine
// holds open (without it bbolt must remap, and waits for every reader).
func TestBoltPutWhileReading(t *testing.T) {
	s := openBolt(t, filepath.Join(t.TempDir(), "cas.db"), &cas.BoltOptions{NoSync: true})
	defer s.Close()
	castest.PutsWhileReading(t, s.DB(), s)
}
