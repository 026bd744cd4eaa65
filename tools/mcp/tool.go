package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/demiurge-dev/demiurge/internal/jsonschema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/internal/manpage"
)

// Error categories of tools.Response.Error.
const (
	ErrorInvalidArguments = "invalid_arguments" // the arguments are not a JSON object or do not fit the schema
	ErrorUnknownTool      = "unknown_tool"      // no such server or tool
	ErrorTool             = "tool_error"        // the tool ran and failed (isError: true)
	ErrorServer           = "server_error"      // the server refused the call (a JSON-RPC error)
	ErrorUnavailable      = "unavailable"       // the server is down: it failed to start or died twice
	ErrorTimeout          = "timeout"           // the call's deadline passed
	ErrorCancelled        = "cancelled"         // the caller cancelled the call
)

// Exit codes of the tools.
const (
	exitFailed      = 1   // tool_error, server_error, unavailable
	exitUsage       = 2   // invalid_arguments
	exitTimeout     = 124 // timeout
	exitUnknown     = 127 // unknown_tool
	exitCancelled   = 130 // cancelled
	schemaCompileID = "mem://mcp/"
)

// Tool is a tool of an MCP server, as a tools.Tool: its name is
// "<server>_<tool>" (or the manifest's alias), its input schema the
// server's, and Run calls the server.
type Tool struct {
	set    *Set
	conn   *conn
	def    ListedTool
	input  json.RawMessage
	output json.RawMessage
	schema *jsonschema.Schema
	limit  int
	ver    string

	infoOnce sync.Once
	info     tools.Info // built on first use: see Info
}

var _ tools.Tool = (*Tool)(nil)

// newTool makes tool i of list.
func newTool(s *Set, c *conn, list *ToolList, i int) (*Tool, error) {
	lt := list.Tools[i]
	t := &Tool{set: s, conn: c, def: lt, input: json.RawMessage(lt.InputSchema), limit: s.opts.OutputLimit}
	var obj struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(t.input, &obj); err != nil {
		return nil, fmt.Errorf("its input schema is not JSON: %v", err)
	}
	if obj.Type != "object" {
		return nil, fmt.Errorf("its input schema is not of type object: %s", clip(lt.InputSchema, 120))
	}
	if lt.OutputSchema != "" {
		t.output = json.RawMessage(lt.OutputSchema)
	} else {
		t.output = json.RawMessage(`{"type":"string","description":"The text of the tool's result."}`)
	}
	var ann struct {
		ReadOnly bool `json:"readOnlyHint"`
	}
	if lt.Annotations != "" && json.Unmarshal([]byte(lt.Annotations), &ann) == nil && ann.ReadOnly {
		t.limit = s.opts.ReadLimit
	}
	t.ver = list.Name + " " + list.Version
	if strings.TrimSpace(t.ver) == "" {
		t.ver = Version
	}
	// The chat reducer checks the model's arguments with the same library:
	// a schema it cannot compile would refuse every call.
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(t.input))
	if err != nil {
		return nil, fmt.Errorf("its input schema is not JSON: %v", err)
	}
	comp := tools.NewSchemaCompiler()
	url := schemaCompileID + c.cfg.Name + "/" + lt.Name + ".json"
	if err := comp.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("its input schema does not compile: %v", err)
	}
	if t.schema, err = comp.Compile(url); err != nil {
		return nil, fmt.Errorf("its input schema does not compile: %s", oneLine(err.Error()))
	}
	return t, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Server is the name of the tool's server.
func (t *Tool) Server() string { return t.conn.cfg.Name }

// ServerTool is the server's name of the tool.
func (t *Tool) ServerTool() string { return t.def.Name }

// OutputLimit is how many bytes of output the tool keeps.
func (t *Tool) OutputLimit() int { return t.limit }

// Info describes the tool: its name is the one the model knows it by;
// its short description the server's title, or the first line of its
// description; its description the server's, as the model gets it; its
// output schema the server's, or a text schema for a tool that declares
// none; its version the server's name and version. The help and the system
// prompt are written on the first call.
func (t *Tool) Info() tools.Info {
	t.infoOnce.Do(func() {
		t.info = tools.Info{
			Name:             t.def.As,
			ShortDescription: t.short(),
			Description:      t.description(),
			Help:             t.help(),
			SystemPrompt:     t.systemPrompt(),
			InputSchema:      t.input,
			OutputSchema:     t.output,
			Version:          t.ver,
		}
	})
	return t.info
}

// short is the tool's title, or the first line of its description.
func (t *Tool) short() string {
	if t.def.Title != "" {
		return t.def.Title
	}
	if d := firstLine(t.def.Description); d != "" {
		return d
	}
	return fmt.Sprintf("Tool %s of the MCP server %s", t.def.Name, t.conn.cfg.Name)
}

// description is the server's description of the tool, or its short one.
func (t *Tool) description() string {
	if strings.TrimSpace(t.def.Description) == "" {
		return t.short()
	}
	return t.def.Description
}

// Spec returns the tool's spec for the model (strict false).
func (t *Tool) Spec() tools.SpecTool {
	return tools.SpecTool{Name: t.def.As, Description: t.description(), Parameters: t.input, Strict: false,
		Family: tools.FamilyMCP, Server: t.Server(), ServerTool: t.ServerTool(), OutputLimit: t.limit + tools.NoteRoom}
}

// param is one property of an input schema, for help texts.
type param struct {
	name, typ, desc string
	required        bool
}

func (t *Tool) params() []param {
	var s struct {
		Properties map[string]struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(t.input, &s)
	var out []param
	for name, p := range s.Properties {
		typ := "any"
		switch v := p.Type.(type) {
		case string:
			typ = v
		case []any:
			var ts []string
			for _, x := range v {
				ts = append(ts, fmt.Sprint(x))
			}
			typ = strings.Join(ts, "|")
		}
		out = append(out, param{name: name, typ: typ, desc: firstLine(p.Description), required: contains(s.Required, name)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].required != out[j].required {
			return out[i].required
		}
		return out[i].name < out[j].name
	})
	return out
}

// systemPrompt is a compact line: the tool, its input and its output.
func (t *Tool) systemPrompt() string {
	var in []string
	for _, p := range t.params() {
		opt := "?"
		if p.required {
			opt = ""
		}
		in = append(in, fmt.Sprintf("%q%s: %s", p.name, opt, p.typ))
	}
	out := "text"
	if t.def.OutputSchema != "" {
		out = "text, or JSON per its output schema"
	}
	return fmt.Sprintf("%s: %s (MCP server %s). Input {%s}. Output %s.", t.def.As, t.short(), t.Server(), strings.Join(in, ", "), out)
}

// help is man-page style documentation.
func (t *Tool) help() string {
	var b strings.Builder
	manpage.Header(&b, t.def.As, "MCP Tools")
	section := func(name string, lines ...string) { manpage.Section(&b, name, lines...) }
	section("NAME", t.def.As+" - "+t.short())
	section("SYNOPSIS", t.def.As+" "+string(t.input))
	desc := strings.Split(strings.TrimSpace(t.description()), "\n")
	desc = append(desc, "", fmt.Sprintf("The tool %q of the MCP server %s (%s), called over MCP.", t.def.Name, t.Server(), t.ver))
	section("DESCRIPTION", desc...)
	var in []string
	for _, p := range t.params() {
		req := "optional"
		if p.required {
			req = "required"
		}
		line := fmt.Sprintf("%-14s %s, %s", p.name, p.typ, req)
		if p.desc != "" {
			line += ": " + p.desc
		}
		in = append(in, line)
	}
	if len(in) == 0 {
		in = []string{"(no arguments)"}
	}
	section("INPUT", in...)
	out := []string{"The text of the result: its text content, then its structured content as",
		"JSON unless a text block already holds it.",
		fmt.Sprintf("More than %d bytes is cut at a character boundary, with a note of the size.", t.limit)}
	if t.def.OutputSchema != "" {
		out = append(out, "Structured output schema: "+clip(t.def.OutputSchema, 200))
	}
	section("OUTPUT", out...)
	section("EXIT STATUS",
		"0      success",
		"1      tool_error (the tool failed; the message says why), server_error,",
		"       unavailable (the server is down)",
		"2      invalid_arguments: fix the arguments and call again",
		"124    timeout; 127 unknown_tool; 130 cancelled")
	var see []string
	for _, o := range t.set.tools {
		if o.conn == t.conn && o != t {
			see = append(see, o.def.As)
		}
	}
	if len(see) > 0 {
		section("SEE ALSO", strings.Join(see, ", "))
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// Run calls the tool on its server. The arguments must be a JSON object
// that fits the input schema; the call is bounded by the server's timeout,
// or the request's if lower. A result
// with isError is an error response (tool_error) whose stderr is the
// result's text; a server that is down gives unavailable. The output is
// cut at the tool's limit while it is assembled.
func (t *Tool) Run(ctx context.Context, req tools.Request, status tools.StatusFunc) tools.Response {
	if status == nil {
		status = func(tools.Status) {}
	}
	status(tools.Status{Phase: tools.PhaseValidate})
	args, resp, ok := t.arguments(req)
	if !ok {
		status(tools.Status{Phase: tools.PhaseComplete})
		return resp
	}
	if err := ctx.Err(); err != nil {
		return ctxResponse(t, err, 0)
	}
	timeout := t.conn.timeout()
	if req.TimeoutMS > 0 {
		timeout = min(timeout, time.Duration(req.TimeoutMS)*time.Millisecond)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	status(tools.Status{Phase: tools.PhaseExecute, Message: "calling " + t.def.Name + " on MCP server " + t.Server()})
	res, err := t.conn.call(cctx, t.def.Name, args)
	defer status(tools.Status{Phase: tools.PhaseComplete})
	if err != nil {
		if cctx.Err() != nil {
			return ctxResponse(t, cctx.Err(), timeout)
		}
		return errResponse(t, err)
	}
	w := newCapped(t.limit)
	render(w, res, t.conn.cfg.Secrets)
	if res.IsError {
		msg := w.String()
		if msg == "" {
			msg = "the tool failed without saying why"
		}
		return tools.Response{Stderr: t.def.As + ": " + msg, ExitCode: exitFailed, Error: ErrorTool, StderrTruncated: w.Cut()}
	}
	out := w.String()
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += "\n" // as a command's output ends, so a script's lines stay apart
	}
	if out != "" {
		status(tools.Stdout(out))
	}
	return tools.Response{Stdout: out, StdoutTruncated: w.Cut()}
}

// arguments parses and checks the request's arguments.
func (t *Tool) arguments(req tools.Request) (map[string]any, tools.Response, bool) {
	raw := bytes.TrimSpace(req.Arguments)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		msg := "trailing data after the object"
		if err != nil {
			msg = err.Error()
		}
		return nil, usage(t, "the arguments are not valid JSON (%s); send one JSON object that fits the input schema", msg), false
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, usage(t, "the arguments must be a JSON object"), false
	}
	if err := t.schema.Validate(v); err != nil {
		return nil, usage(t, "the arguments do not fit the input schema: %s", tools.SchemaErrorText(err)), false
	}
	return m, tools.Response{}, true
}

func usage(t *Tool, format string, args ...any) tools.Response {
	return tools.Response{Stderr: t.def.As + ": " + fmt.Sprintf(format, args...), ExitCode: exitUsage, Error: ErrorInvalidArguments}
}

// ctxResponse reports a call that its context ended.
func ctxResponse(t *Tool, err error, timeout time.Duration) tools.Response {
	if errors.Is(err, context.DeadlineExceeded) {
		msg := fmt.Sprintf("%s: the MCP server %s did not answer within %s", t.def.As, t.Server(), timeout)
		if timeout == 0 {
			msg = t.def.As + ": the call's deadline passed before it started"
		}
		return tools.Response{Stderr: msg, ExitCode: exitTimeout, Error: ErrorTimeout}
	}
	return tools.Response{Stderr: t.def.As + ": cancelled", ExitCode: exitCancelled, Error: ErrorCancelled}
}

// errResponse reports a call that failed below the tool: the server is
// down, or it answered with a JSON-RPC error.
func errResponse(t *Tool, err error) tools.Response {
	msg := t.conn.redact(err.Error())
	if errors.Is(err, ErrServerDown) {
		return tools.Response{Stderr: t.def.As + ": " + strings.TrimPrefix(msg, ErrServerDown.Error()+": "), ExitCode: exitFailed, Error: ErrorUnavailable}
	}
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		switch {
		case je.Code == jsonrpc.CodeMethodNotFound || je.Code == jsonrpc.CodeInvalidParams && strings.Contains(strings.ToLower(je.Message), "unknown tool"):
			return tools.Response{Stderr: fmt.Sprintf("%s: the server does not know the tool %q any more: %s", t.def.As, t.def.Name, t.conn.redact(je.Message)), ExitCode: exitUnknown, Error: ErrorUnknownTool}
		case je.Code == jsonrpc.CodeInvalidParams:
			return tools.Response{Stderr: fmt.Sprintf("%s: the server refused the arguments: %s", t.def.As, t.conn.redact(je.Message)), ExitCode: exitUsage, Error: ErrorInvalidArguments}
		}
		return tools.Response{Stderr: fmt.Sprintf("%s: the server answered error %d: %s", t.def.As, je.Code, t.conn.redact(je.Message)), ExitCode: exitFailed, Error: ErrorServer}
	}
	return tools.Response{Stderr: fmt.Sprintf("%s: the call failed: %s", t.def.As, msg), ExitCode: exitFailed, Error: ErrorServer}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
