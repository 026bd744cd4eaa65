//go:build unix

package schema

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLoadOddFiles: a manifest, or a def file beside it, that is not a
// regular file (a FIFO, a symlink to /dev/zero) or is too large is refused
// at once with a message naming it; nothing blocks or reads without bound.
func TestLoadOddFiles(t *testing.T) {
	t.Parallel()
	const manifest = `{"$kind": "manifest", "air_version": "1", "schemas": [], "modules": [], "plans": [], "effects": [], "caps": [], "policies": []}`
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) string // makes the world's files, returns the path to load
		want  string
	}{
		{"manifest is a FIFO", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "manifest.air.json")
			mkfifo(t, p)
			return p
		}, "manifest.air.json is not a regular file (a FIFO"},
		{"folder holding a FIFO manifest", func(t *testing.T, dir string) string {
			mkfifo(t, filepath.Join(dir, "manifest.air.json"))
			return dir
		}, "manifest.air.json is not a regular file (a FIFO"},
		{"a FIFO beside the manifest", func(t *testing.T, dir string) string {
			write(t, filepath.Join(dir, "manifest.air.json"), manifest)
			mkfifo(t, filepath.Join(dir, "defs.air.json"))
			return filepath.Join(dir, "manifest.air.json")
		}, "defs.air.json is not a regular file (a FIFO"},
		{"manifest is a symlink to /dev/zero", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "manifest.air.json")
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
			return p
		}, "manifest.air.json is not a regular file (a character device)"},
		{"manifest too large", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "manifest.air.json")
			write(t, p, manifest)
			if err := os.Truncate(p, 1<<40); err != nil { // sparse: a terabyte of nothing
				t.Fatal(err)
			}
			return p
		}, "manifest.air.json is 1099511627776 bytes: an AIR file is at most 16 MiB"},
		{"a symlink to a regular manifest is read", func(t *testing.T, dir string) string {
			write(t, filepath.Join(dir, "real.json"), manifest)
			p := filepath.Join(dir, "manifest.air.json")
			if err := os.Symlink("real.json", p); err != nil {
				t.Fatal(err)
			}
			return p
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := tc.setup(t, dir)
			done := make(chan error, 1)
			go func() { _, err := Load(path, nil); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Load blocked")
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Load: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Load: %v; want an error saying %q", err, tc.want)
			}
		})
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
