package bash

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// corpusKnownDiffs are the corpus scripts whose stdout or exit status
// differ from bash's, with the reason. A script that starts to match is
// reported (remove it from here); one that differs and is not here fails
// the test.
var corpusKnownDiffs = map[string]string{
	"jq-build-json":      "an object the filter builds is printed with its keys sorted (gojq keeps no order); jq keeps the order of the filter's text",
	"json-keys-unsorted": "gojq keeps no key order, so keys_unsorted is keys (sorted)",
	"trap-function":      "mktemp's names are random in bash, drawn from a counter in the sandbox",
	"json-error":         "jq 1.6 exits 4 on a parse error (jq 1.7 and the sandbox exit 2)",
}

// corpusScript is one script of testdata/corpus/scripts.txt.
type corpusScript struct {
	name, script string
}

func loadCorpus(t *testing.T) []corpusScript {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "corpus", "scripts.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out []corpusScript
	var cur *corpusScript
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if name, ok := strings.CutPrefix(line, "### "); ok {
			out = append(out, corpusScript{name: strings.TrimSpace(name)})
			cur = &out[len(out)-1]
			continue
		}
		if cur != nil {
			cur.script += line
		}
	}
	seen := map[string]bool{}
	for _, s := range out {
		if seen[s.name] {
			t.Fatalf("corpus script %s appears twice", s.name)
		}
		seen[s.name] = true
	}
	return out
}

// corpusFS is a fresh in-memory file system holding the fixture files.
func corpusFS(t *testing.T, files map[string][]byte) *vfs.FS {
	fsys := vfs.New(vfs.Options{})
	ctx := context.Background()
	for p, data := range files {
		abs := vfs.Abs(vfs.WorkspaceDir, p)
		if err := fsys.Mkdir(ctx, filepath.Dir(abs), 0, true); err != nil {
			t.Fatal(err)
		}
		if err := fsys.WriteFile(ctx, abs, data, 0); err != nil {
			t.Fatal(err)
		}
	}
	return fsys
}

// TestCorpus runs the corpus of model-style scripts in the sandbox and in
// /bin/bash (with GNU coreutils, gawk, jq and bc) in a directory holding
// the same files, and compares stdout and exit status: at least 97% must
// match, and every script that does not must be a known difference.
func TestCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("runs bash for every script")
	}
	bash, err := exec.LookPath("/bin/bash")
	if err != nil {
		t.Skip("/bin/bash is not installed")
	}
	for _, tool := range []string{"gawk", "jq", "bc", "diff", "od", "column"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed on the host: the corpus compares with the real tools", tool)
		}
	}
	// bash's awk is gawk, whatever /usr/bin/awk points to.
	bin := t.TempDir()
	gawk, _ := exec.LookPath("gawk")
	if err := os.Symlink(gawk, filepath.Join(bin, "awk")); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	root := filepath.Join("testdata", "corpus", "files")
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	scripts := loadCorpus(t)
	st := NewBuilder("corpus").MustBuild()

	type outcome struct {
		stdout string
		exit   int
		err    string
	}
	bashRun := func(script string) outcome {
		dir := t.TempDir()
		for p, data := range files {
			full := filepath.Join(dir, filepath.FromSlash(p))
			os.MkdirAll(filepath.Dir(full), 0o755)
			if err := os.WriteFile(full, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bash, "--norc", "--noprofile", "-c", script)
		cmd.Args[0] = "bash" // $0, as the sandbox's
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin", "LC_ALL=C.UTF-8", "HOME=" + dir, "TZ=UTC", "TMPDIR=/tmp"}
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		o := outcome{stdout: out.String(), err: errOut.String()}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			o.exit = ee.ExitCode()
		} else if err != nil {
			o.exit = -1
			o.err = err.Error()
		}
		return o
	}
	sandboxRun := func(script string) outcome {
		res := st.RunScript(context.Background(), tools.Request{Commands: script}, RunOptions{FS: corpusFS(t, files)})
		return outcome{stdout: res.Stdout, exit: res.ExitCode, err: res.Stderr}
	}

	type result struct {
		name      string
		want, got outcome
		same      bool
	}
	results := make([]result, len(scripts))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, s := range scripts {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			want := bashRun(s.script)
			got := sandboxRun(s.script)
			results[i] = result{name: s.name, want: want, got: got, same: want.stdout == got.stdout && want.exit == got.exit}
		})
	}
	wg.Wait()
	matched := 0
	for _, r := range results {
		_, known := corpusKnownDiffs[r.name]
		switch {
		case r.same:
			matched++
			if known {
				t.Logf("%s now matches bash: remove it from corpusKnownDiffs", r.name)
			}
		case !known:
			t.Errorf("%s differs from bash:\nbash:    exit %d, stdout %q (stderr %q)\nsandbox: exit %d, stdout %q (stderr %q)",
				r.name, r.want.exit, r.want.stdout, r.want.err, r.got.exit, r.got.stdout, r.got.err)
		}
	}
	rate := 100 * float64(matched) / float64(len(results))
	t.Logf("corpus: %d scripts, %d match bash (%.1f%%), %d known differences", len(results), matched, rate, len(results)-matched)
	if len(results) < 300 {
		t.Errorf("the corpus has %d scripts; want at least 300", len(results))
	}
	if rate < 97 {
		t.Errorf("%.1f%% of the corpus matches bash; want at least 97%%", rate)
	}
}

// TestCorpusKnownDiffsExist: every known difference names a script.
func TestCorpusKnownDiffsExist(t *testing.T) {
	names := map[string]bool{}
	for _, s := range loadCorpus(t) {
		names[s.name] = true
	}
	for n := range corpusKnownDiffs {
		if !names[n] {
			t.Errorf("corpusKnownDiffs names %s, which is not in the corpus", n)
		}
	}
	_ = fmt.Sprint
}
