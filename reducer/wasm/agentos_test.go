package wasm

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/schema"
)

// TestAgentOSModules runs modules AgentOS built (its examples' reducers,
// cargo build --target wasm32-unknown-unknown) through the host's checks,
// when DEMIURGE_AGENTOS_WASM names a folder of them (an optional, local
// test: the repository keeps no binaries it did not build). Each module must
// load or be refused with ErrRefused; one that loads is stepped with a
// Start{target: 3} then a Tick, as counters take them, twice over and in
// the interpreter too: each step must give the same bytes (or the same
// error) every time.
func TestAgentOSModules(t *testing.T) {
	dir := os.Getenv("DEMIURGE_AGENTOS_WASM")
	if dir == "" {
		t.Skip("DEMIURGE_AGENTOS_WASM is not set (a folder of AgentOS-built .wasm modules)")
	}
	var files []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".wasm") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		t.Fatalf("no .wasm files under %s", dir)
	}
	comp, interp := newHost(t, Options{}), newHost(t, Options{Interpreter: true})
	events := []schema.Value{schema.Variant("Start", schema.Record("target", uint64(3))), schema.Variant("Tick", nil)}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			code, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			def := testDef("agentos/" + strings.TrimSuffix(filepath.Base(f), ".wasm"))
			a, err := comp.Load(t.Context(), def, code)
			if err != nil {
				if !errors.Is(err, ErrRefused) {
					t.Fatalf("Load: %v; want a module or ErrRefused", err)
				}
				t.Logf("refused: %v", err)
				return
			}
			b, err := interp.Load(t.Context(), def, code)
			if err != nil {
				t.Fatalf("the interpreter refuses what the compiler loads: %v", err)
			}
			var state []byte
			for i, ev := range events {
				in := AppendInput(nil, &Input{State: state, EventSchema: "agentos/Event@1", Event: enc(t, ev)})
				var outs []string
				for _, m := range []*Module{a, a, b} {
					out, _, err := m.call(in)
					if err != nil {
						outs = append(outs, "error: "+err.Error())
						continue
					}
					outs = append(outs, string(out))
				}
				if outs[0] != outs[1] || outs[0] != outs[2] {
					t.Fatalf("step %d differs between runs or engines:\n%q", i, outs)
				}
				t.Logf("step %d: %.120q", i, outs[0])
				env, err := DecodeOutput([]byte(outs[0]))
				if err != nil {
					return // an error or a malformed envelope: the same every time
				}
				state = bytes.Clone(env.State)
			}
		})
	}
}
