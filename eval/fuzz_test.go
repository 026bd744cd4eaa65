package eval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// FuzzParseFile feeds case and suite files to the loader: whatever the
// bytes, it returns a case or errors that each name the file, never
// panics, and reads a case it accepted the same way twice.
func FuzzParseFile(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/load/*.txtar")
	for _, s := range seeds {
		ar, err := txtar.ParseFile(s)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range ar.Files {
			if file.Name != "want" {
				f.Add(file.Data, file.Name == "suite.yaml")
			}
		}
	}
	examples, _ := filepath.Glob("../examples/evals/*.yaml")
	for _, e := range examples {
		b, err := os.ReadFile(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, filepath.Base(e) == "suite.yaml")
	}
	f.Add([]byte("{\"user\": \"x\", \"checks\": [{\"jq\": \"..\"}]}"), false)
	f.Add([]byte("user: &a x\nchecks: [*a]\n"), false)
	f.Add([]byte("? [a, b]\n: c\n"), false)
	f.Fuzz(func(t *testing.T, b []byte, suite bool) {
		dir := t.TempDir()
		file := filepath.Join(dir, "case.yaml")
		_, fs, checks, errs := parseFile(file, b, suite)
		for _, e := range errs {
			if e.File != file || e.Msg == "" {
				t.Fatalf("an error without its file or message: %+v", e)
			}
			if strings.Contains(e.Msg, "%!") {
				t.Fatalf("a garbled message: %q", e.Msg)
			}
		}
		if len(errs) > 0 {
			return
		}
		if fs == nil || checks == nil {
			t.Fatal("no errors and no case")
		}
		_, fs2, checks2, errs2 := parseFile(file, b, suite)
		if len(errs2) > 0 || len(checks2) != len(checks) || mustJSON(fs) != mustJSON(fs2) {
			t.Fatal("the same bytes read twice differ")
		}
	})
}
