package schema_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/schema"
)

// TestLoadFromCASRoundTrip: the catalog of every example (ours, and
// AgentOS's when $DEMIURGE_AGENTOS_AIR names them), stored as a world
// stores it, loads back from the store to the same manifest and nodes.
func TestLoadFromCASRoundTrip(t *testing.T) {
	var dirs []string
	globs := []string{"../examples/*/manifest.air.json"}
	if dir := os.Getenv(schema.AgentOSEnv); dir != "" {
		globs = append(globs, filepath.Join(dir, "examples", "*", "manifest.air.json"))
	}
	for _, glob := range globs {
		ms, _ := filepath.Glob(glob)
		for _, m := range ms {
			dirs = append(dirs, filepath.Dir(m))
		}
	}
	if len(dirs) < 5 {
		t.Fatalf("found only %d examples", len(dirs))
	}
	ctx := context.Background()
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			c, err := schema.Load(dir, nil)
			if err != nil {
				t.Skipf("does not load: %v", err)
			}
			st := cas.NewMemory()
			if err := c.Nodes(func(_ cas.Ref, node []byte) error { _, err := st.Put(ctx, node); return err }); err != nil {
				t.Fatal(err)
			}
			back, err := schema.LoadFromCAS(ctx, st, c.ManifestRef(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if back.ManifestRef() != c.ManifestRef() {
				t.Fatalf("manifest %s, want %s", back.ManifestRef(), c.ManifestRef())
			}
			n := 0
			_ = c.Nodes(func(r cas.Ref, node []byte) error {
				n++
				if b, ok := back.Node(r); !ok || string(b) != string(node) {
					t.Errorf("node %s differs or is missing", r.Short())
				}
				return nil
			})
			if n < 2 {
				t.Errorf("%d nodes", n)
			}
		})
	}
}

func TestLoadFromCASErrors(t *testing.T) {
	ctx := context.Background()
	c, err := schema.Load("../examples/counter", nil)
	if err != nil {
		t.Fatal(err)
	}
	st := cas.NewMemory()
	var missing cas.Ref
	_ = c.Nodes(func(r cas.Ref, node []byte) error {
		if r != c.ManifestRef() && !missing.Valid() && strings.Contains(string(node), "counter/") {
			missing = r // leave one user def out
			return nil
		}
		_, err := st.Put(ctx, node)
		return err
	})
	if _, err := schema.LoadFromCAS(ctx, st, c.ManifestRef(), nil); err == nil || !strings.Contains(err.Error(), missing.Short()) {
		t.Errorf("a missing def: %v", err)
	}
	if _, err := schema.LoadFromCAS(ctx, st, cas.Sum([]byte("nothing")), nil); err == nil {
		t.Error("a missing manifest loaded")
	}
	notManifest, _ := st.Put(ctx, []byte{0xd9, 0xd9, 0xf7, 0xa0}) // an empty map
	if _, err := schema.LoadFromCAS(ctx, st, notManifest, nil); err == nil || !strings.Contains(err.Error(), "not a manifest") {
		t.Errorf("not a manifest: %v", err)
	}
}

// TestManifestModels: the manifest's "models" parse, are part of its hash,
// and load back from the store; a manifest without them hashes as before.
func TestManifestModels(t *testing.T) {
	ctx := context.Background()
	const base = `{"$kind":"manifest","air_version":"1","schemas":[],"modules":[],"plans":[],"caps":[],"policies":[],"effects":[]`
	plain, err := schema.LoadSources([]schema.Source{{Name: "manifest.air.json", Data: []byte(base + `}`)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	src := base + `,"models":[{"match":"qwen3*","reasoning":true,"context_window":32768,"price_input":0.5,"chat_token_limit":"max_tokens"}]}`
	c, err := schema.LoadSources([]schema.Source{{Name: "manifest.air.json", Data: []byte(src)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []schema.ModelOption{{Key: "reasoning", Value: "true"}, {Key: "context_window", Value: "32768"}, {Key: "price_input", Value: "0.5"}, {Key: "chat_token_limit", Value: "max_tokens"}}
	check := func(c *schema.Catalog) {
		t.Helper()
		ms := c.Manifest.Models
		if len(ms) != 1 || ms[0].Match != "qwen3*" || len(ms[0].Options) != len(want) {
			t.Fatalf("models %+v", ms)
		}
		for i, o := range ms[0].Options {
			if o.Key != want[i].Key || o.Value != want[i].Value {
				t.Errorf("option %d: %+v; want %+v", i, o, want[i])
			}
		}
	}
	check(c)
	if c.ManifestRef() == plain.ManifestRef() {
		t.Error("the models are not part of the manifest's hash")
	}
	st := cas.NewMemory()
	if err := c.Nodes(func(_ cas.Ref, node []byte) error { _, err := st.Put(ctx, node); return err }); err != nil {
		t.Fatal(err)
	}
	back, err := schema.LoadFromCAS(ctx, st, c.ManifestRef(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if back.ManifestRef() != c.ManifestRef() {
		t.Fatal("the manifest does not load back to its hash")
	}
	// The options come back in key order (a node's map is sorted); their
	// values are the same.
	got := map[string]string{}
	for _, o := range back.Manifest.Models[0].Options {
		got[o.Key] = o.Value
	}
	for _, o := range want {
		if got[o.Key] != o.Value {
			t.Errorf("back: %s=%q; want %q", o.Key, got[o.Key], o.Value)
		}
	}
	for _, bad := range []string{`"models":{}`, `"models":[{"reasoning":true}]`, `"models":[{"match":"m","x":[1]}]`} {
		if _, err := schema.LoadSources([]schema.Source{{Name: "manifest.air.json", Data: []byte(base + "," + bad + "}")}}, nil); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestModuleLimitsRoundTrip: a defmodule's limits are part of its node, so
// they change the manifest's hash, and a catalog stored and loaded back
// from the store has them.
func TestModuleLimitsRoundTrip(t *testing.T) {
	air := func(limits string) []schema.Source {
		return []schema.Source{{Name: "w.air.json", Data: []byte(`[
  {"$kind": "defschema", "name": "demo/N@1", "type": {"nat": {}}},
  {"$kind": "defmodule", "name": "demo/A@1", "module_kind": "reducer",
   "abi": {"reducer": {"state": "demo/N@1", "event": "demo/N@1"}}` + limits + `},
  {"$kind": "manifest", "air_version": "1", "schemas": [{"name": "demo/N@1"}], "modules": [{"name": "demo/A@1"}],
   "routing": {"events": [{"event": "demo/N@1", "reducer": "demo/A@1"}]}}]`)}}
	}
	opts := &schema.LoadOptions{Reducers: []string{"demo/A@1"}}
	plain, err := schema.LoadSources(air(""), opts)
	if err != nil {
		t.Fatal(err)
	}
	c, err := schema.LoadSources(air(`, "limits": {"fuel": 5000000000, "memory_pages": 16}`), opts)
	if err != nil {
		t.Fatal(err)
	}
	if c.ManifestRef() == plain.ManifestRef() {
		t.Error("limits do not change the manifest's hash")
	}
	ctx := context.Background()
	st := cas.NewMemory()
	if err := c.Nodes(func(_ cas.Ref, node []byte) error { _, err := st.Put(ctx, node); return err }); err != nil {
		t.Fatal(err)
	}
	back, err := schema.LoadFromCAS(ctx, st, c.ManifestRef(), opts)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := back.Module("demo/A@1")
	if back.ManifestRef() != c.ManifestRef() || d.Limits != (schema.ModuleLimits{Fuel: 5_000_000_000, MemoryPages: 16}) {
		t.Errorf("loaded back: manifest %s (want %s), limits %+v", back.ManifestRef(), c.ManifestRef(), d.Limits)
	}
}
