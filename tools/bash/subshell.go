package bash

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/demiurge-dev/demiurge/tools/bash/internal/coreutils"
	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// maxShellDepth bounds nested shells (bash -c inside bash -c ...).
const maxShellDepth = 16

// loopCounters are the iteration counters of a run's loops, by loop id;
// scripts run by bash -c add theirs while the run goes on.
type loopCounters struct {
	mu sync.Mutex
	c  []*loopCounter
}

// loopCounter is one loop's iterations, and the status of the last
// command of its body (what a while loop returns, which the interpreter
// does not keep).
type loopCounter struct {
	atomic.Int64
	status atomic.Int32
}

func newLoopCounters(n int) *loopCounters {
	l := &loopCounters{}
	l.add(n)
	return l
}

// add makes n more counters and returns the id of the first.
func (l *loopCounters) add(n int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	base := len(l.c)
	for range n {
		l.c = append(l.c, new(loopCounter))
	}
	return base
}

// get returns the counter of loop id, nil if there is none.
func (l *loopCounters) get(id int) *loopCounter {
	l.mu.Lock()
	defer l.mu.Unlock()
	if id < 0 || id >= len(l.c) {
		return nil
	}
	return l.c[id]
}

// runnerEnv is an interpreter's environment twice over: start, with
// TMPDIR pointing where the interpreter's own temporary files can never
// be made, fixes the interpreter's temporary directory; script is what the
// script sees. Both are read-only once made, so one runnerEnv serves every
// run of a tool.
type runnerEnv struct {
	start, script expand.Environ
}

func newRunnerEnv(env []string) runnerEnv {
	return runnerEnv{
		start:  expand.ListEnviron(append(env[:len(env):len(env)], "TMPDIR="+interpTmpDir)...),
		script: expand.ListEnviron(env...),
	}
}

// newRunner makes an interpreter of the sandbox: env is its environment,
// dir its working directory, and every handler is the execution's.
func (ex *execution) newRunner(env runnerEnv, dir string, params []string, stdin io.Reader, stdout, stderr io.Writer) (*interp.Runner, error) {
	opts := []interp.RunnerOption{
		interp.Env(env.start),
		interp.Dir("/"),
		interp.StdIO(stdin, stdout, stderr),
		interp.CallHandler(ex.callHandler),
		interp.ExecHandlers(ex.execMiddleware),
		interp.OpenHandler(ex.openHandler),
		interp.ReadDirHandler2(ex.readDir),
		interp.StatHandler(ex.stat),
		interp.AccessHandler(ex.access),
	}
	if params != nil {
		opts = append(opts, interp.Params(append([]string{"--"}, params...)...))
	}
	runner, err := interp.New(opts...)
	if err != nil {
		return nil, err
	}
	// The first Reset fixes the interpreter's temporary directory (from
	// the environment above) and its starting directory, which interp.Dir
	// would have looked up on the host; the second gives the script its
	// real environment.
	runner.Dir = dir
	runner.Reset()
	runner.Env = env.script
	runner.Reset()
	return runner, nil
}

// shell runs bash or sh as a child shell of the script: bash -c SCRIPT
// [NAME [ARG]...], bash FILE [ARG]..., or bash reading its script from
// stdin. The child gets a fresh interpreter — its own variables,
// functions and options, the exported variables of its parent, the same
// working directory and file system — and runs under the same limits and
// counters as the script that started it.
func (ex *execution) shell(ctx context.Context, hc *interp.HandlerContext, args []string, cio cmdIO) int {
	name := args[0]
	var opts []string
	var script, file string
	var positional []string
	haveScript := false
	i := 1
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" || a == "-" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+") || a == "+" {
			break
		}
		switch a {
		case "-c":
			if i+1 >= len(args) {
				fmt.Fprintf(cio.stderr, "%s: -c: option requires an argument\n", name)
				return 2
			}
			script, haveScript = args[i+1], true
			i++
		case "--norc", "--noprofile", "-l", "--login", "-i", "-s", "--posix", "-p":
		case "-o", "+o":
			if i+1 < len(args) {
				opts = append(opts, a, args[i+1])
				i++
			}
		default:
			flags := strings.TrimLeft(a, "-+")
			for _, f := range flags {
				switch f {
				case 'e', 'u', 'x', 'f', 'n', 'v':
					opts = append(opts, a[:1]+string(f))
				case 'c':
					if i+1 >= len(args) {
						fmt.Fprintf(cio.stderr, "%s: -c: option requires an argument\n", name)
						return 2
					}
					script, haveScript = args[i+1], true
					i++
				default:
					fmt.Fprintf(cio.stderr, "%s: -%c: invalid option\n", name, f)
					return 2
				}
			}
		}
	}
	rest := args[i:]
	switch {
	case haveScript:
		positional = rest
		if len(positional) > 0 {
			name, positional = positional[0], positional[1:]
		}
	case len(rest) > 0:
		file, positional = rest[0], rest[1:]
		data, code := ex.scriptFile(ctx, hc, name, file, cio)
		if code != 0 {
			return code
		}
		script, name = string(data), file
	default:
		if cio.stdin == nil {
			return 0
		}
		data, err := io.ReadAll(io.LimitReader(cio.stdin, int64(ex.lim.MaxScriptBytes)+1))
		if err != nil {
			fmt.Fprintf(cio.stderr, "%s: read error: %v\n", name, err)
			return 1
		}
		script, cio.stdin = string(data), nil
	}
	return ex.runChild(ctx, hc, name, script, opts, positional, cio)
}

// scriptFile reads the script a shell or a path runs; a nonzero code
// means it failed (and said why).
func (ex *execution) scriptFile(ctx context.Context, hc *interp.HandlerContext, cmd, file string, cio cmdIO) ([]byte, int) {
	dir := vfs.WorkspaceDir
	if hc != nil {
		dir = hc.Dir
	}
	data, err := ex.fs.ReadFile(ctx, vfs.Abs(dir, file))
	if err != nil {
		code := 127
		if !errors.Is(err, fs.ErrNotExist) {
			code = 126
		}
		fmt.Fprintf(cio.stderr, "%s: %s: %s\n", cmd, file, reason(err))
		return nil, code
	}
	return data, 0
}

// runPath runs a command named by a path (./build.sh): a shell script of
// the file system, when it is one.
func (ex *execution) runPath(ctx context.Context, hc *interp.HandlerContext, args []string, cio cmdIO) int {
	dir := vfs.WorkspaceDir
	if hc != nil {
		dir = hc.Dir
	}
	p := args[0]
	info, err := ex.fs.Stat(ctx, vfs.Abs(dir, p))
	switch {
	case err != nil:
		fmt.Fprintf(cio.stderr, "bash: %s: %s\n", p, reason(err))
		if errors.Is(err, fs.ErrNotExist) {
			return 127
		}
		return 126
	case info.IsDir():
		fmt.Fprintf(cio.stderr, "bash: %s: Is a directory\n", p)
		return 126
	case info.Mode()&0o111 == 0:
		fmt.Fprintf(cio.stderr, "bash: %s: Permission denied\n", p)
		return 126
	}
	data, code := ex.scriptFile(ctx, hc, "bash", p, cio)
	if code != 0 {
		return code
	}
	if first, _, _ := strings.Cut(string(data), "\n"); strings.HasPrefix(first, "#!") {
		interp := strings.Fields(strings.TrimPrefix(first, "#!"))
		prog := ""
		if len(interp) > 0 {
			prog = interp[0]
			if (prog == "/usr/bin/env" || prog == "/bin/env") && len(interp) > 1 {
				prog = interp[1]
			}
		}
		base := prog[strings.LastIndexByte(prog, '/')+1:]
		if base != "bash" && base != "sh" && base != "dash" && base != "zsh" && base != "ksh" {
			fmt.Fprintf(cio.stderr, "bash: %s: %s: bad interpreter: only shell scripts run in the sandbox\n", p, prog)
			return 126
		}
	}
	return ex.runChild(ctx, hc, p, string(data), nil, args[1:], cio)
}

// runChild runs a script in a child shell.
func (ex *execution) runChild(ctx context.Context, hc *interp.HandlerContext, name, script string, opts, positional []string, cio cmdIO) int {
	if ex.shells.Add(1) > maxShellDepth {
		ex.shells.Add(-1)
		ex.fail("maximum nested shell depth exceeded (%d)", maxShellDepth)
		return 1
	}
	defer ex.shells.Add(-1)
	if len(script) > ex.lim.MaxScriptBytes {
		fmt.Fprintf(cio.stderr, "%s: script exceeds %d bytes\n", name, ex.lim.MaxScriptBytes)
		return 2
	}
	file, err := parse(script, "")
	if err != nil {
		fmt.Fprintf(cio.stderr, "%s: syntax error: %v\n", name, err)
		return 2
	}
	file.Name = name // $0
	shape, err := checkScript(file, ex.lim.MaxASTDepth)
	if err != nil {
		fmt.Fprintf(cio.stderr, "%s: %v\n", name, err)
		return 2
	}
	if shape.shadow {
		ex.shadow.Store(true)
	}
	n := loopCount(file)
	base := ex.loopIters.add(n)
	instrument(file, shape, ex.lim.MaxPipelineStages, base)
	env := ex.childEnv(hc)
	dir := vfs.WorkspaceDir
	if hc != nil {
		dir = hc.Dir
	}
	params := append([]string{}, positional...)
	runner, err := ex.newRunner(newRunnerEnv(env), dir, params, cio.stdin, cio.stdout, cio.stderr)
	if err != nil {
		fmt.Fprintf(cio.stderr, "%s: %v\n", name, err)
		return 2
	}
	if len(opts) > 0 {
		// set -e and friends, as the child's first command.
		pre, perr := parse("set "+strings.Join(opts, " "), "")
		if perr == nil {
			zeroPositions(pre)
			file.Stmts = append(pre.Stmts, file.Stmts...)
		}
	}
	err = ex.runSafely(ctx, runner, file)
	var status interp.ExitStatus
	switch {
	case err == nil:
		return 0
	case errors.As(err, &status):
		return int(status)
	case ex.limit() != nil || ctx.Err() != nil:
		return 1
	}
	fmt.Fprintf(cio.stderr, "%s: %v\n", name, err)
	return 1
}

// loopCount counts the loops instrument will number.
func loopCount(f *syntax.File) int {
	n := 0
	syntax.Walk(f, func(node syntax.Node) bool {
		switch node.(type) {
		case *syntax.WhileClause, *syntax.ForClause:
			n++
		}
		return true
	})
	return n
}

// childEnv is the environment of a child shell: the parent's exported
// variables (the sandbox's own when there is no parent context).
func (ex *execution) childEnv(hc *interp.HandlerContext) []string {
	if hc == nil {
		return append(ex.t.baseEnv(), ex.t.env...)
	}
	var env []string
	for name, vr := range hc.Env.Each {
		if vr.Exported && vr.Kind == expand.String && !strings.HasPrefix(name, reservedPrefix) {
			env = append(env, name+"="+vr.Str)
		}
	}
	return env
}

// shellNames are the shells a script may run (as child shells).
var shellNames = []string{"bash", "sh"}

// isSandboxCommand reports whether name is a utility or shell of the
// sandbox (not a tool, not a builtin).
func isSandboxCommand(name string) bool {
	if _, ok := coreutils.Lookup(name); ok {
		return true
	}
	switch name {
	case "echo", "printf", "test", "[", "true", "false", "pwd", "kill":
		return true
	}
	return slices.Contains(shellNames, name)
}
