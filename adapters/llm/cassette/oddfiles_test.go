//go:build unix

package cassette

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpenOddFiles: a bundle whose journal, bundle.json or a blob is a
// FIFO or a symlink to /dev/zero is refused at once, naming the file;
// Open never blocks or reads without bound. (Before, a FIFO journal hung
// the command and /dev/zero was read until memory ran out.)
func TestOpenOddFiles(t *testing.T) {
	good := threeAnswers(t)
	fifo := func(t *testing.T, p string) {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
	}
	zero := func(t *testing.T, p string) {
		if err := os.Symlink("/dev/zero", p); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) string
		want  string
	}{
		{"journal is a FIFO", func(t *testing.T) string {
			dir := t.TempDir()
			fifo(t, filepath.Join(dir, "journal.cbor"))
			return dir
		}, "journal.cbor is not a regular file (a FIFO, which would block until something writes it)"},
		{"journal is /dev/zero", func(t *testing.T) string {
			dir := t.TempDir()
			zero(t, filepath.Join(dir, "journal.cbor"))
			return dir
		}, "journal.cbor is not a regular file (a character device)"},
		{"a blob is a FIFO", func(t *testing.T) string {
			dir := writeBundle(t, good)
			fifo(t, filepath.Join(dir, "blobs", strings.Repeat("ab", 32)))
			return dir
		}, "is not a regular file (a FIFO"},
		{"a blob is /dev/zero", func(t *testing.T) string {
			dir := writeBundle(t, good)
			zero(t, filepath.Join(dir, "blobs", strings.Repeat("ab", 32)))
			return dir
		}, "is not a regular file (a character device)"},
		{"bundle.json is a FIFO (ignored, as a missing one is)", func(t *testing.T) string {
			dir := writeBundle(t, good)
			fifo(t, filepath.Join(dir, "bundle.json"))
			return dir
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.setup(t)
			done := make(chan error, 1)
			go func() { _, err := Open(dir, nil); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Open blocked")
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Open: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Open: %v; want an error saying %q", err, tc.want)
			}
		})
	}
}
