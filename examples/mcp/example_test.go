// Package mcp_test checks the example world: it is examples/demiurge with
// MCP servers.
package mcp_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestSameAgentAsDemiurge keeps the example's AIR files equal to those of
// examples/demiurge, except the manifest, which adds the servers.
func TestSameAgentAsDemiurge(t *testing.T) {
	files, err := filepath.Glob("*.air.json")
	if err != nil {
		t.Fatal(err)
	}
	theirs, _ := filepath.Glob(filepath.Join("..", "demiurge", "*.air.json"))
	if len(files) != len(theirs) {
		t.Errorf("%d AIR files here, %d in examples/demiurge", len(files), len(theirs))
	}
	for _, f := range files {
		if f == "manifest.air.json" {
			continue
		}
		ours, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("..", "demiurge", f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if !bytes.Equal(ours, want) {
			t.Errorf("%s differs from examples/demiurge/%s: copy it again", f, f)
		}
	}
}

// TestManifestAddsOnlyServers checks that the manifest is examples/demiurge's
// with mcp_servers and the mcp grant narrowed to them.
func TestManifestAddsOnlyServers(t *testing.T) {
	read := func(path string) map[string]any {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return m
	}
	ours, theirs := read("manifest.air.json"), read(filepath.Join("..", "demiurge", "manifest.air.json"))
	servers, ok := ours["mcp_servers"].([]any)
	if !ok || len(servers) == 0 {
		t.Fatal("no mcp_servers")
	}
	delete(ours, "mcp_servers")
	mcpGrant := func(m map[string]any) map[string]any {
		for _, g := range m["defaults"].(map[string]any)["cap_grants"].([]any) {
			if g := g.(map[string]any); g["name"] == "mcp" {
				return g
			}
		}
		t.Fatal("no mcp grant")
		return nil
	}
	mcpGrant(ours)["params"] = mcpGrant(theirs)["params"]
	if !reflect.DeepEqual(ours, theirs) {
		t.Error("manifest.air.json differs from examples/demiurge's by more than mcp_servers and the mcp grant's params")
	}
}
