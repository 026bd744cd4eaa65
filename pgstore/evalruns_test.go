package pgstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/internal/pgtest"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/pgstore"
)

// The store keeps eval runs: put, listed newest first without their
// reports, read whole, replaced under the same name; a read-only store
// reads them and keeps none.
func TestEvalRuns(t *testing.T) {
	ctx := t.Context()
	s, u := open(t)
	if list, err := s.EvalRuns(ctx); err != nil || len(list) != 0 {
		t.Fatalf("a new store's runs: %v, %v", list, err)
	}
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 123456000, time.UTC)
	for i, name := range []string{"b", "a", "c"} {
		r := pgstore.EvalRun{Run: name, Started: t0.Add(time.Duration(i) * time.Minute), Summary: []byte(`{"run":"` + name + `"}`), Report: []byte(`{"report":"` + name + `"}`)}
		if err := s.PutEvalRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	// The same start: by name, the greater first.
	if err := s.PutEvalRun(ctx, pgstore.EvalRun{Run: "d", Started: t0.Add(2 * time.Minute), Summary: []byte(`{}`), Report: []byte(`{"report":"d"}`)}); err != nil {
		t.Fatal(err)
	}
	list, err := s.EvalRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range list {
		names = append(names, r.Run)
		if r.Report != nil {
			t.Errorf("run %s listed with its report", r.Run)
		}
	}
	if got := names; len(got) != 4 || got[0] != "d" || got[1] != "c" || got[2] != "a" || got[3] != "b" {
		t.Errorf("runs %q; want d c a b (newest first)", got)
	}
	if !list[1].Started.Equal(t0.Add(2*time.Minute)) || string(list[1].Summary) != `{"run":"c"}` {
		t.Errorf("run c: %+v", list[1])
	}
	r, err := s.EvalRun(ctx, "a")
	if err != nil || string(r.Report) != `{"report":"a"}` || !r.Started.Equal(t0.Add(time.Minute)) {
		t.Errorf("run a: %+v, %v", r, err)
	}
	if _, err := s.EvalRun(ctx, "nope"); !errors.Is(err, pgstore.ErrNoEvalRun) {
		t.Errorf("a run not kept: %v; want ErrNoEvalRun", err)
	}
	if err := s.PutEvalRun(ctx, pgstore.EvalRun{Run: "a", Started: t0, Summary: []byte(`{}`), Report: []byte(`{"report":"a2"}`)}); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.EvalRun(ctx, "a"); string(r.Report) != `{"report":"a2"}` {
		t.Errorf("run a put again: %s", r.Report)
	}
	ro, err := pgstore.Open(ctx, u, &pgstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if list, err := ro.EvalRuns(ctx); err != nil || len(list) != 4 {
		t.Errorf("read-only: %d runs, %v", len(list), err)
	}
	if err := ro.PutEvalRun(ctx, pgstore.EvalRun{Run: "x", Summary: []byte(`{}`), Report: []byte(`{}`)}); !errors.Is(err, journal.ErrReadOnly) {
		t.Errorf("PutEvalRun on a read-only store: %v", err)
	}
}

// A store of version 1 (before eval_runs) is read as it is by a
// read-only open, keeping no eval runs, and upgraded by a read-write one,
// its journal untouched.
func TestMigrateFromVersion1(t *testing.T) {
	ctx := t.Context()
	u := pgtest.URL(t)
	s, err := pgstore.Open(ctx, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Journal().Append(ctx, "w", journal.Head{}, entries(3, "v1"))
	if err != nil {
		t.Fatal(err)
	}
	// Version 1 is version 2 without eval_runs.
	if _, err := s.Pool().Exec(ctx, `DROP TABLE eval_runs; UPDATE demiurge_meta SET value = '1' WHERE key = 'schema_version'`); err != nil {
		t.Fatal(err)
	}
	s.Close()

	ro, err := pgstore.Open(ctx, u, &pgstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("a read-only open of a version 1 store: %v", err)
	}
	if got, err := journal.Verify(ctx, ro.Journal(), "w"); err != nil || got != h {
		t.Errorf("its journal: %v, %v", got, err)
	}
	if list, err := ro.EvalRuns(ctx); err != nil || len(list) != 0 {
		t.Errorf("its eval runs: %v, %v; want none", list, err)
	}
	if _, err := ro.EvalRun(ctx, "r"); !errors.Is(err, pgstore.ErrNoEvalRun) {
		t.Errorf("a run of it: %v", err)
	}
	ro.Close()

	rw, err := pgstore.Open(ctx, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	var v string
	if err := rw.Pool().QueryRow(ctx, `SELECT value FROM demiurge_meta WHERE key = 'schema_version'`).Scan(&v); err != nil || v != "2" {
		t.Errorf("upgraded to version %q, %v; want 2", v, err)
	}
	if got, err := journal.Verify(ctx, rw.Journal(), "w"); err != nil || got != h {
		t.Errorf("its journal after the upgrade: %v, %v", got, err)
	}
	if err := rw.PutEvalRun(ctx, pgstore.EvalRun{Run: "r", Started: time.Now(), Summary: []byte(`{}`), Report: []byte(`{}`)}); err != nil {
		t.Errorf("keep a run once upgraded: %v", err)
	}
}
