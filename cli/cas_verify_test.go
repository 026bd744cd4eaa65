package cli

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
)

func TestCASVerify(t *testing.T) {
	t.Parallel()
	blobs := []string{"one", "two", "three", ""}
	dir := newStore(t, blobs...)
	requireStoreUnchanged(t, dir, func() {
		r := mustRun(t, exitOK, "", "--store", dir, "cas", "verify")
		if r.stdout != "4 blobs checked, all good\n" {
			t.Errorf("clean store: %q", r.stdout)
		}
	})

	for _, b := range []string{"two", ""} {
		if err := corruptBlob(dir, cas.Sum([]byte(b))); err != nil {
			t.Fatal(err)
		}
	}
	requireStoreUnchanged(t, dir, func() {
		r := mustRun(t, exitFailure, "", "--store", dir, "cas", "verify")
		for _, b := range []string{"two", ""} {
			line := regexp.MustCompile(fmt.Sprintf(`(?m)^corrupt %s \(bytes hash to blake3:[0-9a-f]{64}\)$`, cas.Sum([]byte(b))))
			if !line.MatchString(r.stdout) {
				t.Errorf("stdout does not report %q:\n%s", b, r.stdout)
			}
		}
		if !strings.HasSuffix(r.stdout, "4 blobs checked, 2 corrupt\n") {
			t.Errorf("summary: %q", r.stdout)
		}
		if want := "demiurge: cas verify: 2 of 4 blobs in " + dir + " are corrupt\n"; r.stderr != want {
			t.Errorf("stderr %q; want %q", r.stderr, want)
		}
	})
}

func TestCASVerifyEmpty(t *testing.T) {
	t.Parallel()
	dir := newStore(t)
	r := mustRun(t, exitOK, "", "--store", dir, "cas", "verify")
	if r.stdout != "0 blobs checked, all good\n" {
		t.Errorf("stdout %q", r.stdout)
	}
}
