package eval

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/load/*.txtar (review the diff)")

// TestLoad loads the suites of testdata/load/*.txtar (MANIFEST in a file
// is examples/demiurge) and compares what Load says, its errors or the
// suite it read, with the archive's want section.
func TestLoad(t *testing.T) {
	files, err := filepath.Glob("testdata/load/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatal("no testdata/load/*.txtar", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			var want string
			for _, f := range ar.Files {
				if f.Name == "want" {
					want = string(f.Data)
					continue
				}
				data := strings.ReplaceAll(string(f.Data), "MANIFEST", manifest)
				if err := os.WriteFile(filepath.Join(dir, f.Name), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got := describeLoad(dir)
			if got == want {
				return
			}
			if *update {
				for i := range ar.Files {
					if ar.Files[i].Name == "want" {
						ar.Files[i].Data = []byte(got)
					}
				}
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			t.Errorf("Load said:\n%s\nwant:\n%s", got, want)
		})
	}
}

// describeLoad is what Load makes of dir, as text: its errors (paths
// relative to dir), or its cases and their checks.
func describeLoad(dir string) string {
	s, err := Load(dir)
	if err != nil {
		var le LoadErrors
		if !errors.As(err, &le) {
			return "error: " + strings.ReplaceAll(err.Error(), dir+"/", "") + "\n"
		}
		var b strings.Builder
		for _, e := range le {
			b.WriteString(strings.ReplaceAll(e.Error(), dir+"/", ""))
			b.WriteByte('\n')
		}
		return b.String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "suite %s: %d cases\n", s.Name, len(s.Cases))
	names := func(cs []*Check) string {
		var n []string
		for _, c := range cs {
			n = append(n, c.Name)
		}
		return strings.Join(n, "; ")
	}
	for _, c := range s.Cases {
		fmt.Fprintf(&b, "%s %v limits %+v timeout %s", c.ID, c.Models, c.Limits, c.Timeout)
		if len(c.Tags) > 0 {
			fmt.Fprintf(&b, " tags %v", c.Tags)
		}
		if c.Skip != "" {
			fmt.Fprintf(&b, " skip %q", c.Skip)
		}
		b.WriteByte('\n')
		for i, t := range c.Turns {
			fmt.Fprintf(&b, "  turn %d %q: %s\n", i+1, t.User, names(t.Checks))
		}
		if len(c.Checks) > 0 {
			fmt.Fprintf(&b, "  case: %s\n", names(c.Checks))
		}
	}
	return b.String()
}

// TestLoadBounds: input the YAML parser would take minutes or memory
// without end to read is refused before it is parsed, or as it is.
func TestLoadBounds(t *testing.T) {
	laughs := "a: &a [x, x, x, x, x, x, x, x, x]\n"
	for i, name := range []string{"b", "c", "d", "e", "f", "g", "h"} {
		prev := string(rune('a' + i))
		laughs += name + ": &" + name + " [" + strings.Repeat("*"+prev+", ", 8) + "*" + prev + "]\n"
	}
	laughs += "user: [*h, *h]\n"
	for _, tc := range []struct {
		name, text, want string
	}{
		{"flow", "user: " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000), "case.yaml:1:1: values nested more than 64 deep"},
		{"dashes", "user: " + strings.Repeat("- ", 100000) + "x", "case.yaml:1:1: values nested more than 64 deep"},
		{"indent", func() string {
			var b strings.Builder
			b.WriteString("user: x\nchecks:\n")
			for i := range 200 {
				b.WriteString(strings.Repeat("  ", i+1) + "- a:\n")
			}
			return b.String()
		}(), "values nested more than 64 deep"},
		{"laughs", laughs, "the file's values, aliases (*name) expanded, number more than 100000"},
		{"big", "user: " + strings.Repeat("x", 2<<20), "a suite's file is at most 1 MiB (1048576 bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeSuite(t, map[string]string{"case.yaml": tc.text + "\nmanifest: " + manifest + "\n"})
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v; want an error saying %q", err, tc.want)
			}
		})
	}
}
