package replay_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/replay"
)

// TestReadNamesThePath: a bundle that is not there, not a directory, or a
// directory without bundle.json is refused with an error naming the path
// and what a bundle is.
func TestReadNamesThePath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "nowhere"), "read bundle " + filepath.Join(dir, "nowhere") + ": no such directory (a bundle is the directory `demiurge export` writes)"},
		{"a file", file, "read bundle " + file + ": not a directory"},
		{"no bundle.json", empty, "read bundle " + empty + ": " + filepath.Join(empty, "bundle.json") + " not found: not a bundle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := replay.Read(tc.path); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("Read(%s): %v; want %q", tc.path, err, tc.want)
			}
		})
	}
}
