package cli

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"mvdan.cc/sh/v3/shell"

	"github.com/demiurge-dev/demiurge/internal/pgtest"
)

// TestReadmePrivatePostgres runs the README's recipe for a private
// PostgreSQL server in a directory as a user that is not root (nobody,
// when the tests run as root, as pgtest does; PostgreSQL refuses root),
// with Debian's binaries: initdb, pg_ctl start, createdb, each exiting 0,
// and then demiurge uses the database. The recipe is read from the
// README; only what a person types at prompts (the password) and the port
// (a free one, not 5432) are given here.
func TestReadmePrivatePostgres(t *testing.T) {
	bin, err := pgtest.Binaries()
	if err != nil {
		pgtest.Unavailable(t, err)
	}
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "a private one in a directory")
	if !ok {
		t.Fatal("the README has no private server recipe")
	}
	_, rest, _ = strings.Cut(rest, "```sh\n")
	block, _, _ := strings.Cut(rest, "```")
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			t.Skipf("running as root, and no user nobody to run PostgreSQL as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	dir, err := os.MkdirTemp("", "demiurge-readme-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	const password = "readme-secret"
	pwfile := filepath.Join(dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(password+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	env := append(os.Environ(), "PGPASSWORD="+password, "PGPORT="+port, "HOME="+dir)
	runAs := func(args ...string) {
		t.Helper()
		name := args[0]
		if _, err := os.Stat(filepath.Join(bin, name)); err == nil {
			name = filepath.Join(bin, name)
		}
		cmd := exec.Command(name, args[1:]...)
		cmd.Dir, cmd.Env = dir, env
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		if out, err := cmd.CombinedOutput(); err != nil {
			log, _ := os.ReadFile(filepath.Join(dir, "pgdata", "log"))
			t.Fatalf("%q: %v\n%s\nthe server's log:\n%s", args, err, out, log)
		}
	}
	started := false
	t.Cleanup(func() {
		if started {
			runAs("pg_ctl", "-D", "pgdata", "-m", "fast", "stop")
		}
	})
	n := 0
	for line := range strings.Lines(block) {
		line, _, _ = strings.Cut(line, "#") // the comment
		args, err := shell.Fields(line, func(string) string { return "" })
		if err != nil {
			t.Fatalf("README: %q: %v", line, err)
		}
		if len(args) == 0 {
			continue
		}
		for i, a := range args {
			switch {
			case a == "--pwprompt": // what a person types twice
				args[i] = "--pwfile=" + pwfile
			case strings.Contains(a, "-p 5432"):
				args[i] = strings.Replace(a, "-p 5432", "-p "+port, 1)
			}
		}
		runAs(args...)
		started = started || (args[0] == "pg_ctl" && args[len(args)-1] == "start")
		n++
	}
	if n != 3 || !started {
		t.Fatalf("the README's recipe ran %d commands and started no server: %q", n, block)
	}
	url := fmt.Sprintf("postgres://demiurge:%s@127.0.0.1:%s/demiurge", password, port)
	if r := run(t, nil, "", "--store", url, "cas", "put", pwfile); r.code != exitOK || !strings.HasPrefix(r.stdout, "blake3:") {
		t.Errorf("demiurge cas put on the README's server: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
