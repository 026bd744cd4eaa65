// Package pgtest starts private PostgreSQL servers for tests: a cluster in
// a temporary directory, listening on 127.0.0.1 on a free port, run from
// the server binaries of Debian's postgresql package (initdb, postgres),
// stopped and removed when the tests end.
//
// PostgreSQL refuses to run as root: when the tests run as root, the
// server runs as the user nobody (its directory is chowned to it).
//
// A test package shares one server, started on first use:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
//	func TestX(t *testing.T) {
//		url := pgtest.URL(t) // a fresh, empty schema of the shared server
//		…
//	}
//
// Without the server binaries, URL and Shared skip the test saying what
// to install; with DEMIURGE_REQUIRE_POSTGRES=1 in the environment (CI
// sets it) they fail it instead.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// RequireEnv names the environment variable that turns a skip for missing
// PostgreSQL binaries into a failure when set to 1.
const RequireEnv = "DEMIURGE_REQUIRE_POSTGRES"

// BinEnv names the environment variable that gives the directory of the
// server binaries (initdb, postgres), instead of looking for them on PATH
// and under /usr/lib/postgresql.
const BinEnv = "DEMIURGE_POSTGRES_BIN"

// ErrNoBinaries is returned (wrapped) by Start when the server binaries
// are not installed.
var ErrNoBinaries = errors.New("pgtest: PostgreSQL server binaries (initdb, postgres) not found; install Debian's postgresql package (apt-get install postgresql)")

// User is the superuser of a test server.
const User = "demiurge"

// Options configure Start. The zero value means the defaults.
type Options struct {
	// NoFsync runs the server with fsync=off: faster, and nothing
	// survives a crash of the machine (a crash of the server is
	// survived). Benchmarks of durable commits leave it false.
	NoFsync bool
	// Settings are more server settings, "name=value" each.
	Settings []string
}

// Server is a running PostgreSQL server in a temporary directory.
type Server struct {
	dir      string // the temporary directory: data/, sock/, log
	port     int
	password string
	bin      string
	opts     Options
	cred     *syscall.Credential // nil: run as ourselves

	mu  sync.Mutex
	cmd *exec.Cmd // the running postmaster; nil when stopped
	// exited is closed when cmd's process has exited (see watch).
	exited chan struct{}

	next atomic.Int64 // names fresh schemas and databases
}

// Start initializes a cluster in a new temporary directory and starts
// it. The caller must call Close.
func Start(opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "demiurge-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s := &Server{dir: dir, bin: bin, opts: o}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(dir)
		}
	}()
	pw := make([]byte, 12)
	_, _ = rand.Read(pw)
	s.password = hex.EncodeToString(pw)
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			return nil, fmt.Errorf("pgtest: running as root, and PostgreSQL will not: no user nobody to run it as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	for _, d := range []string{"sock"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("pgtest: %w", err)
		}
	}
	pwfile := filepath.Join(dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(s.password+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	if err := s.chown(dir); err != nil {
		return nil, err
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"), "-U", User,
		"--auth=scram-sha-256", "--pwfile="+pwfile, "-E", "UTF8", "--no-locale", "-N")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	_ = os.Remove(pwfile)
	if s.port, err = freePort(); err != nil {
		return nil, err
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

// findBinaries returns the directory of initdb and postgres: the one on
// PATH, else the newest under /usr/lib/postgresql.
// Binaries returns the directory of the server binaries (initdb, pg_ctl,
// postgres) that Start runs, or an error wrapping ErrNoBinaries.
func Binaries() (string, error) { return findBinaries() }

func findBinaries() (string, error) {
	if dir := os.Getenv(BinEnv); dir != "" {
		for _, b := range []string{"initdb", "postgres"} {
			if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
				return "", fmt.Errorf("%w (in %s=%s)", ErrNoBinaries, BinEnv, dir)
			}
		}
		return dir, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if real, err := filepath.EvalSymlinks(p); err == nil {
			dir = filepath.Dir(real)
		}
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
				return d, nil
			}
		}
	}
	return "", ErrNoBinaries
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// chown gives dir and everything in it to the server's user.
func (s *Server) chown(dir string) error {
	if s.cred == nil {
		return nil
	}
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
		return nil
	})
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start starts the server again after Stop or Crash, on the same port
// with the same data, and waits until it accepts connections.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("pgtest: server already running")
	}
	fsync := "on"
	if s.opts.NoFsync {
		fsync = "off"
	}
	args := []string{"-D", filepath.Join(s.dir, "data"), "-p", strconv.Itoa(s.port), "-k", filepath.Join(s.dir, "sock"),
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=" + fsync, "-c", "max_connections=300",
		"-c", "shared_buffers=128MB", "-c", "log_min_messages=warning", "-c", "logging_collector=off"}
	for _, kv := range s.opts.Settings {
		args = append(args, "-c", kv)
	}
	log, err := os.OpenFile(filepath.Join(s.dir, "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer log.Close()
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), args...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	s.cmd = cmd
	s.exited = make(chan struct{})
	exited := s.exited
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, s.URL("postgres"))
		if err == nil {
			_ = conn.Close(ctx)
			return nil
		}
		select {
		case <-exited:
			s.cmd = nil
			return fmt.Errorf("pgtest: postgres exited at start: %v\n%s", err, s.tailLog())
		case <-ctx.Done():
			return fmt.Errorf("pgtest: postgres does not accept connections after 60s: %v\n%s", err, s.tailLog())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (s *Server) tailLog() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Stop shuts the server down (fast shutdown: open transactions are rolled
// back, the data is flushed) and waits for it to exit.
func (s *Server) Stop() error { return s.signal(syscall.SIGINT) }

// Crash stops the server at once, as a crash would (immediate shutdown:
// no flush, the next start recovers from the WAL), and waits for it to
// exit.
func (s *Server) Crash() error { return s.signal(syscall.SIGQUIT) }

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	_ = s.cmd.Process.Signal(sig)
	select {
	case <-s.exited:
	case <-time.After(60 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
	return nil
}

// Close stops the server and removes its directory.
func (s *Server) Close() error {
	err := s.Stop()
	if rerr := os.RemoveAll(s.dir); err == nil {
		err = rerr
	}
	return err
}

// Pid returns the process id of the server's postmaster, 0 when stopped.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// CPU returns the CPU time (user and system) the server's processes used
// so far, from /proc: the postmaster and its children alive now.
func (s *Server) CPU() time.Duration {
	pid := s.Pid()
	if pid == 0 {
		return 0
	}
	var ticks int64
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime(14) stime(15)
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		if n != pid && ppid != pid {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + st
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// Port returns the server's TCP port on 127.0.0.1.
func (s *Server) Port() int { return s.port }

// Password returns the superuser's password, which tests check never
// shows in messages.
func (s *Server) Password() string { return s.password }

// URL returns the URL of database db as the superuser, with its password.
func (s *Server) URL(db string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(User, s.password), Host: fmt.Sprintf("127.0.0.1:%d", s.port), Path: "/" + db}
	q := url.Values{"sslmode": {"disable"}}
	u.RawQuery = q.Encode()
	return u.String()
}

// NewSchema creates a new, empty schema in database postgres and returns
// the URL of a connection that works in it (search_path), so that each
// test has a store of its own in one database.
func (s *Server) NewSchema(ctx context.Context) (string, error) {
	name := fmt.Sprintf("t%d", s.next.Add(1))
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return "", fmt.Errorf("pgtest: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		return "", fmt.Errorf("pgtest: create schema %s: %w", name, err)
	}
	return s.URL("postgres") + "&search_path=" + name, nil
}

// NewDatabase creates a new, empty database and returns its URL.
func (s *Server) NewDatabase(ctx context.Context) (string, error) {
	name := fmt.Sprintf("db%d", s.next.Add(1))
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return "", fmt.Errorf("pgtest: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("pgtest: create database %s: %w", name, err)
	}
	return s.URL(name), nil
}

// The server a test package shares (see Main and Shared).
var (
	sharedOnce sync.Once
	shared     *Server
	sharedErr  error
)

// Main runs the tests of m and stops the shared server, if a test started
// it. Call it from TestMain: os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int { return Wrap(m).Run() }

// Runner is what TestMain runs: a *testing.M, or what Wrap returns.
type Runner interface{ Run() int }

// Wrap returns m whose Run also stops the shared server at the end, for
// a TestMain that hands m to another runner (testscript.Main).
func Wrap(m Runner) Runner { return wrapped{m} }

type wrapped struct{ m Runner }

func (w wrapped) Run() int {
	code := w.m.Run()
	if shared != nil {
		if err := shared.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: stop the server: %v\n", err)
		}
	}
	return code
}

// Shared returns the server the test package shares, starting it on
// first use (Main stops it). Without PostgreSQL binaries it skips t, or
// fails it if DEMIURGE_REQUIRE_POSTGRES=1.
func Shared(t testing.TB) *Server {
	t.Helper()
	sharedOnce.Do(func() { shared, sharedErr = Start(nil) })
	if sharedErr != nil {
		Unavailable(t, sharedErr)
	}
	return shared
}

// Unavailable skips t because err says a server could not be started, or
// fails it when PostgreSQL is required (DEMIURGE_REQUIRE_POSTGRES=1) or
// the binaries are there but the server would not start.
func Unavailable(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrNoBinaries) && os.Getenv(RequireEnv) != "1" {
		t.Skip(err.Error())
	}
	t.Fatalf("%v (%s=%s)", err, RequireEnv, os.Getenv(RequireEnv))
}

// URL returns the URL of a new, empty schema of the shared server for t.
func URL(t testing.TB) string {
	t.Helper()
	s := Shared(t)
	u, err := s.NewSchema(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Redacted returns u with its password replaced by "xxxxx", for messages.
func Redacted(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "postgres://…"
	}
	return p.Redacted()
}

// Scrub reports an error on t if text shows the server's password.
func (s *Server) Scrub(t testing.TB, what, text string) {
	t.Helper()
	if strings.Contains(text, s.password) {
		t.Errorf("%s shows the store's password: %s", what, strings.ReplaceAll(text, s.password, "<PASSWORD>"))
	}
}
