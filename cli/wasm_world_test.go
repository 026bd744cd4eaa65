package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestWASMCounterWorlds runs the scripts in testdata/wasmworld on two
// counter worlds whose reducer is the AssemblyScript counter, each laid
// out as $WORK/world with its names in the environment ($MODULE the
// defmodule, $EVENT and $STATE its schemas, $DEFAT the file and JSON
// pointer of its defmodule's wasm_hash):
//
//   - ours: examples/counter's AIR, its defmodule renamed for the module to
//     run (wasmCounterWorld), always;
//   - agentos-00-counter: AgentOS's own 00-counter, its AIR unchanged, read
//     from $DEMIURGE_AGENTOS_AIR (which .ci/run sets; the repository keeps
//     no copy of it), skipped without it.
//
// The modules of the examples are in $WORK/wasm, as for TestScripts.
func TestWASMCounterWorlds(t *testing.T) {
	t.Parallel()
	for _, w := range []struct {
		name   string
		layOut func(dst string) error
		env    map[string]string
	}{
		{
			name:   "ours",
			layOut: wasmCounterWorld,
			env: map[string]string{
				"MODULE": wasmCounterModule, "EVENT": "counter/Event@1", "STATE": "counter/State@1",
				"DEFAT": "reducer.air.json: /wasm_hash", "MODNS": "counter",
			},
		},
		{
			name: "agentos-00-counter",
			layOut: func(dst string) error {
				return agentOSCounterWorld(os.Getenv("DEMIURGE_AGENTOS_AIR"), dst)
			},
			env: map[string]string{
				"MODULE": "demo/CounterSM@1", "EVENT": "demo/CounterEvent@1", "STATE": "demo/CounterState@1",
				"DEFAT": "module.air.json: /0/wasm_hash", "MODNS": "demo",
			},
		},
	} {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			if w.name == "agentos-00-counter" && os.Getenv("DEMIURGE_AGENTOS_AIR") == "" {
				t.Skip("DEMIURGE_AGENTOS_AIR is not set (a directory of AgentOS's AIR: .ci/run sets it); the scripts ran on our own counter only")
			}
			testscript.Run(t, testscript.Params{
				Dir:                 filepath.Join("testdata", "wasmworld"),
				RequireExplicitExec: true,
				RequireUniqueNames:  true,
				Setup: func(env *testscript.Env) error {
					for k, v := range w.env {
						env.Setenv(k, v)
					}
					if err := w.layOut(filepath.Join(env.WorkDir, "world")); err != nil {
						return err
					}
					return copyWASMModules(env.WorkDir)
				},
				Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
					"exits":  cmdExits,
					"modput": cmdModPut,
				},
			})
		})
	}
}
