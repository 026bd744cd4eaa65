package bash

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/demiurge-dev/demiurge/tools/bash/internal/coreutils"
	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// routeBuiltin routes the builtins the sandbox handles itself: trap,
// eval and source (whose code is checked first), type, which, hash and
// wait. ok is false for other commands.
func (ex *execution) routeBuiltin(hc *interp.HandlerContext, args []string) ([]string, bool) {
	switch args[0] {
	case "trap":
		return ex.trap(args), true
	case "eval":
		code := strings.Join(args[1:], " ")
		if err := checkRuntimeCode(code, ex.lim.MaxASTDepth); err != nil {
			return []string{execError, "bash: eval: " + err.Error(), "2"}, true
		}
		return args, true
	case "source", ".":
		if len(args) < 2 {
			return []string{execError, "bash: " + args[0] + ": filename argument required", "2"}, true
		}
		dir := vfs.WorkspaceDir
		if hc != nil {
			dir = hc.Dir
		}
		data, err := ex.fs.ReadFile(context.Background(), vfs.Abs(dir, args[1]))
		if err != nil {
			return []string{execError, "bash: " + args[1] + ": " + reason(err).Error(), "1"}, true
		}
		if err := checkRuntimeCode(string(data), ex.lim.MaxASTDepth); err != nil {
			return []string{execError, "bash: " + args[0] + ": " + args[1] + ": " + err.Error() + "; run it with bash " + args[1] + " instead", "2"}, true
		}
		return args, true
	case "type":
		return append([]string{execType}, args[1:]...), true
	case "which":
		return append([]string{execType, "--which"}, args[1:]...), true
	case "hash", "wait":
		return []string{":"}, true // nothing is looked up on a PATH; nothing runs in the background
	}
	return nil, false
}

// checkRuntimeCode checks code given at run time (eval, trap, source):
// besides what the sandbox refuses in any script, it may not hold loops
// or function definitions, which the limits can only bound in code
// instrumented before it runs.
func checkRuntimeCode(code string, maxDepth int) error {
	f, err := parse(code, "")
	if err != nil {
		return fmt.Errorf("syntax error: %v", err)
	}
	if _, err := checkScript(f, maxDepth); err != nil {
		return err
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		if err != nil {
			return false
		}
		switch x := n.(type) {
		case *syntax.WhileClause, *syntax.ForClause:
			err = fmt.Errorf("loops are not supported in code given at run time; write the loop in the script itself")
		case *syntax.FuncDecl:
			err = fmt.Errorf("function definitions are not supported in code given at run time; define the function in the script itself")
		case *syntax.ProcSubst:
			err = fmt.Errorf("process substitution is not supported in code given at run time")
		case *syntax.Stmt:
			if x.Background || x.Disown {
				err = fmt.Errorf("background jobs are not supported in code given at run time")
			}
		}
		return err == nil
	})
	return err
}

// trapSignals are the conditions a trap may name; only EXIT and ERR ever
// happen in the sandbox (no signals reach it), the others are accepted
// and never fire.
var trapSignals = []string{"EXIT", "ERR", "DEBUG", "RETURN", "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS",
	"FPE", "KILL", "USR1", "SEGV", "USR2", "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN",
	"TTOU", "URG", "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO", "PWR", "SYS"}

// trap routes trap: the handler is checked (see checkRuntimeCode) and
// only EXIT and ERR are handed to the interpreter.
func (ex *execution) trap(args []string) []string {
	if len(args) == 1 || args[1] == "-p" || args[1] == "-l" {
		if len(args) > 1 && args[1] == "-l" {
			return []string{execError, "", "0"}
		}
		return []string{"trap"}
	}
	rest := args[1:]
	if rest[0] == "--" {
		rest = rest[1:]
	}
	if len(rest) == 0 {
		return []string{"trap"}
	}
	handler, sigs := rest[0], rest[1:]
	if len(rest) == 1 {
		handler, sigs = "-", rest // trap SIG: reset
	}
	var keep []string
	for _, s := range sigs {
		u := strings.ToUpper(strings.TrimPrefix(strings.ToUpper(s), "SIG"))
		switch {
		case u == "EXIT" || u == "0":
			keep = append(keep, "EXIT")
		case u == "ERR":
			keep = append(keep, "ERR")
		case slices.Contains(trapSignals, u):
		default:
			if n, err := strconv.Atoi(s); err == nil && n > 0 && n < 65 {
				continue
			}
			return []string{execError, "bash: trap: " + s + ": invalid signal specification", "1"}
		}
	}
	if handler != "-" && handler != "" {
		if err := checkRuntimeCode(handler, ex.lim.MaxASTDepth); err != nil {
			return []string{execError, "bash: trap: " + err.Error() + "; put the commands in a function and trap it: trap cleanup EXIT", "2"}
		}
	}
	if len(keep) == 0 {
		return []string{":"}
	}
	return append([]string{"trap", "--", handler}, keep...)
}

// kind says what a name is as a command: "keyword", "function",
// "builtin", "tool", "file" (a utility, which lives in /usr/bin as
// bash would find it), or "" when there is no such command.
func (ex *execution) kind(name string) string {
	switch {
	case syntax.IsKeyword(name):
		return "keyword"
	}
	if _, ok := ex.funcs.Load(name); ok {
		return "function"
	}
	if _, ok := ex.t.byName[name]; ok {
		return "tool"
	}
	switch name {
	case "echo", "printf", "test", "[", "true", "false", "pwd", "cd", "help", "discover", "type", "trap", "eval",
		"source", ".", "hash", "wait", "command":
		return "builtin"
	}
	if interp.IsBuiltin(name) && !disabled[name] {
		return "builtin"
	}
	if isSandboxCommand(name) {
		return "file"
	}
	return ""
}

// typeCmd is type [-t|-p|-P|-a] NAME..., command -v/-V NAME... and which
// NAME... (first argument --which, --v or --V), answered from the
// sandbox's own commands.
func (ex *execution) typeCmd(args []string, cio cmdIO) int {
	mode := ""
	if len(args) > 0 && (args[0] == "--which" || args[0] == "--v" || args[0] == "--V") {
		mode, args = args[0], args[1:]
	}
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && mode != "--which" {
		switch args[0] {
		case "-t", "-p", "-P":
			mode = args[0]
		case "-a", "-f":
		case "--":
			args = args[1:]
			goto names
		default:
			fmt.Fprintf(cio.stderr, "bash: type: %s: invalid option\n", args[0])
			return 2
		}
		args = args[1:]
	}
names:
	status := 0
	for _, n := range args {
		if mode == "--which" && strings.HasPrefix(n, "-") {
			continue
		}
		k := ex.kind(n)
		path := "/usr/bin/" + n
		switch mode {
		case "--v":
			switch k {
			case "":
				status = 1
			case "file":
				fmt.Fprintln(cio.stdout, path)
			default:
				fmt.Fprintln(cio.stdout, n)
			}
			continue
		case "--which", "-p", "-P":
			switch {
			case k == "file" || (k == "builtin" && isSandboxCommand(n)) || (mode == "-P" && k == "builtin" && slices.Contains([]string{"echo", "printf", "test", "[", "true", "false", "pwd"}, n)):
				fmt.Fprintln(cio.stdout, path)
			case mode == "--which" && (k == "builtin" || k == "tool") && slices.Contains([]string{"echo", "printf", "test", "[", "true", "false", "pwd"}, n):
				fmt.Fprintln(cio.stdout, path)
			case mode == "--which" && k == "tool":
				fmt.Fprintln(cio.stdout, n)
			default:
				status = 1
			}
			continue
		case "-t":
			if k == "tool" {
				k = "file"
			}
			if k == "" {
				status = 1
				continue
			}
			fmt.Fprintln(cio.stdout, k)
			continue
		}
		switch k {
		case "keyword":
			fmt.Fprintf(cio.stdout, "%s is a shell keyword\n", n)
		case "function":
			fmt.Fprintf(cio.stdout, "%s is a function\n", n)
		case "builtin":
			fmt.Fprintf(cio.stdout, "%s is a shell builtin\n", n)
		case "tool":
			fmt.Fprintf(cio.stdout, "%s is a tool command (%s --help describes it)\n", n, n)
		case "file":
			fmt.Fprintf(cio.stdout, "%s is %s\n", n, path)
		default:
			if mode == "--V" {
				fmt.Fprintf(cio.stderr, "bash: command: %s: not found\n", n)
			} else {
				fmt.Fprintf(cio.stderr, "bash: type: %s: not found\n", n)
			}
			status = 1
		}
	}
	return status
}

// psubFile makes the file of a <(...) in /tmp and prints its path.
func (ex *execution) psubFile(ctx context.Context, cio cmdIO) int {
	p := fmt.Sprintf("/tmp/.psub-%d", ex.psubs.Add(1))
	if err := ex.fs.WriteFile(ctx, p, nil, 0o600); err != nil {
		fmt.Fprintf(cio.stderr, "bash: process substitution: %v\n", reason(err))
		return 1
	}
	io.WriteString(cio.stdout, p)
	return 0
}

// sandboxCommands lists every command of the sandbox that is not a tool:
// utilities, shells and the builtins a model may call, sorted.
func sandboxCommands() []string {
	names := append(coreutils.Names(), shellNames...)
	names = append(names, "echo", "printf", "test", "[", "true", "false", "pwd", "cd", "read", "mapfile",
		"readarray", "declare", "local", "export", "unset", "set", "shift", "getopts", "exit", "return",
		"break", "continue", "let", "type", "trap", "eval", "source", "which", "wait", "help", "discover",
		"alias", "shopt", "printenv", "readonly", "command", "pushd", "popd", "dirs")
	slices.Sort(names)
	return slices.Compact(names)
}
