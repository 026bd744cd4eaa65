package cas_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps checks the house rule that cas imports nothing of ours, and only
// the dependencies chosen for it.
func TestDeps(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	out, err := exec.CommandContext(t.Context(), goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}",
		"github.com/demiurge-dev/demiurge/cas", "github.com/demiurge-dev/demiurge/cas/castest").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := []string{
		"github.com/demiurge-dev/demiurge/cas",
		"github.com/fxamacker/cbor/v2",
		"github.com/x448/float16",
		"github.com/zeebo/blake3",
		"github.com/klauspost/cpuid/v2",
		"go.etcd.io/bbolt",
		"golang.org/x/sys/",
	}
	for _, p := range strings.Fields(string(out)) {
		ok := false
		for _, a := range allowed {
			if p == a || strings.HasPrefix(p, a+"/") || strings.HasSuffix(a, "/") && strings.HasPrefix(p, a) {
				ok = true
			}
		}
		if !ok {
			t.Errorf("cas depends on %s; cas imports nothing of ours and only cbor, blake3 and bbolt", p)
		}
	}
}
