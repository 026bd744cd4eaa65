package bash

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/demiurge-dev/demiurge/internal/jsonschema"
	"github.com/demiurge-dev/demiurge/internal/jsonschema/kind"
	"github.com/demiurge-dev/demiurge/tools"
)

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
	// Compiled once per process for each tool name and schema: every
	// world of the process builds its shell from the same tools.
	sch, err := tools.CompileSchema("mem:///tools/"+toolName+".json", raw)
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

// validateParams checks params against sch (or its fast form, when not
// nil) and returns a one-line message in bashkit's words ("required
// property 'id' is missing", "input.id must be integer", ...), or "" when
// params are valid.
func validateParams(sch *jsonschema.Schema, fast *fastSchema, params map[string]any) string {
	if fast != nil {
		return fast.validate(params)
	}
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
// leaf or a oneOf/anyOf node (whose branches all failed). The first is the
// least by instance path; among the errors of one place a missing required
// property first (as the fast validator reports it); then by keyword path,
// then by message. The validator lists the causes of a properties or
// propertyNames keyword in map order, so "the first" as it lists them
// would change from run to run when two of them fail.
func leafError(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	for {
		switch e.ErrorKind.(type) {
		case *kind.OneOf, *kind.AnyOf:
			return e
		}
		if len(e.Causes) == 0 {
			return e
		}
		e = slices.MinFunc(e.Causes, compareCauses)
	}
}

// compareCauses orders the causes of a validation error for leafError.
func compareCauses(a, b *jsonschema.ValidationError) int {
	required := func(e *jsonschema.ValidationError) int {
		if _, ok := e.ErrorKind.(*kind.Required); ok {
			return 0
		}
		return 1
	}
	return cmp.Or(slices.Compare(a.InstanceLocation, b.InstanceLocation),
		cmp.Compare(required(a), required(b)),
		slices.Compare(a.ErrorKind.KeywordPath(), b.ErrorKind.KeywordPath()),
		strings.Compare(a.Error(), b.Error()))
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
		return fmt.Sprintf("%srequired property '%s' is missing", prefix, slices.Min(k.Missing))
	case *kind.Type:
		return fmt.Sprintf("%s must be %s", at, strings.Join(k.Want, " or "))
	case *kind.Enum:
		return fmt.Sprintf("%s is not an allowed value; allowed: %s", at, allowedValues(k.Want))
	case *kind.Const:
		return fmt.Sprintf("%s is not an allowed value; allowed: %s", at, allowedValues([]any{k.Want}))
	case *kind.AdditionalProperties:
		return fmt.Sprintf("unknown property '%s'", slices.Min(k.Properties)) // stable: the list is in map order
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

// fastSchema validates the common shape of tool schemas — an object of
// scalar properties, required names, optional enums and
// additionalProperties:false — without the general validator, with the
// same messages. newFastSchema returns nil for anything else.
type fastSchema struct {
	props    map[string]fastProp
	names    []string // sorted property names, for a stable order
	required []string
	closed   bool
}

type fastProp struct {
	typ  string // integer, number, string, boolean
	enum []any  // nil: any value
}

var (
	fastTopKeys  = map[string]bool{"type": true, "properties": true, "required": true, "additionalProperties": true, "description": true, "title": true, "$schema": true, "examples": true}
	fastPropKeys = map[string]bool{"type": true, "description": true, "title": true, "enum": true, "default": true, "examples": true}
)

func newFastSchema(doc schemaNode) *fastSchema {
	for k := range doc {
		if !fastTopKeys[k] {
			return nil
		}
	}
	if t, ok := doc["type"]; ok && t != "object" {
		return nil
	}
	fs := &fastSchema{props: map[string]fastProp{}}
	switch ap := doc["additionalProperties"].(type) {
	case nil:
	case bool:
		fs.closed = !ap
	default:
		return nil
	}
	if req, ok := doc["required"]; ok {
		list, ok := req.([]any)
		if !ok {
			return nil
		}
		for _, r := range list {
			s, ok := r.(string)
			if !ok {
				return nil
			}
			fs.required = append(fs.required, s)
		}
	}
	props, _ := doc["properties"].(map[string]any)
	if _, ok := doc["properties"]; ok && props == nil {
		return nil
	}
	for name, p := range props {
		pm, ok := p.(map[string]any)
		if !ok {
			return nil
		}
		for k := range pm {
			if !fastPropKeys[k] {
				return nil
			}
		}
		typ, _ := pm["type"].(string)
		switch typ {
		case "integer", "number", "string", "boolean":
		default:
			return nil
		}
		fp := fastProp{typ: typ}
		if e, ok := pm["enum"]; ok {
			list, ok := e.([]any)
			if !ok {
				return nil
			}
			for _, v := range list {
				switch v.(type) {
				case string, float64, bool:
				default:
					return nil
				}
			}
			fp.enum = list
		}
		fs.props[name] = fp
		fs.names = append(fs.names, name)
	}
	slices.Sort(fs.names)
	return fs
}

// validate returns the message of the first problem, or "".
func (fs *fastSchema) validate(params map[string]any) string {
	var missing []string
	for _, r := range fs.required {
		if _, ok := params[r]; !ok {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("required property '%s' is missing", slices.Min(missing))
	}
	if fs.closed {
		var unknown []string
		for k := range params {
			if _, ok := fs.props[k]; !ok {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			slices.Sort(unknown)
			return fmt.Sprintf("unknown property '%s'", unknown[0])
		}
	}
	for _, name := range fs.names {
		v, ok := params[name]
		if !ok {
			continue
		}
		p := fs.props[name]
		if !fastTypeOK(p.typ, v) {
			return fmt.Sprintf("input.%s must be %s", name, p.typ)
		}
		if p.enum != nil && !slices.ContainsFunc(p.enum, func(e any) bool { return fastEqual(e, v) }) {
			return fmt.Sprintf("input.%s is not an allowed value; allowed: %s", name, allowedValues(p.enum))
		}
	}
	return ""
}

func fastTypeOK(typ string, v any) bool {
	switch typ {
	case "integer":
		switch x := v.(type) {
		case int64:
			return true
		case float64:
			return x == math.Trunc(x) && !math.IsInf(x, 0)
		}
	case "number":
		switch v.(type) {
		case int64, float64:
			return true
		}
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	}
	return false
}

// fastEqual compares an enum value (as decoded from the schema: float64,
// string, bool) with a parameter.
func fastEqual(e, v any) bool {
	switch x := v.(type) {
	case int64:
		f, ok := e.(float64)
		return ok && f == float64(x)
	default:
		return e == v
	}
}

// allowedValues lists an enum's values as JSON, comma separated.
func allowedValues(vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		b, err := json.Marshal(v)
		if err != nil {
			b = []byte(fmt.Sprint(v))
		}
		parts[i] = string(b)
	}
	return strings.Join(parts, ", ")
}
