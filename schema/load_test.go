package schema

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the want section of testdata/load/*.txtar")

// TestLoadGolden loads each testdata/load/*.txtar archive as a world (its
// files, except "want" and "reducers") and compares every problem reported
// with the archive's "want" section. A "reducers" file lists the reducer
// modules to treat as registered. -update rewrites the want sections; review
// the diff.
func TestLoadGolden(t *testing.T) {
	archives, err := filepath.Glob("testdata/load/*.txtar")
	if err != nil || len(archives) == 0 {
		t.Fatalf("no archives: %v", err)
	}
	for _, path := range archives {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			var opts LoadOptions
			wantIdx := -1
			for i, f := range ar.Files {
				switch f.Name {
				case "want":
					wantIdx = i
					continue
				case "reducers":
					opts.Reducers = strings.Fields(string(f.Data))
					continue
				}
				if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got := renderLoad(dir, &opts)
			if wantIdx < 0 {
				ar.Files = append(ar.Files, txtar.File{Name: "want"})
				wantIdx = len(ar.Files) - 1
			}
			if string(ar.Files[wantIdx].Data) == got {
				return
			}
			if *update {
				ar.Files[wantIdx].Data = []byte(got)
				if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			t.Errorf("load problems differ (rerun with -update and review the diff)\ngot:\n%s\nwant:\n%s", got, ar.Files[wantIdx].Data)
		})
	}
}

// renderLoad loads dir and prints what a user would see, with file names
// relative to dir.
func renderLoad(dir string, opts *LoadOptions) string {
	c, err := Load(dir, opts)
	var b bytes.Buffer
	var list ErrorList
	switch e := err.(type) {
	case nil:
		b.WriteString("ok\n")
		list = c.Warnings
	case ErrorList:
		list = e
	default:
		b.WriteString("error: " + err.Error() + "\n")
	}
	for _, p := range list {
		line := p.Error()
		line = strings.ReplaceAll(line, dir+string(filepath.Separator), "")
		line = strings.ReplaceAll(line, dir, ".") // the folder itself
		b.WriteString(line + "\n")
	}
	return b.String()
}
