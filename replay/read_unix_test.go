//go:build unix

package replay_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/demiurge-dev/demiurge/replay"
)

// TestReadOddFiles: a bundle whose AIR file, journal or blob is a FIFO or
// a device is refused at once, naming it, instead of blocking or reading
// without end.
func TestReadOddFiles(t *testing.T) {
	const session = "../testdata/sessions/demo"
	airs, err := filepath.Glob(filepath.Join(session, "air", "*"))
	if err != nil || len(airs) == 0 {
		t.Fatalf("no AIR files in %s: %v", session, err)
	}
	for _, name := range []string{filepath.Join("air", filepath.Base(airs[0])), "journal.cbor", "bundle.json"} {
		for _, kind := range []string{"fifo", "/dev/zero"} {
			t.Run(name+" "+kind, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "bundle")
				if err := os.CopyFS(dir, os.DirFS(session)); err != nil {
					t.Fatal(err)
				}
				p := filepath.Join(dir, name)
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				if kind == "fifo" {
					if err := syscall.Mkfifo(p, 0o600); err != nil {
						t.Skipf("mkfifo: %v", err)
					}
				} else if err := os.Symlink(kind, p); err != nil {
					t.Fatal(err)
				}
				_, err := replay.Read(dir)
				if err == nil || !strings.Contains(err.Error(), filepath.ToSlash(name)+" is not a regular file") {
					t.Errorf("Read: %v; want it to say %s is not a regular file", err, name)
				}
			})
		}
	}
}
