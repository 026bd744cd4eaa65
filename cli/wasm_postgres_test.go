package cli

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/internal/pgtest"
)

// TestPostgresWASMWorld runs AgentOS's 00-counter with its WASM module on
// a PostgreSQL store: the command that sends stores the module's code with
// the manifest, and a worker, which has neither the AIR nor the module
// file, runs it from the store; replay and export read it from there too.
func TestPostgresWASMWorld(t *testing.T) {
	srv := pgtest.Shared(t)
	url := pgtest.URL(t)
	dir := filepath.Join(t.TempDir(), "agentos-counter")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "agentos", "00-counter"))); err != nil {
		t.Fatal(err)
	}
	mods, _ := filepath.Glob(filepath.Join("..", "examples", "counter", "modules", "counter", "Counter@1-*.wasm"))
	if len(mods) != 1 {
		t.Fatalf("the counter's module: %v", mods)
	}
	code, err := os.ReadFile(mods[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "modules", "demo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "modules", "demo", fmt.Sprintf("CounterSM@1-%x.wasm", sha256.Sum256(code))), code, 0o644); err != nil {
		t.Fatal(err)
	}
	w := startWorker(t, url, []string{"OPENAI_API_KEY=sk-test"}) // a worker wants a model, which this world never calls
	for _, step := range []struct{ value, want string }{
		{`{"Start": {"target": 2}}`, `→ state demo/CounterSM@1 = {"pc":{"$tag":"Counting"},"remaining":2}`},
		{`"Tick"`, `→ state demo/CounterSM@1 = {"pc":{"$tag":"Counting"},"remaining":1}`},
		{`"Tick"`, `→ state demo/CounterSM@1 = {"pc":{"$tag":"Done"},"remaining":0}`},
	} {
		r := run(t, nil, "", "--store", url, "send", "--manifest", dir, "--schema", "demo/CounterEvent@1", "--value", step.value, "--wait", "30s")
		srv.Scrub(t, "send", r.stdout+r.stderr)
		if r.code != 0 || !strings.Contains(r.stdout, step.want) {
			t.Fatalf("send %s: exit %d\nstdout:\n%s\nstderr:\n%s\nworker:\n%s", step.value, r.code, r.stdout, r.stderr, w.stderr())
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
}
