//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestManifestNotRegular: validate and run refuse at once a manifest that
// is a FIFO or a symlink to /dev/zero, naming it (they blocked forever on
// the FIFO and read /dev/zero until the kernel killed them).
func TestManifestNotRegular(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo", "manifest.air.json")
	zero := filepath.Join(dir, "zero", "manifest.air.json")
	for _, p := range []string{fifo, zero} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, kind string }{{fifo, "a FIFO"}, {zero, "a character device"}} {
		for _, args := range [][]string{
			{"validate", c.path},
			// run checks its cassette first: a real one.
			{"--store", filepath.Join(t.TempDir(), "store"), "run", c.path, "-m", "hi", "--llm", "cassette:" + filepath.Join("..", "testdata", "sessions", "demo")},
		} {
			r := mustRun(t, exitFailure, "", args...)
			if want := c.path + " is not a regular file (" + c.kind; !strings.Contains(r.stderr, want) {
				t.Errorf("demiurge %s: stderr %q; want it to say %q", strings.Join(args, " "), r.stderr, want)
			}
		}
	}
}
