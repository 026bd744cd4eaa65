package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readTree lists a host directory as "path mode contents" lines, links as
// "path -> target".
func readTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			b.WriteString(rel + " -> " + target + "\n")
		case info.IsDir():
			b.WriteString(rel + "/ " + info.Mode().Perm().String() + "\n")
		default:
			data, _ := os.ReadFile(p)
			b.WriteString(rel + " " + info.Mode().Perm().String() + " " + string(data) + "\n")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWorkspaceExport(t *testing.T) {
	t.Parallel()
	st := wsStore(t, "a.txt", "alpha\n", "bin/run.sh*", "#!/bin/sh\n", "empty/", "", "d/e/f", "deep", "zero", "")
	requireStoreUnchanged(t, st, func() {
		out := filepath.Join(t.TempDir(), "out", "new")
		r := mustRun(t, exitOK, "", "--store", st, "workspace", "export", out)
		if r.stdout != "exported workspace default version 1 of world main to "+out+": 4 files, 4 directories, 20 bytes\n" {
			t.Errorf("stdout %q", r.stdout)
		}
		want := "a.txt -rw-r--r-- alpha\n\n" +
			"bin/ -rwxr-xr-x\nbin/run.sh -rwxr-xr-x #!/bin/sh\n\n" +
			"d/ -rwxr-xr-x\nd/e/ -rwxr-xr-x\nd/e/f -rw-r--r-- deep\n" +
			"empty/ -rwxr-xr-x\n" +
			"zero -rw-r--r-- \n"
		if got := readTree(t, out); got != want {
			t.Errorf("exported:\n%s\nwant:\n%s", got, want)
		}

		// Into a directory with some of the files: refused, nothing written.
		dst := t.TempDir()
		writeTree(t, dst, "a.txt", "mine\n", "d/e/f", "mine too", "keep.txt", "untouched")
		r = mustRun(t, exitFailure, "", "--store", st, "workspace", "export", dst)
		if !strings.Contains(r.stderr, "nothing written: 2 paths in "+dst+": a.txt exists; d/e/f exists (--force overwrites existing files; remove the others)") {
			t.Errorf("stderr %q", r.stderr)
		}
		if got := readTree(t, dst); got != "a.txt -rw-r--r-- mine\n\nd/ -rwxr-xr-x\nd/e/ -rwxr-xr-x\nd/e/f -rw-r--r-- mine too\nkeep.txt -rw-r--r-- untouched\n" {
			t.Errorf("after the refused export:\n%s", got)
		}
		// --force overwrites files and leaves the others alone.
		mustRun(t, exitOK, "", "--store", st, "workspace", "export", "--force", dst)
		if got := readTree(t, dst); !strings.Contains(got, "a.txt -rw-r--r-- alpha\n") || !strings.Contains(got, "d/e/f -rw-r--r-- deep\n") || !strings.Contains(got, "keep.txt -rw-r--r-- untouched\n") {
			t.Errorf("after --force:\n%s", got)
		}

		// Links and wrong kinds are refused even with --force; nothing is
		// written outside the directory.
		outside := t.TempDir()
		trap := t.TempDir()
		writeTree(t, trap, "bin", "->"+outside, "a.txt", "->"+filepath.Join(outside, "a.txt"), "empty", "a file")
		r = mustRun(t, exitFailure, "", "--store", st, "workspace", "export", "--force", trap)
		for _, want := range []string{"a.txt is a symbolic link", "bin is a symbolic link", "empty exists and is not a directory"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("stderr %q lacks %q", r.stderr, want)
			}
		}
		if got := readTree(t, outside); got != "" {
			t.Errorf("written outside the directory:\n%s", got)
		}
		// A file where the workspace has a directory.
		clash := t.TempDir()
		writeTree(t, clash, "a.txt/", "")
		r = mustRun(t, exitFailure, "", "--store", st, "workspace", "export", "--force", clash)
		if !strings.Contains(r.stderr, "a.txt is a directory") {
			t.Errorf("stderr %q", r.stderr)
		}

		// An older version, and the empty version 0.
		zero := filepath.Join(t.TempDir(), "zero")
		r = mustRun(t, exitOK, "", "--store", st, "workspace", "export", "--version", "0", zero)
		if !strings.Contains(r.stdout, "version 0") || readTree(t, zero) != "" {
			t.Errorf("version 0: %q, %q", r.stdout, readTree(t, zero))
		}
		mustRun(t, exitFailure, "", "--store", st, "workspace", "export", "--version", "9", filepath.Join(t.TempDir(), "nine"))
	})
}

// TestWorkspaceRoundTrip: import, export, import the export: the same
// root, so nothing to record.
func TestWorkspaceRoundTrip(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "src")
	writeTree(t, src, "a", "1", "b/c*", "2", "b/d/", "", "é/ü.txt", "unicode ☃\n", "big", strings.Repeat("x", 1<<20))
	st := filepath.Join(t.TempDir(), "store")
	mustRun(t, exitOK, "", "--store", st, "workspace", "import", "--manifest", wsManifest, src)
	out := filepath.Join(t.TempDir(), "out")
	mustRun(t, exitOK, "", "--store", st, "workspace", "export", out)
	if a, b := readTree(t, src), readTree(t, out); a != b {
		t.Fatalf("export differs from the import:\n%.500s\nvs\n%.500s", a, b)
	}
	r := mustRun(t, exitOK, "", "--store", st, "workspace", "import", "--manifest", wsManifest, out)
	if !strings.HasPrefix(r.stdout, "nothing to import: ") {
		t.Errorf("re-import: %q", r.stdout)
	}
}
