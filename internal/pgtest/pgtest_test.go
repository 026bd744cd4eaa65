package pgtest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/demiurge-dev/demiurge/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestSchemaAndRestart(t *testing.T) {
	s := pgtest.Shared(t)
	u := pgtest.URL(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE x (v int); INSERT INTO x VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if err := s.Crash(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	conn, err = pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v int
	if err := conn.QueryRow(ctx, "SELECT v FROM x").Scan(&v); err != nil || v != 42 {
		t.Fatalf("after a crash and restart: %d, %v; want 42", v, err)
	}
	// A second schema does not see the first one's tables.
	conn2, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close(ctx)
	if _, err := conn2.Exec(ctx, "SELECT v FROM x"); err == nil {
		t.Fatal("a new schema sees the table of another")
	}
}

// Without the server binaries a test skips saying what to install, and
// fails instead when PostgreSQL is required (CI).
func TestMissingBinaries(t *testing.T) {
	if os.Getenv("PGTEST_CHILD") == "1" {
		pgtest.Shared(t)
		t.Fatal("Shared returned without binaries")
	}
	for _, tc := range []struct {
		require string
		want    string
		fail    bool
	}{
		{"", "--- SKIP: TestMissingBinaries", false},
		{"1", "--- FAIL: TestMissingBinaries", true},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingBinaries$", "-test.v")
		cmd.Env = append(os.Environ(), "PGTEST_CHILD=1", pgtest.BinEnv+"=/nonexistent", pgtest.RequireEnv+"="+tc.require)
		out, err := cmd.CombinedOutput()
		if (err != nil) != tc.fail || !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), "apt-get install postgresql") {
			t.Errorf("%s=%q: err %v\n%s", pgtest.RequireEnv, tc.require, err, out)
		}
	}
}
