package tools_test

import (
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/internal/jsonschema"
	"github.com/demiurge-dev/demiurge/tools"
)

// TestSchemaErrorTextStable: an instance with several properties the
// schema does not allow gives the same text on every run (the validator
// lists them in map order), as the chat reducer journals it.
func TestSchemaErrorTextStable(t *testing.T) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(`{"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"], "additionalProperties": false}`))
	if err != nil {
		t.Fatal(err)
	}
	c := tools.NewSchemaCompiler()
	if err := c.AddResource("mem:///tools/t.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("mem:///tools/t.json")
	if err != nil {
		t.Fatal(err)
	}
	const want = "at /: additional properties 'a', 'b', 'c', 'd', 'e', 'f' not allowed; at /path: got number, want string"
	for range 50 {
		inst := map[string]any{"path": 1.0, "f": 1.0, "e": 1.0, "d": 1.0, "c": 1.0, "b": 1.0, "a": 1.0}
		if got := tools.SchemaErrorText(sch.Validate(inst)); got != want {
			t.Fatalf("SchemaErrorText = %q; want %q", got, want)
		}
	}
}
