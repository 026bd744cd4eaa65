package main

import (
	"regexp"
	"strings"
	"testing"

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
