package shell

import (
	"context"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// run runs a script in a fresh shell and returns its stdout, stderr and
// status.
func run(t testing.TB, script string) (string, string, int) {
	t.Helper()
	var out, errOut strings.Builder
	r := New(Config{FS: vfs.New(vfs.Options{}), Stdout: &out, Stderr: &errOut})
	res := r.Run(context.Background(), script)
	return out.String(), errOut.String(), res.Status
}

func TestRunBasics(t *testing.T) {
	for _, tc := range []struct{ script, out string }{
		{"echo hi", "hi\n"},
		{"base=16; echo $(( ${base}#a ))", "10\n"},
		{"if ! ((test a = b) || (test c = d)); then echo yes; fi", "yes\n"},
	} {
		out, errOut, _ := run(t, tc.script)
		if out != tc.out {
			t.Errorf("%q: stdout %q, want %q (stderr %q)", tc.script, out, tc.out, errOut)
		}
	}
}
