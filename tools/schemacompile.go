package tools

import (
	"fmt"

	"github.com/demiurge-dev/demiurge/internal/jsonschema"
)

// NewSchemaCompiler returns the JSON Schema compiler of tool schemas: it
// refuses every external $ref, so compiling a schema never reads a file or
// the network (a tool schema comes from a server or a model-facing blob;
// the chat reducer compiles them, and a reducer may read nothing but its
// inputs). Tool schemas must be self-contained.
func NewSchemaCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.UseLoader(refuseExternal)
	return c
}

// refuseExternal refuses every external schema.
func refuseExternal(url string) (any, error) {
	return nil, fmt.Errorf("external schema %q not allowed: tool schemas must be self-contained", url)
}
