package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
)

// TestModuleFiles loads a world whose reducer is a WASM module beside the
// manifest, named as AgentOS's CLI names it, in each way a defmodule can
// name it.
func TestModuleFiles(t *testing.T) {
	code := []byte("\x00asm\x01\x00\x00\x00 not really a module: the loader only hashes it")
	other := []byte("\x00asm\x01\x00\x00\x00 another")
	sha := sha256.Sum256(code)
	shaHex := hex.EncodeToString(sha[:])
	b3 := cas.Sum(code)
	b3d := b3.Digest()
	manifest := `{"$kind": "manifest", "air_version": "1", "schemas": [{"name": "t/S@1"}], "modules": [{"name": "t/Counter@1"}],
		"plans": [], "effects": [], "caps": [], "policies": [],
		"routing": {"events": [{"event": "t/S@1", "reducer": "t/Counter@1"}], "inboxes": []}, "triggers": []}`
	schemas := `[{"$kind": "defschema", "name": "t/S@1", "type": {"nat": {}}}]`
	module := func(hash string) string {
		h := ""
		if hash != "" {
			h = `"wasm_hash": "` + hash + `", `
		}
		return `{"$kind": "defmodule", "name": "t/Counter@1", "module_kind": "reducer", ` + h +
			`"abi": {"reducer": {"state": "t/S@1", "event": "t/S@1", "effects_emitted": [], "cap_slots": {}}}}`
	}
	for _, tc := range []struct {
		name     string
		hash     string            // the defmodule's wasm_hash
		files    map[string][]byte // under modules/t/
		reducers []string          // Go reducers; nil: none
		wantErr  string            // "" for success
		wantCode bool              // the catalog holds the code
	}{
		{"no hash, one file", "", map[string][]byte{"Counter@1-" + shaHex + ".wasm": code}, nil, "", true},
		{"no hash, named by BLAKE3", "", map[string][]byte{"Counter@1-" + hex.EncodeToString(b3d[:]) + ".wasm": code}, nil, "", true},
		{"sha256 hash", "sha256:" + shaHex, map[string][]byte{"Counter@1-" + shaHex + ".wasm": code}, nil, "", true},
		{"zero placeholder", "sha256:" + strings.Repeat("0", 64), map[string][]byte{"Counter@1-" + shaHex + ".wasm": code}, nil, "", true},
		{"blake3 in the store", b3.String(), nil, nil, "", false},
		{"sha256 of other bytes", "sha256:" + shaHex, map[string][]byte{"Counter@1-" + shaHex + ".wasm": other}, nil, "hashes to sha256:", false},
		{"named for another hash", "", map[string][]byte{"Counter@1-" + shaHex + ".wasm": other}, nil, "is named for hash " + shaHex, false},
		{"two candidates", "", map[string][]byte{"Counter@1-" + shaHex + ".wasm": code, "Counter@1-" + strings.Repeat("a", 64) + ".wasm": other}, nil, "2 files could be its code", false},
		{"no file for the hash", "sha256:" + strings.Repeat("b", 64), nil, nil, "no file modules/t/Counter@1-bbbb", false},
		{"none at all", "", nil, nil, "has no WASM module and no Go reducer", false},
		{"a Go reducer: the module is still recorded", "", map[string][]byte{"Counter@1-" + shaHex + ".wasm": code}, []string{"t/Counter@1"}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range map[string]string{"manifest.air.json": manifest, "schemas.air.json": schemas, "module.air.json": module(tc.hash)} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.MkdirAll(filepath.Join(dir, ModulesDir, "t"), 0o755); err != nil {
				t.Fatal(err)
			}
			for name, data := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, ModulesDir, "t", name), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			reducers := tc.reducers
			if reducers == nil {
				reducers = []string{}
			}
			c, err := Load(dir, &LoadOptions{Reducers: reducers, WASM: true})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Load: %v; want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			def, _ := c.Module("t/Counter@1")
			if tc.wantCode {
				if def.WasmHash != b3.String() {
					t.Errorf("wasm_hash = %s; want the module's BLAKE3 %s", def.WasmHash, b3)
				}
				got, ok := c.Code(b3)
				if !ok || string(got) != string(code) {
					t.Error("the catalog does not hold the module's code")
				}
				stored := false
				_ = c.Nodes(func(r cas.Ref, b []byte) error {
					stored = stored || r == b3
					return nil
				})
				if !stored {
					t.Error("Nodes does not give the module's code to store")
				}
			}
		})
	}
}
