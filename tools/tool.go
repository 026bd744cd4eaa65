// Package tools defines the contract every LLM tool of demiurge implements.
//
// A Tool describes itself in an Info (name, descriptions, man-page help, a
// system prompt fragment, JSON Schemas of its input and output) and runs a
// Request into a Response. The LLM tool specs sent to a model are generated
// from the Info, so a tool is documented in exactly one place.
//
// The contract follows bashkit's Tool trait (seed 002 of the shared
// directory), in Go's shape: the description is data, a context comes
// first, errors are reported inside the Response so that a model can read
// them, and status is reported through a callback. Optional abilities are
// separate interfaces: InlineTool and OutputLimiter.
package tools

import (
	"context"
	"encoding/json"
)

// Info describes a tool. A tool's Info never changes; the schemas are
// shared, and callers must not modify them.
type Info struct {
	// Name is the tool's identifier in registries and LLM tool specs,
	// e.g. "bash" or "workspace_read".
	Name string
	// ShortDescription is a one-line summary for tool listings.
	ShortDescription string
	// Description is the full description sent to the model; it may list
	// what the tool supports (the commands of the bash tool, say).
	Description string
	// Help is man-page style documentation (NAME, SYNOPSIS, DESCRIPTION,
	// ..., EXIT STATUS) for a model or a human that asks for it.
	Help string
	// SystemPrompt is a compact fragment for a system prompt: what the
	// tool is, its input and output, in few tokens.
	SystemPrompt string
	// InputSchema is the JSON Schema of Request.Arguments.
	InputSchema json.RawMessage
	// OutputSchema is the JSON Schema of the tool's structured output.
	OutputSchema json.RawMessage
	// Version is the version of the tool's implementation.
	Version string
}

// Tool is the contract every tool implements: the introspect and workspace
// tools, the bash tool, tools served by MCP servers and the Go functions
// of a program embedding demiurge.
//
// Info and Run are safe for concurrent use unless a tool documents
// otherwise. Run never panics on bad input: a malformed request, a failed
// call or a timeout is reported in the Response.
type Tool interface {
	// Info describes the tool. It is cheap: a tool builds its Info once.
	Info() Info
	// Run runs the tool once. Cancelling ctx stops it; the Response then
	// says so (ExitCode 124 and Error "timeout" for a deadline).
	//
	// status, if not nil, receives progress: phases and chunks of output
	// as they are produced. It is called from one goroutine at a time and
	// never after Run returns. The Response always holds the complete
	// output, whatever was streamed.
	Run(ctx context.Context, req Request, status StatusFunc) Response
}

// InlineTool is a Tool whose calls change nothing outside the world they
// run in: they read it (through their ctx) and write nothing but blobs. A
// world may run such a call inside the step that asks for it, so that the
// request and the answer commit together (see effects.InlineAdapter).
type InlineTool interface {
	Tool
	// RunsInline reports whether req can run inside the step whose context
	// is ctx. A call that would wait for the world to move on (for a
	// journal height it has not reached, say) must say no; it then runs
	// once the step is durable.
	RunsInline(ctx context.Context, req Request) bool
}

// Request is one call of a tool.
type Request struct {
	// Arguments is the call's JSON object, as the model wrote it; it must
	// validate against the tool's InputSchema. For shell-like tools it is
	// {"commands": "..."} and may be left empty when Commands is set.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Commands is the script of a shell-like tool, run like `bash -c`.
	Commands string `json:"commands,omitempty"`
	// TimeoutMS bounds the call's wall time in milliseconds; 0 means the
	// tool's default.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// Response is the result of one call. Tools that return structured data
// write it as JSON to Stdout.
type Response struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exit_code"`
	// Error is the category of a failure ("timeout", "limit_exceeded",
	// "invalid_arguments", ...), empty when the call succeeded.
	Error string `json:"error,omitempty"`
	// StdoutTruncated and StderrTruncated report that output was cut at
	// the tool's output limit.
	StdoutTruncated bool `json:"stdout_truncated,omitempty"`
	StderrTruncated bool `json:"stderr_truncated,omitempty"`
}

// Status phases, in the order a call goes through them.
const (
	PhaseValidate = "validate"
	PhaseParse    = "parse"
	PhaseExecute  = "execute"
	PhaseOutput   = "output"
	PhaseComplete = "complete"
)

// Status is a progress report of Tool.Run.
type Status struct {
	// Phase is one of the Phase constants.
	Phase string `json:"phase"`
	// Message is a human-readable note, if any.
	Message string `json:"message,omitempty"`
	// PercentComplete is progress in [0, 100], or nil when unknown.
	PercentComplete *float64 `json:"percent_complete,omitempty"`
	// ETAMillis is the estimated time left, or nil when unknown.
	ETAMillis *int64 `json:"eta_ms,omitempty"`
	// Output is a chunk of output when Phase is PhaseOutput.
	Output string `json:"output,omitempty"`
	// Stream is "stdout" or "stderr" when Phase is PhaseOutput.
	Stream string `json:"stream,omitempty"`
}

// StatusFunc receives progress reports.
type StatusFunc func(Status)

// Stdout returns an output Status carrying a chunk of standard output.
func Stdout(chunk string) Status { return Status{Phase: PhaseOutput, Output: chunk, Stream: "stdout"} }

// Stderr returns an output Status carrying a chunk of standard error.
func Stderr(chunk string) Status { return Status{Phase: PhaseOutput, Output: chunk, Stream: "stderr"} }
