package bash

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// TestFiles runs the file utilities and the shell's own file handling
// (redirections, globs, cd, test) in a fresh in-memory workspace.
func TestFiles(t *testing.T) {
	t.Parallel()
	st := NewBuilder("files").MustBuild()
	tests := []struct {
		name, script, stdout string
		exit                 int
		stderr               string // a part of stderr
	}{
		{"cwd", "pwd; echo $HOME; cd /tmp && pwd; cd; pwd; cd - >/dev/null; pwd", "/workspace\n/workspace\n/tmp\n/workspace\n/tmp\n", 0, ""},
		{"here-doc to file", "cat > notes.md <<EOF\n# Notes\nline $((1+1))\nEOF\ncat notes.md", "# Notes\nline 2\n", 0, ""},
		{"append", "echo a > f; echo b >> f; printf c >> f; cat f; echo", "a\nb\nc\n", 0, ""},
		{"ls", "touch b a .hidden; mkdir d; ls; echo --; ls -a; echo --; ls -A d; ls -1 -p", "a\nb\nd\n--\n.\n..\n.hidden\na\nb\nd\n--\na\nb\nd/\n", 0, ""},
		{"ls operands", "mkdir -p x/y; touch x/f z; ls z x", "z\n\nx:\nf\ny\n", 0, ""},
		{"ls missing", "ls nope; echo rc=$?", "rc=2\n", 0, "ls: cannot access 'nope': No such file or directory"},
		{"ls -R", "mkdir -p a/b; touch a/f a/b/g; ls -R a", "a:\nb\nf\n\na/b:\ng\n", 0, ""},
		{"ls -t -S -r", "echo 1 > one; echo 333 > three; echo 22 > two; ls -t; ls -S; ls -r", "two\nthree\none\nthree\ntwo\none\ntwo\nthree\none\n", 0, ""},
		{"ls -l", "printf 12345 > f; chmod 755 f; ls -l f | cut -d' ' -f1,5,9", "-rwxr-xr-x 5 f\n", 0, ""},
		{"ls -lh", "head -c 2048 /dev/zero > f; ls -lh f | tr -s ' ' | cut -d' ' -f5", "2.0K\n", 0, ""},
		{"mkdir", "mkdir a; mkdir a; echo rc=$?; mkdir -p a/b/c && echo ok; mkdir x/y; echo rc=$?", "rc=1\nok\nrc=1\n", 0, "mkdir: cannot create directory 'a': File exists"},
		{"rm", "mkdir -p d/e; touch d/e/f g; rm g; rm d; echo rc=$?; rm -r d; ls; rm nope; echo rc=$?; rm -f nope; echo rc=$?", "rc=1\nrc=1\nrc=0\n", 0, "rm: cannot remove 'd': Is a directory"},
		{"rmdir", "mkdir -p a/b; rmdir a; echo rc=$?; rmdir -p a/b; ls", "rc=1\n", 0, "Directory not empty"},
		{"mv", "echo x > a; mv a b; cat b; mkdir d; mv b d; ls d; mv d e; ls; mv nope z; echo rc=$?", "x\nb\ne\nrc=1\n", 0, "mv: cannot stat 'nope'"},
		{"mv many", "touch a b c; mkdir d; mv a b c d; ls d; mv d/a d/b x; echo rc=$?", "a\nb\nc\nrc=1\n", 0, "target 'x' is not a directory"},
		{"cp", "echo x > a; cp a b; echo y >> b; cat a b; mkdir d; cp a b d; ls d; cp d e; echo rc=$?; cp -r d e; ls e; cp -r d e; ls e", "x\nx\ny\na\nb\nrc=1\na\nb\na\nb\nd\n", 0, "omitting directory 'd'"},
		{"touch", "touch a; ls; touch -c b; ls; echo rc=$?", "a\na\nrc=0\n", 0, ""},
		{"find", "mkdir -p src/a; touch src/a/x.go src/y.go src/z.txt; find . -name '*.go'; find src -type d; find src -maxdepth 1 -type f -name '*.txt'", "./src/a/x.go\n./src/y.go\nsrc\nsrc/a\nsrc/z.txt\n", 0, ""},
		{"find exec", "mkdir d; echo 1 > d/a; echo 22 > d/b; find d -type f -exec wc -c {} \\;; find d -type f -exec cat {} +", "2 d/a\n3 d/b\n1\n22\n", 0, ""},
		{"find print0 xargs", "touch 'a b' c; find . -type f -print0 | xargs -0 ls", "./a b\n./c\n", 0, ""},
		{"find ops", "mkdir -p a/b; touch a/x a/b/y a/z.md; find a \\( -name '*.md' -o -name y \\) -print; find a -not -name '*.md' -type f; find a -path '*/b/*'", "a/b/y\na/z.md\na/b/y\na/x\na/b/y\n", 0, ""},
		{"find size empty newer", "printf 12345 > big; touch empty; touch newest; find . -size +2c; find . -empty -type f | sort; find . -newer big -type f", ".\n./big\n./empty\n./newest\n./empty\n./newest\n", 0, ""},
		{"find delete", "mkdir -p t/u; touch t/u/v t/w; find t -name v -delete; find t", "t\nt/u\nt/w\n", 0, ""},
		{"find missing", "find nope; echo rc=$?", "rc=1\n", 0, "find: 'nope': No such file or directory"},
		{"grep -r", "mkdir -p src/sub; echo 'TODO a' > src/a.go; echo 'ok' > src/b.go; echo 'TODO c' > src/sub/c.go; grep -rn TODO src; grep -rl TODO .; grep -r --include='*.go' -c TODO src | sort", "src/a.go:1:TODO a\nsrc/sub/c.go:1:TODO c\n./src/a.go\n./src/sub/c.go\nsrc/a.go:1\nsrc/b.go:0\nsrc/sub/c.go:1\n", 0, ""},
		{"grep files", "printf 'a\\nb\\n' > x; printf 'b\\nc\\n' > y; grep b x y; grep -h b x y; grep -c b x; grep -L a x y; grep b nope x; echo rc=$?", "x:b\ny:b\nb\nb\n1\ny\nx:b\nrc=2\n", 0, "grep: nope: No such file or directory"},
		{"grep context", "seq 1 10 > n; grep -C1 5 n; grep -A1 -e 2 -e 9 n; grep -B2 -n 4 n", "4\n5\n6\n2\n3\n--\n9\n10\n2-2\n3-3\n4:4\n", 0, ""},
		{"sed -i", "printf 'a\\nb\\n' > f; sed -i 's/a/A/' f; cat f; sed -i.bak '1d' f; cat f f.bak", "A\nb\nb\nA\nb\n", 0, ""},
		{"wc files", "printf 'a\\nb\\n' > x; echo c > y; wc -l x y; wc -l < x; cat x | wc -l", "2 x\n1 y\n3 total\n2\n2\n", 0, ""},
		{"head tail files", "seq 3 > a; seq 4 6 > b; head -n1 a b; tail -n1 a", "==> a <==\n1\n\n==> b <==\n4\n3\n", 0, ""},
		{"tee", "echo hi | tee a b > /dev/null; cat a b; echo more | tee -a a; cat a", "hi\nhi\nmore\nhi\nmore\n", 0, ""},
		{"sort -o uniq files", "printf 'b\\na\\nb\\n' > f; sort -o f f; cat f; uniq f g; cat g", "a\nb\nb\na\nb\n", 0, ""},
		{"cat files", "echo 1 > a; echo 2 > b; cat a b; cat a nope b; echo rc=$?; cat - a <<< x", "1\n2\n1\n2\nrc=1\nx\n1\n", 0, "cat: nope: No such file or directory"},
		{"redirect errors", "echo x > d/f; echo rc=$?; mkdir d; cat < d; echo rc=$?; echo x > /; echo rc=$?", "rc=1\nrc=1\nrc=1\n", 0, "bash: line 1: d/f: No such file or directory"},
		{"test", "touch f; mkdir d; [ -f f ] && echo f; [ -d d ] && echo d; [ -e nope ] || echo nope; [ -s f ] || echo empty; echo x > f; [ -s f ] && echo full; [ -r f -a -w f ] && echo rw; [ -w /etc ] || echo ro", "f\nd\nnope\nempty\nfull\nrw\nro\n", 0, ""},
		{"glob", "touch b.txt a.txt c.md; echo *.txt; for f in *.md; do echo $f; done; echo nomatch*", "a.txt b.txt\nc.md\nnomatch*\n", 0, ""},
		{"tmp", "echo x > /tmp/f; cat /tmp/f; t=$(mktemp); echo y > $t; cat $t; d=$(mktemp -d); [ -d $d ] && echo dir", "x\ny\ndir\n", 0, ""},
		{"stat du realpath", "printf 12345 > f; stat -c '%n %s %F' f; mkdir d; cd d; realpath ../f; realpath --relative-to=/workspace/d /tmp; cd ..; du -sb f", "f 5 regular file\n/workspace/f\n../../tmp\n5\tf\n", 0, ""},
		{"basename dirname", "for f in src/a.go /x/y/; do basename $f; dirname $f; done", "a.go\nsrc\ny\n/x\n", 0, ""},
		{"jq file", "echo '{\"a\":1}' > d.json; jq .a d.json", "1\n", 0, ""},
		{"cat shortcut", "echo hi > f; x=$(< f); echo $x; y=$(< nope); echo rc=$?", "hi\nrc=1\n", 0, "bash: line 1: nope: No such file or directory\n"},
		{"chmod", "touch f; chmod +x f; stat -c %a f; chmod go-r f; stat -c %A f; chmod 600 f; stat -c %a f", "755\n-rwx--x--x\n600\n", 0, ""},
		{"devices", "echo x > /dev/null; cat /dev/null; head -c 3 /dev/zero | wc -c; ls /dev", "3\nfd\nnull\nrandom\nstderr\nstdin\nstdout\nurandom\nzero\n", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := run(t, st, tc.script)
			if res.Stdout != tc.stdout || res.ExitCode != tc.exit || !strings.Contains(res.Stderr, tc.stderr) {
				t.Errorf("script %q:\nstdout %q; want %q\nexit %d; want %d\nstderr %q; want it to hold %q", tc.script, res.Stdout, tc.stdout, res.ExitCode, tc.exit, res.Stderr, tc.stderr)
			}
		})
	}
}

// TestFilesOwnFS: a caller's FS carries the script's changes out, and each
// run without one starts empty.
func TestFilesOwnFS(t *testing.T) {
	st := NewBuilder("files").MustBuild()
	fs := vfs.New(vfs.Options{Clock: func() time.Time { return time.Unix(0, 0) }})
	ctx := context.Background()
	res := st.RunScript(ctx, tools.Request{Commands: "mkdir notes; echo hi > notes/a.md; echo tmp > /tmp/x"}, RunOptions{FS: fs})
	if res.ExitCode != 0 {
		t.Fatalf("run: %+v", res.Response)
	}
	if b, err := fs.ReadFile(ctx, "/workspace/notes/a.md"); err != nil || string(b) != "hi\n" {
		t.Errorf("notes/a.md = %q, %v", b, err)
	}
	if !fs.Changed() {
		t.Error("the FS reports no change")
	}
	if res := run(t, st, "ls; ls /tmp"); res.Stdout != "" || res.ExitCode != 0 {
		t.Errorf("a fresh run sees %q (exit %d)", res.Stdout, res.ExitCode)
	}
}

// TestFilesLimits: the file system's limits fail the write that passes
// them, with a message that says which limit.
func TestFilesLimits(t *testing.T) {
	st := NewBuilder("files").Limits(Limits{MaxFileBytes: 100, MaxWriteBytes: 250, MaxFiles: 5}).MustBuild()
	for _, tc := range []struct{ script, stderr string }{
		{"head -c 200 /dev/zero > big; echo rc=$?", "File too large (a file may hold at most 100 bytes)"},
		{"for i in 1 2 3; do head -c 90 /dev/zero > f$i; done; echo rc=$?", "No space left on device (a script may write at most 250 bytes)"},
		{"touch a b c d e f; echo rc=$?", "Too many files (a script may create at most 5 files and directories)"},
	} {
		res := run(t, st, tc.script)
		if !strings.Contains(res.Stderr, tc.stderr) || !strings.Contains(res.Stdout, "rc=1") {
			t.Errorf("%q: stdout %q, stderr %q; want %q", tc.script, res.Stdout, res.Stderr, tc.stderr)
		}
	}
}
