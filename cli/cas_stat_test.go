package cli

import (
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
)

func TestCASStat(t *testing.T) {
	t.Parallel()
	dir := newStore(t, "twelve bytes", "")
	requireStoreUnchanged(t, dir, func() {
		for _, tc := range []struct {
			data string
			want string
		}{
			{"twelve bytes", cas.Sum([]byte("twelve bytes")).String() + " 12\n"},
			{"", cas.Sum(nil).String() + " 0\n"},
		} {
			r := mustRun(t, exitOK, "", "--store", dir, "cas", "stat", cas.Sum([]byte(tc.data)).String())
			if r.stdout != tc.want {
				t.Errorf("stat: %q; want %q", r.stdout, tc.want)
			}
		}
		missing := cas.Sum([]byte("x")).String()
		r := mustRun(t, exitFailure, "", "--store", dir, "cas", "stat", missing)
		if !strings.Contains(r.stderr, "not found: "+missing) {
			t.Errorf("stderr %q", r.stderr)
		}
		mustRun(t, exitUsage, "", "--store", dir, "cas", "stat", "nope")
	})
}
