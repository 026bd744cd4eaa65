package examples

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestWASMModulesBuild rebuilds the AssemblyScript reducers of
// examples/wasm (npm ci there first; .ci/run does) and checks that the
// modules committed beside the counter, timer and retry manifests (and
// AgentOS's 00-counter, 01-hello-timer and 08-retry-backoff and the tally
// in examples/wasm) are what their sources build to.
func TestWASMModulesBuild(t *testing.T) {
	if _, err := os.Stat(filepath.Join("wasm", "node_modules", ".bin", "asc")); err != nil {
		t.Skip("AssemblyScript is not installed: run npm ci in examples/wasm")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	out := t.TempDir()
	cmd := exec.Command("node", "build.mjs", out)
	cmd.Dir = "wasm"
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node build.mjs: %v\n%s", err, b)
	}
	built, _ := filepath.Glob(filepath.Join(out, "*", "modules", "*", "*.wasm"))
	more, _ := filepath.Glob(filepath.Join(out, "wasm", "*", "modules", "*", "*.wasm"))
	built = append(built, more...)
	if len(built) != 7 {
		t.Fatalf("built %d modules; want 7", len(built))
	}
	for _, b := range built {
		rel, _ := filepath.Rel(out, b)
		got, _ := os.ReadFile(b)
		want, err := os.ReadFile(rel)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not committed as its source builds it (cd examples/wasm && npm ci && npm run build): %v", rel, err)
		}
	}
}
