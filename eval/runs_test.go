package eval

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/internal/pgtest"
	"github.com/demiurge-dev/demiurge/pgstore"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestRunStores: a directory and a PostgreSQL store's table keep runs
// alike: saved, listed newest first, read back by id, latest and
// previous, replaced under the same id; a run not kept is ErrNoRun.
func TestRunStores(t *testing.T) {
	pg, err := pgstore.Open(t.Context(), pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	for name, rs := range map[string]RunStore{"dir": Runs{Dir: t.TempDir()}, "postgres": PostgresRuns{Store: pg}} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			if list, err := rs.List(ctx); err != nil || len(list) != 0 {
				t.Fatalf("no runs yet: %v, %v", list, err)
			}
			if _, err := rs.Load(ctx, "latest"); !errors.Is(err, ErrNoRun) {
				t.Errorf("latest of none: %v", err)
			}
			t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
			mk := func(id string, at time.Time, passed int) *Report {
				r := &Report{Version: ReportVersion, Run: id, Suite: "s", Started: at, Runs: 1, PassRate: 1, Concurrency: 1,
					Cases: []*CaseResult{{Case: "c", Model: "m", Pass: passed > 0, Passed: passed, Runs: []*RunResult{{Run: 1, World: "eval-" + id + ".c.m", Pass: passed > 0}}}}}
				r.total()
				return r
			}
			for _, r := range []*Report{mk("one", t0, 1), mk("two", t0.Add(time.Minute), 0)} {
				if _, err := rs.Save(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			list, err := rs.List(ctx)
			if err != nil || len(list) != 2 || list[0].Run != "two" || list[1].Run != "one" || list[0].Models[0] != "m" || list[1].Total.Passed != 1 {
				t.Fatalf("list %+v, %v", list, err)
			}
			for id, want := range map[string]string{"latest": "two", "previous": "one", "one": "one"} {
				r, err := rs.Load(ctx, id)
				if err != nil || r.Run != want || r.Cases[0].Runs[0].World != "eval-"+want+".c.m" {
					t.Errorf("Load(%s): %+v, %v; want run %s", id, r, err, want)
				}
			}
			if _, err := rs.Load(ctx, "three"); !errors.Is(err, ErrNoRun) || !strings.Contains(err.Error(), rs.Where()) {
				t.Errorf("a run not kept: %v", err)
			}
			if _, err := rs.Save(ctx, mk("one", t0, 0)); err != nil {
				t.Fatal(err)
			}
			if r, _ := rs.Load(ctx, "one"); r.Total.Passed != 0 {
				t.Errorf("run one saved again still passes: %+v", r.Total)
			}
			if _, err := rs.Save(ctx, mk("../x", t0, 1)); err == nil {
				t.Error("a run id with a slash is saved")
			}
		})
	}
}
