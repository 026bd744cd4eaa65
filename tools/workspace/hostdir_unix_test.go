//go:build unix

package workspace_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/tools/workspace"
)

// TestImportDirOddFiles: ImportDir of a FIFO is refused at once (listing
// it would wait for a writer), and a FIFO or a link to one inside the
// directory is left out, said why, never read.
func TestImportDirOddFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.Symlink("fifo", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	type out struct {
		st      workspace.Stats
		skipped []string
		err     error
	}
	imp := func(path string) out {
		done := make(chan out, 1)
		go func() {
			var o out
			_, o.st, o.err = workspace.ImportDir(t.Context(), cas.NewMemory(), path, "", func(p, why string) { o.skipped = append(o.skipped, p+": "+why) })
			done <- o
		}()
		select {
		case o := <-done:
			return o
		case <-time.After(10 * time.Second):
			t.Fatalf("ImportDir(%s) blocked", path)
			return out{}
		}
	}
	if o := imp(fifo); o.err == nil || !strings.Contains(o.err.Error(), "fifo is not a directory (a FIFO") {
		t.Errorf("ImportDir of a FIFO: %v; want it refused", o.err)
	}
	o := imp(dir)
	if o.err != nil || o.st.Files != 1 || len(o.skipped) != 2 {
		t.Errorf("ImportDir = %+v, skipped %q, %v; want a.txt only, the FIFO and the link skipped", o.st, o.skipped, o.err)
	}
}
