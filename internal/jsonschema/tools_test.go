package jsonschema_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/internal/jsonschema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/introspect"
	"github.com/demiurge-dev/demiurge/tools/workspace"
)

// toolSchemas gathers the schemas tools have: the project's own tools'
// input and output schemas, the tool specs and arguments the recorded
// sessions journal (testdata/sessions, examples), and the schemas of the
// real MCP servers tools/mcp's interop tests run
// (testdata/mcp-servers.json: tools/list of
// @modelcontextprotocol/server-everything and server-filesystem
// 2026.8.31, the versions tools/mcp/testdata/npm pins).
func toolSchemas(t *testing.T) (map[string]any, []any) {
	schemas := map[string]any{}
	add := func(name string, raw []byte) {
		if len(bytes.TrimSpace(raw)) == 0 {
			return
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		schemas[name] = doc
	}
	var own []tools.Tool
	own = append(own, workspace.Tools(nil)...)
	own = append(own, introspect.Tools(nil, nil)...)
	for _, tl := range own {
		info := tl.Info()
		add(info.Name+" input", info.InputSchema)
		add(info.Name+" output", info.OutputSchema)
	}

	data, err := os.ReadFile("testdata/mcp-servers.json")
	if err != nil {
		t.Fatal(err)
	}
	var servers map[string][]struct {
		Name         string          `json:"name"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	if err := json.Unmarshal(data, &servers); err != nil {
		t.Fatal(err)
	}
	for server, list := range servers {
		for _, tl := range list {
			add(server+" "+tl.Name+" input", tl.InputSchema)
			add(server+" "+tl.Name+" output", tl.OutputSchema)
		}
	}

	// The recorded sessions' blobs: tool specs sent to models, and the
	// arguments models sent.
	var args []any
	for _, root := range []string{"../../testdata/sessions", "../../examples"} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Base(filepath.Dir(p)) != "blobs" {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				return nil // not JSON
			}
			walkJSON(v, func(key string, v any) {
				switch key {
				case "parameters", "input_schema", "inputSchema":
					if obj, ok := v.(map[string]any); ok {
						raw, _ := json.Marshal(obj)
						add("session "+string(raw), raw)
					}
				case "arguments":
					if s, ok := v.(string); ok {
						if a, err := jsonschema.UnmarshalJSON(strings.NewReader(s)); err == nil {
							args = append(args, a)
						}
					}
				}
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return schemas, args
}

func walkJSON(v any, f func(key string, v any)) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			f(k, e)
			walkJSON(e, f)
		}
	case []any:
		for _, e := range v {
			walkJSON(e, f)
		}
	}
}

// argumentsFor makes argument objects for a tool schema: empty, with its
// properties of random values (right and wrong types), with an unknown
// property, and the recorded arguments.
func argumentsFor(g *gen, schema any, recorded []any) []any {
	out := []any{map[string]any{}, nil, "x", []any{}}
	props, _ := schema.(map[string]any)["properties"].(map[string]any)
	var names []string
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names)
	for range 12 {
		obj := map[string]any{}
		for _, n := range names {
			if g.chance(0.7) {
				obj[n] = g.value(2)
			}
		}
		if g.chance(0.2) {
			obj[g.pick(genNames)] = g.value(1)
		}
		out = append(out, obj)
	}
	return append(out, recorded...)
}

func TestDifferentialToolSchemas(t *testing.T) {
	schemas, recorded := toolSchemas(t)
	var names []string
	for n := range schemas {
		names = append(names, n)
	}
	slices.Sort(names)
	g := &gen{r: rand.New(rand.NewPCG(5, 6))}
	var st stats
	for _, n := range names {
		compare(t, n, schemas[n], argumentsFor(g, schemas[n], recorded), &st)
	}
	if st.schemas < 40 {
		t.Errorf("only %d tool schemas found", st.schemas)
	}
	t.Logf("tool schemas: %d (%d refused by both), %d instances (%d invalid); %d recorded arguments",
		st.schemas, st.compileErrs, st.instances, st.invalid, len(recorded))
}
