package bash

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/demiurge-dev/demiurge/internal/jsonschema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/bash/internal/coreutils"
	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
	"github.com/demiurge-dev/demiurge/tools/internal/manpage"
)

// Version is the version of the bash tool's implementation.
const Version = "0.1.0"

// Error categories of Response.Error.
const (
	ErrorInvalidArguments = "invalid_arguments" // the request itself is malformed
	ErrorParse            = "parse_error"       // the script is not valid bash
	ErrorRejected         = "rejected"          // the script uses unsupported syntax or is too large
	ErrorLimitExceeded    = "limit_exceeded"    // a resource limit stopped the script
	ErrorTimeout          = "timeout"           // the time limit or the caller's deadline
	ErrorCancelled        = "cancelled"         // the caller cancelled the context
	ErrorInternal         = "internal"          // a bug or a host failure (details in logs)
)

// registered is one tool command.
type registered struct {
	def    ToolDef
	fn     ToolCallback
	pos    PositionalCallback
	schema *jsonschema.Schema
	fast   *fastSchema // nil: validate with schema
	flags  *flagSchema
	usage  string
}

// Tool runs bash scripts whose commands are its registered tools.
// It implements tools.Tool; Run and RunScript are safe for concurrent use
// (each runs its own interpreter).
type Tool struct {
	name      string
	short     string
	tools     []*registered // registration order
	byName    map[string]*registered
	env       []string // "k=v", Builder order
	envNames  []string
	limits    Limits
	sanitize  bool
	compact   bool
	clock     func() time.Time
	jq        *coreutils.JQCache
	user      string
	host      string
	filesNote string
	// extra are commands beside the utilities, for tests (the Oils
	// spec's helpers, see oils_test.go); nil in every built Tool.
	extra map[string]coreutils.Func

	infoOnce sync.Once
	info     tools.Info // built on first use: see Info
}

var _ tools.Tool = (*Tool)(nil)

// Info describes the tool. Its Description is "Compose tool callbacks
// through bash scripts: " followed by the tool commands in registration
// order. The help and the system prompt, which list every command, are
// written on the first call.
func (t *Tool) Info() tools.Info {
	t.infoOnce.Do(func() {
		t.info = tools.Info{
			Name:             t.name,
			ShortDescription: t.short,
			Description:      "Compose tool callbacks through bash scripts: " + strings.Join(t.toolNames(), ", "),
			Help:             t.help(),
			SystemPrompt:     t.systemPrompt(),
			InputSchema:      inputSchema,
			OutputSchema:     outputSchema,
			Version:          Version,
		}
	})
	return t.info
}

// Limits returns the limits in force (defaults filled in).
func (t *Tool) Limits() Limits { return t.limits }

// Tools returns the definitions of the registered tool commands, in
// registration order.
func (t *Tool) Tools() []ToolDef {
	defs := make([]ToolDef, len(t.tools))
	for i, r := range t.tools {
		defs[i] = r.def
		defs[i].Tags = slices.Clone(r.def.Tags)
	}
	return defs
}

func (t *Tool) toolNames() []string {
	names := make([]string, len(t.tools))
	for i, r := range t.tools {
		names[i] = r.def.Name
	}
	return names
}

// utilityNames lists the sandbox's non-tool commands, sorted.
func utilityNames() []string {
	names := append(coreutils.Names(), "echo", "false", "test", "true", "[", "bash", "sh")
	slices.Sort(names)
	return names
}

// DefaultFilesNote is the system prompt's tip about files, unless
// Builder.FilesNote replaces it.
const DefaultFilesNote = "The working directory /workspace is the script's file system (cat, ls, find, grep -r, sed -i, mkdir, mv, rm work on it); /tmp is scratch space"

// systemPrompt is the prompt fragment that teaches a model the tool, in
// the markdown of bashkit's scripted tool: a heading, the input and output,
// each command with its usage and the JSON Schema of its flags (with
// CompactPrompt, its description only), and tips.
func (t *Tool) systemPrompt() string {
	var b strings.Builder
	b.WriteString("# " + t.name + "\n\n")
	if t.short != "" && !strings.HasPrefix(t.short, "ScriptedTool: ") {
		b.WriteString(t.short + ".\n\n")
	}
	b.WriteString("Input: {\"commands\": \"<bash script>\"}\nOutput: {stdout, stderr, exit_code}\n\n")
	if len(t.tools) > 0 {
		b.WriteString("## Available tool commands\n\n")
		for _, r := range t.tools {
			b.WriteString("- `" + r.def.Name + "`")
			if r.def.Description != "" {
				b.WriteString(": " + r.def.Description)
			}
			b.WriteString("\n")
			if t.compact {
				continue
			}
			if r.usage != "" {
				b.WriteString("  Usage: `" + r.def.Name + " " + r.usage + "`\n")
			}
			if s := compactJSON(r.def.InputSchema); s != "" {
				b.WriteString("  Schema: " + s + "\n")
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("## Tips\n\n")
	b.WriteString("- Pass arguments as `--key value` or `--key=value` flags (`--flag` alone or `--flag true|false` for booleans)\n")
	b.WriteString("- Pipe tool output through `jq` for JSON processing\n")
	b.WriteString("- Use variables to pass data between tool calls\n")
	b.WriteString("- " + t.filesNote + "\n")
	// "[" is test: listing it alone reads as a stray bracket.
	b.WriteString("- Utilities besides the shell's builtins: " + strings.Join(slices.DeleteFunc(utilityNames(), func(n string) bool { return n == "[" }), " ") + "\n")
	b.WriteString("- `help`, `<tool> --help` and `discover` describe the tools at run time\n")
	l := t.limits
	fmt.Fprintf(&b, "- A script runs at most %d commands, %d iterations of one loop (%d in all) and %d tool calls: past one it stops with \"resource limit exceeded\" and exit status 1 (124 for its time limit); split bigger jobs into several calls\n",
		l.MaxCommands, l.MaxLoopIterations, l.MaxTotalLoopIterations, l.MaxToolCalls)
	return b.String()
}

// compactJSON is a schema on one line ("" for none or an empty one).
func compactJSON(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return ""
	}
	if s := buf.String(); s != "{}" {
		return s
	}
	return ""
}

// help is man-page style documentation of the tool.
func (t *Tool) help() string {
	var b strings.Builder
	manpage.Header(&b, t.name, "User Commands")
	section := func(name string) { b.WriteString(name + "\n") }
	line := func(indent int, s string) {
		b.WriteString(strings.Repeat(" ", indent) + s + "\n")
	}
	section("NAME")
	line(7, t.name+" - "+t.short)
	b.WriteString("\n")
	section("SYNOPSIS")
	line(7, `{"commands": "<bash script>", "timeout_ms": <integer, optional>}`)
	b.WriteString("\n")
	section("DESCRIPTION")
	line(7, "Runs a bash script in a sandbox where every registered tool is a command.")
	line(7, "Pipes, variables, loops, conditionals, functions and command substitution")
	line(7, "work as in bash. The working directory /workspace is the script's file")
	line(7, "system and /tmp scratch space; there is no network and no host process.")
	line(7, "Each call starts a fresh shell: only the tools keep state between calls.")
	b.WriteString("\n")
	section("TOOL COMMANDS")
	for _, r := range t.tools {
		usage := r.def.Name
		if r.usage != "" {
			usage += " " + r.usage
		}
		line(7, usage)
		if r.def.Description != "" {
			line(14, r.def.Description)
		}
	}
	line(7, "Flags: --key value or --key=value; booleans take no value; arrays take")
	line(7, "JSON, a,b,c or repeated flags; objects take JSON or key=value words.")
	line(7, "<tool> --help describes a tool; <tool> --dry-run checks a call without running it.")
	b.WriteString("\n")
	section("BUILTINS")
	line(7, "help [--list] [<tool> [--json]], discover --categories|--category C|--tag T|--search S [--json]")
	line(7, "utilities: "+strings.Join(utilityNames(), " "))
	line(7, "shell: read, mapfile, set, shift, unset, local, export, declare, let, exit, return,")
	line(7, "break, continue, getopts, shopt, trap, eval, source, type, cd, pwd, :")
	b.WriteString("\n")
	section("INPUT")
	line(7, "commands    the bash script to run (like bash -c)")
	line(7, "timeout_ms  lowers the time limit of this call")
	b.WriteString("\n")
	section("OUTPUT")
	line(7, "stdout, stderr        the script's output (stdout_truncated/stderr_truncated when cut)")
	line(7, "exit_code             the script's exit status")
	line(7, "error                 timeout, limit_exceeded, parse_error, rejected, ... when it failed")
	b.WriteString("\n")
	section("EXAMPLES")
	if len(t.tools) > 0 {
		r := t.tools[0]
		line(7, "One call, output filtered with jq:")
		line(11, fmt.Sprintf(`{"commands": "%s %s| jq ."}`, r.def.Name, exampleFlags(r)))
	}
	line(7, "Loop and fallback:")
	line(11, `{"commands": "for i in 1 2 3; do echo $i; done || echo failed"}`)
	b.WriteString("\n")
	section("EXIT STATUS")
	line(7, "0      success")
	line(7, "1      a command or tool failed, or a resource limit was exceeded")
	line(7, "2      flag, schema or syntax error, or unsupported syntax")
	line(7, "124    the time limit was reached")
	line(7, "127    command not found")
	b.WriteString("\n")
	section("CONFIGURATION")
	line(7, "Limits: "+t.limits.String())
	if len(t.envNames) > 0 {
		line(7, "Environment: "+strings.Join(t.envNames, ", "))
	}
	line(7, "Version: "+Version)
	return b.String()
}

// exampleFlags renders "--k value " for a tool's required properties,
// with a sample value of each one's type.
func exampleFlags(r *registered) string {
	if r.flags.root == nil {
		return ""
	}
	req, _ := r.flags.resolve(r.flags.root)["required"].([]any)
	var b strings.Builder
	for _, k := range req {
		ks, _ := k.(string)
		b.WriteString("--" + ks)
		switch r.flags.typeOf(r.flags.property(ks)) {
		case "integer":
			b.WriteString(" 1")
		case "number":
			b.WriteString(" 1.5")
		case "boolean":
		case "array":
			b.WriteString(" a,b")
		case "object":
			b.WriteString(" key=value")
		default:
			b.WriteString(" text")
		}
		b.WriteString(" ")
	}
	return b.String()
}

// inputSchema is the JSON Schema of the request arguments:
// {"commands": string, "timeout_ms": integer|null}.
var inputSchema = json.RawMessage(`{"type":"object","required":["commands"],"properties":{` +
	`"commands":{"type":"string","description":"The bash script to run, like bash -c."},` +
	`"timeout_ms":{"type":["integer","null"],"minimum":0,"description":"Time limit in milliseconds; can only lower the tool's limit."}},` +
	`"additionalProperties":false}`)

// outputSchema is the JSON Schema of the Response.
var outputSchema = json.RawMessage(`{"type":"object","required":["stdout","stderr","exit_code"],"properties":{` +
	`"stdout":{"type":"string"},"stderr":{"type":"string"},"exit_code":{"type":"integer"},` +
	`"error":{"type":"string","enum":["invalid_arguments","parse_error","rejected","limit_exceeded","timeout","cancelled","internal"]},` +
	`"stdout_truncated":{"type":"boolean"},"stderr_truncated":{"type":"boolean"}}}`)

// Run runs req.Commands (or the "commands" of req.Arguments) in a fresh
// sandboxed shell and returns its output, reporting progress to status
// (if not nil): phases validate, parse, execute, complete, and output
// chunks as they are written. RunScript also returns the trace.
func (t *Tool) Run(ctx context.Context, req tools.Request, status tools.StatusFunc) tools.Response {
	return t.RunScript(ctx, req, RunOptions{Status: status}).Response
}

// RunOptions are per-execution settings of RunScript.
type RunOptions struct {
	// Status, if set, receives progress reports as Run describes.
	Status tools.StatusFunc
	// Clock, if set, replaces the Builder's clock for this run (a world
	// passes the ingress stamp of the step that runs the script).
	Clock func() time.Time
	// FS, if set, is the script's file system (a world's workspace,
	// mounted by the caller, who reads the script's changes from it when
	// Run returns). Without one the script gets an empty in-memory file
	// system, bounded by the Limits, that is dropped when Run returns.
	FS *vfs.FS
	// Seed makes the script's randomness ($RANDOM, $SRANDOM, shuf) a
	// function of the call: the same script with the same Seed draws the
	// same numbers, so a recorded call replays to the same bytes. A world
	// passes one derived from the call's intent; 0 is a fixed default.
	Seed uint64
}

// Result is the outcome of RunScript: the Response plus the trace of every
// tool-level call the script made.
type Result struct {
	tools.Response
	// Calls lists the script's invocations of tools, help and discover,
	// in Seq order: the order their callbacks started (or, for calls that
	// ran none, finished). A tool that reads its stdin starts after the
	// command piping into it finished, so sequential scripts and `a | b`
	// trace deterministically; only stages of one pipeline that do not
	// wait for each other may swap between runs. Utilities and shell
	// builtins are not traced.
	Calls []Call `json:"calls,omitempty"`
	// TraceDropped counts calls past Limits.MaxTraceCalls, not in Calls.
	TraceDropped int `json:"trace_dropped,omitempty"`
	// StdoutBytes and StderrBytes count what the script wrote, kept or
	// not: with StdoutTruncated, the size the output would have had.
	StdoutBytes int `json:"stdout_bytes"`
	StderrBytes int `json:"stderr_bytes"`
	// Duration is the wall time of the whole run.
	Duration time.Duration `json:"duration_ns"`
}

// Call kinds.
const (
	CallTool     = "tool"     // the callback ran (or was refused by a limit)
	CallHelp     = "help"     // help, help <tool> or <tool> --help
	CallDiscover = "discover" // discover
	CallDryRun   = "dry_run"  // <tool> --dry-run
	CallInvalid  = "invalid"  // flags or schema rejected; the callback did not run
)

// Call is one traced invocation inside a script, as a receipt records it.
// It encodes deterministically with encoding/json and with the canonical
// CBOR of package cas (cas.Marshal): Params, which may hold floats that
// canonical CBOR refuses, is left out of CBOR; Arguments carries the same
// parameters as canonical JSON text.
type Call struct {
	// Seq numbers the calls of one run from 1, in the order they started.
	Seq int `json:"seq" cbor:"seq"`
	// Tool is the command's name ("help" or "discover" for those builtins).
	Tool string `json:"tool" cbor:"tool"`
	// Kind is one of the Call* constants.
	Kind string `json:"kind" cbor:"kind"`
	// Argv is the command line after the name, each word cut to 1 KiB.
	Argv []string `json:"argv,omitempty" cbor:"argv,omitempty"`
	// Params are the parsed flags given to the callback (nil for
	// positional tools and when parsing failed).
	Params map[string]any `json:"params,omitempty" cbor:"-"`
	// Arguments is Params as JSON with sorted keys ("" when Params is nil).
	Arguments string `json:"arguments,omitempty" cbor:"arguments,omitempty"`
	// ExitCode is the command's exit status.
	ExitCode int `json:"exit_code" cbor:"exit_code"`
	// Error is what the command printed on stderr when it failed
	// (sanitized like the script's output).
	Error string `json:"error,omitempty" cbor:"error,omitempty"`
	// Duration is the wall time of the call.
	Duration time.Duration `json:"duration_ns" cbor:"duration_ns"`
}
