package workspace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/demiurge-dev/demiurge/internal/jsonschema"
	"github.com/demiurge-dev/demiurge/tools"
)

// compile compiles a tool's input schema; it panics on a bad schema (a
// programmer error: the schemas are constants of this package).
func compile(name string, raw json.RawMessage) *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		panic(fmt.Sprintf("workspace: input schema of %s: %v", name, err))
	}
	c := tools.NewSchemaCompiler()
	url := "mem:///tools/" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		panic(fmt.Sprintf("workspace: input schema of %s: %v", name, err))
	}
	sch, err := c.Compile(url)
	if err != nil {
		panic(fmt.Sprintf("workspace: input schema of %s: %v", name, err))
	}
	return sch
}

// args are a call's arguments, validated against the tool's input schema.
type args map[string]any

// parseArgs parses and validates a call's arguments. Empty arguments are
// an empty object.
func parseArgs(sch *jsonschema.Schema, raw []byte) (args, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("the arguments are not JSON: %v", err)
	}
	if err := sch.Validate(doc); err != nil {
		return nil, fmt.Errorf("the arguments do not fit the input schema: %s", tools.SchemaErrorText(err))
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the arguments must be a JSON object")
	}
	return args(m), nil
}

func (a args) str(name, def string) string {
	if s, ok := a[name].(string); ok {
		return s
	}
	return def
}

func (a args) has(name string) bool {
	_, ok := a[name]
	return ok
}

func (a args) boolean(name string) bool {
	b, _ := a[name].(bool)
	return b
}

// uint reads a non-negative integer argument (the schema checked it is an
// integer ≥ 0); ok is false when it is absent.
func (a args) uint(name string) (v uint64, ok bool, err error) {
	x, present := a[name]
	if !present {
		return 0, false, nil
	}
	n, isNum := x.(json.Number)
	if !isNum {
		return 0, false, fmt.Errorf("%s must be an integer", name)
	}
	if u, err := strconv.ParseUint(n.String(), 10, 64); err == nil {
		return u, true, nil
	}
	f, err := strconv.ParseFloat(n.String(), 64)
	if err != nil || f < 0 || f != math.Trunc(f) || f >= math.MaxUint64 {
		return 0, false, fmt.Errorf("%s must be an integer from 0 to %d, not %s", name, uint64(math.MaxUint64), n)
	}
	return uint64(f), true, nil
}
