package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/agent/session"
)

// counterStore sends Start{2} and two Ticks to the counter example in a
// fresh store and returns the store directory.
func counterStore(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	for _, v := range []string{`{"Start": {"target": 2}}`, `"Tick"`, `"Tick"`} {
		mustRun(t, 0, "", "--store", dir, "send", "-q", "--manifest", "../examples/counter", "--schema", "counter/Event@1", "--value", v)
	}
	return dir
}

func TestSend(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "store")
	r := mustRun(t, 0, "", "--store", dir, "send", "--manifest", "../examples/counter", "--schema", "counter/Event@1", "--value", `{"Start": {"target": 1}}`)
	if !strings.Contains(r.stdout, `state counter/Counter@1 = {"pc":{"$tag":"Counting"},"remaining":1}`) {
		t.Fatalf("stdout:\n%s", r.stdout)
	}
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"send", "--manifest", "../examples/counter", "--schema", "counter/Nope@1", "--value", "1"}, 1, "schema counter/Nope@1 is not in the manifest"},
		{[]string{"send", "--manifest", "../examples/counter", "--schema", "counter/Event@1", "--value", `{"Tick": 3}`}, 1, `variant arm "Tick" is unit and takes no value`},
		{[]string{"send", "--schema", "counter/Event@1", "--value", "1"}, 2, "--manifest is required"},
		{[]string{"send", "--manifest", "../examples/counter", "--world", "bad/name", "--schema", "counter/Event@1", "--value", "1"}, 2, "--world"},
	} {
		r := run(t, nil, "", append([]string{"--store", dir}, tc.args...)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.err) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, r.code, r.stderr, tc.code, tc.err)
		}
	}
}

func TestState(t *testing.T) {
	t.Parallel()
	dir := counterStore(t)
	requireStoreUnchanged(t, dir, func() {
		r := mustRun(t, 0, "", "--store", dir, "state", "--json")
		if !strings.Contains(r.stdout, `"state":{"pc":{"$tag":"Done"},"remaining":0}`) {
			t.Fatalf("stdout:\n%s", r.stdout)
		}
		mustRun(t, 1, "", "--store", dir, "state", "--reducer", "nope/Nope@1")
	})
}

func TestReplay(t *testing.T) {
	t.Parallel()
	dir := counterStore(t)
	requireStoreUnchanged(t, dir, func() {
		r := mustRun(t, 0, "", "--store", dir, "replay", "--manifest", "../examples/counter", "--from-genesis")
		if !strings.HasPrefix(r.stdout, "ok: world main replays to the same bytes: 7 records from genesis") {
			t.Fatalf("stdout:\n%s", r.stdout)
		}
		// Without --manifest the AIR is read from the store.
		if r := mustRun(t, 0, "", "--store", dir, "replay"); !strings.HasPrefix(r.stdout, "ok: world main replays to the same bytes") {
			t.Fatalf("stdout:\n%s", r.stdout)
		}
		mustRun(t, 2, "", "--store", dir, "replay", "--world", "main", filepath.Join(t.TempDir(), "bundle"))
	})
}

func TestTrace(t *testing.T) {
	t.Parallel()
	dir := counterStore(t)
	requireStoreUnchanged(t, dir, func() {
		r := mustRun(t, 0, "", "--store", dir, "trace")
		if n := strings.Count(r.stdout, "\n"); n != 7 {
			t.Fatalf("%d lines:\n%s", n, r.stdout)
		}
	})
}

func TestExportImport(t *testing.T) {
	t.Parallel()
	dir := counterStore(t)
	bundle := filepath.Join(t.TempDir(), "bundle")
	requireStoreUnchanged(t, dir, func() {
		mustRun(t, 0, "", "--store", dir, "export", "--manifest", "../examples/counter", bundle)
	})
	mustRun(t, 1, "", "--store", dir, "export", "--manifest", "../examples/counter", bundle) // not empty
	mustRun(t, 1, "", "--store", dir, "export", "--manifest", "../examples/timer", filepath.Join(t.TempDir(), "b2"))
	other := filepath.Join(t.TempDir(), "other")
	r := mustRun(t, 0, "", "--store", other, "import", bundle)
	if !strings.HasPrefix(r.stdout, "imported world main: 7 records") {
		t.Fatalf("stdout: %s", r.stdout)
	}
	mustRun(t, 0, "", "--store", other, "replay", "--manifest", "../examples/counter")
}

// TestWorldSummaryOpenTurn: a turn not ended is open, and worlds says it
// runs only where something could run it.
func TestWorldSummaryOpenTurn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		world, holder, want string
	}{
		{"main", holderNone, "; a turn is open (not running: demiurge run MANIFEST resumes it)\n"},
		{"fr", holderNone, "; a turn is open (not running: demiurge run MANIFEST --world fr resumes it)\n"},
		{"main", "process 42 holds the store", "; a turn is open (process 42 holds the store)\n"},
		{"main", holderWorkers, "; a turn is open\n"},
	} {
		var b strings.Builder
		writeWorldSummary(&b, &session.WorldSummary{World: tc.world, Chats: []session.ChatSummary{{Chat: "main", Turns: 1, Running: true}}}, tc.holder)
		if !strings.HasSuffix(b.String(), tc.want) || strings.Contains(b.String(), "running;") {
			t.Errorf("world %s, holder %q:\n%s\nwant it to end with %q", tc.world, tc.holder, b.String(), tc.want)
		}
	}
}
