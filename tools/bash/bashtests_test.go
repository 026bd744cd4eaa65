package bash

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
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

// GNU bash's own tests (github.com/bminor/bash, tests/) as a second
// yardstick of the sandbox's shell, beside the Oils spec (oils_test.go).
// Each tests/NAME.tests is a whole script; TestBashTests runs it as
// `bash ./NAME.tests 2>&1` in a copy of the tests folder, once with the
// host's bash (5.2) and once in the sandbox (the folder copied into its
// /workspace), and compares the two outputs. The reference is the host's
// bash, not NAME.right: the .right files are written for bash's
// development version, which differs from 5.2 in dozens of places; how
// far the sandbox is from NAME.right is reported beside it.
//
// The suite is GNU bash's, not ours: nothing of it is committed. To run
// it, bring the repository and extract tests/ outside this one, then name
// that folder in DEMIURGE_BASH_TESTS:
//
//	git clone --depth 1 https://github.com/bminor/bash /tmp/bash-src
//	cd tools/bash && DEMIURGE_BASH_TESTS=/tmp/bash-src/tests go test -run 'TestBashTests$' .
//
// DEMIURGE_BASH_TESTS_FILES (comma-separated NAME.tests) restricts the
// run; DEMIURGE_BASH_TESTS_REPORT names a file the per-script outputs and
// diffs are written to. .ci/run does not run it (the suite is not kept in
// the shared folder CI reads).
//
// A whole script rarely matches to the byte (one differing error message
// is enough), so the list testdata/bashtests/known-differences.txt gives,
// for each script that differs, its category, the lines of bash's output
// the sandbox reproduced (a floor: the test fails if fewer match now, and
// reports when more do) and the reasons. A script that differs and is not
// listed fails the test.
//
// The scripts call small C helpers that bash's Makefile builds (recho,
// zecho, xcase); bashTestHelpers are Go versions, linked under their
// names into a bin folder on PATH for the host's bash (TestMain) and
// commands of the Tool in the sandbox. printenv is the host's and the
// sandbox's own.

// bashTestHelpers are Go versions of bash's tests/support helpers.
var bashTestHelpers = map[string]func(args []string, stdin io.Reader, stdout, stderr io.Writer) int{
	// recho prints each argument as argv[N] = <arg>, control characters as ^X.
	"recho": func(args []string, _ io.Reader, stdout, _ io.Writer) int {
		var b strings.Builder
		for i, a := range args {
			fmt.Fprintf(&b, "argv[%d] = <", i+1)
			for j := 0; j < len(a); j++ {
				switch c := a[j]; {
				case c < ' ':
					b.WriteByte('^')
					b.WriteByte(c + 64)
				case c == 127:
					b.WriteString("^?")
				default:
					b.WriteByte(c)
				}
			}
			b.WriteString(">\n")
		}
		io.WriteString(stdout, b.String())
		return 0
	},
	// zecho prints its arguments separated by spaces, uninterpreted.
	"zecho": func(args []string, _ io.Reader, stdout, _ io.Writer) int {
		io.WriteString(stdout, strings.Join(args, " ")+"\n")
		return 0
	},
	// xcase copies its input (or file operand), -u upper-cased, -l lower-cased.
	"xcase": func(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
		op := byte(0)
		for len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' {
			for _, c := range args[0][1:] {
				switch c {
				case 'u', 'l':
					op = byte(c)
				case 'n':
				default:
					io.WriteString(stderr, "casemod: usage: casemod [-lnu] [file]\n")
					return 2
				}
			}
			args = args[1:]
		}
		if len(args) > 0 && args[0] != "-" {
			io.WriteString(stderr, "xcase: file operands are not supported here\n")
			return 1
		}
		data, _ := io.ReadAll(stdin)
		for i, c := range data {
			switch {
			case op == 'u' && c >= 'a' && c <= 'z':
				data[i] = c - 32
			case op == 'l' && c >= 'A' && c <= 'Z':
				data[i] = c + 32
			}
		}
		stdout.Write(data)
		return 0
	},
}

// runBashTestHelper runs the test binary as one of bashTestHelpers when it
// was called by a helper's name (see TestMain); ok is false otherwise.
func runBashTestHelper() (status int, ok bool) {
	fn, ok := bashTestHelpers[filepath.Base(os.Args[0])]
	if !ok {
		return 0, false
	}
	out := bufio.NewWriter(os.Stdout)
	status = fn(os.Args[1:], os.Stdin, out, os.Stderr)
	out.Flush()
	return status, true
}

// bashTestCategories are the categories a known difference may have.
var bashTestCategories = map[string]string{
	"needs-os":    "needs a real operating system: signals, job control, ulimit, /dev and /proc, terminals, other processes",
	"sandbox":     "the sandbox differs by design: no host files, users, interpreters, history or line editing",
	"bash-varies": "real bash gives different output from run to run",
	"shell":       "differences of the sandbox's shell not yet fixed",
}

// bashTestKnown is one entry of testdata/bashtests/known-differences.txt.
type bashTestKnown struct {
	category string
	floor    int // lines of bash's output the sandbox reproduced when listed
	reason   string
}

func loadBashTestKnown(t *testing.T) map[string]bashTestKnown {
	t.Helper()
	known := map[string]bashTestKnown{}
	for id, f := range loadKnownList(t, filepath.Join("testdata", "bashtests", "known-differences.txt"),
		[]string{"NAME.tests", "category", "matched-lines", "reasons"}, bashTestCategories) {
		floor, err := strconv.Atoi(f[1])
		if err != nil || floor < 0 {
			t.Fatalf("known-differences.txt: %s: matched-lines %q is not a count", id, f[1])
		}
		known[id] = bashTestKnown{category: f[0], floor: floor, reason: f[2]}
	}
	return known
}

// bashTestRunner runs the scripts in the host's bash and in the sandbox.
type bashTestRunner struct {
	dir   string            // the suite's tests folder
	files map[string][]byte // its files by name, copied into each run
	bash  string
	bin   string // the helpers' folder
	tool  *Tool
}

func newBashTestRunner(t *testing.T, dir string) *bashTestRunner {
	bash, bin := hostBashAndHelpers(t, slices.Collect(maps.Keys(bashTestHelpers)))
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	lim := Limits{Timeout: 20 * time.Second, MaxCommands: 1_000_000, MaxScriptBytes: 1 << 20,
		MaxStdoutBytes: 4 << 20, MaxStderrBytes: 4 << 20, MaxLoopIterations: 1_000_000}
	tool := NewBuilder("bashtests").Env("LC_ALL", "C").Env("TZ", "UTC").
		Limits(lim).MustBuild()
	tool.extra = map[string]coreutils.Func{}
	for name, fn := range bashTestHelpers {
		tool.extra[name] = func(_ context.Context, env *coreutils.Env, args []string) int {
			return fn(args, env.Stdin, env.Stdout, env.Stderr)
		}
	}
	return &bashTestRunner{dir: dir, files: files, bash: bash, bin: bin, tool: tool}
}

// bashTestScript is what both shells run in the copied tests folder.
func bashTestScript(name string) string {
	return "THIS_SH=bash; export THIS_SH; : ${TMPDIR:=/tmp}; export TMPDIR\nbash ./" + name + " 2>&1\n"
}

// inBash runs a script in a fresh copy of the tests folder; paths of the
// copy in its output are written as the sandbox's.
func (r *bashTestRunner) inBash(name string) (string, int) {
	root, err := os.MkdirTemp("", "bash-tests-")
	if err != nil {
		return err.Error(), -1
	}
	defer os.RemoveAll(root)
	ws, tmp := filepath.Join(root, "workspace"), filepath.Join(root, "tmp")
	os.Mkdir(tmp, 0o755)
	for rel, data := range r.files {
		p := filepath.Join(ws, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o755); err != nil {
			return err.Error(), -1
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.bash, "-c", bashTestScript(name))
	cmd.Args[0] = "bash"
	cmd.Dir = ws
	// bash's own directory goes on PATH as "bash", as in the sandbox
	cmd.Env = []string{"PATH=" + r.bin + ":" + filepath.Dir(r.bash) + ":/usr/bin:/bin", "TMPDIR=" + tmp,
		"HOME=" + ws, "LC_ALL=C", "TZ=UTC"}
	cmd.Stdin = strings.NewReader("")
	// bash 5.2 loops printing in one script written for a later bash:
	// what it prints past a bound is dropped
	out := &boundedBuffer{max: 4 << 20}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second
	// coproc.tests and jobs.tests leave processes behind: bash runs in
	// a process group of its own, ended whole when bash returns
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	status, err := runHost(ctx, cmd)
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		return err.Error(), -1
	}
	s := strings.ReplaceAll(out.String(), ws, vfs.WorkspaceDir)
	s = strings.ReplaceAll(s, tmp, vfs.TmpDir)
	s = strings.ReplaceAll(s, r.bash, "bash")
	return s, status
}

// boundedBuffer keeps the first max bytes written to it and drops the
// rest. (It does not embed bytes.Buffer: io.Copy would use its ReadFrom
// and read without bound.)
type boundedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	room := max(b.max-b.buf.Len(), 0)
	b.buf.Write(p[:min(room, len(p))])
	return len(p), nil
}

func (b *boundedBuffer) String() string { return b.buf.String() }

// inSandbox runs a script in the sandbox with the tests folder copied
// into /workspace.
func (r *bashTestRunner) inSandbox(name string) (string, int, error) {
	fsys := vfs.New(vfs.Options{Limits: vfs.Limits{MaxFiles: 10_000, MaxFileBytes: 16 << 20, MaxWriteBytes: 1 << 30}})
	ctx := context.Background()
	for rel, data := range r.files {
		p := vfs.WorkspaceDir + "/" + rel
		if err := fsys.Mkdir(ctx, filepath.Dir(p), 0o755, true); err != nil {
			return "", 0, err
		}
		if err := fsys.WriteFile(ctx, p, data, 0o755); err != nil {
			return "", 0, err
		}
	}
	res := r.tool.RunScript(ctx, tools.Request{Commands: bashTestScript(name)}, RunOptions{FS: fsys})
	return res.Stdout + res.Stderr, res.ExitCode, nil
}

// matchedLines is the length of the longest common subsequence of the two
// outputs' lines: how many of bash's lines the sandbox reproduced, in order.
func matchedLines(want, got []string) int {
	prev := make([]int32, len(got)+1)
	cur := make([]int32, len(got)+1)
	for i := range want {
		for j := range got {
			switch {
			case want[i] == got[j]:
				cur[j+1] = prev[j] + 1
			case prev[j+1] >= cur[j]:
				cur[j+1] = prev[j+1]
			default:
				cur[j+1] = cur[j]
			}
		}
		prev, cur = cur, prev
	}
	return int(prev[len(got)])
}

func outputLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// bashTestResult is the comparison of one script.
type bashTestResult struct {
	name                string
	bash, sbx, right    string
	bashStatus, sbxStat int
	matched, lines      int // of bash's lines, the sandbox's in order
	rightMatched        int // of the .right file's lines
	rightLines          int
	varies              bool
	err                 error
}

// TestBashTests compares the sandbox with the host's bash on GNU bash's
// own test scripts (see the comment at the top of this file).
func TestBashTests(t *testing.T) {
	dir := os.Getenv("DEMIURGE_BASH_TESTS")
	if dir == "" {
		t.Skip("DEMIURGE_BASH_TESTS is not set (the tests folder of github.com/bminor/bash; see bashtests_test.go)")
	}
	scripts, err := filepath.Glob(filepath.Join(dir, "*.tests"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no *.tests in %s (%v)", dir, err)
	}
	if only := os.Getenv("DEMIURGE_BASH_TESTS_FILES"); only != "" {
		want := strings.Split(only, ",")
		scripts = slices.DeleteFunc(scripts, func(f string) bool { return !slices.Contains(want, filepath.Base(f)) })
	}
	known := loadBashTestKnown(t)
	r := newBashTestRunner(t, dir)

	results := make([]bashTestResult, len(scripts))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))
	for i, path := range scripts {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			name := filepath.Base(path)
			res := bashTestResult{name: name}
			res.bash, res.bashStatus = r.inBash(name)
			res.sbx, res.sbxStat, res.err = r.inSandbox(name)
			if res.bash != res.sbx || res.bashStatus != res.sbxStat {
				again, st := r.inBash(name)
				res.varies = again != res.bash || st != res.bashStatus
			}
			b, s := outputLines(res.bash), outputLines(res.sbx)
			res.lines, res.matched = len(b), matchedLines(b, s)
			if right, err := os.ReadFile(strings.TrimSuffix(path, ".tests") + ".right"); err == nil {
				rl := outputLines(string(right))
				res.right, res.rightLines, res.rightMatched = string(right), len(rl), matchedLines(rl, s)
			}
			results[i] = res
		})
	}
	wg.Wait()

	var same, sameRight, lines, matched, rightLines, rightMatched, varies int
	var summary, report strings.Builder
	for _, res := range results {
		if res.err != nil {
			t.Errorf("%s: %v", res.name, res.err)
			continue
		}
		isSame := res.bash == res.sbx && res.bashStatus == res.sbxStat
		k, isKnown := known[res.name]
		rightLines += res.rightLines
		rightMatched += res.rightMatched
		if res.right != "" && res.right == res.sbx {
			sameRight++
		}
		verdict := "same"
		switch {
		case res.varies && !isSame:
			verdict = "varies"
			varies++
		case isSame:
			same++
			if isKnown && k.category != "bash-varies" {
				t.Logf("%s now matches bash: remove it from known-differences.txt", res.name)
			}
		default:
			verdict = "differs"
			switch {
			case !isKnown:
				t.Errorf("%s differs from bash (%d of %d lines match, status %d vs %d) and is not in known-differences.txt",
					res.name, res.matched, res.lines, res.bashStatus, res.sbxStat)
			case res.matched < k.floor:
				t.Errorf("%s: %d of bash's %d lines match, fewer than the %d listed in known-differences.txt",
					res.name, res.matched, res.lines, k.floor)
			case res.matched > k.floor:
				t.Logf("%s: %d of bash's %d lines match, more than the %d listed: raise it in known-differences.txt",
					res.name, res.matched, res.lines, k.floor)
			}
		}
		if verdict != "varies" {
			lines += res.lines
			matched += res.matched
		}
		fmt.Fprintf(&summary, "%-28s %-7s %4d/%-4d lines of bash's", res.name, verdict, res.matched, res.lines)
		if res.rightLines > 0 {
			fmt.Fprintf(&summary, "  %4d/%-4d of .right", res.rightMatched, res.rightLines)
		}
		summary.WriteString("\n")
		fmt.Fprintf(&report, "=== %s\t%s\t%d/%d\tstatus bash %d sandbox %d\n", res.name, verdict, res.matched, res.lines, res.bashStatus, res.sbxStat)
		if !isSame {
			report.WriteString(lineDiff(outputLines(res.bash), outputLines(res.sbx)))
		}
	}
	n := len(results) - varies
	fmt.Fprintf(&summary, "bash tests: %d scripts where bash is the reference (%d more where bash varies), %d match to the byte (%.1f%%); %d of bash's %d lines reproduced (%.1f%%)\n",
		n, varies, same, 100*float64(same)/float64(max(n, 1)), matched, lines, 100*float64(matched)/float64(max(lines, 1)))
	fmt.Fprintf(&summary, "against the .right files (bash's development version): %d scripts match, %d of %d lines (%.1f%%)\n",
		sameRight, rightMatched, rightLines, 100*float64(rightMatched)/float64(max(rightLines, 1)))
	t.Log("\n" + summary.String())
	if p := os.Getenv("DEMIURGE_BASH_TESTS_REPORT"); p != "" {
		if err := os.WriteFile(p, []byte(summary.String()+report.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// lineDiff is a minimal unified-style diff of two line lists ("-" bash's
// lines the sandbox lacks, "+" the sandbox's that bash lacks), for study.
func lineDiff(want, got []string) string {
	n, m := len(want), len(got)
	if n*m > 4_000_000 {
		return fmt.Sprintf("(too long to diff: %d lines against %d)\n", n, m)
	}
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			switch {
			case want[i] == got[j]:
				lcs[i][j] = lcs[i+1][j+1] + 1
			case lcs[i+1][j] >= lcs[i][j+1]:
				lcs[i][j] = lcs[i+1][j]
			default:
				lcs[i][j] = lcs[i][j+1]
			}
		}
	}
	var b strings.Builder
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && want[i] == got[j]:
			i, j = i+1, j+1
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			fmt.Fprintf(&b, "+%s\n", got[j])
			j++
		default:
			fmt.Fprintf(&b, "-%s\n", want[i])
			i++
		}
	}
	return b.String()
}

// TestBashTestKnownDifferences checks the list's format and categories
// (without running anything).
func TestBashTestKnownDifferences(t *testing.T) {
	loadBashTestKnown(t)
}

func TestMatchedLines(t *testing.T) {
	for _, tc := range []struct {
		want, got string
		n         int
	}{
		{"a\nb\nc", "a\nb\nc", 3},
		{"a\nb\nc", "a\nc", 2},
		{"a\nb\nc", "x\ny", 0},
		{"a\nb\nc\nd", "b\nx\nd\na", 2},
		{"", "a", 0},
	} {
		if got := matchedLines(outputLines(tc.want), outputLines(tc.got)); got != tc.n {
			t.Errorf("matchedLines(%q, %q) = %d; want %d", tc.want, tc.got, got, tc.n)
		}
	}
}
