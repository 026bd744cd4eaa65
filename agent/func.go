package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/bash"
)

// toolName is what a tool may be called: a name the model's API takes and
// a command of a bash script.
var toolName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`) })

// Func makes a tool of a Go function: the model calls it with a JSON
// object that decodes into In, and reads what it returns (a string as it
// is, any other Out as JSON). The input schema is inferred from In by
// github.com/google/jsonschema-go: a struct's exported fields are its
// properties, named by their json tags; a field is required unless its
// json tag says omitempty or omitzero; the jsonschema tag is the
// property's description (`jsonschema:"the city, e.g. Paris"`), nothing
// more. In is a struct (or a map): a tool's arguments are a JSON object.
// WithInputSchema replaces the inferred schema: it says what a tag cannot,
// such as an enum (see its example).
//
// An error fn returns goes back to the model as the call's stderr (exit
// status 1), so it can correct the call; so does a panic, which is
// recovered. Arguments that do not fit the schema never reach fn: the
// chat refuses the call first, saying why.
//
// A mistake in the definition is reported by Open: a bad name, a nil
// function, an input that is not a JSON object, a type the schema cannot
// describe, a given schema with a property In has no field for.
func Func[In, Out any](name, description string, fn func(ctx context.Context, in In) (Out, error), opts ...FuncOption) tools.Tool {
	t := &funcTool{info: info{name: name, description: description}}
	for _, o := range opts {
		o(&t.info)
	}
	if fn == nil {
		t.err = fmt.Errorf("tool %s: nil function", name)
	}
	if t.schema != nil && t.err == nil {
		t.err = fitsStruct[In](name, t.schema)
	}
	if t.schema == nil && t.err == nil {
		s, err := jsonschema.For[In](nil)
		if err != nil {
			t.err = fmt.Errorf("tool %s: infer the input schema: %w (the jsonschema tag is a property's description only; for an enum, a pattern or a type it cannot describe, give the schema with WithInputSchema)", name, err)
		} else if b, err := json.Marshal(s); err != nil {
			t.err = fmt.Errorf("tool %s: encode the input schema: %w", name, err)
		} else {
			t.schema = b
		}
	}
	t.run = func(ctx context.Context, args []byte) (string, error) {
		var in In
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return "", fmt.Errorf("the arguments do not decode: %w", err)
		}
		out, err := fn(ctx, in)
		if err != nil {
			return "", err
		}
		if s, ok := any(out).(string); ok {
			return s, nil
		}
		b, err := json.Marshal(out)
		if err != nil {
			return "", fmt.Errorf("encode the result: %w", err)
		}
		return string(b), nil
	}
	return t.describe()
}

// fitsStruct reports a property of the given schema that a struct In has
// no field for: the call's arguments would never decode into In.
func fitsStruct[In any](name string, schema json.RawMessage) error {
	var in In
	if reflect.TypeOf(&in).Elem().Kind() != reflect.Struct {
		return nil
	}
	inferred, err := jsonschema.For[In](nil)
	if err != nil {
		return nil // a field the schema cannot describe: the given one does
	}
	var given struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &given) != nil {
		return nil // check says it is not JSON
	}
	for _, p := range slices.Sorted(maps.Keys(given.Properties)) {
		if _, ok := inferred.Properties[p]; !ok {
			return fmt.Errorf("tool %s: the input schema (WithInputSchema) has the property %q, which the input type %T has no field for (its json tags name %s): a call with it would not decode", name, p, in, strings.Join(slices.Sorted(maps.Keys(inferred.Properties)), ", "))
		}
	}
	return nil
}

// FromDef makes a tool of a command definition and its callback, the
// form the bash tool's commands are written in (package tools/bash):
// def.InputSchema is the tool's input schema, and the callback receives
// the call's arguments as ToolArgs.Params (integers as int64, other
// numbers as float64). An error the callback returns goes back to the
// model (a *bash.UserError with its exit status).
func FromDef(def bash.ToolDef, fn bash.ToolCallback) tools.Tool {
	t := &funcTool{info: info{name: def.Name, description: def.Description, schema: def.InputSchema}}
	if len(t.schema) == 0 {
		t.schema = json.RawMessage(`{"type":"object"}`)
	}
	if fn == nil {
		t.err = fmt.Errorf("tool %s: nil callback", def.Name)
	}
	t.run = func(ctx context.Context, args []byte) (string, error) {
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.UseNumber()
		var params map[string]any
		if err := dec.Decode(&params); err != nil {
			return "", fmt.Errorf("the arguments are not a JSON object: %w", err)
		}
		return fn(ctx, bash.ToolArgs{Params: numbers(params).(map[string]any)})
	}
	return t.describe()
}

// numbers turns the json.Numbers in v into int64 (integers) and float64.
func numbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		for k, x := range v {
			v[k] = numbers(x)
		}
		if v == nil {
			return map[string]any{}
		}
		return v
	case []any:
		for i, x := range v {
			v[i] = numbers(x)
		}
	}
	return v
}

// A FuncOption configures a tool made by Func.
type FuncOption func(*info)

// WithInputSchema gives the tool's input JSON Schema instead of the one
// inferred from its input type.
func WithInputSchema(schema json.RawMessage) FuncOption {
	return func(i *info) { i.schema = schema }
}

// WithHelp gives the tool's man-page help (default: its description).
func WithHelp(text string) FuncOption { return func(i *info) { i.help = text } }

// info is what describes a tool.
type info struct {
	name, description, help string
	schema                  json.RawMessage
}

// funcTool is a tool that runs a Go function.
type funcTool struct {
	info
	desc tools.Info
	run  func(ctx context.Context, args []byte) (string, error)
	err  error // the definition's mistake, reported by Open
}

var _ tools.Tool = (*funcTool)(nil)

// Info implements tools.Tool.
func (t *funcTool) Info() tools.Info { return t.desc }

// describe fills in the tool's Info, once its definition is complete.
func (t *funcTool) describe() *funcTool {
	help := t.help
	if help == "" {
		help = "NAME\n    " + t.name + " - " + t.description + "\n"
	}
	t.desc = tools.Info{
		Name:             t.name,
		ShortDescription: t.description,
		Description:      t.description,
		Help:             help,
		SystemPrompt:     t.name + ": " + t.description,
		InputSchema:      t.schema,
		OutputSchema:     json.RawMessage(`{}`),
		Version:          "1",
	}
	return t
}

// Run implements tools.Tool: it runs the function, turning an error or a
// panic into a failed response the model reads.
func (t *funcTool) Run(ctx context.Context, req tools.Request, status tools.StatusFunc) (resp tools.Response) {
	if t.err != nil {
		return tools.Response{Stderr: t.err.Error(), ExitCode: 1, Error: "internal"}
	}
	args := req.Arguments
	if len(bytes.TrimSpace(args)) == 0 {
		args = []byte("{}")
	}
	defer func() {
		if p := recover(); p != nil {
			resp = tools.Response{Stderr: fmt.Sprintf("%s: the tool failed: panic: %v", t.name, p), ExitCode: 1, Error: "internal"}
		}
	}()
	out, err := t.run(ctx, args)
	if err != nil {
		code := 1
		var ue *bash.UserError
		if errors.As(err, &ue) && ue.Code > 0 && ue.Code < 126 {
			code = ue.Code
		}
		if ctx.Err() != nil {
			return tools.Response{Stdout: out, Stderr: t.name + ": " + err.Error(), ExitCode: 124, Error: "timeout"}
		}
		return tools.Response{Stdout: out, Stderr: t.name + ": " + err.Error(), ExitCode: code, Error: "failed"}
	}
	return tools.Response{Stdout: out}
}

// check reports a mistake in the tool's definition.
func (t *funcTool) check() error {
	if t.err != nil {
		return t.err
	}
	if !toolName().MatchString(t.name) {
		return fmt.Errorf("tool %q: a tool name is 1 to 64 of A-Z a-z 0-9 _ -, not starting with a digit or -", t.name)
	}
	if t.description == "" {
		return fmt.Errorf("tool %s: no description: the model chooses tools by theirs", t.name)
	}
	var schema struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(t.schema, &schema); err != nil {
		return fmt.Errorf("tool %s: the input schema is not a JSON object: %w", t.name, err)
	}
	if schema.Type != nil && schema.Type != "object" {
		return fmt.Errorf("tool %s: the input schema's type is %v, not \"object\": a tool's arguments are a JSON object, so its input type is a struct (or a map), or its schema (WithInputSchema) says {\"type\": \"object\", ...}", t.name, schema.Type)
	}
	return nil
}
