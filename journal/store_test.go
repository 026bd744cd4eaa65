package journal_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/journal/journaltest"
	"go.etcd.io/bbolt"
)

func TestMemory(t *testing.T) {
	t.Parallel()
	journaltest.Test(t, func(t *testing.T) journal.Store { return journal.NewMemory() })
}

func TestBolt(t *testing.T) {
	t.Parallel()
	journaltest.Test(t, func(t *testing.T) journal.Store {
		path := filepath.Join(t.TempDir(), "journal.db")
		j, err := journal.OpenBolt(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { verifyFile(t, path) })
		return j
	})
}

// TestBoltShared runs the suite on a journal inside a DB the test owns, as
// the world shares one file between the CAS and the journal. The DB skips
// fsync (TestBolt covers durable commits), so the suite stays fast.
func TestBoltShared(t *testing.T) {
	t.Parallel()
	journaltest.Test(t, func(t *testing.T) journal.Store {
		db := openDB(t, filepath.Join(t.TempDir(), "shared.db"), &bbolt.Options{NoSync: true})
		j, err := journal.NewBolt(db, nil)
		if err != nil {
			t.Fatal(err)
		}
		return j
	})
}

func openDB(t *testing.T, path string, opts *bbolt.Options) *bbolt.DB {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close shared DB: %v", err)
		}
	})
	return db
}

// verifyFile reopens a journal file read-only after a test and verifies
// every world in it, as bbolt's tests check consistency after each test.
// It runs in t.Cleanup, after t.Context is canceled.
func verifyFile(t *testing.T, path string) {
	t.Helper()
	j, err := journal.OpenBolt(path, &journal.BoltOptions{ReadOnly: true})
	if err != nil {
		t.Errorf("reopen %s: %v", path, err)
		return
	}
	defer j.Close()
	worlds, err := j.Worlds(context.Background())
	if err != nil {
		t.Errorf("reopen %s: Worlds: %v", path, err)
		return
	}
	for _, w := range worlds {
		if _, err := journal.Verify(context.Background(), j, w); err != nil && !errors.Is(err, journal.ErrNotFound) {
			t.Errorf("reopen %s: %v", path, err)
		}
	}
}
