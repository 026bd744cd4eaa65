package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/internal/pgtest"
)

// TestPostgresWASMWorld runs a counter world whose reducer is the
// AssemblyScript counter on a PostgreSQL store: our own counter
// (wasmCounterWorld) always, and AgentOS's 00-counter, its AIR read from
// $DEMIURGE_AGENTOS_AIR, when that is set. The command that sends stores
// the module's code with the manifest, and a worker, which has neither the
// AIR nor the module file, runs it from the store; replay and export read
// it from there too.
func TestPostgresWASMWorld(t *testing.T) {
	for _, w := range []struct {
		name, module, event string
		layOut              func(dst string) error
	}{
		{"ours", wasmCounterModule, "counter/Event@1", wasmCounterWorld},
		{"agentos-00-counter", "demo/CounterSM@1", "demo/CounterEvent@1", func(dst string) error {
			return agentOSCounterWorld(os.Getenv("DEMIURGE_AGENTOS_AIR"), dst)
		}},
	} {
		t.Run(w.name, func(t *testing.T) {
			if w.name == "agentos-00-counter" && os.Getenv("DEMIURGE_AGENTOS_AIR") == "" {
				t.Skip("DEMIURGE_AGENTOS_AIR is not set (a directory of AgentOS's AIR: .ci/run sets it); ran on our own counter only")
			}
			srv := pgtest.Shared(t)
			url := pgtest.URL(t)
			dir := filepath.Join(t.TempDir(), "world")
			if err := w.layOut(dir); err != nil {
				t.Fatal(err)
			}
			wk := startWorker(t, url, []string{"OPENAI_API_KEY=sk-test"}) // a worker wants a model, which this world never calls
			for _, step := range []struct{ value, want string }{
				{`{"Start": {"target": 2}}`, `{"pc":{"$tag":"Counting"},"remaining":2}`},
				{`"Tick"`, `{"pc":{"$tag":"Counting"},"remaining":1}`},
				{`"Tick"`, `{"pc":{"$tag":"Done"},"remaining":0}`},
			} {
				want := "→ state " + w.module + " = " + step.want
				r := run(t, nil, "", "--store", url, "send", "--manifest", dir, "--schema", w.event, "--value", step.value, "--wait", "30s")
				srv.Scrub(t, "send", r.stdout+r.stderr)
				if r.code != 0 || !strings.Contains(r.stdout, want) {
					t.Fatalf("send %s: exit %d, want %q\nstdout:\n%s\nstderr:\n%s\nworker:\n%s", step.value, r.code, want, r.stdout, r.stderr, wk.stderr())
				}
			}
			if r := run(t, nil, "", "--store", url, "replay", "--world", "main", "--from-genesis"); r.code != 0 || !strings.HasPrefix(r.stdout, "ok: world main replays") {
				t.Errorf("replay from the store: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			bundle := filepath.Join(t.TempDir(), "bundle")
			if r := run(t, nil, "", "--store", url, "export", "--world", "main", bundle); r.code != 0 {
				t.Fatalf("export: exit %d\n%s", r.code, r.stderr)
			}
			if r := run(t, nil, "", "replay", bundle); r.code != 0 || !strings.Contains(r.stdout, "replays to the same bytes") {
				t.Errorf("replay of the exported bundle: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// agentWithTally lays out examples/demiurge with the tally of
// examples/wasm/tally added (its AIR, its module, and the manifest's
// entries for them) in a new folder, and returns it.
func agentWithTally(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "agent")
	if err := copyAIR(filepath.Join("..", "examples", "demiurge"), dir); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "examples", "wasm", "tally"))); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "manifest.air.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["schemas"] = append(m["schemas"].([]any), map[string]any{"name": "demo/TallyState@1"})
	m["modules"] = append(m["modules"].([]any), map[string]any{"name": "demo/Tally@1"})
	routing := m["routing"].(map[string]any)
	routing["events"] = append(routing["events"].([]any), map[string]any{"event": "demiurge/ChatEvent@3", "reducer": "demo/Tally@1"})
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPostgresRunWASM runs the agent with a WASM reducer beside its chat
// reducer on a PostgreSQL store: run sends the message and the manifest
// (with the module's code) through the store; a worker, which has neither
// the AIR nor the module file, runs the turn and the module. The fuel given
// to run is the world's, recorded with its manifest: on the worker the
// tally runs out of it, then, given none, counts; the session replays
// from the store.
func TestPostgresRunWASM(t *testing.T) {
	srv := pgtest.Shared(t)
	url := pgtest.URL(t)
	model := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Text: "Hello."},
		{Calls: []llmtest.Call{{Name: "introspect_state", Arguments: `{"reducer": "demo/Tally@1"}`}}},
		{Text: "Counted."},
	}})
	defer model.Close()
	startWorker(t, url, []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + model.URL})
	manifest := agentWithTally(t)
	r := run(t, nil, "", "--store", url, "--wasm-fuel", "demo/Tally@1=1000", "run", manifest, "--model", "gpt-test", "-m", "Hello.")
	srv.Scrub(t, "run's output", r.stdout+r.stderr)
	if r.code != 0 || !strings.Contains(r.stdout, "Hello.") {
		t.Fatalf("run 1: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, nil, "", "--store", url, "journal", "dump", "--world", "main")
	if !strings.Contains(r.stdout, "step ran out of fuel after 1000 instructions") {
		t.Errorf("the worker did not run the tally under the fuel given to run:\n%s", r.stdout)
	}
	r = run(t, nil, "", "--store", url, "run", manifest, "--model", "gpt-test", "-m", "Count.")
	if r.code != 0 || !strings.Contains(r.stdout, "✓ introspect_state") || !strings.Contains(r.stdout, "Counted.") {
		t.Fatalf("run 2: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, nil, "", "--store", url, "state", "--world", "main", "--reducer", "demo/Tally@1", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"last":"Result"`) || !strings.Contains(r.stdout, `"user_messages":1`) {
		t.Errorf("the tally's state: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, nil, "", "--store", url, "replay", "--world", "main", "--from-genesis")
	if r.code != 0 || !strings.Contains(r.stdout, "replays to the same bytes") {
		t.Fatalf("replay: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
