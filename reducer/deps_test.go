package reducer_test

import (
	"os/exec"
	"strings"
	"testing"
)

// badDeps are the packages deterministic code must not import: the clock,
// randomness, the environment, files, processes and the network.
var badDeps = map[string]string{
	"time":          "reducers and plans see time only through the ingress stamp",
	"math/rand":     "reducers and plans see randomness only through the ingress stamp's entropy",
	"math/rand/v2":  "reducers and plans see randomness only through the ingress stamp's entropy",
	"crypto/rand":   "reducers and plans see randomness only through the ingress stamp's entropy",
	"os":            "reducers and plans must not read the environment or files",
	"os/exec":       "reducers and plans must not run processes",
	"syscall":       "reducers and plans must not make system calls",
	"net":           "reducers and plans must not reach the network",
	"net/http":      "reducers and plans must not reach the network",
	"io/ioutil":     "reducers and plans must not read files",
	"path/filepath": "reducers and plans must not touch host paths",
}

// TestDeterministicPackagesImports keeps the clock, randomness, the
// environment and the network out of reducer and plan packages (their
// non-test files), in the style of Tailscale's deptest.
func TestDeterministicPackagesImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}",
		"github.com/demiurge-dev/demiurge/reducer/...", "github.com/demiurge-dev/demiurge/plans/...",
		"github.com/demiurge-dev/demiurge/examples/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkg := fields[0]
		if strings.HasSuffix(pkg, "/reducertest") || strings.Contains(pkg, "/examples/internal/") ||
			strings.HasSuffix(pkg, "/examples/scripted") || strings.HasSuffix(pkg, "/examples") {
			continue // test helpers, and the scripted tool's demo program
		}
		checked++
		for _, imp := range fields[1:] {
			if why, bad := badDeps[imp]; bad {
				t.Errorf("%s imports %s: %s", pkg, imp, why)
			}
			if strings.HasPrefix(imp, "net/") {
				t.Errorf("%s imports %s: reducers and plans must not reach the network", pkg, imp)
			}
		}
	}
	if checked < 2 {
		t.Fatalf("checked only %d packages", checked)
	}
}
