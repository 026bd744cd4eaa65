package bash

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/bash/internal/budget"
	"github.com/demiurge-dev/demiurge/tools/bash/internal/coreutils"
	"github.com/demiurge-dev/demiurge/tools/bash/internal/shell"
	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// run runs a request in the sandbox's interpreter (package shell).
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
	st.phase(tools.PhaseParse, 10) // the shell parses as it runs
	st.phase(tools.PhaseExecute, 20)
	fsys := opts.FS
	if fsys == nil {
		fsys = vfs.New(vfs.Options{Clock: now, Limits: vfs.Limits{
			MaxFileBytes: lim.MaxFileBytes, MaxWriteBytes: lim.MaxWriteBytes, MaxFiles: lim.MaxFiles}})
	}
	ex := &execution{
		t:      t,
		lim:    lim,
		now:    now,
		seed:   opts.Seed,
		fs:     fsys,
		stdout: &capWriter{max: lim.MaxStdoutBytes, stream: "stdout", sink: st},
		stderr: &capWriter{max: lim.MaxStderrBytes, stream: "stderr", sink: st},
	}
	base, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	runCtx, cancelTimeout := context.WithTimeout(base, timeout)
	defer cancelTimeout()
	ex.cancel = cancel
	mem := budget.New(lim.MaxMemoryBytes, nil)
	ex.budget = mem
	runner := shell.New(shell.Config{
		FS:      fsys,
		Env:     append(t.baseEnv(), t.env...),
		Stdout:  ex.stdout,
		Stderr:  ex.stderr,
		Now:     now,
		Budget:  mem,
		Exec:    ex.shellExec,
		Kind:    ex.shellKind,
		Suggest: ex.suggest,
		Names:   func() []string { return append(sandboxCommands(), t.toolNames()...) },
		User:    t.user,
		Host:    t.host,
		Seed:    opts.Seed,
		Limits: shell.Limits{
			MaxCommands:            lim.MaxCommands,
			MaxLoopIterations:      lim.MaxLoopIterations,
			MaxTotalLoopIterations: lim.MaxTotalLoopIterations,
			MaxFunctionDepth:       lim.MaxFunctionDepth,
			MaxPipelineStages:      lim.MaxPipelineStages,
			MaxShellDepth:          maxShellDepth,
			MaxScriptBytes:         lim.MaxScriptBytes,
			MaxASTDepth:            lim.MaxASTDepth,
			MaxSubstBytes:          lim.MaxVarBytes,
		},
		Builtins: map[string]shell.Builtin{
			"help":     ex.shellHelp,
			"discover": ex.shellDiscover,
		},
		// once stopped, what the commands still write as they unwind
		// ("cat: interrupted") is not the script's output
		OnStop: func(error) {
			ex.stdout.close()
			ex.stderr.close()
		},
	})
	res := runner.Run(runCtx, r.script)
	ex.stdout.close()
	ex.stderr.close()
	if le := ex.limit(); le != nil {
		return ex.result(1, ErrorLimitExceeded, le.Error()+"\n")
	}
	var le *shell.LimitError
	var be *budget.ExceededError
	var re *shell.RejectedError
	switch {
	case errors.As(res.Err, &re):
		return ex.result(2, ErrorRejected, "bash: "+re.Error()+"\n")
	case errors.As(res.Err, &le):
		return ex.result(1, ErrorLimitExceeded, le.Error()+"\n")
	case errors.As(res.Err, &be):
		return ex.result(1, ErrorLimitExceeded, "resource limit exceeded: "+be.Error()+"\n")
	}
	if err := ctx.Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return ex.result(124, ErrorTimeout, "bash: execution timed out (deadline of the caller)\n")
		}
		return ex.result(130, ErrorCancelled, "bash: execution cancelled\n")
	}
	if errors.Is(runCtx.Err(), context.DeadlineExceeded) {
		secs := strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64)
		return ex.result(124, ErrorTimeout, "bash: execution timed out after "+secs+"s\n")
	}
	if res.Err != nil {
		slog.Error("bash: interpreter failed", "err", res.Err)
		return ex.result(1, ErrorInternal, "bash: internal error\n")
	}
	if res.SyntaxError {
		return ex.result(res.Status, ErrorParse, "")
	}
	return ex.result(res.Status, "", "")
}

// shellExec runs a command the shell does not implement: a tool or a
// utility.
func (ex *execution) shellExec(ctx context.Context, c *shell.Command) (int, bool) {
	name := c.Args[0]
	cio := cmdIO{stdin: c.Stdin, stdout: c.Stdout, stderr: c.Stderr}
	if _, ok := ex.t.byName[name]; ok {
		return ex.callTool(ctx, name, c.Args[1:], cio), true
	}
	args := c.Args[1:]
	switch name {
	case "egrep", "fgrep":
		// grep -E and grep -F, as Debian's egrep and fgrep scripts
		args = append([]string{"-" + strings.ToUpper(name[:1])}, args...)
		name = "grep"
	}
	fn, ok := coreutils.Lookup(name)
	if !ok {
		fn, ok = ex.t.extra[name]
	}
	if !ok {
		return 0, false
	}
	stdin := c.Stdin
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	env := &coreutils.Env{
		Stdin:          stdin,
		Stdout:         c.Stdout,
		Stderr:         c.Stderr,
		Now:            ex.now,
		Sleep:          c.Sleep,
		MaxInputBytes:  ex.lim.MaxCommandInputBytes,
		MaxOutputBytes: ex.lim.MaxCommandOutputBytes,
		JQ:             ex.t.jq,
		FS:             ex.fs,
		Dir:            c.Dir,
		User:           ex.t.user,
		Host:           ex.t.host,
		Budget:         ex.budget,
		Random:         ex.random(c),
		Getenv: func(name string) string {
			v, _ := c.Getenv(name)
			return v
		},
		Environ: c.Environ,
		Exec: func(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer) int {
			return c.Exec(ctx, argv, stdin, stdout, stderr)
		},
		ExecEnv: func(ctx context.Context, environ, argv []string, stdin io.Reader, stdout, stderr io.Writer) int {
			return c.ExecEnv(ctx, environ, argv, stdin, stdout, stderr)
		},
	}
	return fn(ctx, env, args), true
}

// shellKind says what an external command is, for type and command -v.
func (ex *execution) shellKind(name string) string {
	if _, ok := ex.t.byName[name]; ok {
		return "tool"
	}
	if _, ok := coreutils.Lookup(name); ok {
		return "file"
	}
	if _, ok := ex.t.extra[name]; ok {
		return "file"
	}
	switch name {
	case "which", "egrep", "fgrep":
		return "file"
	}
	return ""
}

func (ex *execution) shellHelp(ctx context.Context, c *shell.Command) int {
	return ex.help(c.Args[1:], cmdIO{stdin: c.Stdin, stdout: c.Stdout, stderr: c.Stderr})
}

func (ex *execution) shellDiscover(ctx context.Context, c *shell.Command) int {
	return ex.discover(c.Args[1:], cmdIO{stdin: c.Stdin, stdout: c.Stdout, stderr: c.Stderr})
}
