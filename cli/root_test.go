package cli

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/internal/store"
)

func TestExitCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args       []string
		code       int
		wantStderr string // a substring of stderr
	}{
		{nil, exitOK, ""},
		{[]string{"--help"}, exitOK, ""},
		{[]string{"cas"}, exitOK, ""},
		{[]string{"journal", "--help"}, exitOK, ""},
		{[]string{"bogus"}, exitUsage, `demiurge: unknown command "bogus" for "demiurge"`},
		{[]string{"cas", "bogus"}, exitUsage, `unknown command "bogus" for "demiurge cas"`},
		{[]string{"journal", "bogus"}, exitUsage, `unknown command "bogus" for "demiurge journal"`},
		{[]string{"--nope"}, exitUsage, "unknown flag: --nope"},
		{[]string{"version", "--nope"}, exitUsage, "unknown flag: --nope"},
		{[]string{"version", "x"}, exitUsage, "version takes no arguments"},
		{[]string{"validate"}, exitUsage, "validate takes 1 argument, got 0"},
		{[]string{"cas", "get"}, exitUsage, "Run 'demiurge cas get --help' for usage."},
		{[]string{"cas", "stat", "sha1:00"}, exitUsage, "invalid ref"},
		{[]string{"journal", "dump"}, exitFailure, "no store there"},
		{[]string{"journal", "dump", "--world", "a/b"}, exitUsage, "invalid world name"},
		{[]string{"journal", "dump", "--world", "w", "--from", "x"}, exitUsage, `invalid argument "x" for "--from"`},
		{[]string{"validate", "does-not-exist"}, exitFailure, "demiurge: validate does-not-exist: load AIR"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			r := run(t, nil, "", tc.args...)
			if r.code != tc.code {
				t.Errorf("exit %d; want %d\nstderr:\n%s", r.code, tc.code, r.stderr)
			}
			if !strings.Contains(r.stderr, tc.wantStderr) {
				t.Errorf("stderr %q does not contain %q", r.stderr, tc.wantStderr)
			}
			if tc.code == exitOK && r.stderr != "" {
				t.Errorf("stderr %q; want nothing", r.stderr)
			}
			if tc.code != exitOK {
				if r.stdout != "" {
					t.Errorf("stdout %q; want nothing on failure", r.stdout)
				}
				if !strings.HasPrefix(r.stderr, "demiurge: ") {
					t.Errorf("stderr %q does not start with \"demiurge: \"", r.stderr)
				}
			}
		})
	}
}

func TestHelpDocumentsExitCodes(t *testing.T) {
	t.Parallel()
	r := mustRun(t, exitOK, "", "--help")
	for _, want := range []string{"Exit codes:", "0  ok", "1  failure", "2  usage error", "--store DIR", "DEMIURGE_STORE", "-v, --verbose"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help does not mention %q:\n%s", want, r.stdout)
		}
	}
}

// TestStoreSelection checks the order: --store, then $DEMIURGE_STORE,
// then .demiurge in the current directory.
func TestStoreSelection(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	env := map[string]string{storeEnv: "from-env"}
	if r := run(t, env, "x", "cas", "put"); r.code != exitOK {
		t.Fatalf("cas put: %+v", r)
	}
	if r := run(t, env, "x", "--store", "from-flag", "cas", "put"); r.code != exitOK {
		t.Fatalf("cas put --store: %+v", r)
	}
	if r := run(t, nil, "x", "cas", "put"); r.code != exitOK {
		t.Fatalf("cas put: %+v", r)
	}
	for _, d := range []string{"from-env", "from-flag", defaultStoreDir} {
		if _, err := os.Stat(filepath.Join(dir, d, "demiurge.db")); err != nil {
			t.Errorf("store %s: %v", d, err)
		}
	}
}

// A store URL with a typo in its scheme is refused, not taken as a
// directory: that would make a new store whose path holds the password,
// and show the password in every message that names the store.
func TestStoreURLTypo(t *testing.T) {
	manifest, err := filepath.Abs(filepath.Join("..", "examples", "demiurge"))
	if err != nil {
		t.Fatal(err)
	}
	// run checks its cassette before the store: a real one.
	demo, err := filepath.Abs(filepath.Join("..", "testdata", "sessions", "demo"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	const pw = "Sekr1t"
	for _, u := range []string{
		"postgress://demiurge:" + pw + "@127.0.0.1:5432/demiurge",
		"postgres//demiurge:" + pw + "@127.0.0.1:5432/demiurge",
		"postgres:/demiurge:" + pw + "@127.0.0.1:5432/demiurge",
		"mysql://demiurge:" + pw + "@127.0.0.1:5432/demiurge",
	} {
		for _, args := range [][]string{
			{"cas", "put"},
			{"worlds"},
			{"-v", "journal", "verify"},
			{"trace", "--follow"},
			{"run", manifest, "-m", "hi", "--llm", "cassette:" + demo},
			{"worker", "--llm", "cassette:x"},
		} {
			r := run(t, map[string]string{storeEnv: u}, "x", args...)
			if r.code == exitOK || strings.Contains(r.stdout+r.stderr, pw) ||
				!strings.Contains(r.stderr, "postgres://") {
				t.Errorf("DEMIURGE_STORE=%s demiurge %q: exit %d\nstdout:\n%s\nstderr:\n%s\nwant a failure naming postgres:// URLs, without the password",
					u, args, r.code, r.stdout, r.stderr)
			}
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("a store URL with a typo made %s in the current directory", entries[0].Name())
	}
	for _, tc := range []struct{ in, want string }{
		{"postgres://u:" + pw + "@h/db", "postgres://u:xxxxx@h/db"},
		{"postgress://u:" + pw + "@h/db", "postgress://u:xxxxx@h/db"},
		{"postgres//u:p/w@d@h:1/db", "postgres//u:xxxxx@h:1/db"},
		{"/var/lib/demiurge", "/var/lib/demiurge"},
		{"./a@b", "./a@b"},
	} {
		if got := store.Redact(tc.in); got != tc.want {
			t.Errorf("store.Redact(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func TestVerbose(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "s")
	r := mustRun(t, exitOK, "x", "--store", dir, "-v", "cas", "put")
	if !strings.Contains(r.stderr, `level=DEBUG msg="open store"`) {
		t.Errorf("-v: stderr %q has no debug log", r.stderr)
	}
	r = mustRun(t, exitOK, "x", "--store", dir, "cas", "put")
	if r.stderr != "" {
		t.Errorf("without -v: stderr %q; want nothing", r.stderr)
	}
}

// TestExitCodesDocumented: the root help and the README list every exit
// code run gives, and both say what --approve never does to it.
func TestExitCodesDocumented(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(readme), "`run -m` (and `approve`")
	if i < 0 {
		t.Fatal("the README has no paragraph on run's exit codes")
	}
	para, _, _ := strings.Cut(string(readme)[i:], "\n\n")
	help := newTestRoot().Long
	for _, code := range []int{exitOK, exitFailure, exitGuardStop, exitIncomplete, exitAwaiting, exitInterrupted, exitTerminated} {
		if !strings.Contains(help, fmt.Sprintf("\n  %d  ", code)) {
			t.Errorf("the root help does not list exit code %d", code)
		}
		if !strings.Contains(para, fmt.Sprintf("%d ", code)) {
			t.Errorf("the README's paragraph on run's exit codes does not list %d:\n%s", code, para)
		}
	}
	if !strings.Contains(help, "send exits 6") || !strings.Contains(string(readme), "exits 6 when no worker journaled") || exitQueued != 6 {
		t.Error("the root help or the README does not say when send exits 6")
	}
	for _, want := range []string{"--approve never", "--approve ask", "sh"} {
		if !strings.Contains(help, want) || !strings.Contains(para, want) {
			t.Errorf("the root help or the README's exit codes do not say %q", want)
		}
	}
}

// TestCommandNamed checks which argument names the command a command line
// runs, past the global flags.
func TestCommandNamed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"sh", "-c", "true"}, "sh"},
		{[]string{"-v", "sh"}, "sh"},
		{[]string{"--verbose", "--store", "sh", "trace"}, "trace"},
		{[]string{"--store=x", "workspace", "ls"}, "workspace"},
		{[]string{"--store"}, ""},
		{[]string{"--help"}, ""},
		{[]string{"-vh", "sh"}, ""},
		{[]string{"--", "sh"}, ""},
		{[]string{"help", "sh"}, "help"},
	} {
		if got := commandNamed(tc.args); got != tc.want {
			t.Errorf("commandNamed(%q) = %q; want %q", tc.args, got, tc.want)
		}
	}
}

// TestCommandTreeForArgs checks that the tree built for one command line
// (the root and the command it names) runs every command as the whole
// tree does: the same help, the same usage errors.
func TestCommandTreeForArgs(t *testing.T) {
	getenv := func(string) string { return "" }
	newA := func() (*app, *strings.Builder, *strings.Builder) {
		var out, errb strings.Builder
		return &app{stdio: stdio{in: strings.NewReader(""), out: &out, err: &errb}, log: slog.New(slog.DiscardHandler)}, &out, &errb
	}
	full := newRootCommand(&app{}, getenv)
	var names []string
	for _, c := range full.Commands() {
		if n := c.Name(); n != "completion" && n != "help" {
			names = append(names, n)
		}
	}
	var listed []string
	for _, sc := range subcommands(&app{}, getenv) {
		if n := sc.build().Name(); n != sc.name {
			t.Errorf("subcommand %q builds command %q", sc.name, n)
		}
		listed = append(listed, sc.name)
	}
	slices.Sort(listed)
	if !slices.Equal(names, listed) {
		t.Fatalf("subcommands %q; the whole tree has %q", listed, names)
	}
	exec := func(root *cobra.Command, out, errb *strings.Builder, args []string) string {
		root.SetArgs(args)
		c, err := root.ExecuteC()
		return fmt.Sprintf("command %s\nerror %v\nstdout:\n%s\nstderr:\n%s", c.CommandPath(), err, out, errb)
	}
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, args := range [][]string{append(slices.Clip(path), "--help"), append(slices.Clip(path), "--no-such-flag")} {
			af, outf, errf := newA()
			ap, outp, errp := newA()
			want := exec(newRootCommand(af, getenv), outf, errf, args)
			got := exec(newRootCommandFor(ap, getenv, args), outp, errp, args)
			if got != want {
				t.Errorf("%q: the tree for the command line gives\n%s\nthe whole tree\n%s", args, got, want)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub, append(slices.Clip(path), sub.Name()))
		}
	}
	for _, c := range full.Commands() {
		if c.Name() != "completion" && c.Name() != "help" {
			walk(c, []string{c.Name()})
		}
	}
	if r := newRootCommandFor(&app{}, getenv, []string{"sh", "-c", "true"}); len(r.Commands()) != 1 {
		t.Errorf("the tree for sh has %d commands; want 1", len(r.Commands()))
	}
}
