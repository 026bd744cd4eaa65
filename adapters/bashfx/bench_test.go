package bashfx

import (
	"testing"

	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
)

// benchScript makes 5 tool calls and 5 jq filters, the script of the
// bash tool's benchmark (docs/BENCHMARKS.md), on the fake world's
// tools.
const benchScript = `a=$(introspect_state | jq '.count')
b=$(introspect_state --module m | jq -r '.items[0]')
workspace_write --path notes/x --content "$a $b" | jq '.version' >/dev/null
workspace_read --path notes/x | jq -R 'split(" ") | length'
introspect_state | jq -c '.items | sort'
`

// BenchmarkRun runs the same script through the adapter (every command
// decided by the gate and run by the toolcall adapter, the receipt built)
// and through Shell.Run with Direct (the tools called as they are), side
// by side: the gap is what running commands as effects costs.
func BenchmarkRun(b *testing.B) {
	b.Run("adapter", func(b *testing.B) {
		f := newFixture(b, nil)
		c := f.call(b, "bash", benchScript, nil)
		b.ReportAllocs()
		for b.Loop() {
			r := f.a.Run(b.Context(), c)
			if code, _ := schema.FieldPath(r.Payload, "exit_code").(int64); code != 0 {
				b.Fatalf("exit %d: %v", code, schema.FieldPath(r.Payload, "stderr"))
			}
			f.rec.mu.Lock()
			f.rec.calls = f.rec.calls[:0]
			f.rec.mu.Unlock()
		}
	})
	b.Run("direct", func(b *testing.B) {
		fw := newFakeWorld()
		sh, err := NewShell(fw.all(), ShellOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			res := sh.Run(b.Context(), tools.Request{Commands: benchScript}, RunOptions{})
			if res.ExitCode != 0 {
				b.Fatalf("exit %d: %s", res.ExitCode, res.Stderr)
			}
		}
	})
}
