//go:build unix

package readall_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/internal/readall"
)

// TestFile: what is not a regular file (a FIFO, a symlink to /dev/zero, a
// directory) or is over the bound is refused at once, naming the file
// and what it is; nothing blocks or reads without bound.
func TestFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 1<<40); err != nil { // sparse
		t.Fatal(err)
	}
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink("small", link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		max  int64
		want string // "" reads "hello"
		is   error
	}{
		{fifo, 1 << 20, "fifo is not a regular file (a FIFO, which would block until something writes it): a test file must be a regular file", readall.ErrNotRegular},
		{fifo, readall.NoLimit, "fifo is not a regular file (a FIFO", readall.ErrNotRegular},
		{zero, readall.NoLimit, "zero is not a regular file (a character device)", readall.ErrNotRegular},
		{dir, 1 << 20, "is not a regular file (a directory)", readall.ErrNotRegular},
		{big, 16 << 20, "big is 1099511627776 bytes: a test file is at most 16 MiB (16777216 bytes)", readall.ErrTooLarge},
		{small, 4, "small is 5 bytes: a test file is at most 4 bytes", readall.ErrTooLarge},
		{small, 5, "", nil},
		{link, readall.NoLimit, "", nil},
		{filepath.Join(dir, "missing"), 5, "no such file", os.ErrNotExist},
	}
	for _, tc := range tests {
		done := make(chan struct{})
		var b []byte
		var err error
		go func() { b, err = readall.File(tc.path, "a test file", tc.max); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("File(%s) blocked", tc.path)
		}
		switch {
		case tc.want == "" && (err != nil || string(b) != "hello"):
			t.Errorf("File(%s) = %q, %v; want hello", tc.path, b, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, tc.is)):
			t.Errorf("File(%s, %d): %v; want an error saying %q", tc.path, tc.max, err, tc.want)
		}
	}
}
