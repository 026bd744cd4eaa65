package bash

import (
	"context"
	"encoding/json"
	"errors"
	"math"
)

// ToolDef describes one tool command of a bash tool.
type ToolDef struct {
	// Name is the command's name in scripts: letters, digits, '_', '-' and
	// '.', starting with a letter or '_'; not a shell keyword or builtin,
	// not a sandbox utility, not starting with "__sbx".
	Name string `json:"name"`
	// Description is one line shown in the prompt, help and discover.
	Description string `json:"description"`
	// InputSchema is a JSON Schema object for the command's flags. It
	// drives flag coercion (--id 42 becomes a number when "id" is an
	// integer) and validation before the callback runs. nil or empty means
	// no schema: every flag value is a string and nothing is validated.
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// Tags and Category group tools for `discover`.
	Tags     []string `json:"tags,omitempty"`
	Category string   `json:"category,omitempty"`
	// Stdin says that the tool reads piped input (`echo x | tool`). When
	// false the tool never reads its standard input, which is then left
	// to the next command (a tool inside `while read` does not eat the
	// loop's input).
	Stdin bool `json:"stdin,omitempty"`
}

// ToolArgs are the arguments of one tool call.
type ToolArgs struct {
	// Params holds the parsed flags, coerced by the input schema: string,
	// bool, int64 (integers), float64 (other numbers), nil, []any and
	// map[string]any (from JSON, key=value groups and comma lists).
	Params map[string]any
	// Stdin is the piped input, or nil when the tool declares no Stdin or
	// nothing is attached.
	Stdin *string
	// Argv is the command line after the tool name, as the script wrote
	// it (after expansion), --dry-run removed.
	Argv []string
}

// ParamString returns the string parameter key; ok is false when it is
// missing or not a string.
func (a ToolArgs) ParamString(key string) (string, bool) {
	s, ok := a.Params[key].(string)
	return s, ok
}

// ParamInt64 returns the integer parameter key; a float64 with an
// integral value is accepted. ok is false when it is missing, not a
// number, or not integral.
func (a ToolArgs) ParamInt64(key string) (int64, bool) {
	switch v := a.Params[key].(type) {
	case int64:
		return v, true
	case float64:
		if v == math.Trunc(v) && v >= math.MinInt64 && v < math.MaxInt64 {
			return int64(v), true
		}
	}
	return 0, false
}

// ParamFloat64 returns the numeric parameter key; ok is false when it is
// missing or not a number.
func (a ToolArgs) ParamFloat64(key string) (float64, bool) {
	switch v := a.Params[key].(type) {
	case int64:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}

// ParamBool returns the boolean parameter key; ok is false when it is
// missing or not a boolean.
func (a ToolArgs) ParamBool(key string) (bool, bool) {
	b, ok := a.Params[key].(bool)
	return b, ok
}

// ToolCallback runs one tool call. Its stdout string is written verbatim
// (no newline added) to the command's standard output. A non-nil error
// makes the command fail with exit status 1 and, by default, the message
// "<tool>: callback failed" (see Builder.SanitizeErrors and UserError).
// ctx carries the script's deadline; callbacks must honour it.
type ToolCallback func(ctx context.Context, args ToolArgs) (stdout string, err error)

// PositionalCallback is the callback of a tool registered with
// Builder.PositionalTool: argv is the command line after the tool name,
// unparsed (only --help and --dry-run are interpreted), and stdin is the
// piped input or nil.
type PositionalCallback func(ctx context.Context, argv []string, stdin *string) (stdout string, err error)

// UserError is an error whose message is safe to show to the model: a
// callback returning it (or wrapping it) fails with "<tool>: <Msg>" and
// exit status Code (1 when Code is outside 1..125), even when errors are
// sanitized.
type UserError struct {
	Msg  string
	Code int
}

func (e *UserError) Error() string { return e.Msg }

// asUserError finds a *UserError in err's chain.
func asUserError(err error) (*UserError, bool) {
	var ue *UserError
	if errors.As(err, &ue) && ue != nil {
		return ue, true
	}
	return nil, false
}
