package readall_test

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/demiurge-dev/demiurge/internal/readall"
)

// TestFSFile: FSFile refuses a file of fsys that is not regular or is
// over the bound, and reads one that is.
func TestFSFile(t *testing.T) {
	fsys := fstest.MapFS{
		"ok":   {Data: []byte("hello")},
		"pipe": {Mode: fs.ModeNamedPipe},
		"dir":  {Mode: fs.ModeDir},
	}
	if b, err := readall.FSFile(fsys, "ok", "a test file", 5); err != nil || string(b) != "hello" {
		t.Errorf("FSFile(ok) = %q, %v", b, err)
	}
	for _, tc := range []struct {
		name string
		max  int64
		want string
		is   error
	}{
		{"ok", 4, "ok is 5 bytes: a test file is at most 4 bytes", readall.ErrTooLarge},
		{"pipe", readall.NoLimit, "pipe is not a regular file (a FIFO", readall.ErrNotRegular},
		{"dir", readall.NoLimit, "dir is not a regular file (a directory)", readall.ErrNotRegular},
		{"missing", readall.NoLimit, "missing", fs.ErrNotExist},
	} {
		if _, err := readall.FSFile(fsys, tc.name, "a test file", tc.max); err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, tc.is) {
			t.Errorf("FSFile(%s, %d): %v; want an error saying %q", tc.name, tc.max, err, tc.want)
		}
	}
}
