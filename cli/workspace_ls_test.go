package cli

import (
	"strings"
	"testing"
)

func TestWorkspaceLs(t *testing.T) {
	t.Parallel()
	st := wsStore(t, "a.txt", "alpha\n", "src/main.go", "package main\n", "src/util/u.go", "package util\n", "run.sh*", "echo\n")
	requireStoreUnchanged(t, st, func() {
		for _, tc := range []struct {
			name   string
			args   []string
			code   int
			stdout string
			stderr string
		}{
			{"root", nil, exitOK, "file          6 a.txt\nfile          5 run.sh\ndir          26 src/\n", ""},
			{"dir", []string{"src"}, exitOK, "file         13 src/main.go\ndir          13 src/util/\n", ""},
			{"dir cleaned", []string{"./src//util/"}, exitOK, "file         13 src/util/u.go\n", ""},
			{"file", []string{"a.txt"}, exitOK, "file          6 a.txt\n", ""},
			{"recursive", []string{"-r", "src"}, exitOK, "file         13 src/main.go\ndir          13 src/util/\nfile         13 src/util/u.go\n", ""},
			{"json", []string{"--json", "run.sh"}, exitOK, `[{"path":"run.sh","kind":"file","size":5,"mode":"755","hash":"blake3:`, ""},
			{"version 0", []string{"--version", "0"}, exitOK, "", ""},
			{"version 2", []string{"--version", "2"}, exitFailure, "", `workspace ls: workspace "default" of world main has no version 2 (its versions are 1 to 1)`},
			{"missing", []string{"nope"}, exitFailure, "", "workspace ls: workspace list nope: not found"},
			{"escape", []string{"../x"}, exitUsage, "", `path "../x" escapes the workspace`},
			{"absolute", []string{"/etc"}, exitUsage, "", `path "/etc" is absolute`},
			{"other workspace", []string{"--workspace", "other"}, exitFailure, "", `workspace ls: world main has no workspace "other" (its workspaces are default)`},
			{"other world", []string{"--world", "elsewhere"}, exitFailure, "", "workspace ls: world elsewhere has no records in store"},
			{"bad name", []string{"--workspace", "a b"}, exitUsage, "", `--workspace "a b": a workspace name is`},
		} {
			r := run(t, nil, "", append([]string{"--store", st, "workspace", "ls"}, tc.args...)...)
			if r.code != tc.code || !strings.HasPrefix(r.stdout, tc.stdout) || (tc.stdout == "") != (r.stdout == "") || !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("%s: exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.name, r.code, r.stdout, r.stderr, tc.code, tc.stdout, tc.stderr)
			}
		}
	})
}

// TestWorkspaceLsEscapes: names holding control characters (an OSC 52
// clipboard write, a newline that would forge a line) are listed escaped,
// as run and trace show such text; --json has them as they are.
func TestWorkspaceLsEscapes(t *testing.T) {
	t.Parallel()
	st := wsStore(t, "clip\x1b]52;c;aGk=\x07.txt", "x", "two\nfile          9 forged", "y", "tab\there", "z")
	r := mustRun(t, exitOK, "", "--store", st, "workspace", "ls")
	want := "file          1 clip\\x1b]52;c;aGk=\\x07.txt\nfile          1 tab\\there\nfile          1 two\\nfile          9 forged\n"
	if r.stdout != want {
		t.Errorf("workspace ls printed\n%q\nwant\n%q", r.stdout, want)
	}
	r = mustRun(t, exitOK, "", "--store", st, "workspace", "ls", "--json")
	if !strings.Contains(r.stdout, `"path":"clip\u001b]52;c;aGk=\u0007.txt"`) {
		t.Errorf("workspace ls --json printed %s", r.stdout)
	}
}

func TestWorkspaceLsNoWorkspaces(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	mustRun(t, exitOK, "", "--store", st, "send", "--manifest", "../examples/counter", "--schema", "counter/Event@1", "--value", `"Tick"`)
	r := mustRun(t, exitFailure, "", "--store", st, "workspace", "ls")
	if !strings.Contains(r.stderr, `world main has no workspace "default" (it has no workspaces)`) {
		t.Errorf("stderr %q", r.stderr)
	}
}

func TestWorkspaceCat(t *testing.T) {
	t.Parallel()
	st := wsStore(t, "a.txt", "alpha\n", "bin/blob", "\x00\xff raw", "empty", "")
	requireStoreUnchanged(t, st, func() {
		for _, tc := range []struct {
			name   string
			args   []string
			code   int
			stdout string
			stderr string
		}{
			{"file", []string{"a.txt"}, exitOK, "alpha\n", ""},
			{"binary", []string{"bin/blob"}, exitOK, "\x00\xff raw", ""},
			{"empty", []string{"empty"}, exitOK, "", ""},
			{"version 1", []string{"--version", "1", "./a.txt"}, exitOK, "alpha\n", ""},
			{"dir", []string{"bin"}, exitFailure, "", `workspace cat: workspace read bin: is a directory (workspace "default", version 1; demiurge workspace ls -r lists its files)`},
			{"missing", []string{"b.txt"}, exitFailure, "", `workspace cat: workspace read b.txt: not found (workspace "default", version 1; demiurge workspace ls -r lists its files)`},
			{"missing at a version", []string{"--version", "1", "--workspace", "default", "b.txt"}, exitFailure, "", `workspace cat: workspace read b.txt: not found (workspace "default", version 1; demiurge workspace ls -r --workspace default --version 1 lists its files)`},
			{"root", []string{"."}, exitFailure, "", "is a directory"},
			{"escape", []string{"../../etc/passwd"}, exitUsage, "", "escapes the workspace"},
			{"no path", nil, exitUsage, "", "takes 1 argument"},
		} {
			r := run(t, nil, "", append([]string{"--store", st, "workspace", "cat"}, tc.args...)...)
			if r.code != tc.code || r.stdout != tc.stdout || !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("%s: exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.name, r.code, r.stdout, r.stderr, tc.code, tc.stdout, tc.stderr)
			}
		}
	})
}
