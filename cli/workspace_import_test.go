package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// wsManifest is the test world's AIR: sys/Workspace@1 and the route of
// sys/WorkspaceCommit@1 to it.
var wsManifest = filepath.Join("testdata", "workspace")

// writeTree creates files (path → contents) under dir; a path ending in
// "/" is an empty directory, contents "->TARGET" a symbolic link, a path
// ending in "*" an executable file.
func writeTree(t *testing.T, dir string, files ...string) {
	t.Helper()
	for i := 0; i < len(files); i += 2 {
		p, c := files[i], files[i+1]
		full := filepath.Join(dir, strings.TrimSuffix(p, "*"))
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(c, "->"); ok {
			if err := os.Symlink(target, full); err != nil {
				t.Fatal(err)
			}
			continue
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(p, "*") {
			mode = 0o755
		}
		if err := os.WriteFile(full, []byte(c), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// wsStore imports a directory of files into a new store and returns the
// store's directory.
func wsStore(t *testing.T, files ...string) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src")
	writeTree(t, src, files...)
	st := filepath.Join(t.TempDir(), "store")
	mustRun(t, exitOK, "", "--store", st, "workspace", "import", "--manifest", wsManifest, src)
	return st
}

func TestWorkspaceImport(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	src := filepath.Join(base, "src")
	writeTree(t, src,
		"a.txt", "alpha\n",
		"bin/run.sh*", "#!/bin/sh\n",
		"empty/", "",
		"docs/readme.md", "# hi\n",
		"docs/link.md", "->readme.md",
		"docs/dirlink", "->../bin",
		"dangling", "->nowhere",
		`back\slash`, "x",
	)
	if err := syscall.Mkfifo(filepath.Join(src, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	st := filepath.Join(base, "store")
	r := mustRun(t, exitOK, "", "--store", st, "workspace", "import", "--manifest", wsManifest, src)
	if !strings.HasPrefix(r.stdout, "imported "+src+" into workspace default of world main as version 1: 4 files, 3 directories, 26 bytes (root blake3:") {
		t.Errorf("stdout %q", r.stdout)
	}
	for _, want := range []string{
		`skipped back\slash: path "back\\slash" holds a NUL or backslash`,
		"skipped dangling: a symbolic link to nowhere that does not resolve",
		"skipped docs/dirlink: a symbolic link to the directory bin (links to directories are not followed)",
		"skipped fifo: not a regular file, directory or link (p---------)",
	} {
		if !strings.Contains(r.stderr, "demiurge: warning: workspace import: "+want+"\n") {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if n := strings.Count(r.stderr, "skipped"); n != 4 {
		t.Errorf("%d skipped; want 4:\n%s", n, r.stderr)
	}
	ls := mustRun(t, exitOK, "", "--store", st, "workspace", "ls", "-r")
	want := "file          6 a.txt\n" +
		"dir          10 bin/\n" +
		"file         10 bin/run.sh\n" +
		"dir          10 docs/\n" +
		"file          5 docs/link.md\n" +
		"file          5 docs/readme.md\n" +
		"dir           0 empty/\n"
	if ls.stdout != want {
		t.Errorf("ls -r:\n%s\nwant:\n%s", ls.stdout, want)
	}

	// The same directory again: nothing to record.
	r = mustRun(t, exitOK, "", "--store", st, "workspace", "import", "--manifest", wsManifest, src)
	if r.stdout != "nothing to import: "+src+" matches version 1 of workspace default of world main\n" {
		t.Errorf("reimport: %q", r.stdout)
	}
	// A change makes version 2, into another workspace version 1.
	writeTree(t, src, "a.txt", "ALPHA\n")
	mustRun(t, exitOK, "", "--store", st, "workspace", "import", "--manifest", wsManifest, src)
	mustRun(t, exitOK, "", "--store", st, "workspace", "import", "--manifest", wsManifest, "--workspace", "other", "--owner", "me", src)
	st2 := mustRun(t, exitOK, "", "--store", st, "state", "--reducer", "sys/Workspace@1", "--json")
	if strings.Count(st2.stdout, "\n") != 1 || strings.Count(st2.stdout, `"reducer":`) != 2 || !strings.Contains(st2.stdout, `"key":"default","state_ref":`) || !strings.Contains(st2.stdout, `"latest":2`) || !strings.Contains(st2.stdout, `"owner":"me"`) {
		t.Errorf("state:\n%s", st2.stdout)
	}
	cat := mustRun(t, exitOK, "", "--store", st, "workspace", "cat", "--version", "1", "a.txt")
	if cat.stdout != "alpha\n" {
		t.Errorf("cat version 1: %q", cat.stdout)
	}

	// A link out of the directory is refused, and nothing is recorded.
	writeTree(t, src, "escape", "->"+filepath.Join(base, "store"))
	r = mustRun(t, exitFailure, "", "--store", st, "workspace", "import", "--manifest", wsManifest, src)
	if !strings.Contains(r.stderr, "escape is a symbolic link to "+filepath.Join(base, "store")+", outside "+src+": remove the link") || !strings.Contains(r.stderr, "nothing was recorded") {
		t.Errorf("link out: %q", r.stderr)
	}
	if st3 := mustRun(t, exitOK, "", "--store", st, "state", "--reducer", "sys/Workspace@1", "--key", "default", "--json"); !strings.Contains(st3.stdout, `"latest":2`) {
		t.Errorf("after the refused import: %s", st3.stdout)
	}
}

func TestWorkspaceImportStoreInside(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	writeTree(t, src, "f", "x", "link", "->.demiurge/demiurge.db")
	r := mustRun(t, exitOK, "", "--store", filepath.Join(src, ".demiurge"), "workspace", "import", "--manifest", wsManifest, src)
	if !strings.Contains(r.stderr, "skipped .demiurge: it is the demiurge store") || !strings.Contains(r.stderr, "skipped link: a symbolic link into the demiurge store") {
		t.Errorf("stderr %q", r.stderr)
	}
	if !strings.Contains(r.stdout, ": 1 file, 0 directories, 1 byte") {
		t.Errorf("stdout %q", r.stdout)
	}
}

func TestWorkspaceImportErrors(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	writeTree(t, src, "f", "x")
	file := filepath.Join(src, "f")
	noRoute := filepath.Join(t.TempDir(), "noroute")
	writeTree(t, noRoute, "manifest.air.json", `{"$kind": "manifest", "air_version": "1", "schemas": [], "modules": [{"name": "sys/Workspace@1"}], "plans": [], "effects": [], "caps": [], "policies": [], "routing": {"events": [], "inboxes": []}, "triggers": []}`)
	badKey := filepath.Join(t.TempDir(), "badkey")
	writeTree(t, badKey, "manifest.air.json", `{"$kind": "manifest", "air_version": "1", "schemas": [], "modules": [{"name": "sys/Workspace@1"}], "plans": [], "effects": [], "caps": [], "policies": [], "routing": {"events": [{"event": "sys/WorkspaceCommit@1", "reducer": "sys/Workspace@1", "key_field": "meta.owner"}], "inboxes": []}, "triggers": []}`)
	for _, tc := range []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"bad key field", []string{"--manifest", badKey, src}, exitFailure, `the route of sys/WorkspaceCommit@1 to sys/Workspace@1 has key_field "meta.owner"; it must be "workspace"`},
		{"no manifest", []string{src}, exitUsage, "--manifest is required"},
		{"no dir", []string{"--manifest", wsManifest, filepath.Join(src, "nope")}, exitFailure, "no such file or directory"},
		{"a file", []string{"--manifest", wsManifest, file}, exitFailure, "is not a directory"},
		{"no route", []string{"--manifest", noRoute, src}, exitFailure, `the manifest does not route sys/WorkspaceCommit@1 to sys/Workspace@1; add {"event": "sys/WorkspaceCommit@1", "reducer": "sys/Workspace@1", "key_field": "workspace"} to routing.events`},
		{"bad workspace", []string{"--manifest", wsManifest, "--workspace", "a/b", src}, exitUsage, `--workspace "a/b": a workspace name is 1 to 255 characters`},
		{"two dirs", []string{"--manifest", wsManifest, src, src}, exitUsage, "takes 1 argument"},
	} {
		st := filepath.Join(t.TempDir(), "store")
		r := run(t, nil, "", append([]string{"--store", st, "workspace", "import"}, tc.args...)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.err) {
			t.Errorf("%s: exit %d, stderr %q; want %d, %q", tc.name, r.code, r.stderr, tc.code, tc.err)
		}
		if _, err := os.Stat(st); err == nil {
			t.Errorf("%s: the store was created", tc.name)
		}
	}
}
