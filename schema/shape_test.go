package schema

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/demiurge-dev/demiurge/internal/jsonschema"
)

// airShapes compiles AgentOS's JSON Schemas for AIR nodes, relaxed where
// AgentOS's own examples are: the authoring form may omit manifest hashes
// and wasm_hash (the loader fills them), hashes may be blake3, and
// references may start at @event (a known omission of the pattern).
func airShapes(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	dir := filepath.Join(AgentOSDir(t), "spec", "schemas")
	files, _ := filepath.Glob(filepath.Join(dir, "*.schema.json"))
	c := jsonschema.NewCompiler()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		relax(doc)
		if err := c.AddResource("https://aos.dev/air/v1/"+filepath.Base(f), doc); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string]*jsonschema.Schema{}
	for _, kind := range []string{KindDefSchema, KindDefModule, KindDefPlan, KindDefCap, KindDefPolicy, KindDefSecret, KindDefEffect, KindManifest} {
		sch, err := c.Compile("https://aos.dev/air/v1/" + kind + ".schema.json")
		if err != nil {
			t.Fatalf("compile %s: %v", kind, err)
		}
		out[kind] = sch
	}
	return out
}

// relax edits AgentOS's node schemas in place (see airShapes).
func relax(v any) {
	switch v := v.(type) {
	case map[string]any:
		if req, ok := v["required"].([]any); ok {
			var keep []any
			for _, r := range req {
				if r != "hash" && r != "wasm_hash" {
					keep = append(keep, r)
				}
			}
			v["required"] = keep
		}
		if p, ok := v["pattern"].(string); ok {
			switch {
			case p == "^sha256:[0-9a-f]{64}$":
				v["pattern"] = "^(sha256|blake3):[0-9a-f]{64}$"
			case strings.HasPrefix(p, "^@(plan"):
				v["pattern"] = "^@(event(\\.[A-Za-z_$][A-Za-z0-9_.$-]*)*$|" + p[len("^@("):]
			}
		}
		for _, e := range v {
			relax(e)
		}
	case []any:
		for _, e := range v {
			relax(e)
		}
	}
}

// ourAIR returns the AIR files this project writes that must load: the
// examples, and the valid worlds of testdata/load.
func ourAIR(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	matches, _ := filepath.Glob("../examples/*/*.air.json")
	more, _ := filepath.Glob("../examples/*/manifest.air")
	for _, f := range append(matches, more...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		files[f] = data
	}
	archives, _ := filepath.Glob("testdata/load/ok_*.txtar")
	for _, a := range archives {
		ar, err := txtar.ParseFile(a)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range ar.Files {
			if strings.HasSuffix(f.Name, ".air.json") || f.Name == "manifest.air" {
				files[a+":"+f.Name] = f.Data
			}
		}
	}
	return files
}

// TestOurAIRShape checks the AIR files we write against AgentOS's node
// JSON Schemas: what we write, AgentOS could read.
func TestOurAIRShape(t *testing.T) {
	shapes := airShapes(t)
	files := ourAIR(t)
	if len(files) == 0 {
		t.Fatal("no AIR files found")
	}
	for name, data := range files {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		defs, ok := doc.([]any)
		if !ok {
			defs = []any{doc}
		}
		for i, d := range defs {
			m, _ := d.(map[string]any)
			kind, _ := m["$kind"].(string)
			// mcp_servers is demiurge's extension of the manifest; AgentOS
			// knows nothing of it.
			delete(m, "mcp_servers")
			sch, ok := shapes[kind]
			if !ok {
				t.Errorf("%s: def %d has $kind %q", name, i, kind)
				continue
			}
			if err := sch.Validate(d); err != nil {
				js, _ := json.Marshal(m["name"])
				t.Errorf("%s: def %d (%s %s) does not fit AgentOS's %s schema:\n%v", name, i, kind, js, kind, err)
			}
		}
	}
}

// TestAIRShapeCatchesBadDefs keeps TestOurAIRShape honest: the relaxed
// schemas still reject malformed defs.
func TestAIRShapeCatchesBadDefs(t *testing.T) {
	shapes := airShapes(t)
	for _, tc := range []struct{ kind, js string }{
		{KindDefSchema, `{"$kind":"defschema","name":"demo/A@1"}`},
		{KindDefSchema, `{"$kind":"defschema","name":"demo/A@1","type":{"strng":{}}}`},
		{KindDefPlan, `{"$kind":"defplan","name":"demo/p@1","input":"demo/A@1","steps":[{"id":"x","op":"jump"}]}`},
		{KindManifest, `{"$kind":"manifest","air_version":"1","schemas":[{"hash":"blake3:00"}],"modules":[],"plans":[],"effects":[],"caps":[],"policies":[]}`},
	} {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.js))
		if err != nil {
			t.Fatal(err)
		}
		if err := shapes[tc.kind].Validate(doc); err == nil {
			t.Errorf("%s passed the shape check", tc.js)
		}
	}
}
