package tools

import (
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// NewSchemaCompiler returns the JSON Schema compiler of tool schemas: it
// refuses every external $ref, so compiling a schema never reads a file or
// the network (a tool schema comes from a server or a model-facing blob;
// the chat reducer compiles them, and a reducer may read nothing but its
// inputs). Tool schemas must be self-contained.
func NewSchemaCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	return c
}

// noLoader refuses every external schema.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema %q not allowed: tool schemas must be self-contained", url)
}
