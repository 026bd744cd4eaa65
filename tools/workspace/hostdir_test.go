package workspace_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/tools/workspace"
)

// TestHostDirRoundTrip: a directory imported and exported again is the
// same files, the executable bit and empty directories kept; an export
// onto files that exist writes nothing unless it may overwrite.
func TestHostDirRoundTrip(t *testing.T) {
	src := t.TempDir()
	files := map[string]string{"a.txt": "alpha", "d/e/f": "deep", "run.sh": "#!/bin/sh\necho hi\n"}
	for p, data := range files {
		if err := os.MkdirAll(filepath.Join(src, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if p == "run.sh" {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(src, p), []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(src, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(src, "store"), 0o755); err != nil {
		t.Fatal(err)
	}
	var skipped []string
	st := cas.NewMemory()
	root, stats, err := workspace.ImportDir(t.Context(), st, src, filepath.Join(src, "store"), func(p, why string) { skipped = append(skipped, p+": "+why) })
	if err != nil {
		t.Fatal(err)
	}
	if stats.Files != 3 || stats.Bytes != int64(len("alpha")+len("deep")+len(files["run.sh"])) || len(skipped) != 1 {
		t.Errorf("import stats %+v, skipped %q", stats, skipped)
	}
	dst := t.TempDir()
	if _, err := workspace.ExportTree(t.Context(), st, root, dst, false); err != nil {
		t.Fatal(err)
	}
	for p, data := range files {
		b, err := os.ReadFile(filepath.Join(dst, p))
		if err != nil || string(b) != data {
			t.Errorf("%s: %q, %v; want %q", p, b, err, data)
		}
	}
	if fi, err := os.Stat(filepath.Join(dst, "run.sh")); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("run.sh lost its executable bit: %v %v", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Join(dst, "empty")); err != nil || !fi.IsDir() {
		t.Errorf("the empty directory is not exported: %v", err)
	}
	_, err = workspace.ExportTree(t.Context(), st, root, dst, false)
	var ce *workspace.ExportConflictError
	if !errors.As(err, &ce) || len(ce.Paths) != 3 {
		t.Errorf("export onto itself: %v; want a conflict on the 3 files", err)
	}
	if _, err := workspace.ExportTree(t.Context(), st, root, dst, true); err != nil {
		t.Errorf("export that overwrites: %v", err)
	}
}
