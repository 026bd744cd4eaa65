package replaytest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/reducer"
	rbuiltin "github.com/demiurge-dev/demiurge/reducer/builtin"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/replay/replaytest"
)

// recorder is a testing.TB that keeps what the test reports.
type recorder struct {
	testing.TB
	errors []string
	failed bool
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
	r.failed = true
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.TB.Fatalf("CheckGolden stopped: %s", r.errors[len(r.errors)-1])
}

func registry() *reducer.Registry {
	r := reducer.NewRegistry()
	demiurge.Register(r)
	rbuiltin.Register(r)
	return r
}

// copyDir copies the bundle in src to a new temporary directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestNoTrace: a bundle fresh from an export has no trace.txt; the test
// says so and how to write it, rather than showing a diff against
// nothing, and with update set writes it.
func TestNoTrace(t *testing.T) {
	dir := copyDir(t, "../../testdata/sessions/demo")
	if err := os.Remove(filepath.Join(dir, "trace.txt")); err != nil {
		t.Fatal(err)
	}
	r := &recorder{TB: t}
	replaytest.CheckGolden(r, dir, registry(), false)
	if !r.failed || len(r.errors) != 1 || !strings.Contains(r.errors[0], "has no trace.txt") || !strings.Contains(r.errors[0], "update") {
		t.Fatalf("CheckGolden of a bundle without trace.txt reported %q; want one error saying so and how to write it", r.errors)
	}
	r = &recorder{TB: t}
	replaytest.CheckGolden(r, dir, registry(), true)
	if r.failed {
		t.Fatalf("with update: %q", r.errors)
	}
	if _, err := os.Stat(filepath.Join(dir, "trace.txt")); err != nil {
		t.Fatalf("update did not write trace.txt: %v", err)
	}
	r = &recorder{TB: t}
	replaytest.CheckGolden(r, dir, registry(), false)
	if r.failed {
		t.Fatalf("after update: %q", r.errors)
	}
}
