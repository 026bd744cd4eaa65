package cli

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/internal/pgtest"
)

// The read and write commands that work on a store give the same output
// on a PostgreSQL store as on a bbolt one, and never show the URL's
// password.
func TestPostgresStoreCommands(t *testing.T) {
	srv := pgtest.Shared(t)
	pg := pgtest.URL(t)
	dir := filepath.Join(t.TempDir(), "store")
	demo := filepath.Join("..", "testdata", "sessions", "demo")
	// The AIR the recorded session ran (examples/demiurge may have moved on).
	air := filepath.Join(demo, "air")
	manifest := filepath.Join("..", "examples", "demiurge")
	note := filepath.Join(t.TempDir(), "note.txt")
	if err := os.WriteFile(note, []byte("a note\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ref := strings.TrimSpace(mustRun(t, 0, "", "--store", dir, "cas", "put", note).stdout)
	exportDir := t.TempDir()
	for i, args := range [][]string{
		{"cas", "put", note},
		{"import", demo},
		{"cas", "get", ref},
		{"cas", "stat", ref},
		{"cas", "verify"},
		{"journal", "verify"},
		{"journal", "dump", "--world", "main"},
		{"journal", "dump", "--world", "main", "--from", "40", "--json"},
		{"trace", "--world", "main"},
		{"state", "--world", "main"},
		{"replay", "--world", "main", "--manifest", air},
		{"replay", "--world", "main", "--manifest", air, "--from-genesis"},
		{"workspace", "ls", "--world", "main", "-r"},
		{"workspace", "cat", "--world", "main", "notes/hello.md"},
		{"export", "--world", "main", "--manifest", air, filepath.Join(exportDir, "x")},
	} {
		if args[0] == "export" {
			args[len(args)-1] = filepath.Join(exportDir, "bolt")
		}
		want := run(t, nil, "", append([]string{"--store", dir}, args...)...)
		if args[0] == "export" {
			args[len(args)-1] = filepath.Join(exportDir, "pg")
		}
		got := run(t, nil, "", append([]string{"--store", pg}, args...)...)
		srv.Scrub(t, "stdout", got.stdout)
		srv.Scrub(t, "stderr", got.stderr)
		norm := func(s string) string {
			s = strings.ReplaceAll(s, dir, "STORE")
			s = strings.ReplaceAll(s, filepath.Join(exportDir, "bolt"), "OUT")
			s = strings.ReplaceAll(s, filepath.Join(exportDir, "pg"), "OUT")
			return strings.ReplaceAll(s, pgtest.Redacted(pg), "STORE")
		}
		if got.code != want.code || norm(got.stdout) != norm(want.stdout) || norm(got.stderr) != norm(want.stderr) {
			t.Errorf("command %d %q on PostgreSQL: exit %d\nstdout:\n%s\nstderr:\n%s\non bbolt: exit %d\nstdout:\n%s\nstderr:\n%s",
				i, args, got.code, got.stdout, got.stderr, want.code, want.stdout, want.stderr)
		}
	}
	for _, f := range []string{"journal.cbor", "bundle.json"} {
		a, _ := os.ReadFile(filepath.Join(exportDir, "bolt", f))
		b, _ := os.ReadFile(filepath.Join(exportDir, "pg", f))
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("export of the same world: %s differs between bbolt (%d bytes) and PostgreSQL (%d bytes)", f, len(a), len(b))
		}
	}
	// cas verify --json says a PostgreSQL store has no file of ours.
	if r := run(t, nil, "", "--store", pg, "cas", "verify", "--json"); r.code != 0 || !strings.HasPrefix(r.stdout, `{"file":"none","checked":`) {
		t.Errorf("cas verify --json on PostgreSQL: exit %d, %s %s", r.code, r.stdout, r.stderr)
	}
	// A world runs on a worker, not beside it in a command.
	r := run(t, nil, "", "--store", pg, "sh", "--manifest", manifest, "-c", "true")
	if r.code != 1 || !strings.Contains(r.stderr, "worlds run on workers") {
		t.Errorf("sh on a PostgreSQL store: exit %d, %s; want it refused", r.code, r.stderr)
	}
	srv.Scrub(t, "stderr", r.stderr)
	// A wrong password says so, without the password.
	bad := strings.Replace(pg, srv.Password(), "wrong-password", 1)
	r = run(t, nil, "", "--store", bad, "journal", "verify")
	if r.code != 1 || !strings.Contains(r.stderr, "password authentication failed") || strings.Contains(r.stderr, "wrong-password") {
		t.Errorf("a wrong password: exit %d, %s", r.code, r.stderr)
	}
	// Read-only commands on a database without a store create nothing.
	empty := pgtest.URL(t)
	r = run(t, nil, "", "--store", empty, "journal", "verify")
	if r.code != 1 || !strings.Contains(r.stderr, "no store") {
		t.Errorf("journal verify of an empty database: exit %d, %s", r.code, r.stderr)
	}
	srv.Scrub(t, "stderr", r.stderr)
}

// trace --follow on a PostgreSQL store polls it: a world imported while it
// waits shows up, as turns.
func TestPostgresFollow(t *testing.T) {
	srv := pgtest.Shared(t)
	pg := pgtest.URL(t)
	demo := filepath.Join("..", "testdata", "sessions", "demo")
	mustRun(t, 0, "", "--store", pg, "cas", "put", filepath.Join(demo, "bundle.json")) // makes the store
	follow := startDemiurge(t, "trace --follow", nil, []string{storeEnv + "="}, "--store", pg, "trace", "--follow")
	follow.expect(true, "world main has no records yet")
	mustRun(t, 0, "", "--store", pg, "import", demo)
	follow.expect(false, `(?m)^turn 1 of chat main, `)
	follow.expect(false, `(?m)^  done: `)
	if err := follow.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := follow.wait(); code != 0 {
		t.Errorf("exit %d after Ctrl-C; want 0", code)
	}
	srv.Scrub(t, "stdout", follow.stdout())
	srv.Scrub(t, "stderr", follow.stderr())
}

// run on a PostgreSQL store with no worker says so, once, instead of
// seeming to hang; a worker started then answers the message.
func TestPostgresRunWithoutWorker(t *testing.T) {
	srv := pgtest.Shared(t)
	pg := pgtest.URL(t)
	demo := filepath.Join("..", "testdata", "sessions", "demo")
	manifest := filepath.Join("..", "examples", "demiurge")
	r := startDemiurge(t, "run", nil, []string{storeEnv + "="}, "--store", pg, "run", manifest,
		"--llm", "cassette:"+demo, "-m", "Write a hello note and show it to me.")
	r.expect(true, `no worker holds world main of .*: the message waits in its inbox until one takes it \(start one: demiurge worker`)
	if w := mustRun(t, 0, "", "--store", pg, "worlds"); !strings.Contains(w.stdout, "\n  no worker holds it") {
		t.Errorf("worlds before a worker started does not say that none holds world main:\n%s", w.stdout)
	}
	startWorker(t, pg, nil, "--llm", "cassette:"+demo)
	r.expect(false, `I wrote notes/hello.md`)
	if w := mustRun(t, 0, "", "--store", pg, "worlds"); !strings.Contains(w.stdout, "\n  on worker ") {
		t.Errorf("worlds does not say which worker holds world main:\n%s", w.stdout)
	}
	if w := mustRun(t, 0, "", "--store", pg, "worlds", "--json"); !regexp.MustCompile(`"world":"main".*"worker":"[^"]+"`).MatchString(w.stdout) {
		t.Errorf("worlds --json does not name the worker that holds world main:\n%s", w.stdout)
	}
	if code := r.wait(); code != 0 {
		t.Errorf("run: exit %d once a worker took the world; want 0\nstderr:\n%s", code, r.stderr())
	}
	if n := strings.Count(r.stderr(), "no worker holds"); n != 1 {
		t.Errorf("run said %d times that no worker holds the world; want once:\n%s", n, r.stderr())
	}
	if !strings.Contains(r.stderr(), "on a PostgreSQL store the workers answer with their own --llm: cassette:") {
		t.Errorf("run does not say that its cassette is not the workers':\n%s", r.stderr())
	}
	srv.Scrub(t, "stdout", r.stdout())
	srv.Scrub(t, "stderr", r.stderr())
}

// At a terminal, run on a PostgreSQL store with no worker says on its
// progress line that it waits for a worker, not for the model; once a
// worker takes the world, the turn goes on.
func TestPostgresRunWithoutWorkerStatus(t *testing.T) {
	pgtest.Shared(t)
	pg := pgtest.URL(t)
	demo, _ := filepath.Abs(filepath.Join("..", "testdata", "sessions", "demo"))
	manifest, _ := filepath.Abs(filepath.Join("..", "examples", "demiurge"))
	tm := startTerminal(t, []string{storeEnv + "=", "TERM=xterm"}, "--store", pg, "run", manifest,
		"--llm", "cassette:"+demo, "-m", "Write a hello note and show it to me.")
	m := tm.expect(0, `waiting for a worker to take world main \(none holds it: start demiurge worker\) [0-9.]+s · Esc or Ctrl-C stops it`)
	startWorker(t, pg, nil, "--llm", "cassette:"+demo)
	tm.expect(m, `I wrote notes/hello.md`)
}

// At a terminal, Esc stops a turn on a PostgreSQL store that no worker
// holds as it does any other: the message and the stop wait in the inbox,
// and run says the turn stopped and exits 130 instead of waiting on.
func TestPostgresRunWithoutWorkerEscape(t *testing.T) {
	pgtest.Shared(t)
	pg := pgtest.URL(t)
	demo, _ := filepath.Abs(filepath.Join("..", "testdata", "sessions", "demo"))
	manifest, _ := filepath.Abs(filepath.Join("..", "examples", "demiurge"))
	tm := startTerminal(t, []string{storeEnv + "=", "TERM=xterm"}, "--store", pg, "run", manifest,
		"--llm", "cassette:"+demo, "-m", "Write a hello note and show it to me.")
	m := tm.expect(0, `waiting for a worker to take world main`)
	if strings.Contains(tm.output(), "waiting for the model") {
		t.Errorf("the progress line said waiting for the model, with no worker:\n%s", tm.output())
	}
	tm.typ("\x1b")
	tm.expect(m, `turn stopped: the user stopped the turn \(interrupted at the terminal \(Esc\)\) before its message was sent: no worker journaled the chat's creation`)
	select {
	case err := <-tm.done:
		var xe *exec.ExitError
		if !errors.As(err, &xe) || xe.ExitCode() != exitInterrupted {
			t.Errorf("run -m exited with %v; want %d\n%s", err, exitInterrupted, tm.output())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("run -m did not exit after Esc:\n%s", tm.output())
	}
}

// Esc on a chat that has turns, while no worker journals the world's
// messages (its worker was killed): the message and then the stop wait in
// the inbox, and run says so and exits 130.
func TestPostgresRunDeadWorkerEscape(t *testing.T) {
	pgtest.Shared(t)
	pg := pgtest.URL(t)
	demo, _ := filepath.Abs(filepath.Join("..", "testdata", "sessions", "demo"))
	manifest, _ := filepath.Abs(filepath.Join("..", "examples", "demiurge"))
	wk := startWorker(t, pg, nil, "--llm", "cassette:"+demo)
	mustRun(t, 0, "", "--store", pg, "run", manifest, "--llm", "cassette:"+demo, "-m", "Write a hello note and show it to me.")
	_ = wk.cmd.Process.Kill()
	_ = wk.cmd.Wait()
	tm := startTerminal(t, []string{storeEnv + "=", "TERM=xterm"}, "--store", pg, "run", manifest,
		"--llm", "cassette:"+demo, "-m", "And another.")
	m := tm.expect(0, `Esc or Ctrl-C stops it`)
	tm.typ("\x1b")
	tm.expect(m, `turn stopped: the user stopped the turn \(interrupted at the terminal \(Esc\)\); no worker journaled the stop within 2s \(none may hold world main\): it waits in the world's inbox`)
	select {
	case err := <-tm.done:
		var xe *exec.ExitError
		if !errors.As(err, &xe) || xe.ExitCode() != exitInterrupted {
			t.Errorf("run -m exited with %v; want %d\n%s", err, exitInterrupted, tm.output())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("run -m did not exit after Esc:\n%s", tm.output())
	}
}
