package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/internal/store"
)

func TestCASPut(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "s")
	file := filepath.Join(t.TempDir(), "f.txt")
	if err := os.WriteFile(file, []byte("from a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		want  cas.Ref
	}{
		{"file", "", []string{file}, cas.Sum([]byte("from a file"))},
		{"stdin", "from stdin", nil, cas.Sum([]byte("from stdin"))},
		{"dash", "from stdin", []string{"-"}, cas.Sum([]byte("from stdin"))},
		{"empty", "", []string{"-"}, cas.Sum(nil)},
		{"again", "", []string{file}, cas.Sum([]byte("from a file"))},
	} {
		r := mustRun(t, exitOK, tc.stdin, append([]string{"--store", dir, "cas", "put"}, tc.args...)...)
		if r.stdout != tc.want.String()+"\n" {
			t.Errorf("%s: stdout %q; want %s", tc.name, r.stdout, tc.want)
		}
	}

	s, err := store.Open(dir, &store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var refs []string
	err = s.CAS().Iterate(t.Context(), func(ref cas.Ref, size int64) error {
		refs = append(refs, ref.String())
		return nil
	})
	if err != nil || len(refs) != 3 {
		t.Errorf("store holds %v, %v; want 3 blobs", refs, err)
	}
}

func TestCASPutErrors(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "s")
	r := mustRun(t, exitFailure, "", "--store", dir, "cas", "put", filepath.Join(dir, "missing"))
	if !strings.Contains(r.stderr, "no such file or directory") {
		t.Errorf("stderr %q", r.stderr)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("a failed put created the store")
	}
	mustRun(t, exitUsage, "", "--store", dir, "cas", "put", "a", "b")
}
