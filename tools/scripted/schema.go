package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// noLoader refuses every external $ref: tool schemas must be
// self-contained, and compiling one never reads a file or the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema %q not allowed: tool schemas must be self-contained", url)
}

// compileSchema compiles a tool's input schema. It returns nil (no
// validation) for an empty schema.
func compileSchema(toolName string, raw json.RawMessage) (*jsonschema.Schema, schemaNode, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, nil, fmt.Errorf("input schema is not JSON: %w", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, nil, errors.New("input schema must be a JSON object")
	}
	if len(obj) == 0 {
		return nil, nil, nil
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	url := "mem:///tools/" + toolName + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, nil, fmt.Errorf("input schema: %w", err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, nil, fmt.Errorf("input schema: %w", err)
	}
	// The flag parser reads a plain decoding (numbers as float64 are fine
	// there: it only looks at types and structure).
	var plain map[string]any
	if err := json.Unmarshal(raw, &plain); err != nil {
		return nil, nil, fmt.Errorf("input schema: %w", err)
	}
	return sch, plain, nil
}

// validateParams checks params against sch and returns a one-line
// message in bashkit's words ("required property 'id' is missing",
// "input.id must be integer", ...), or "" when params are valid.
func validateParams(sch *jsonschema.Schema, params map[string]any) string {
	if sch == nil {
		return ""
	}
	// jsonschema wants []any / map[string]any / numbers / strings / bools,
	// which is what params holds.
	err := sch.Validate(any(params))
	if err == nil {
		return ""
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	return describeValidation(leafError(ve))
}

// leafError picks the most specific error: the first cause, down to a
// leaf or a oneOf/anyOf node (whose branches all failed).
func leafError(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	for {
		switch e.ErrorKind.(type) {
		case *kind.OneOf, *kind.AnyOf:
			return e
		}
		if len(e.Causes) == 0 {
			return e
		}
		e = e.Causes[0]
	}
}

func instancePath(loc []string) string {
	var b strings.Builder
	b.WriteString("input")
	for _, tok := range loc {
		if _, err := strconv.Atoi(tok); err == nil {
			b.WriteString("[" + tok + "]")
		} else {
			b.WriteString("." + tok)
		}
	}
	return b.String()
}

func describeValidation(e *jsonschema.ValidationError) string {
	at := instancePath(e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		prefix := ""
		if len(e.InstanceLocation) > 0 {
			prefix = at + ": "
		}
		return fmt.Sprintf("%srequired property '%s' is missing", prefix, k.Missing[0])
	case *kind.Type:
		return fmt.Sprintf("%s must be %s", at, strings.Join(k.Want, " or "))
	case *kind.Enum, *kind.Const:
		return fmt.Sprintf("%s is not an allowed value", at)
	case *kind.AdditionalProperties:
		return fmt.Sprintf("unknown property '%s'", k.Properties[0])
	case *kind.OneOf, *kind.AnyOf:
		kw := "oneOf"
		if _, ok := k.(*kind.AnyOf); ok {
			kw = "anyOf"
		}
		return fmt.Sprintf("%s does not match any %s branch", at, kw)
	}
	msg := e.Error()
	// ValidationError.Error() starts with "jsonschema validation failed
	// with '<url>'\n- at '<loc>': <msg>"; keep the last line's message.
	if i := strings.LastIndex(msg, "': "); i >= 0 {
		msg = msg[i+3:]
	}
	return at + ": " + msg
}
