package bashfx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/bash"
	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// ToolName is the name of the bash tool in LLM tool specs.
const ToolName = "bash"

// Defaults of ShellOptions.
const (
	DefaultTimeout = 30 * time.Second
	DefaultMaxTime = 10 * time.Minute
	DefaultDrain   = 10 * time.Second
	// DefaultOutputBytes bounds stdout and stderr each: what a script
	// writes past it is counted, not kept (bash-like output, as omega's).
	DefaultOutputBytes = 30000
)

// FilesNote is the bash tool's prompt tip about files.
const FilesNote = "The file system is the workspace: the working directory /workspace holds its files " +
	"(cat, ls, find, grep -r, sed -i, mkdir, mv, rm work on them, and the workspace_* commands see the same files), " +
	"and what a script writes, moves or removes there becomes one new workspace version when it ends; /tmp is scratch space"

// maxDrainCancelled bounds the wait for commands still running once the
// caller's context is done.
const maxDrainCancelled = time.Second

// Command is one tool call inside a script.
type Command struct {
	// Seq is the call's bash.CallSeq: its entry in the run's calls.
	Seq int
	// Tool is the tool the command names.
	Tool tools.Tool
	// Arguments is the command's flags as a JSON object with sorted keys,
	// as the tool's Request.Arguments takes them.
	Arguments string
}

// CallFunc runs one command of a script and returns the tool's response.
// It reports the workspace commits the call made to the tools.Recorder in
// ctx. A non-nil error means the call did not run (it was denied, or its
// adapter failed): the command fails with the error's text, with exit
// status 1 or, for a *bash.UserError, its Code. A response whose exit
// code is not 0 fails the command with that code and the response's
// stderr. CallFunc is called concurrently by the stages of a pipeline.
type CallFunc func(ctx context.Context, cmd Command) (tools.Response, error)

// Direct runs a command by calling the tool's Run, with no gate: the
// operator's shell (demiurge sh).
func Direct(ctx context.Context, cmd Command) (tools.Response, error) {
	return cmd.Tool.Run(ctx, tools.Request{Arguments: json.RawMessage(cmd.Arguments)}, nil), nil
}

// ShellOptions configure a Shell. Zero fields take defaults.
type ShellOptions struct {
	// Name is the tool's name (default ToolName, "bash").
	Name string
	// Limits bound each run (default bash.DefaultLimits, with Timeout
	// MaxTime and output DefaultOutputBytes). Limits.Timeout, if set,
	// overrides MaxTime.
	Limits bash.Limits
	// Timeout is a run's time limit when its request sets none (default
	// DefaultTimeout, 30 s).
	Timeout time.Duration
	// MaxTime bounds a run's time limit whatever its request asks
	// (default DefaultMaxTime, 10 minutes). A world's scripted cap
	// (max_timeout_ms) usually bounds it lower.
	MaxTime time.Duration
	// Drain bounds how long Run waits, after the script ended, for
	// commands still running (default DefaultDrain, 10 s).
	Drain time.Duration
}

// Shell is the bash tool of a set of tools: a bash.Tool whose
// commands are the tools. It is immutable and safe for concurrent use.
type Shell struct {
	tool    *bash.Tool
	tools   []tools.Tool
	timeout time.Duration
	drain   time.Duration
}

// NewShell builds the shell whose commands are ts, in that order. A tool
// whose name is not a valid command name (or that is named twice) is an
// error naming it.
func NewShell(ts []tools.Tool, opts ShellOptions) (*Shell, error) {
	if opts.Name == "" {
		opts.Name = ToolName
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxTime <= 0 {
		opts.MaxTime = DefaultMaxTime
	}
	if opts.Drain <= 0 {
		opts.Drain = DefaultDrain
	}
	lim := opts.Limits
	if lim.Timeout <= 0 {
		lim.Timeout = opts.MaxTime
	}
	if lim.MaxStdoutBytes <= 0 {
		lim.MaxStdoutBytes = DefaultOutputBytes
	}
	if lim.MaxStderrBytes <= 0 {
		lim.MaxStderrBytes = DefaultOutputBytes
	}
	b := bash.NewBuilder(opts.Name).
		ShortDescription("Run a bash script in a sandbox where every tool of the world is a command").
		FilesNote(FilesNote).
		Limits(lim)
	for _, t := range ts {
		info := t.Info()
		b.Tool(bash.ToolDef{
			Name:        info.Name,
			Description: oneLine(info),
			InputSchema: info.InputSchema,
			Category:    family(info.Name),
		}, callback(t, jsonOutput(info)))
	}
	st, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("bashfx: build the %s tool: %w", opts.Name, err)
	}
	return &Shell{tool: st, tools: slices.Clone(ts), timeout: min(opts.Timeout, st.Limits().Timeout), drain: opts.Drain}, nil
}

// oneLine is a tool's one-line description.
func oneLine(info tools.Info) string {
	s := info.ShortDescription
	if s == "" {
		s = info.Description
	}
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// family is the part of a tool name before its first '_' ("workspace" for
// workspace_read), the category `discover --categories` lists.
func family(name string) string {
	f, _, ok := strings.Cut(name, "_")
	if !ok {
		return ""
	}
	return f
}

// Tool returns the bash tool, for its Info: name, descriptions, system
// prompt and input schema. Its Run and RunScript, called directly rather
// than through Shell.Run, fail every tool command with "not available outside a world
// run"; the shell's utilities still work.
func (s *Shell) Tool() *bash.Tool { return s.tool }

// Tools returns the tools that are commands, in order.
func (s *Shell) Tools() []tools.Tool { return slices.Clone(s.tools) }

// RunOptions are the settings of one Shell.Run.
type RunOptions struct {
	// Call runs each command (default Direct).
	Call CallFunc
	// Clock is what the script's `date` reads (default time.Now).
	Clock func() time.Time
	// Status, if set, receives progress: phases and output chunks.
	Status tools.StatusFunc
	// Mount is the workspace the script's file system mounts at
	// /workspace; the zero Mount gives it an empty in-memory workspace.
	Mount Mount
	// Seed seeds the script's randomness ($RANDOM, shuf; see
	// bash.RunOptions.Seed); 0 is a fixed default.
	Seed uint64
}

// Result is the outcome of a run: the script's result (output, exit
// status, trace of calls) and the workspace commits its commands made.
type Result struct {
	bash.Result
	// Commits are the commits of every command, ordered by the commands'
	// Seq, each command's in the order it made them, then the commit of
	// the script's file changes, those of the workspace commands on the
	// mounted workspace included (see Shell.Run).
	Commits []tools.Commit
}

// Run runs req (a script in Commands or in Arguments' "commands", and an
// optional timeout) in a fresh interpreter. A request without a timeout
// gets ShellOptions.Timeout; none gets more than the shell's MaxTime.
// Cancelling ctx ends the script (exit status 124 for a deadline, 130
// otherwise). Run returns once the script has ended and every command it
// started has returned, or at most ShellOptions.Drain after the script's
// end (one second when ctx is done) if a command ignores its context; what
// such a command commits later is not in the Result.
//
// The script's file system mounts opts.Mount's workspace at /workspace:
// the script reads the version that was newest when it started, and what
// it writes, moves or removes there becomes one new version when it ends,
// committed through the Workspace (whose recorder is ctx's) and listed in
// Result.Commits, with a note on stderr naming each changed path. The
// workspace commands of that workspace work on the same files
// (Workspace.WithView): what they change joins that version. A script
// that fails commits what it changed before failing, as a shell on a disk
// would leave it; a run that never ends (the process dies) commits
// nothing. If the workspace moved on while the script ran, its changes
// are applied on top of the newer version (workspace.Apply).
func (s *Shell) Run(ctx context.Context, req tools.Request, opts RunOptions) Result {
	if opts.Call == nil {
		opts.Call = Direct
	}
	if req.TimeoutMS == 0 && !hasTimeout(req.Arguments) {
		req.TimeoutMS = s.timeout.Milliseconds()
	}
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	lim := s.tool.Limits()
	mt, err := mount(ctx, opts.Mount, vfs.Limits{MaxFileBytes: lim.MaxFileBytes, MaxWriteBytes: lim.MaxWriteBytes, MaxFiles: lim.MaxFiles}, clock)
	if err != nil {
		msg := "bash: " + err.Error() + "\n"
		if opts.Status != nil {
			opts.Status(tools.Stderr(msg))
		}
		return Result{Result: bash.Result{Response: tools.Response{Stderr: msg, ExitCode: 1, Error: bash.ErrorInternal}}}
	}
	r := &run{call: opts.Call, drained: make(chan struct{})}
	sctx := context.WithValue(ctx, runKey{}, r)
	if mt.ws != nil {
		// The workspace commands see and change the script's files.
		sctx = mt.ws.WithView(sctx, mt.name, mt)
	}
	res := s.tool.RunScript(sctx, req, bash.RunOptions{Status: opts.Status, Clock: opts.Clock, FS: mt.fs, Seed: opts.Seed})
	// Commands cancelled with the script return at once unless they ignore
	// their context; wait for them, so that their commits are not lost.
	wait := s.drain
	if ctx.Err() != nil {
		wait = min(wait, maxDrainCancelled)
	}
	t := time.NewTimer(wait)
	select {
	case <-r.close():
	case <-t.C:
	}
	t.Stop()
	commits := r.sortedCommits()
	rec := &tools.Recorder{}
	note, err := mt.commit(ctx, rec)
	if err != nil {
		note = "bash: " + err.Error() + "\n"
		if res.ExitCode == 0 {
			res.ExitCode, res.Error = 1, bash.ErrorInternal
		}
	}
	if note != "" {
		res.Stderr += note
		if opts.Status != nil {
			opts.Status(tools.Stderr(note))
		}
	}
	return Result{Result: res, Commits: append(commits, rec.Commits()...)}
}

// hasTimeout reports whether request arguments set timeout_ms.
func hasTimeout(args json.RawMessage) bool {
	var a struct {
		TimeoutMS *int64 `json:"timeout_ms"`
	}
	return len(args) > 0 && json.Unmarshal(args, &a) == nil && a.TimeoutMS != nil
}

type runKey struct{}

// run is the state of one Shell.Run the callbacks share.
type run struct {
	call CallFunc

	mu       sync.Mutex
	closed   bool
	inflight int
	drained  chan struct{}
	commits  []seqCommit
}

type seqCommit struct {
	seq int
	tools.Commit
}

// enter counts a command in; false once the run has ended.
func (r *run) enter() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.inflight++
	return true
}

// exit counts a command out and keeps its commits.
func (r *run) exit(seq int, cs []tools.Commit) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		r.commits = append(r.commits, seqCommit{seq, c})
	}
	r.inflight--
	if r.closed && r.inflight == 0 {
		close(r.drained)
	}
}

// close ends the run: no command starts after it. The channel is closed
// when the last command still running returns.
func (r *run) close() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.inflight == 0 {
		close(r.drained)
	}
	return r.drained
}

func (r *run) sortedCommits() []tools.Commit {
	r.mu.Lock()
	defer r.mu.Unlock()
	cs := slices.Clone(r.commits)
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].seq < cs[j].seq })
	out := make([]tools.Commit, len(cs))
	for i, c := range cs {
		out[i] = c.Commit
	}
	return out
}

// jsonOutput reports whether a tool writes a JSON object on stdout: its
// output schema is of type object.
func jsonOutput(info tools.Info) bool {
	var s struct {
		Type any `json:"type"`
	}
	return json.Unmarshal(info.OutputSchema, &s) == nil && s.Type == "object"
}

// callback is the bash callback of a tool: it hands the command to the
// CallFunc of the run it belongs to. The stdout of a tool that writes JSON
// objects (jsonLines) gets a final newline if it lacks one, as jq writes
// them, so that `a; b` prints two lines and `a | while read -r l` sees the
// last one.
func callback(t tools.Tool, jsonLines bool) bash.ToolCallback {
	name := t.Info().Name
	return func(ctx context.Context, args bash.ToolArgs) (string, error) {
		r, _ := ctx.Value(runKey{}).(*run)
		if r == nil {
			return "", &bash.UserError{Msg: "not available outside a world run (use bashfx.Shell.Run)"}
		}
		seq, _ := bash.CallSeq(ctx)
		params := args.Params
		if params == nil {
			params = map[string]any{}
		}
		// The same encoding as bash.Call.Arguments, so the receipt's
		// calls show exactly what the tool got.
		argsJSON, err := json.Marshal(params)
		if err != nil {
			return "", &bash.UserError{Msg: "arguments are not JSON: " + err.Error(), Code: 2}
		}
		if !r.enter() {
			return "", &bash.UserError{Msg: "the script has ended"}
		}
		rec := &tools.Recorder{}
		resp, err := safeCall(tools.WithRecorder(ctx, rec), r.call, Command{Seq: seq, Tool: t, Arguments: string(argsJSON)})
		r.exit(seq, rec.Commits())
		if err != nil {
			var ue *bash.UserError
			if errors.As(err, &ue) {
				return "", &bash.UserError{Msg: trimTool(name, ue.Msg), Code: ue.Code}
			}
			return "", &bash.UserError{Msg: trimTool(name, err.Error()), Code: 1}
		}
		if resp.ExitCode != 0 {
			msg := strings.TrimSpace(resp.Stderr)
			if msg == "" && resp.Error != "" {
				msg = resp.Error
			}
			if msg == "" {
				msg = fmt.Sprintf("exit status %d", resp.ExitCode)
			}
			return "", &bash.UserError{Msg: trimTool(name, msg), Code: resp.ExitCode}
		}
		if jsonLines && resp.Stdout != "" && !strings.HasSuffix(resp.Stdout, "\n") {
			return resp.Stdout + "\n", nil
		}
		return resp.Stdout, nil
	}
}

// safeCall calls fn, turning a panic into an error.
func safeCall(ctx context.Context, fn CallFunc, cmd Command) (resp tools.Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s failed: panic: %v", cmd.Tool.Info().Name, p)
		}
	}()
	return fn(ctx, cmd)
}

// trimTool removes a leading "<tool>: " from a message, which the script
// prints after the same prefix.
func trimTool(name, msg string) string {
	return strings.TrimPrefix(msg, name+": ")
}

// Receipt returns the result as a sys/ToolResponse@1 value: the script's
// output, exit status and error category; calls, the tool calls it made
// (bash.CallTool and bash.CallInvalid entries of its trace: help,
// discover and --dry-run touch nothing and are left out), in Seq order;
// commits, the commits those calls made.
func (r Result) Receipt() schema.Value {
	resp := r.Response
	// Output cut at the limit says so, with the size it had.
	if resp.StdoutTruncated {
		resp.Stdout += fmt.Sprintf("\n[output cut at %d of %d bytes]", len(resp.Stdout), r.StdoutBytes)
	}
	if resp.StderrTruncated {
		resp.Stderr += fmt.Sprintf("\n[stderr cut at %d of %d bytes]", len(resp.Stderr), r.StderrBytes)
	}
	rec := &tools.Recorder{}
	for _, c := range r.Commits {
		rec.AddCommit(c)
	}
	for _, c := range r.Calls {
		if c.Kind != bash.CallTool && c.Kind != bash.CallInvalid {
			continue
		}
		rec.AddCall(tools.SubCall{Seq: uint64(c.Seq), Tool: c.Tool, Arguments: c.Arguments,
			ExitCode: c.ExitCode, Error: c.Error, Duration: c.Duration})
	}
	return resp.Value(rec)
}
