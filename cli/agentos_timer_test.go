package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAgentOSHelloTimerWASM runs AgentOS's own 01-hello-timer, its AIR
// unchanged (read from $DEMIURGE_AGENTOS_AIR, which .ci/run sets: the
// repository keeps no copy), with the AssemblyScript reducer of
// examples/wasm/01-hello-timer beside it: validate finds the module, send
// sets the timer, the built-in timer adapter fires it and its receipt
// ends the reducer Done with the key, as AgentOS's test of the example
// expects; the world replays from genesis and from an exported bundle.
func TestAgentOSHelloTimerWASM(t *testing.T) {
	air := os.Getenv("DEMIURGE_AGENTOS_AIR")
	if air == "" {
		t.Skip("DEMIURGE_AGENTOS_AIR is not set (AgentOS's AIR: ../shared/agentos-air in CI)")
	}
	dir := filepath.Join(t.TempDir(), "01-hello-timer")
	if err := copyAIR(filepath.Join(air, "examples", "01-hello-timer"), dir); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(dir, "modules"), os.DirFS(filepath.Join("..", "examples", "wasm", "01-hello-timer", "modules"))); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(t.TempDir(), "store")
	r := mustRun(t, 0, "", "validate", dir)
	if !strings.Contains(r.stdout, "module demo/TimerSM@1: wasm blake3:") || !strings.Contains(r.stdout, "imports: none") {
		t.Errorf("validate does not report the module:\n%s", r.stdout)
	}
	r = mustRun(t, 0, "", "--store", store, "send", "--manifest", dir, "--schema", "demo/TimerEvent@1",
		"--value", `{"Start": {"deliver_at_ns": 1000000, "key": "hello"}}`)
	for _, want := range []string{
		`→ state demo/TimerSM@1 = {"pc":{"$tag":"Awaiting"},"key":"hello","fired_key":null,"deadline_ns":1000000}`,
		`→ effect timer.set `,
		`→ state demo/TimerSM@1 = {"pc":{"$tag":"Done"},"key":"hello","fired_key":"hello","deadline_ns":1000000}`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("send: no %q in\n%s", want, r.stdout)
		}
	}
	r = mustRun(t, 0, "", "--store", store, "replay", "--manifest", dir, "--from-genesis")
	if !strings.HasPrefix(r.stdout, "ok: world main replays to the same bytes") {
		t.Errorf("replay: %s", r.stdout)
	}
	bundle := filepath.Join(t.TempDir(), "bundle")
	mustRun(t, 0, "", "--store", store, "export", "--world", "main", bundle)
	if r := mustRun(t, 0, "", "replay", bundle); !strings.Contains(r.stdout, "replays to the same bytes") {
		t.Errorf("replay of the exported bundle: %s", r.stdout)
	}
}
