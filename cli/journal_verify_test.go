package cli

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/journal"
)

// storeWithWorlds creates a store with records in worlds a and b.
func storeWithWorlds(t *testing.T) string {
	t.Helper()
	dir := newStore(t)
	for _, w := range []struct {
		world string
		args  []string
	}{
		{"b", []string{"DomainEvent", `{"$tag": "Tick"}`}},
		{"a", []string{"DomainEvent", `{"$tag": "Start", "$value": {"target": 2}}`, "Note", "raw:text", "Empty", ""}},
	} {
		entries, err := parseEntries(w.args)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := appendRecords(t.Context(), dir, w.world, entries); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestJournalVerify(t *testing.T) {
	t.Parallel()
	dir := storeWithWorlds(t)
	want := regexp.MustCompile(`^a: ok, seq 3 blake3:[0-9a-f]{12}\nb: ok, seq 1 blake3:[0-9a-f]{12}\n$`)
	requireStoreUnchanged(t, dir, func() {
		r := mustRun(t, exitOK, "", "--store", dir, "journal", "verify")
		if !want.MatchString(r.stdout) || r.stderr != "" {
			t.Errorf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		}
		r = mustRun(t, exitOK, "", "--store", dir, "journal", "verify", "--world", "b")
		if !strings.HasPrefix(r.stdout, "b: ok, seq 1 ") || strings.Count(r.stdout, "\n") != 1 {
			t.Errorf("--world b: %q", r.stdout)
		}
		r = mustRun(t, exitFailure, "", "--store", dir, "journal", "verify", "--world", "c")
		if !strings.Contains(r.stdout, "c: "+journal.ErrNotFound.Error()) {
			t.Errorf("--world c: %q", r.stdout)
		}
	})

	if err := corruptRecord(t.Context(), dir, "a", 1); err != nil {
		t.Fatal(err)
	}
	requireStoreUnchanged(t, dir, func() {
		r := mustRun(t, exitFailure, "", "--store", dir, "journal", "verify")
		if !strings.Contains(r.stdout, "journal: world a: hash chain broken at seq 2: ") || !strings.Contains(r.stdout, "\nb: ok, seq 1 ") {
			t.Errorf("stdout:\n%s", r.stdout)
		}
		if want := "demiurge: journal verify: 1 of 2 worlds in store " + dir + " failed\n"; r.stderr != want {
			t.Errorf("stderr %q; want %q", r.stderr, want)
		}
	})
}

func TestJournalVerifyEmpty(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	requireStoreUnchanged(t, dir, func() {
		r := mustRun(t, exitOK, "", "--store", dir, "journal", "verify")
		if r.stdout != "no worlds in store "+dir+"\n" {
			t.Errorf("stdout %q", r.stdout)
		}
	})
}

// TestJournalVerifyLostHead: a world whose head entry is lost is reported,
// and the other worlds are verified all the same.
func TestJournalVerifyLostHead(t *testing.T) {
	t.Parallel()
	dir := storeWithWorlds(t)
	db, err := bbolt.Open(filepath.Join(dir, store.FileName), 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("journal.log")).Delete(append([]byte{0xff}, "a"...))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	requireStoreUnchanged(t, dir, func() {
		r := mustRun(t, exitFailure, "", "--store", dir, "journal", "verify")
		want := regexp.MustCompile(`^journal: world a: world a has no head entry, but has records \(anchor [0-9a-f]+\)\nb: ok, seq 1 blake3:[0-9a-f]{12}\n$`)
		if !want.MatchString(r.stdout) {
			t.Errorf("stdout:\n%s", r.stdout)
		}
		if !strings.HasPrefix(r.stderr, "demiurge: journal verify: 1 of 2 worlds in store "+dir+" failed\n") {
			t.Errorf("stderr %q", r.stderr)
		}
	})
}
