package tools_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestToolsDoNotImportWorld keeps the house rule of DESIGN.md: tools never
// import world (they receive a request and return a response; what they
// read of a world comes through an interface, see world/worldview).
func TestToolsDoNotImportWorld(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "./...").CombinedOutput()
	if err != nil {
		t.Skipf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "github.com/demiurge-dev/demiurge/world" || strings.HasPrefix(p, "github.com/demiurge-dev/demiurge/world/") {
			t.Errorf("a package under tools/ imports %s (directly or not)", p)
		}
	}
}
