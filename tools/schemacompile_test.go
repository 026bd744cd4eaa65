package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/internal/jsonschema"
	"github.com/demiurge-dev/demiurge/tools"
)

// TestSchemaCompilerReadsNoFile: a tool schema that refers to a file (here
// one that exists and is a valid schema) does not compile, so compiling
// tool schemas never reads the host.
func TestSchemaCompilerReadsNoFile(t *testing.T) {
	ext := filepath.Join(t.TempDir(), "ext.json")
	if err := os.WriteFile(ext, []byte(`{"type": "string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(`{"type": "object", "properties": {"p": {"$ref": "file://` + ext + `"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	c := tools.NewSchemaCompiler()
	if err := c.AddResource("mem:///tools/t.json", doc); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile("mem:///tools/t.json"); err == nil || !strings.Contains(err.Error(), "not allowed") {
		t.Fatalf("compile = %v; want the external schema refused", err)
	}
	// A compiler whose loader reads files compiles it: the refusal is
	// the tool compiler's loader, not a broken reference.
	c2 := jsonschema.NewCompiler()
	c2.UseLoader(func(u string) (any, error) {
		f, err := os.Open(strings.TrimPrefix(u, "file://"))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return jsonschema.UnmarshalJSON(f)
	})
	_ = c2.AddResource("mem:///tools/t.json", doc)
	if _, err := c2.Compile("mem:///tools/t.json"); err != nil {
		t.Fatalf("a compiler that reads files cannot compile it (%v): this test shows nothing", err)
	}
}
