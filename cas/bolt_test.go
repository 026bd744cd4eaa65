package cas_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cas/castest"
	"go.etcd.io/bbolt"
)

// corruptBolt rewrites the value under ref behind the store's back.
func corruptBolt(t *testing.T, s cas.Store, ref cas.Ref) {
	t.Helper()
	db := s.(*cas.Bolt).DB()
	err := db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(cas.BoltBucket))
		d := ref.Digest()
		v := b.Get(d[:])
		if v == nil {
			return errors.New("corruptBolt: ref not stored")
		}
		bad := append([]byte("x"), v...)
		return b.Put(d[:], bad)
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
		return tx.Bucket([]byte(cas.BoltBucket)).Put([]byte("short"), []byte("v"))
	})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = cas.Verify(t.Context(), s, nil)
	if !errors.Is(err, cas.ErrCorrupt) || !strings.Contains(err.Error(), "73686f7274") {
		t.Errorf("Verify over a bad key: %v; want ErrCorrupt naming the key", err)
	}
}
