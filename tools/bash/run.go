package bash

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/bash/internal/budget"
	"github.com/demiurge-dev/demiurge/tools/bash/internal/coreutils"
	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// interpTmpDir is the TMPDIR the interpreter is built with: a path below
// a character device, which no host can have, so that the interpreter's
// own temporary-file shortcut (it opens FIFOs under TMPDIR directly,
// bypassing the open handler) can never reach a host file. Scripts see
// no TMPDIR (as bash sets none): mktemp and the like use /tmp, the
// sandbox's scratch directory.
const interpTmpDir = "/dev/null/sandbox-tmp"

// baseEnv is the environment of every script, before the Builder's (the
// interpreter sets PWD, IFS and OPTIND itself). PATH is for show: no
// command is ever looked up on a file system.
func (t *Tool) baseEnv() []string {
	return []string{"HOME=" + vfs.WorkspaceDir, "UID=1000", "EUID=1000", "GID=1000",
		"USER=" + t.user, "SHELL=/bin/bash", "PATH=/usr/local/bin:/usr/bin:/bin"}
}

// useNewShell makes every Tool run scripts in package shell (tests set
// it while both interpreters exist).
var useNewShell = false

// request is a decoded tools.Request.
type request struct {
	script  string
	timeout time.Duration // 0: the tool's limit
}

func decodeRequest(req tools.Request) (request, error) {
	out := request{script: req.Commands}
	if req.TimeoutMS < 0 {
		return out, fmt.Errorf("timeout_ms must be ≥ 0, got %d", req.TimeoutMS)
	}
	out.timeout = time.Duration(req.TimeoutMS) * time.Millisecond
	if len(bytes.TrimSpace(req.Arguments)) == 0 {
		return out, nil
	}
	var args struct {
		Commands  *string `json:"commands"`
		TimeoutMS *int64  `json:"timeout_ms"`
	}
	dec := json.NewDecoder(bytes.NewReader(req.Arguments))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&args); err != nil {
		return out, fmt.Errorf("tool arguments must be a JSON object {\"commands\": string, \"timeout_ms\": integer}: %v", err)
	}
	if args.Commands == nil && req.Commands == "" {
		return out, errors.New("`commands` is required")
	}
	if req.Commands == "" {
		out.script = *args.Commands
	}
	if args.TimeoutMS != nil && req.TimeoutMS == 0 {
		if *args.TimeoutMS < 0 {
			return out, fmt.Errorf("timeout_ms must be ≥ 0, got %d", *args.TimeoutMS)
		}
		out.timeout = time.Duration(*args.TimeoutMS) * time.Millisecond
	}
	return out, nil
}

// RunScript runs a script as Run does and also returns the trace of its
// tool calls. It never panics on input; the Response reports every
// failure.
func (t *Tool) RunScript(ctx context.Context, req tools.Request, opts RunOptions) Result {
	start := time.Now()
	st := newStatusSink(opts.Status)
	defer st.close()
	st.phase(tools.PhaseValidate, 0)
	var res Result
	if t.newShell || useNewShell {
		res = t.runShell(ctx, req, opts, st)
	} else {
		res = t.run(ctx, req, opts, st)
	}
	res.Duration = time.Since(start)
	st.phase(tools.PhaseComplete, 100)
	return res
}

func (t *Tool) run(ctx context.Context, req tools.Request, opts RunOptions, st *statusSink) Result {
	fail := func(code int, category, msg string) Result {
		st.chunk("stderr", msg)
		return Result{Response: tools.Response{Stderr: msg, ExitCode: code, Error: category}}
	}
	r, err := decodeRequest(req)
	if err != nil {
		return fail(2, ErrorInvalidArguments, "bash: "+err.Error()+"\n")
	}
	if strings.TrimSpace(r.script) == "" {
		return Result{}
	}
	lim := t.limits
	if len(r.script) > lim.MaxScriptBytes {
		return fail(2, ErrorRejected, fmt.Sprintf("bash: script exceeds %d bytes\n", lim.MaxScriptBytes))
	}
	st.phase(tools.PhaseParse, 10)
	file, err := parse(r.script, "")
	if err != nil {
		return fail(2, ErrorParse, "bash: syntax error: "+err.Error()+"\n")
	}
	file.Name = "bash" // $0, as for bash -c
	shape, err := checkScript(file, lim.MaxASTDepth)
	if err != nil {
		return fail(2, ErrorRejected, "bash: "+err.Error()+"\n")
	}
	loops := instrument(file, shape, lim.MaxPipelineStages, 0)
	timeout := lim.Timeout
	if r.timeout > 0 && r.timeout < timeout {
		timeout = r.timeout
	}
	now := t.clock
	if opts.Clock != nil {
		now = opts.Clock
	}
	if now == nil {
		now = time.Now
	}
	st.phase(tools.PhaseExecute, 20)
	fsys := opts.FS
	if fsys == nil {
		fsys = vfs.New(vfs.Options{Clock: now, Limits: vfs.Limits{
			MaxFileBytes: lim.MaxFileBytes, MaxWriteBytes: lim.MaxWriteBytes, MaxFiles: lim.MaxFiles}})
	}
	ex := &execution{
		t:         t,
		lim:       lim,
		now:       now,
		fs:        fsys,
		loopIters: newLoopCounters(loops),
		stdout:    &capWriter{max: lim.MaxStdoutBytes, stream: "stdout", sink: st},
		stderr:    &capWriter{max: lim.MaxStderrBytes, stream: "stderr", sink: st, hideTrace: true},
	}
	ex.shadow.Store(shape.shadow)
	return ex.execute(ctx, file, timeout)
}

// execution is the state of one run of a script.
type execution struct {
	t      *Tool
	lim    Limits
	now    func() time.Time
	fs     *vfs.FS
	cancel context.CancelCauseFunc

	stdout, stderr *capWriter

	commands   atomic.Int64
	iterations atomic.Int64
	loopIters  *loopCounters
	stages     atomic.Int64
	toolCalls  atomic.Int64
	shells     atomic.Int64 // nested shells running (bash -c)
	psubs      atomic.Int64 // files made for <(...)
	shadow     atomic.Bool  // the script defines ":", "true" or "false"
	funcs      sync.Map     // names of the functions the script defined
	lastScan   atomic.Int64 // unix nanos of the last full variable scan

	limitMu  sync.Mutex
	limitErr *limitError

	budget *budget.Budget

	seq     atomic.Int64
	traceMu sync.Mutex
	calls   []Call
	dropped int
}

func (ex *execution) execute(parent context.Context, file *syntax.File, timeout time.Duration) (res Result) {
	base, cancel := context.WithCancelCause(parent)
	ctx, cancelTimeout := context.WithTimeout(base, timeout)
	ex.cancel = cancel
	defer cancel(nil)
	defer cancelTimeout()

	runner, err := ex.newRunner(ex.t.envs, vfs.WorkspaceDir, nil, nil, ex.stdout, ex.stderr)
	if err != nil {
		slog.Error("bash: create interpreter", "err", err)
		return ex.result(1, ErrorInternal, "bash: internal error\n")
	}
	runErr := ex.runSafely(ctx, runner, file)
	ex.stdout.close()
	ex.stderr.close()

	if le := ex.limit(); le != nil {
		return ex.result(1, ErrorLimitExceeded, le.Error()+"\n")
	}
	if err := parent.Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return ex.result(124, ErrorTimeout, "bash: execution timed out (deadline of the caller)\n")
		}
		return ex.result(130, ErrorCancelled, "bash: execution cancelled\n")
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		secs := strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64)
		return ex.result(124, ErrorTimeout, "bash: execution timed out after "+secs+"s\n")
	}
	var status interp.ExitStatus
	switch {
	case runErr == nil:
		return ex.result(0, "", "")
	case errors.As(runErr, &status):
		return ex.result(int(status), "", "")
	default:
		slog.Error("bash: interpreter failed", "err", runErr)
		return ex.result(1, ErrorInternal, "bash: internal error\n")
	}
}

// runSafely runs the interpreter and turns a panic inside it into an
// error, so that a bug in the interpreter never takes the host down.
func (ex *execution) runSafely(ctx context.Context, runner *interp.Runner, file *syntax.File) (err error) {
	defer func() {
		if p := recover(); p != nil {
			ex.cancel(errors.New("interpreter panicked"))
			err = fmt.Errorf("interpreter panic: %v", p)
		}
	}()
	return runner.Run(ctx, file)
}

// result assembles the Result; msg, if any, ends stderr whatever its cap.
func (ex *execution) result(code int, category, msg string) Result {
	if msg != "" {
		ex.stderr.appendAlways(msg)
	}
	ex.traceMu.Lock()
	calls := ex.calls
	dropped := ex.dropped
	ex.traceMu.Unlock()
	slices.SortFunc(calls, func(a, b Call) int { return a.Seq - b.Seq })
	return Result{
		Response: tools.Response{
			Stdout:          ex.stdout.String(),
			Stderr:          ex.stderr.String(),
			ExitCode:        code,
			Error:           category,
			StdoutTruncated: ex.stdout.truncated,
			StderrTruncated: ex.stderr.truncated,
		},
		Calls:        calls,
		TraceDropped: dropped,
		StdoutBytes:  ex.stdout.written(),
		StderrBytes:  ex.stderr.written(),
	}
}

// fail records a violated limit, stops the run and returns the error for
// the interpreter (which halts on it).
func (ex *execution) fail(format string, args ...any) error {
	le := &limitError{msg: fmt.Sprintf(format, args...)}
	ex.limitMu.Lock()
	if ex.limitErr == nil {
		ex.limitErr = le
	} else {
		le = ex.limitErr
	}
	ex.limitMu.Unlock()
	ex.cancel(le)
	return le
}

func (ex *execution) limit() *limitError {
	ex.limitMu.Lock()
	defer ex.limitMu.Unlock()
	return ex.limitErr
}

// disabled are shell builtins that would reach outside the sandbox or run
// code the sandbox did not check; they are "command not found".
var disabled = map[string]bool{
	"exec": true, "builtin": true,
	"caller": true, "umask": true, "ulimit": true, "kill": true, "jobs": true,
	"bg": true, "fg": true, "disown": true, "suspend": true, "logout": true, "enable": true,
	"fc": true, "history": true, "bind": true, "complete": true, "compgen": true,
	"compopt": true, "newgrp": true, "coproc": true,
}

// callHandler runs for every simple command after expansion: it counts
// and bounds, answers generated calls, and routes names.
func (ex *execution) callHandler(ctx context.Context, args []string) ([]string, error) {
	hc := interp.HandlerCtx(ctx)
	name := args[0]
	// Inside $(...), stdout is the interpreter's string builder: bound it
	// like a variable, before loops fill memory with it.
	if sb, ok := hc.Stdout.(*strings.Builder); ok && int64(sb.Len()) > ex.lim.MaxVarBytes {
		return nil, ex.fail("command substitution output exceeded (%d bytes)", ex.lim.MaxVarBytes)
	}
	if !hc.Pos.IsValid() { // generated by instrument
		switch name {
		case genTick:
			return ex.tick(hc, args)
		case genLoop, genLoopZero:
			if id, err := strconv.Atoi(args[1]); err == nil {
				if c := ex.loopIters.get(id); c != nil {
					c.Store(0)
				}
			}
			if name == genLoopZero {
				if ex.shadow.Load() {
					return argsExecTrue, nil
				}
				return []string{":"}, nil
			}
			return ex.keepStatus(hc), nil
		case genEnter:
			d, _ := strconv.ParseInt(args[1], 10, 64)
			if d > ex.lim.MaxFunctionDepth {
				return nil, ex.fail("maximum function depth exceeded (%d)", ex.lim.MaxFunctionDepth)
			}
			return ex.keepStatus(hc), nil
		case genPipe:
			k, _ := strconv.ParseInt(args[1], 10, 64)
			if ex.stages.Add(k) > ex.lim.MaxPipelineStages {
				return nil, ex.fail("maximum concurrent pipeline stages exceeded (%d)", ex.lim.MaxPipelineStages)
			}
			return ex.keepStatus(hc), nil
		case genPipeEnd:
			k, _ := strconv.ParseInt(args[1], 10, 64)
			ex.stages.Add(-k)
			return ex.keepStatus(hc), nil
		case genVars:
			if err := ex.checkVars(hc, args[1:], true); err != nil {
				return nil, err
			}
			return ex.keepStatus(hc), nil
		case genFunc:
			ex.funcs.Store(args[1], true)
			return ex.keepStatus(hc), nil
		case genBody, genLoopEnd:
			id, _ := strconv.Atoi(args[1])
			c := ex.loopIters.get(id)
			if c == nil {
				return ex.keepStatus(hc), nil
			}
			if name == genBody {
				c.status.Store(int32(hc.LastExitStatus))
				return ex.keepStatus(hc), nil
			}
			if st := c.status.Load(); st != 0 {
				return []string{execExit, strconv.Itoa(int(st))}, nil
			}
			return argsExecTrue, nil
		case ":":
			if ex.shadow.Load() {
				return argsExecTrue, nil
			}
		}
		return args, nil // ":", "return", calls of generated functions
	}
	if strings.HasPrefix(name, reservedPrefix) {
		return []string{execDenied, name}, nil
	}
	if ex.commands.Add(1) > ex.lim.MaxCommands {
		return nil, ex.fail("maximum command count exceeded (%d)", ex.lim.MaxCommands)
	}
	if err := ex.checkVars(hc, nil, false); err != nil {
		return nil, err
	}
	return ex.route(&hc, args), nil
}

// route decides what a user command runs as.
func (ex *execution) route(hc *interp.HandlerContext, args []string) []string {
	name := args[0]
	// /usr/bin/jq, /bin/sh: the sandbox's commands live "there".
	for _, dir := range []string{"/usr/local/bin/", "/usr/bin/", "/bin/"} {
		if base, ok := strings.CutPrefix(name, dir); ok && isSandboxCommand(base) {
			return ex.route(hc, append([]string{base}, args[1:]...))
		}
	}
	if routed, ok := ex.routeBuiltin(hc, args); ok {
		return routed
	}
	if _, ok := ex.t.byName[name]; ok {
		return append([]string{execTool}, args...)
	}
	switch {
	case name == "exec" && len(args) == 1:
		// exec with redirections only ("exec >log 2>&1") makes them the
		// shell's own; they open files through the sandbox's file system.
		return args
	case disabled[name]:
		return []string{execDenied, name}
	case name == "help":
		return append([]string{execHelp}, args[1:]...)
	case name == "printf":
		return append([]string{execPrintf}, args[1:]...)
	case name == "pwd" && len(args) > 1:
		return []string{"pwd"} // -P would resolve symlinks on the host; the sandbox's only directory is "/"
	case name == "command":
		rest := args[1:]
		if len(rest) > 0 && (rest[0] == "-v" || rest[0] == "-V") {
			return append([]string{execCommandV}, rest...)
		}
		if len(rest) > 0 && rest[0] == "-p" {
			rest = rest[1:]
		}
		if len(rest) == 0 {
			return []string{":"}
		}
		if strings.HasPrefix(rest[0], reservedPrefix) {
			return []string{execDenied, rest[0]}
		}
		return ex.route(hc, rest)
	}
	return args
}

func (ex *execution) tick(hc interp.HandlerContext, args []string) ([]string, error) {
	if ex.iterations.Add(1) > ex.lim.MaxTotalLoopIterations {
		return nil, ex.fail("maximum total loop iterations exceeded (%d)", ex.lim.MaxTotalLoopIterations)
	}
	if id, err := strconv.Atoi(args[1]); err == nil {
		c := ex.loopIters.get(id)
		if c != nil {
			c.status.Store(0)
		}
		if c != nil && c.Add(1) > ex.lim.MaxLoopIterations {
			return nil, ex.fail("maximum loop iterations exceeded (%d)", ex.lim.MaxLoopIterations)
		}
	}
	return ex.keepStatus(hc), nil
}

var (
	argsTrue     = []string{":"}
	argsFalse    = []string{"false"}
	argsStatus   = []string{execStatus}
	argsExecTrue = []string{execTrue}
)

// keepStatus is the command a generated call becomes so that $? stays
// what it was: the builtins ":" and "false" for 0 and 1 (cheap), else
// execStatus, which the exec handler turns back into the status. When the
// script defines its own ":", "true" or "false", only the exec handler is
// used.
func (ex *execution) keepStatus(hc interp.HandlerContext) []string {
	if ex.shadow.Load() {
		if hc.LastExitStatus == 0 {
			return argsExecTrue
		}
		return argsStatus
	}
	switch hc.LastExitStatus {
	case 0:
		return argsTrue
	case 1:
		return argsFalse
	}
	return argsStatus
}

// varScanInterval is how often a command triggers a scan of all variables.
const varScanInterval = time.Millisecond

// checkVars bounds variable memory: the named variables at once, and all
// variables when forced or at most every varScanInterval.
func (ex *execution) checkVars(hc interp.HandlerContext, names []string, force bool) error {
	for _, n := range names {
		if varSize(hc.Env.Get(n)) > ex.lim.MaxVarBytes {
			return ex.fail("variable memory exceeded (%d bytes)", ex.lim.MaxVarBytes)
		}
	}
	now := time.Now().UnixNano()
	if !force && len(names) == 0 && now-ex.lastScan.Load() < int64(varScanInterval) {
		return nil
	}
	ex.lastScan.Store(now)
	var total int64
	for name, vr := range hc.Env.Each {
		total += int64(len(name)) + varSize(vr)
	}
	if total > ex.lim.MaxVarBytes {
		return ex.fail("variable memory exceeded (%d bytes)", ex.lim.MaxVarBytes)
	}
	return nil
}

func varSize(vr expand.Variable) int64 {
	n := int64(len(vr.Str))
	for _, s := range vr.List {
		n += int64(len(s))
	}
	for k, v := range vr.Map {
		n += int64(len(k) + len(v))
	}
	return n
}

// execMiddleware is the only exec handler: it never calls next, so no
// host program can ever run.
func (ex *execution) execMiddleware(next interp.ExecHandlerFunc) interp.ExecHandlerFunc {
	return func(ctx context.Context, args []string) error {
		hc := interp.HandlerCtx(ctx)
		switch args[0] {
		case execStatus:
			return exitStatus(hc.LastExitStatus)
		case execTrue:
			return nil
		case execExit:
			n, _ := strconv.Atoi(args[1])
			return exitStatus(n)
		}
		cio := cmdIO{stdin: stdinOf(hc), stdout: hc.Stdout, stderr: hc.Stderr}
		return exitStatus(ex.dispatch(ctx, &hc, args, cio))
	}
}

func exitStatus(code int) error {
	if code == 0 {
		return nil
	}
	return interp.ExitStatus(uint8(code))
}

// stdinOf returns the command's standard input, nil when none is attached.
func stdinOf(hc interp.HandlerContext) io.Reader {
	if hc.Stdin == nil {
		return nil
	}
	if f, ok := hc.Stdin.(*os.File); ok && f == nil {
		return nil
	}
	return hc.Stdin
}

// cmdIO is the standard streams of one command.
type cmdIO struct {
	stdin          io.Reader // nil: nothing attached
	stdout, stderr io.Writer
}

// dispatch runs a routed command (from the exec handler or from xargs).
// hc is the exec handler's context; it may be nil for commands that do not
// need builtins.
func (ex *execution) dispatch(ctx context.Context, hc *interp.HandlerContext, args []string, cio cmdIO) int {
	switch args[0] {
	case execDenied:
		return ex.notFound(cio.stderr, args[1])
	case execTool:
		return ex.callTool(ctx, args[1], args[2:], cio)
	case execHelp:
		return ex.help(args[1:], cio)
	case execCommandV:
		if len(args) < 2 {
			return 0
		}
		return ex.typeCmd(append([]string{"-" + args[1]}, args[2:]...), cio)
	case "discover":
		return ex.discover(args[1:], cio)
	case execPrintf:
		return ex.utility(ctx, hc, "printf", args[1:], cio)
	case execCat:
		return ex.utility(ctx, hc, "cat", nil, cio)
	case execType:
		return ex.typeCmd(args[1:], cio)
	case execError:
		io.WriteString(cio.stderr, args[1]+"\n")
		code, _ := strconv.Atoi(args[2])
		return code
	case genPsub:
		return ex.psubFile(ctx, cio)
	case "bash", "sh":
		return ex.shell(ctx, hc, args, cio)
	}
	if strings.Contains(args[0], "/") {
		return ex.runPath(ctx, hc, args, cio)
	}
	if _, ok := coreutils.Lookup(args[0]); ok || ex.t.extra[args[0]] != nil {
		return ex.utility(ctx, hc, args[0], args[1:], cio)
	}
	return ex.notFound(cio.stderr, args[0])
}

// utility runs one of the in-process text utilities.
func (ex *execution) utility(ctx context.Context, hc *interp.HandlerContext, name string, args []string, cio cmdIO) int {
	fn, ok := coreutils.Lookup(name)
	if !ok {
		fn = ex.t.extra[name]
	}
	stdin := cio.stdin
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	var envSnapshot expand.Environ
	dir := vfs.WorkspaceDir
	if hc != nil {
		envSnapshot = hc.Env
		dir = hc.Dir
	}
	env := &coreutils.Env{
		Stdin:          stdin,
		Stdout:         cio.stdout,
		Stderr:         cio.stderr,
		Now:            ex.now,
		MaxInputBytes:  ex.lim.MaxCommandInputBytes,
		MaxOutputBytes: ex.lim.MaxCommandOutputBytes,
		JQ:             ex.t.jq,
		FS:             ex.fs,
		Dir:            dir,
		User:           ex.t.user,
		Host:           ex.t.host,
		Getenv: func(name string) string {
			if envSnapshot == nil {
				return ""
			}
			return envSnapshot.Get(name).String()
		},
		Environ: func() []string {
			var kv []string
			if envSnapshot == nil {
				return kv
			}
			for name, vr := range envSnapshot.Each {
				if vr.Exported && vr.Kind == expand.String && !strings.HasPrefix(name, reservedPrefix) {
					kv = append(kv, name+"="+vr.Str)
				}
			}
			return kv
		},
		Exec: func(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer) int {
			return ex.xargsExec(ctx, hc, argv, cmdIO{stdin: stdin, stdout: stdout, stderr: stderr})
		},
	}
	return fn(ctx, env, args)
}

// xargsExec runs a command line built by xargs under the same rules as a
// command written in the script.
func (ex *execution) xargsExec(ctx context.Context, hc *interp.HandlerContext, argv []string, cio cmdIO) int {
	if len(argv) == 0 {
		return 0
	}
	if ctx.Err() != nil {
		return 124
	}
	if ex.commands.Add(1) > ex.lim.MaxCommands {
		ex.fail("maximum command count exceeded (%d)", ex.lim.MaxCommands)
		return 255
	}
	if strings.HasPrefix(argv[0], reservedPrefix) {
		return ex.notFound(cio.stderr, argv[0])
	}
	routed := ex.route(hc, argv)
	switch routed[0] {
	case "echo", "true", "false", "test", "[", ":":
		if hc == nil {
			return ex.notFound(cio.stderr, argv[0])
		}
		err := hc.Builtin(ctx, routed)
		if err == nil {
			return 0
		}
		if code, ok := builtinStatus(err); ok {
			return code
		}
		return 1
	}
	return ex.dispatch(ctx, hc, routed, cio)
}

// builtinStatus extracts the exit status of HandlerContext.Builtin's
// error ("builtin exit status N").
func builtinStatus(err error) (int, bool) {
	var es interp.ExitStatus
	if errors.As(err, &es) {
		return int(es), true
	}
	s := err.Error()
	if i := strings.LastIndexByte(s, ' '); i >= 0 {
		if n, perr := strconv.Atoi(s[i+1:]); perr == nil {
			return n, true
		}
	}
	return 0, false
}

// notFound prints "bash: X: command not found", with the closest command
// when one is close (edit distance 1 for short names, 2 for longer ones);
// 127. The message stays under 120 bytes.
func (ex *execution) notFound(w io.Writer, name string) int {
	shown := name
	if len(shown) > 40 {
		shown = shown[:40] + "..."
	}
	msg := "bash: " + shown + ": command not found"
	if s := ex.suggest(name); s != "" {
		msg += "; did you mean " + s + "?"
	}
	io.WriteString(w, msg+"\n")
	return 127
}

// suggest returns the command closest to name when it is close enough
// to be a typo of it, or "".
func (ex *execution) suggest(name string) string {
	if len(name) > 40 || len(name) < 2 {
		return ""
	}
	limit := 1
	if len(name) > 5 {
		limit = 2
	}
	best, bestDist := "", limit+1
	try := func(c string) {
		if len(c) < 2 || strings.HasPrefix(c, reservedPrefix) {
			return
		}
		if d := osaDistance(name, c); d > 0 && d < bestDist {
			best, bestDist = c, d
		}
	}
	for _, r := range ex.t.tools {
		try(r.def.Name)
	}
	for _, c := range sandboxCommands() {
		try(c)
	}
	return best
}

// osaDistance is the edit distance of two short strings where swapping
// two neighbours counts as one edit (optimal string alignment).
func osaDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(rb) > 64 || len(ra) > 64 {
		return 1 << 10
	}
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// statusSink serializes status reports and stops them once Run returns.
type statusSink struct {
	mu     sync.Mutex
	fn     tools.StatusFunc
	closed bool
}

func newStatusSink(fn tools.StatusFunc) *statusSink { return &statusSink{fn: fn} }

func (s *statusSink) phase(phase string, pct float64) {
	if s.fn == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.fn(tools.Status{Phase: phase, PercentComplete: &pct})
	}
}

func (s *statusSink) chunk(kind, data string) {
	if s.fn == nil || data == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if kind == "stdout" {
		s.fn(tools.Stdout(data))
	} else {
		s.fn(tools.Stderr(data))
	}
}

func (s *statusSink) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

// capWriter keeps at most max bytes, flags truncation, streams what it
// keeps, and never fails a write (the script goes on).
type capWriter struct {
	mu        sync.Mutex
	buf       []byte
	max       int
	total     int // bytes written, kept or not
	truncated bool
	closed    bool
	stream    string
	sink      *statusSink
	// hideTrace drops `set -x` lines of generated calls ("+ __sbx_...")
	// and of the ":" that follows them.
	hideTrace  bool
	afterTrace bool
	// partial is the streamed line not yet ended by a newline: output is
	// streamed a line at a time.
	partial []byte
}

// isGeneratedTrace reports whether p is an xtrace line of a generated
// call, and whether it is the ":" or "false" line that follows one.
func isGeneratedTrace(p []byte) (generated, companion bool) {
	i := 0
	for i < len(p) && p[i] == '+' {
		i++
	}
	if i == 0 || i >= len(p) || p[i] != ' ' {
		return false, false
	}
	rest := p[i+1:]
	return bytes.HasPrefix(rest, []byte(reservedPrefix)), string(rest) == ":\n" || string(rest) == "false\n"
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return len(p), nil
	}
	if w.hideTrace && len(p) > 0 && p[0] == '+' {
		generated, companion := isGeneratedTrace(p)
		if generated || (companion && w.afterTrace) {
			w.afterTrace = generated
			return len(p), nil
		}
	}
	w.afterTrace = false
	w.total += len(p)
	keep := p
	if w.truncated {
		keep = nil // once cut, the rest is counted, not kept
	} else if room := w.max - len(w.buf); len(p) > room {
		// Cut on a UTF-8 boundary: never half a character.
		cut := max(room, 0)
		for cut > 0 && !utf8.RuneStart(p[cut]) {
			cut--
		}
		keep = p[:cut]
		w.truncated = true
	}
	if len(keep) > 0 {
		w.buf = append(w.buf, keep...)
		w.stream1(keep)
	}
	return len(p), nil
}

// stream1 streams output a line at a time; the caller holds w.mu.
func (w *capWriter) stream1(p []byte) {
	if w.sink == nil || w.sink.fn == nil {
		return
	}
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.sink.chunk(w.stream, string(w.partial[:i+1]))
		w.partial = w.partial[i+1:]
	}
	if len(w.partial) == 0 {
		w.partial = nil
	}
}

// flushPartial streams a last line that has no newline; the caller
// holds w.mu.
func (w *capWriter) flushPartial() {
	if len(w.partial) > 0 {
		w.sink.chunk(w.stream, string(w.partial))
		w.partial = nil
	}
}

func (w *capWriter) close() {
	w.mu.Lock()
	w.closed = true
	w.flushPartial()
	w.mu.Unlock()
}

// appendAlways appends a final message regardless of the cap.
func (w *capWriter) appendAlways(s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, s...)
	w.flushPartial()
	w.sink.chunk(w.stream, s)
}

// written returns how many bytes the script wrote, kept or not.
func (w *capWriter) written() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.total
}

func (w *capWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}
