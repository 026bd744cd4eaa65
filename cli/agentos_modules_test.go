package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAgentOSWASM runs AgentOS's own examples, their AIR unchanged (read
// from $DEMIURGE_AGENTOS_AIR, which .ci/run sets: the repository keeps no
// copy), with the AssemblyScript reducers of examples/wasm/<example>
// beside them, through the scenario of AgentOS's own test of each: send
// steps the module, the built-in timer adapter fires the timers it sets
// and the plans run; the state it ends in is the one AgentOS's test
// expects; the world replays from genesis and from an exported bundle.
func TestAgentOSWASM(t *testing.T) {
	air := os.Getenv("DEMIURGE_AGENTOS_AIR")
	if air == "" {
		t.Skip("DEMIURGE_AGENTOS_AIR is not set (a directory of AgentOS's AIR: .ci/run sets it)")
	}
	for _, tc := range []struct {
		example, module, schema, value string
		want                           []string // in send's output, in this order
	}{
		{
			example: "00-counter", module: "demo/CounterSM@1", schema: "demo/CounterEvent@1",
			value: `{"Start": {"target": 2}}`,
			want:  []string{`→ state demo/CounterSM@1 = {"pc":{"$tag":"Counting"},"remaining":2}`},
		},
		{
			example: "01-hello-timer", module: "demo/TimerSM@1", schema: "demo/TimerEvent@1",
			value: `{"Start": {"deliver_at_ns": 1000000, "key": "hello"}}`,
			want: []string{
				`→ state demo/TimerSM@1 = {"pc":{"$tag":"Awaiting"},"key":"hello","fired_key":null,"deadline_ns":1000000}`,
				`→ effect timer.set `,
				`→ event sys/TimerFired@1 `,
				`→ state demo/TimerSM@1 = {"pc":{"$tag":"Done"},"key":"hello","fired_key":"hello","deadline_ns":1000000}`,
			},
		},
		{
			example: "08-retry-backoff", module: "demo/RetrySM@1", schema: "demo/RetryEvent@1",
			value: `{"start": {"req_id": "req-123", "payload": "hello", "max_attempts": 3, "base_delay_ms": 10, "now_ns": 1000000}}`,
			want: []string{
				`"pc":"Waiting","req_id":"req-123","attempt":1,`,
				`→ plan demo/WorkPlan@1 #1 started`,
				`→ effect timer.set blake3:`, `{"key":"req-123","deliver_at_ns":11000000}`,
				`→ plan demo/WorkPlan@1 #2 started`,
				`→ effect timer.set blake3:`, `{"key":"req-123","deliver_at_ns":21000000}`,
				`→ plan demo/WorkPlan@1 #3 started`,
				`→ state demo/RetrySM@1 = {"pc":"Failed","req_id":"req-123","attempt":3,`,
			},
		},
	} {
		t.Run(tc.example, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), tc.example)
			if err := copyAIR(filepath.Join(air, "examples", tc.example), dir); err != nil {
				t.Fatal(err)
			}
			if err := os.CopyFS(filepath.Join(dir, "modules"), os.DirFS(filepath.Join("..", "examples", "wasm", tc.example, "modules"))); err != nil {
				t.Fatal(err)
			}
			store := filepath.Join(t.TempDir(), "store")
			r := mustRun(t, 0, "", "validate", dir)
			if !strings.Contains(r.stdout, "module "+tc.module+": wasm blake3:") || !strings.Contains(r.stdout, "imports: none") {
				t.Errorf("validate does not report the module:\n%s", r.stdout)
			}
			r = mustRun(t, 0, "", "--store", store, "send", "--manifest", dir, "--schema", tc.schema, "--value", tc.value)
			rest := r.stdout
			for _, want := range tc.want {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("send: no %q after what came before, in\n%s", want, r.stdout)
				}
				rest = rest[i+len(want):]
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
		})
	}
}
