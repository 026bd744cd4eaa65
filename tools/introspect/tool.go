package introspect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/internal/jsonschema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/internal/manpage"
)

// Version is the version of the introspect tools' implementation.
const Version = "0.1.0"

// The tools' names.
const (
	ToolManifest    = "introspect_manifest"
	ToolSchemas     = "introspect_schemas"
	ToolModule      = "introspect_module"
	ToolState       = "introspect_state"
	ToolJournalHead = "introspect_journal_head"
)

// Error categories of tools.Response.Error.
const (
	ErrorInvalidArguments = "invalid_arguments" // the arguments do not fit the input schema, or cannot be served as given
	ErrorNotFound         = "not_found"         // an unknown reducer, module, schema or def
	ErrorUnavailable      = "unavailable"       // the height asked for is not available
	ErrorTimeout          = "timeout"           // the call's time limit or the caller's deadline
	ErrorCancelled        = "cancelled"         // the caller cancelled the call
	ErrorInternal         = "internal"          // the world's storage failed, or a bug
)

// Tools returns the five introspect tools reading v, in a fixed order:
// introspect_manifest, introspect_schemas, introspect_module,
// introspect_state, introspect_journal_head. opts may be nil.
//
// Each writes its answer as one compact JSON object on Stdout, at most
// Options.OutputLimit bytes. A failure is exit code 1 (124 for a timeout,
// 130 for a cancellation) with the reason on Stderr and its category in
// Response.Error; Stdout is then empty.
func Tools(v View, opts *Options) []tools.Tool {
	r := newReader(v, opts)
	return []tools.Tool{
		newTool(manifestSpec(r), r),
		newTool(schemasSpec(r), r),
		newTool(moduleSpec(r), r),
		newTool(stateSpec(r), r),
		newTool(headSpec(r), r),
	}
}

// spec describes one tool: its texts, schemas and what it runs.
type spec struct {
	name, short, description, prompt string
	// synopsis, body and examples make up the man page.
	synopsis string
	body     string
	examples []string
	input    string
	output   string
	// run answers valid arguments with a value to print as JSON.
	run func(ctx context.Context, args json.RawMessage) (any, error)
}

// tool implements tools.Tool from a spec.
type tool struct {
	spec
	compiled *jsonschema.Schema
	opts     Options
	reader   *reader

	infoOnce sync.Once
	info     tools.Info
}

var _ tools.Tool = (*tool)(nil)

func newTool(s spec, r *reader) *tool {
	return &tool{spec: s, compiled: mustCompile(s.name, s.input), opts: r.opts, reader: r}
}

var _ tools.InlineTool = (*tool)(nil)

// RunsInline reports whether a call can run inside a step of the world
// (see tools.InlineTool). The introspect tools only read the world, which
// in a step they see as the step left it, so every call can, but one with
// consistency at_least:<h> above the world's height: it waits for the
// world to move on, which it cannot do while the step runs.
func (t *tool) RunsInline(ctx context.Context, req tools.Request) bool {
	var a struct {
		Consistency string `json:"consistency"`
	}
	if json.Unmarshal(req.Arguments, &a) != nil {
		return true // answered at once: the arguments are invalid
	}
	return t.reader.servesNow(ctx, a.Consistency)
}

// mustCompile compiles a tool's own input schema. The schemas are
// constants of this package, so a failure is a bug: it panics.
func mustCompile(name, raw string) *jsonschema.Schema {
	s, err := tools.CompileSchema("mem:///introspect/"+name+".json", []byte(raw))
	if err != nil {
		panic(fmt.Sprintf("introspect: %s: input schema: %v", name, err))
	}
	return s
}

// OutputLimit is the most bytes of output the tool keeps
// (Options.OutputLimit).
func (t *tool) OutputLimit() int { return t.opts.OutputLimit }

// Info describes the tool; its help is written on the first call.
func (t *tool) Info() tools.Info {
	t.infoOnce.Do(func() {
		t.info = tools.Info{
			Name:             t.name,
			ShortDescription: t.short,
			Description:      t.description,
			Help:             t.help(),
			SystemPrompt:     t.prompt,
			InputSchema:      json.RawMessage(t.input),
			OutputSchema:     json.RawMessage(t.output),
			Version:          Version,
		}
	})
	return t.info
}

// help returns man-page style documentation.
func (t *tool) help() string {
	var b strings.Builder
	manpage.Header(&b, t.name, "demiurge tools")
	section := func(name, text string) {
		b.WriteString(name + "\n")
		for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			if line == "" {
				b.WriteString("\n")
				continue
			}
			for _, l := range wrap(line, 78-len(manpage.Indent)) {
				b.WriteString(manpage.Indent + l + "\n")
			}
		}
		b.WriteString("\n")
	}
	section("NAME", t.name+" - "+t.short)
	section("SYNOPSIS", t.synopsis)
	section("DESCRIPTION", t.body)
	if strings.Contains(t.input, `"consistency"`) {
		section("CONSISTENCY", `- "head" (the default) reads the world as it is now.
- "exact:<h>" reads it as it was at journal height h, 1 <= h <= the head; a height above the head is an error that names the head.
- "at_least:<h>" reads it as it is now once the head has reached h: it waits for the head (up to `+t.opts.MaxWait.String()+` and the call's time limit), then fails naming the head.

Every answer carries meta: {journal_height, manifest_hash, snapshot_hash}.`)
	}
	var ex strings.Builder
	for i, e := range t.examples {
		if i > 0 {
			ex.WriteString("\n")
		}
		ex.WriteString(e + "\n")
	}
	section("EXAMPLES", ex.String())
	section("OUTPUT", fmt.Sprintf("One JSON object on stdout (its JSON Schema is the tool's output schema). "+
		"Output longer than %d bytes is cut on a UTF-8 boundary and ends with a note of its full size.", t.opts.OutputLimit))
	section("EXIT STATUS", `0      success
1      invalid arguments, an unknown name, an unavailable height, or a
       storage failure; the reason is on stderr
124    the call's time limit was reached
130    the call was cancelled`)
	return b.String()
}

// wrap breaks a line at spaces into lines of at most width bytes where it
// can. Continuation lines keep the line's indentation, plus two spaces
// for a list item ("- ...").
func wrap(line string, width int) []string {
	indent := line[:len(line)-len(strings.TrimLeft(line, " "))]
	cont, first := indent, len(indent)
	if strings.HasPrefix(line[len(indent):], "- ") {
		cont, first = indent+"  ", len(indent)+1 // never break after the bullet
	}
	var out []string
	for min := first; len(line) > width; min = len(cont) {
		cut := strings.LastIndex(line[:width+1], " ")
		if cut <= min {
			break // one long word: leave it whole
		}
		out = append(out, line[:cut])
		line = cont + strings.TrimLeft(line[cut:], " ")
	}
	return append(out, line)
}

// Run runs the tool once, reporting the phases validate, execute, output
// (the whole answer in one chunk) and complete.
func (t *tool) Run(ctx context.Context, req tools.Request, status tools.StatusFunc) (resp tools.Response) {
	report := func(s tools.Status) {
		if status != nil {
			status(s)
		}
	}
	defer func() {
		if p := recover(); p != nil {
			resp = t.fail(ErrorInternal, 1, fmt.Sprintf("internal error: %v (please report this)\n%s", p, debug.Stack()))
			report(tools.Status{Phase: tools.PhaseComplete, Message: resp.Error})
		}
	}()
	report(tools.Status{Phase: tools.PhaseValidate})
	args, msg := t.validate(req.Arguments)
	if msg != "" {
		resp = t.fail(ErrorInvalidArguments, 1, msg)
		report(tools.Status{Phase: tools.PhaseComplete, Message: resp.Error})
		return resp
	}
	if req.TimeoutMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMS)*time.Millisecond)
		defer cancel()
	}
	report(tools.Status{Phase: tools.PhaseExecute})
	out, err := t.run(ctx, args)
	if err != nil {
		resp = t.failErr(ctx, err)
		report(tools.Status{Phase: tools.PhaseComplete, Message: resp.Error})
		return resp
	}
	text, err := marshal(out)
	if err != nil {
		resp = t.fail(ErrorInternal, 1, "encode the answer: "+err.Error())
		report(tools.Status{Phase: tools.PhaseComplete, Message: resp.Error})
		return resp
	}
	stdout, cut := bound(text, t.opts.OutputLimit)
	report(tools.Stdout(stdout))
	report(tools.Status{Phase: tools.PhaseComplete})
	return tools.Response{Stdout: stdout, StdoutTruncated: cut}
}

// fail returns an error response.
func (t *tool) fail(category string, code int, msg string) tools.Response {
	return tools.Response{Stderr: t.name + ": " + msg + "\n", ExitCode: code, Error: category}
}

// failErr turns a run error into a response with its category.
func (t *tool) failErr(ctx context.Context, err error) tools.Response {
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return t.fail(ErrorTimeout, 124, "timed out: "+message(err))
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		return t.fail(ErrorCancelled, 130, "cancelled: "+message(err))
	case errors.Is(err, ErrNotFound):
		return t.fail(ErrorNotFound, 1, message(err))
	case errors.Is(err, ErrUnavailable):
		return t.fail(ErrorUnavailable, 1, message(err))
	case errors.Is(err, ErrInvalid), errors.Is(err, ErrBadConsistency):
		return t.fail(ErrorInvalidArguments, 1, message(err))
	}
	return t.fail(ErrorInternal, 1, message(err))
}

// message is an error's text without the package's sentinel prefixes,
// which say nothing to a model.
func message(err error) string {
	s := err.Error()
	for _, e := range []error{ErrNotFound, ErrUnavailable, ErrInvalid} {
		s = strings.TrimPrefix(s, e.Error()+": ")
	}
	return strings.TrimPrefix(s, "introspect: ")
}

// validate checks the arguments against the input schema. It returns them
// ("{}" when empty) or a message that says what to fix.
func (t *tool) validate(raw json.RawMessage) (json.RawMessage, string) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Sprintf("the arguments are not valid JSON: %v; want a JSON object such as %s", err, t.examples[0])
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Sprintf("the arguments must be a JSON object, such as %s", t.examples[0])
	}
	// A bad consistency gets the parser's message, which names the forms.
	if c, ok := obj["consistency"].(string); ok {
		if _, err := ParseConsistency(c); err != nil {
			return nil, "consistency: " + message(err)
		}
	}
	if err := t.compiled.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, "invalid arguments: " + err.Error()
		}
		return nil, "invalid arguments: " + describe(ve, t.properties()) + "; see the input schema or the help"
	}
	return raw, ""
}

// properties returns the names of the input schema's properties, sorted.
func (t *tool) properties() []string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal([]byte(t.input), &s)
	out := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// describe renders the leaves of a validation error, one per problem.
func describe(e *jsonschema.ValidationError, props []string) string {
	tools.SortSchemaError(e)
	var msgs []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		at := "arguments"
		for _, tok := range e.InstanceLocation {
			at += "." + tok
		}
		msg := e.Error()
		if i := strings.LastIndex(msg, "': "); i >= 0 {
			msg = msg[i+3:]
		}
		if strings.HasPrefix(msg, "additional properties") || strings.HasPrefix(msg, "additionalProperties") {
			if len(props) == 0 {
				msg += " (this tool takes no arguments: pass {})"
			} else {
				msg += " (the properties are: " + strings.Join(props, ", ") + ")"
			}
		}
		msgs = append(msgs, at+": "+msg)
	}
	walk(e)
	sort.Strings(msgs)
	return strings.Join(msgs, "; ")
}

// marshal encodes an answer as compact JSON, without escaping HTML.
func marshal(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// bound cuts s to at most limit bytes on a UTF-8 boundary and appends a
// note of the original size. It reports whether it cut.
func bound(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[output truncated: %d bytes in all, the first %d shown]", len(s), cut), true
}

// decodeArgs decodes validated arguments into a struct.
func decodeArgs(raw json.RawMessage, out any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("%w: arguments: %v", ErrInvalid, err)
	}
	return nil
}

// parseConsistency parses an optional consistency argument.
func parseConsistency(s string) (Consistency, error) {
	if s == "" {
		return Consistency{}, nil
	}
	return ParseConsistency(s)
}
