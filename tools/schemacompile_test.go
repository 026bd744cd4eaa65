package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

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
	// The library's own compiler reads it: what the refusal prevents.
	c2 := jsonschema.NewCompiler()
	_ = c2.AddResource("mem:///tools/t.json", doc)
	if _, err := c2.Compile("mem:///tools/t.json"); err != nil {
		t.Fatalf("the default compiler no longer reads the file (%v): this test shows nothing", err)
	}
}
