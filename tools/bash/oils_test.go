package bash

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/bash/internal/coreutils"
	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// The Oils spec tests (github.com/oils-for-unix/oils, spec/*.test.sh) as a
// yardstick of the sandbox's shell: TestOilsSpec runs every case in real
// bash and in the sandbox and compares stdout and exit status. The cases
// are not copied here: DEMIURGE_OILS_SPEC names the folder that holds
// them (cases/*.test.sh; .ci/run sets it).
//
// A case that differs must be listed in testdata/oils/known-differences.txt
// with its category and reason; one that differs and is not listed fails
// the test, and one that is listed and now matches is reported. A case
// whose bash output changes from run to run (its two runs differ, or it
// is listed as bash-varies) is counted apart, not as a match or a
// difference.
//
// The cases call helpers that Oils' runner puts on PATH (argv.py prints
// its arguments as a Python 2 list, printenv.py, stdout_stderr.py, ...).
// They are written here in Go (oilsHelpers): for real bash, the test
// binary itself is linked under each helper's name into a bin directory
// on PATH (TestMain runs the helper when called by that name); in the
// sandbox they are commands of the Tool (Tool.extra).

// oilsHelpers are Go versions of the Oils spec helpers in spec/bin.
var oilsHelpers = map[string]func(args []string, getenv func(string) string, stdout, stderr io.Writer) int{
	"argv.py": func(args []string, _ func(string) string, stdout, _ io.Writer) int {
		io.WriteString(stdout, pyList(args)+"\n")
		return 0
	},
	"printenv.py": func(args []string, getenv func(string) string, stdout, _ io.Writer) int {
		for _, name := range args {
			if v, ok := lookupEnv(getenv, name); ok {
				io.WriteString(stdout, v+"\n")
			} else {
				io.WriteString(stdout, "None\n")
			}
		}
		return 0
	},
	"stdout_stderr.py": func(args []string, _ func(string) string, stdout, stderr io.Writer) int {
		out, errOut, status := "STDOUT", "STDERR", 0
		if len(args) > 0 {
			out = args[0]
		}
		if len(args) > 1 {
			errOut = args[1]
		}
		if len(args) > 2 {
			n, err := strconv.Atoi(args[2])
			if err != nil {
				io.WriteString(stderr, "ValueError: invalid literal for int()\n")
				return 1
			}
			status = n
		}
		// Python buffers stdout to a pipe and not stderr: stderr comes first
		io.WriteString(stderr, errOut+"\n")
		io.WriteString(stdout, out+"\n")
		return status
	},
	"foo=bar": func(_ []string, _ func(string) string, stdout, _ io.Writer) int {
		io.WriteString(stdout, "HI\n")
		return 0
	},
}

// lookupEnv distinguishes an unset variable from an empty one: getenv
// returns "\x00unset" for an unset one.
func lookupEnv(getenv func(string) string, name string) (string, bool) {
	v := getenv(name)
	if v == "\x00unset" {
		return "", false
	}
	return v, true
}

// pyList is Python 2's repr of a list of byte strings.
func pyList(args []string) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = pyRepr(a)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// pyRepr is Python 2's repr of a byte string.
func pyRepr(s string) string {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	var b strings.Builder
	b.WriteByte(quote)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == quote || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < ' ' || c >= 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte(quote)
	return b.String()
}

// runOilsHelper runs the test binary as one of the Oils helpers when it
// was called by a helper's name (see TestMain); ok is false otherwise.
func runOilsHelper() (status int, ok bool) {
	fn, ok := oilsHelpers[filepath.Base(os.Args[0])]
	if !ok {
		return 0, false
	}
	getenv := func(name string) string {
		if v, ok := os.LookupEnv(name); ok {
			return v
		}
		return "\x00unset"
	}
	out := bufio.NewWriter(os.Stdout)
	status = fn(os.Args[1:], getenv, out, os.Stderr)
	out.Flush()
	return status, true
}

// oilsCase is one case of an Oils spec file.
type oilsCase struct {
	file  string // "alias.test.sh"
	n     int    // 1-based index in the file
	title string
	code  string
}

func (c oilsCase) id() string { return fmt.Sprintf("%s#%d", c.file, c.n) }

// parseOilsFile splits a spec file into cases: each starts at a
// "#### title" line; its code is the lines up to its first "## " line.
func parseOilsFile(name, text string) []oilsCase {
	var out []oilsCase
	var cur *oilsCase
	inCode := false
	for _, line := range strings.SplitAfter(text, "\n") {
		if title, ok := strings.CutPrefix(line, "#### "); ok {
			out = append(out, oilsCase{file: name, n: len(out) + 1, title: strings.TrimSpace(title)})
			cur = &out[len(out)-1]
			inCode = true
			continue
		}
		if cur == nil || !inCode {
			continue
		}
		if strings.HasPrefix(line, "## ") {
			inCode = false
			continue
		}
		cur.code += line
	}
	return out
}

// oilsKnown is one entry of testdata/oils/known-differences.txt.
type oilsKnown struct {
	category, reason string
}

// oilsCategories are the categories a known difference may have.
var oilsCategories = map[string]string{
	"needs-os":    "needs a real operating system: signals to other processes, ulimit, job control, /proc, terminals",
	"sandbox":     "the sandbox differs by design: no host files, users, processes or interpreters",
	"bash-varies": "real bash gives different output from run to run",
	"bash-bug":    "bash's own bug (the case marks bash's output BUG): the sandbox gives what the case expects",
	"helper":      "an Oils helper the sandbox cannot provide (it reads file descriptors of a real process)",
	"utility":     "a difference of a sandbox utility, not of the shell",
	"shell":       "a difference of the sandbox's shell not yet fixed",
}

func loadOilsKnown(t *testing.T) map[string]oilsKnown {
	t.Helper()
	known := map[string]oilsKnown{}
	for id, f := range loadKnownList(t, filepath.Join("testdata", "oils", "known-differences.txt"),
		[]string{"ID", "category", "reason"}, oilsCategories) {
		known[id] = oilsKnown{category: f[0], reason: f[1]}
	}
	return known
}

// loadKnownList reads a list of known differences, a line per entry:
// fields (the first an ID, the second a category of categories)
// separated by tabs, the last one free text; "#" lines are comments. It
// returns the fields after the ID by ID.
func loadKnownList(t *testing.T, path string, fields []string, categories map[string]string) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(path)
	known := map[string][]string{}
	for i, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.SplitN(line, "\t", len(fields))
		if len(f) != len(fields) {
			t.Fatalf("%s:%d: want %s", name, i+1, strings.Join(fields, "<TAB>"))
		}
		if _, ok := categories[f[1]]; !ok {
			t.Fatalf("%s:%d: unknown category %q", name, i+1, f[1])
		}
		if _, dup := known[f[0]]; dup {
			t.Fatalf("%s:%d: %s listed twice", name, i+1, f[0])
		}
		known[f[0]] = f[1:]
	}
	return known
}

// oilsOutcome is what one run of a case printed and returned.
type oilsOutcome struct {
	stdout, stderr string
	status         int
	took           time.Duration
}

// hostBashAndHelpers finds the host's bash (skipping the test without
// one) and makes a folder where the test binary is linked under each of
// the helpers' names (TestMain runs the helper when called by one).
func hostBashAndHelpers(t *testing.T, helpers []string) (bash, bin string) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin = t.TempDir()
	for _, name := range helpers {
		if err := os.Symlink(self, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	return bash, bin
}

// oilsRunner runs cases in real bash and in the sandbox.
type oilsRunner struct {
	bash string // path of bash
	bin  string // the helpers' directory
	tool *Tool
}

func newOilsRunner(t *testing.T) *oilsRunner {
	bash, bin := hostBashAndHelpers(t, slices.Collect(maps.Keys(oilsHelpers)))
	b := NewBuilder("oils").Env("SH", "bash").Env("TMP", vfs.TmpDir).Env("REPO_ROOT", vfs.WorkspaceDir).
		Env("LC_ALL", "C.UTF-8").Limits(Limits{Timeout: 10 * time.Second})
	tool := b.MustBuild()
	tool.extra = map[string]coreutils.Func{}
	for name, fn := range oilsHelpers {
		tool.extra[name] = func(_ context.Context, env *coreutils.Env, args []string) int {
			getenv := func(n string) string {
				for _, kv := range env.Environ() {
					if k, v, _ := strings.Cut(kv, "="); k == n {
						return v
					}
				}
				return "\x00unset"
			}
			return fn(args, getenv, env.Stdout, env.Stderr)
		}
	}
	return &oilsRunner{bash: bash, bin: bin, tool: tool}
}

// inBash runs code with bash -c in a fresh directory; paths of that
// directory in stdout are written as the sandbox's (/workspace, /tmp).
func (r *oilsRunner) inBash(code string) oilsOutcome {
	root, err := os.MkdirTemp("", "oils-case-")
	if err != nil {
		return oilsOutcome{stderr: err.Error(), status: -1}
	}
	defer os.RemoveAll(root)
	ws, tmp := filepath.Join(root, "workspace"), filepath.Join(root, "tmp")
	os.Mkdir(ws, 0o755)
	os.Mkdir(tmp, 0o755)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.bash, "-c", code)
	cmd.Args[0] = "bash" // $0, as in the sandbox
	cmd.Dir = ws
	cmd.Env = []string{"PATH=" + r.bin + ":/usr/bin:/bin", "SH=bash", "TMP=" + tmp, "REPO_ROOT=" + ws,
		"HOME=" + ws, "LC_ALL=C.UTF-8", "TZ=UTC"}
	cmd.Stdin = strings.NewReader("")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.WaitDelay = time.Second
	o := oilsOutcome{}
	o.status, err = runHost(ctx, cmd)
	o.stderr = errOut.String()
	if err != nil {
		o.stderr = err.Error()
	}
	s := out.String()
	s = strings.ReplaceAll(s, ws, vfs.WorkspaceDir)
	s = strings.ReplaceAll(s, tmp, vfs.TmpDir)
	s = strings.ReplaceAll(s, r.bash, "bash")
	o.stdout = s
	return o
}

// inSandbox runs code in the sandbox, in a fresh file system.
func (r *oilsRunner) inSandbox(code string) oilsOutcome {
	start := time.Now()
	res := r.tool.RunScript(context.Background(), tools.Request{Commands: code}, RunOptions{})
	return oilsOutcome{stdout: res.Stdout, stderr: res.Stderr, status: res.ExitCode, took: time.Since(start)}
}

// runHost runs a command of the host and returns its status as bash
// reports one: 124 when ctx ended it, 128+N when signal N killed it; err
// is set, with status -1, only when it could not be run.
func runHost(ctx context.Context, cmd *exec.Cmd) (status int, err error) {
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return 124, nil
	case errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil:
		// bash ended; a process it left kept the output open
		return cmd.ProcessState.ExitCode(), nil
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	case err != nil:
		return -1, err
	}
	return 0, nil
}

// oilsResult is the comparison of one case.
type oilsResult struct {
	c         oilsCase
	bash, sbx oilsOutcome
	same      bool
	varies    bool // bash's own two runs differ
}

// TestOilsSpec compares the sandbox with bash on the Oils spec cases.
// DEMIURGE_OILS_SPEC names the oils-spec folder; DEMIURGE_OILS_FILES
// (optional, comma-separated file names) restricts the run;
// DEMIURGE_OILS_REPORT, if set, is a file the per-case results are
// written to (ID, same/differs, the two outcomes), for study.
func TestOilsSpec(t *testing.T) {
	dir := os.Getenv("DEMIURGE_OILS_SPEC")
	if dir == "" {
		t.Skip("DEMIURGE_OILS_SPEC is not set (a directory of the Oils spec tests; .ci/run sets it)")
	}
	files, err := filepath.Glob(filepath.Join(dir, "cases", "*.test.sh"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases in %s/cases (%v)", dir, err)
	}
	if only := os.Getenv("DEMIURGE_OILS_FILES"); only != "" {
		want := strings.Split(only, ",")
		files = slices.DeleteFunc(files, func(f string) bool { return !slices.Contains(want, filepath.Base(f)) })
	}
	var cases []oilsCase
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, parseOilsFile(filepath.Base(f), string(data))...)
	}
	known := loadOilsKnown(t)
	r := newOilsRunner(t)

	results := make([]oilsResult, len(cases))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))
	for i, c := range cases {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			res := oilsResult{c: c, bash: r.inBash(c.code), sbx: r.inSandbox(c.code)}
			res.same = res.bash.stdout == res.sbx.stdout && res.bash.status == res.sbx.status
			if !res.same {
				again := r.inBash(c.code)
				res.varies = again.stdout != res.bash.stdout || again.status != res.bash.status
			}
			results[i] = res
		})
	}
	wg.Wait()

	type tally struct{ cases, same, varies int }
	perFile := map[string]*tally{}
	byCategory := map[string]int{}
	total := tally{}
	var report strings.Builder
	for _, res := range results {
		tl := perFile[res.c.file]
		if tl == nil {
			tl = &tally{}
			perFile[res.c.file] = tl
		}
		k, isKnown := known[res.c.id()]
		// a case listed as bash-varies is counted apart whatever this run
		// gave: bash's output is no reference, and the count must not
		// change with bash's timing (builtin-kill#16 and #17 race)
		varies := res.varies && !res.same || isKnown && k.category == "bash-varies"
		switch {
		case varies:
			tl.varies++
			total.varies++
		default:
			tl.cases++
			total.cases++
			if res.same {
				tl.same++
				total.same++
				if isKnown && k.category != "bash-varies" {
					t.Logf("%s (%s) now matches bash: remove it from known-differences.txt", res.c.id(), res.c.title)
				}
			} else {
				byCategory[k.category]++
				if !isKnown {
					t.Errorf("%s (%s) differs from bash:\n--- code\n%s--- bash: status %d\n%s--- sandbox: status %d\n%s--- sandbox stderr\n%s",
						res.c.id(), res.c.title, res.c.code, res.bash.status, res.bash.stdout, res.sbx.status, res.sbx.stdout, res.sbx.stderr)
				}
			}
		}
		if res.sbx.took > time.Second {
			t.Logf("%s took %v in the sandbox", res.c.id(), res.sbx.took)
		}
		verdict := "same"
		switch {
		case varies:
			verdict = "varies"
		case !res.same:
			verdict = "differs"
		}
		fmt.Fprintf(&report, "=== %s\t%s\t%s\n", res.c.id(), verdict, res.c.title)
		if !res.same {
			fmt.Fprintf(&report, "--- code\n%s--- bash: status %d\n%s--- bash stderr\n%s--- sandbox: status %d\n%s--- sandbox stderr\n%s",
				res.c.code, res.bash.status, res.bash.stdout, res.bash.stderr, res.sbx.status, res.sbx.stdout, res.sbx.stderr)
		}
	}
	names := make([]string, 0, len(perFile))
	for n := range perFile {
		names = append(names, n)
	}
	sort.Strings(names)
	var summary strings.Builder
	for _, n := range names {
		tl := perFile[n]
		fmt.Fprintf(&summary, "%-36s %4d/%-4d", n, tl.same, tl.cases)
		if tl.varies > 0 {
			fmt.Fprintf(&summary, " (%d where bash varies)", tl.varies)
		}
		summary.WriteString("\n")
	}
	cats := make([]string, 0, len(byCategory))
	for c := range byCategory {
		cats = append(cats, c)
	}
	sort.Strings(cats)
	for _, c := range cats {
		name := c
		if name == "" {
			name = "(not listed)"
		}
		fmt.Fprintf(&summary, "differences %-14s %d\n", name, byCategory[c])
	}
	rate := 100 * float64(total.same) / float64(max(total.cases, 1))
	fmt.Fprintf(&summary, "oils spec: %d cases where bash is the reference (%d more where bash varies), %d match (%.1f%%)\n",
		total.cases, total.varies, total.same, rate)
	t.Log("\n" + summary.String())
	if p := os.Getenv("DEMIURGE_OILS_REPORT"); p != "" {
		if err := os.WriteFile(p, []byte(summary.String()+report.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// TestOilsKnownDifferences checks the list's format and categories
// (without running anything).
func TestOilsKnownDifferences(t *testing.T) {
	loadOilsKnown(t)
}

func TestPyRepr(t *testing.T) {
	for in, want := range map[string]string{
		``:       `''`,
		`a b`:    `'a b'`,
		`it's`:   `"it's"`,
		`'"`:     `'\'"'`,
		"a\tb\n": `'a\tb\n'`,
		`\`:      `'\\'`,
		"μ":      `'\xce\xbc'`,
		"\x01":   `'\x01'`,
	} {
		if got := pyRepr(in); got != want {
			t.Errorf("pyRepr(%q) = %s; want %s", in, got, want)
		}
	}
}

// TestMain runs the test binary as an Oils helper or a bash tests helper
// when it is called by a helper's name (see oilsHelpers, bashTestHelpers),
// and the tests otherwise.
func TestMain(m *testing.M) {
	if status, ok := runOilsHelper(); ok {
		os.Exit(status)
	}
	if status, ok := runBashTestHelper(); ok {
		os.Exit(status)
	}
	os.Exit(m.Run())
}
