package shell

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"mvdan.cc/sh/v3/syntax"

	"github.com/demiurge-dev/demiurge/tools/bash/internal/escape"
	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// builtinFunc is a builtin: it runs in the shell with its arguments
// (args[0] is the name) and returns its status.
type builtinFunc func(sh *shell, args []string) int

var builtins map[string]builtinFunc

// specialBuiltins are POSIX's special builtins.
var specialBuiltins = map[string]bool{":": true, ".": true, "break": true, "continue": true, "eval": true,
	"exec": true, "exit": true, "export": true, "readonly": true, "return": true, "set": true, "shift": true,
	"times": true, "trap": true, "unset": true}

func init() {
	builtins = map[string]builtinFunc{
		":":         func(*shell, []string) int { return 0 },
		"true":      func(*shell, []string) int { return 0 },
		"false":     func(*shell, []string) int { return 1 },
		"echo":      builtinEcho,
		"printf":    builtinPrintf,
		"pwd":       builtinPwd,
		"cd":        builtinCd,
		"pushd":     builtinPushd,
		"popd":      builtinPopd,
		"dirs":      builtinDirs,
		"exit":      builtinExit,
		"logout":    builtinExit,
		"return":    builtinReturn,
		"break":     builtinBreak,
		"continue":  builtinBreak,
		"shift":     builtinShift,
		"eval":      builtinEval,
		"source":    builtinSource,
		".":         builtinSource,
		"exec":      builtinExec,
		"command":   builtinCommand,
		"builtin":   builtinBuiltin,
		"type":      builtinType,
		"hash":      builtinHash,
		"wait":      builtinWait,
		"jobs":      builtinJobs,
		"kill":      builtinKill,
		"times":     builtinTimes,
		"umask":     builtinUmask,
		"ulimit":    builtinUlimit,
		"enable":    builtinEnable,
		"caller":    builtinCaller,
		"let":       builtinLet,
		"test":      builtinTest,
		"[":         builtinTest,
		"alias":     builtinAlias,
		"unalias":   builtinUnalias,
		"trap":      builtinTrap,
		"getopts":   builtinGetopts,
		"read":      builtinRead,
		"mapfile":   builtinMapfile,
		"readarray": builtinMapfile,
		"set":       builtinSet,
		"shopt":     builtinShopt,
		"declare":   builtinDeclare,
		"typeset":   builtinDeclare,
		"local":     builtinDeclare,
		"export":    builtinDeclare,
		"readonly":  builtinDeclare,
		"unset":     builtinUnset,
		"help":      builtinHelp,
		"bash":      builtinBash,
		"sh":        builtinBash,
		"bind":      builtinNoTerminal,
		"complete":  builtinComplete,
		"compgen":   builtinCompgen,
		"compopt":   builtinCompopt,
		"fc":        builtinFc,
		"history":   builtinHistory,
		"bg":        builtinNoJobs,
		"fg":        builtinNoJobs,
		"disown":    builtinDisown,
		"suspend":   builtinNoJobs,
	}
}

// IsBuiltin reports whether name is a builtin of the shell.
func IsBuiltin(name string) bool {
	_, ok := builtins[name]
	return ok
}

// Builtins lists the shell's builtins, sorted.
func Builtins() []string {
	return sortedKeys(builtins)
}

func (sh *shell) runBuiltin(b builtinFunc, args []string) int {
	return b(sh, args)
}

// embedderBuiltin runs a builtin of Config.Builtins.
func (sh *shell) embedderBuiltin(b Builtin, args []string) int {
	c := sh.commandFor(args, nil)
	status := b(sh.r.ctx, c)
	sh.check()
	return status
}

// out writes a builtin's output to fd 1. A write to a pipe nobody reads
// ends the shell as SIGPIPE would; another failure is reported
// ("echo: write error: ...") and ok is false.
func (sh *shell) out(name, s string) bool {
	return sh.writeFD(1, name, s)
}

func (sh *shell) writeFD(fd int, name, s string) bool {
	f := sh.fds.get(fd)
	if f == nil || f.w == nil {
		sh.errorf("%s: write error: Bad file descriptor", name)
		return false
	}
	if s == "" {
		return true
	}
	_, err := io.WriteString(f.w, s)
	if err == nil {
		return true
	}
	if isBrokenPipe(err) {
		panic(pipePanic{})
	}
	if errors.Is(err, errStopped) || sh.r.stopped.Load() {
		panic(stopPanic{})
	}
	sh.errorf("%s: write error: %s", name, errReason(err))
	return false
}

// usage reports a bad option or argument of a builtin, followed by its
// usage line as bash prints it: 2.
func (sh *shell) usage(name, format string, args ...any) int {
	sh.errorf("%s: %s", name, fmt.Sprintf(format, args...))
	if u, ok := builtinUsage[name]; ok {
		sh.usageLine("%s: usage: %s %s", name, name, u)
	}
	return 2
}

// builtinUsage is bash 5.2's usage line of the builtins that report
// through usage (after the name).
var builtinUsage = map[string]string{
	"pwd":       "[-LP]",
	"cd":        "[-L|[-P [-e]] [-@]] [dir]",
	"dirs":      "[-clpv] [+N] [-N]",
	"exec":      "[-cl] [-a name] [command [argument ...]] [redirection ...]",
	"command":   "[-pVv] command [arg ...]",
	"type":      "[-afptP] name [name ...]",
	"read":      "[-ers] [-a array] [-d delim] [-i text] [-n nchars] [-N nchars] [-p prompt] [-t timeout] [-u fd] [name ...]",
	"shopt":     "[-pqsu] [-o] [optname ...]",
	"unset":     "[-f] [-v] [-n] [name ...]",
	"mapfile":   "[-d delim] [-n count] [-O origin] [-s count] [-t] [-u fd] [-C callback] [-c quantum] [array]",
	"readarray": "[-d delim] [-n count] [-O origin] [-s count] [-t] [-u fd] [-C callback] [-c quantum] [array]",
	"printf":    "[-v var] format [arguments]",
	"wait":      "[-fn] [-p var] [id ...]",
	"hash":      "[-lr] [-p pathname] [-dt] [name ...]",
	"umask":     "[-p] [-S] [mode]",
	"disown":    "[-h] [-ar] [jobspec ... | pid ...]",
}

// shortOptions reads the single-letter options before a builtin's
// operands ("-ab" is "-a -b"; "--" ends them; "-" alone is an operand),
// handing each letter to take, which reports whether the builtin has it.
// An unknown letter is bash's "NAME: -c: invalid option" and NAME's usage
// line, and status 2; otherwise it returns the operands and 0.
func (sh *shell) shortOptions(name string, args []string, take func(c rune) bool) ([]string, int) {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && len(args[0]) > 1 {
		if args[0] == "--" {
			return args[1:], 0
		}
		for _, c := range args[0][1:] {
			if !take(c) {
				return nil, sh.usage(name, "-%c: invalid option", c)
			}
		}
		args = args[1:]
	}
	return args, 0
}

func builtinEcho(sh *shell, args []string) int {
	args = args[1:]
	newline, escapes := true, sh.shopt.xpgEcho
	for len(args) > 0 {
		a := args[0]
		if len(a) < 2 || a[0] != '-' || strings.Trim(a[1:], "neE") != "" {
			break
		}
		for _, c := range a[1:] {
			switch c {
			case 'n':
				newline = false
			case 'e':
				escapes = true
			case 'E':
				escapes = false
			}
		}
		args = args[1:]
	}
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if escapes {
			s, stop := echoEscapes(a)
			b.WriteString(s)
			if stop {
				newline = false
				break
			}
		} else {
			b.WriteString(a)
		}
	}
	if newline {
		b.WriteByte('\n')
	}
	if !sh.out("echo", b.String()) {
		return 1
	}
	return 0
}

// echoEscapes interprets echo -e's escapes; stop is \c.
func echoEscapes(s string) (string, bool) {
	if strings.IndexByte(s, '\\') < 0 {
		return s, false
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch c = s[i]; c {
		case 'a', 'b', 'e', 'E', 'f', 'n', 'r', 't', 'v', '\\':
			b.WriteByte(escape.Letter(c))
		case 'c':
			return b.String(), true
		case '0':
			n := 0
			for j := 0; j < 3 && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '7'; j++ {
				n = n*8 + int(s[i+1]-'0')
				i++
			}
			b.WriteByte(byte(n))
		case 'x', 'u', 'U':
			i += escape.Numeric(&b, s[i+1:], c)
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String(), false
}

func builtinPwd(sh *shell, args []string) int {
	for _, a := range args[1:] {
		switch a {
		case "-L", "-P":
		default:
			if strings.HasPrefix(a, "-") {
				return sh.usage("pwd", "%s: invalid option", a)
			}
		}
	}
	if !sh.out("pwd", sh.dir+"\n") {
		return 1
	}
	return 0
}

func builtinCd(sh *shell, args []string) int {
	args = args[1:]
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-" {
		if args[0] == "--" {
			args = args[1:]
			break
		}
		if strings.Trim(args[0][1:], "LPe@") != "" {
			return sh.usage("cd", "%s: invalid option", args[0])
		}
		args = args[1:]
	}
	if len(args) > 1 {
		sh.errorf("cd: too many arguments")
		return 1
	}
	target := ""
	print := false
	if len(args) == 0 {
		h, ok := sh.varValue("HOME")
		if !ok {
			sh.errorf("cd: HOME not set")
			return 1
		}
		target = h
	} else {
		target = args[0]
	}
	if target == "-" {
		o, ok := sh.varValue("OLDPWD")
		if !ok || o == "" {
			sh.errorf("cd: OLDPWD not set")
			return 1
		}
		target = o
		print = true
	}
	if target == "" {
		return 0
	}
	dir := vfs.Abs(sh.dir, target)
	if !strings.HasPrefix(target, "/") && !strings.HasPrefix(target, ".") {
		if cdpath, ok := sh.varValue("CDPATH"); ok && cdpath != "" {
			for _, base := range strings.Split(cdpath, ":") {
				if base == "" {
					base = "."
				}
				cand := vfs.Abs(vfs.Abs(sh.dir, base), target)
				if sh.isDir(cand) {
					dir = cand
					print = base != "."
					break
				}
			}
		}
	}
	if fsys := sh.r.cfg.FS; fsys != nil {
		// a missing directory before "..": bash looks before it cleans
		if strings.Contains(target, "..") {
			base := sh.dir
			if strings.HasPrefix(target, "/") {
				base = "/"
			}
			parts := strings.Split(target, "/")
			for i, p := range parts {
				if p != ".." || i == 0 {
					continue
				}
				prefix := vfs.Abs(base, strings.Join(parts[:i], "/"))
				if !sh.isDir(prefix) {
					sh.errorf("cd: %s: No such file or directory", target)
					return 1
				}
			}
		}
		info, err := fsys.Stat(sh.r.ctx, dir)
		if err != nil {
			sh.errorf("cd: %s: %s", target, errReason(err))
			return 1
		}
		if !info.IsDir() {
			sh.errorf("cd: %s: Not a directory", target)
			return 1
		}
	}
	sh.chdir(dir)
	if print {
		sh.out("cd", dir+"\n")
	}
	return 0
}

// chdir changes the working directory and PWD/OLDPWD.
func (sh *shell) chdir(dir string) {
	old := sh.dir
	sh.dir = dir
	sh.setString("OLDPWD", old, false)
	sh.setString("PWD", dir, false)
}

func builtinPushd(sh *shell, args []string) int {
	args = args[1:]
	noChange := false
	if len(args) > 0 && args[0] == "-n" {
		noChange = true
		args = args[1:]
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	} else if len(args) > 0 && len(args[0]) > 1 && (args[0][0] == '-' || args[0][0] == '+') {
		if _, err := strconv.Atoi(args[0][1:]); err != nil {
			sh.errorf("pushd: %s: invalid number", args[0])
			sh.usageLine("pushd: usage: pushd [-n] [+N | -N | dir]")
			return 2
		}
	}
	if len(args) > 1 {
		sh.errorf("pushd: too many arguments")
		return 1
	}
	if len(args) == 0 {
		if len(sh.oldDirs) == 0 {
			sh.errorf("pushd: no other directory")
			return 1
		}
		top := sh.oldDirs[len(sh.oldDirs)-1]
		sh.oldDirs[len(sh.oldDirs)-1] = sh.dir
		if st := builtinCd(sh, []string{"cd", top}); st != 0 {
			return st
		}
		return builtinDirs(sh, []string{"dirs"})
	}
	if strings.HasPrefix(args[0], "+") || strings.HasPrefix(args[0], "-") && len(args[0]) > 1 {
		n, err := strconv.Atoi(args[0][1:])
		stack := sh.dirStack()
		if err != nil || n >= len(stack) {
			sh.errorf("pushd: %s: directory stack index out of range", args[0])
			return 1
		}
		if args[0][0] == '-' {
			n = len(stack) - 1 - n
		}
		rotated := append(append([]string{}, stack[n:]...), stack[:n]...)
		if st := builtinCd(sh, []string{"cd", rotated[0]}); st != 0 {
			return st
		}
		sh.oldDirs = nil
		for i := len(rotated) - 1; i >= 1; i-- {
			sh.oldDirs = append(sh.oldDirs, rotated[i])
		}
		return builtinDirs(sh, []string{"dirs"})
	}
	dir := vfs.Abs(sh.dir, args[0])
	if noChange {
		sh.oldDirs = append(sh.oldDirs[:len(sh.oldDirs):len(sh.oldDirs)], dir)
		return builtinDirs(sh, []string{"dirs"})
	}
	cur := sh.dir
	if st := builtinCd(sh, []string{"cd", args[0]}); st != 0 {
		return st
	}
	sh.oldDirs = append(sh.oldDirs[:len(sh.oldDirs):len(sh.oldDirs)], cur)
	return builtinDirs(sh, []string{"dirs"})
}

func builtinPopd(sh *shell, args []string) int {
	args = args[1:]
	noChange := false
	if len(args) > 0 && args[0] == "-n" {
		noChange = true
		args = args[1:]
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) > 0 {
		a := args[0]
		if a == "" || a[0] != '-' && a[0] != '+' {
			sh.errorf("popd: %s: invalid argument", a)
			sh.usageLine("popd: usage: popd [-n] [+N | -N]")
			return 2
		}
		if _, err := strconv.Atoi(a[1:]); err != nil {
			sh.errorf("popd: %s: invalid number", a)
			sh.usageLine("popd: usage: popd [-n] [+N | -N]")
			return 2
		}
	}
	if len(sh.oldDirs) == 0 {
		sh.errorf("popd: directory stack empty")
		return 1
	}
	if len(args) > 0 {
		n, err := strconv.Atoi(strings.TrimLeft(args[0], "+-"))
		stack := sh.dirStack()
		if err != nil || n >= len(stack) {
			sh.errorf("popd: %s: directory stack index out of range", args[0])
			return 1
		}
		if strings.HasPrefix(args[0], "-") {
			n = len(stack) - 1 - n
		}
		if n == 0 {
			return builtinPopd(sh, []string{"popd"})
		}
		stack = append(stack[:n], stack[n+1:]...)
		sh.oldDirs = nil
		for i := len(stack) - 1; i >= 1; i-- {
			sh.oldDirs = append(sh.oldDirs, stack[i])
		}
		return builtinDirs(sh, []string{"dirs"})
	}
	top := sh.oldDirs[len(sh.oldDirs)-1]
	sh.oldDirs = sh.oldDirs[:len(sh.oldDirs)-1]
	if !noChange {
		if st := builtinCd(sh, []string{"cd", top}); st != 0 {
			return st
		}
	}
	return builtinDirs(sh, []string{"dirs"})
}

func builtinDirs(sh *shell, args []string) int {
	long, perLine, numbered, clear := false, false, false, false
	for _, a := range args[1:] {
		switch a {
		case "-l":
			long = true
		case "-p":
			perLine = true
		case "-v":
			perLine, numbered = true, true
		case "-c":
			clear = true
		default:
			if n, err := strconv.Atoi(strings.TrimLeft(a, "+-")); err == nil && (a[0] == '+' || a[0] == '-') {
				stack := sh.dirStack()
				if n >= len(stack) {
					sh.errorf("dirs: %s: directory stack index out of range", a)
					return 1
				}
				if a[0] == '-' {
					n = len(stack) - 1 - n
				}
				sh.out("dirs", sh.tildeDir(stack[n], long)+"\n")
				return 0
			}
			if a[0] == '+' || a[0] == '-' {
				return sh.usage("dirs", "%s: invalid number", a)
			}
			return sh.usage("dirs", "%s: invalid option", a)
		}
	}
	if clear {
		sh.oldDirs = nil
		return 0
	}
	stack := sh.dirStack()
	var b strings.Builder
	for i, d := range stack {
		d = sh.tildeDir(d, long)
		switch {
		case numbered:
			fmt.Fprintf(&b, "%2d  %s\n", i, d)
		case perLine:
			b.WriteString(d + "\n")
		default:
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(d)
		}
	}
	if !perLine {
		b.WriteByte('\n')
	}
	sh.out("dirs", b.String())
	return 0
}

// tildeDir writes HOME as ~ (dirs without -l).
func (sh *shell) tildeDir(d string, long bool) string {
	if long {
		return d
	}
	if h, ok := sh.varValue("HOME"); ok && h != "" && h != "/" {
		if d == h {
			return "~"
		}
		if strings.HasPrefix(d, h+"/") {
			return "~" + d[len(h):]
		}
	}
	return d
}

// discard reports a usage error after which bash abandons what it was
// running (jump_to_top_level (DISCARD)): as bash -c, the shell ends
// with status 1.
func (sh *shell) discard(msg string) int {
	sh.errorf("%s", msg)
	sh.status = 1
	sh.flow = flowExit
	return 1
}

func builtinExit(sh *shell, args []string) int {
	status := sh.status
	if len(args) > 1 {
		n, err := strconv.ParseInt(strings.TrimSpace(args[1]), 10, 64)
		if err != nil {
			sh.errorf("exit: %s: numeric argument required", args[1])
			status = 2
		} else {
			status = int(uint8(n))
		}
		if len(args) > 2 && err == nil {
			sh.errorf("exit: too many arguments")
			status = 1
		}
	}
	sh.status = status
	sh.flow = flowExit
	return status
}

func builtinReturn(sh *shell, args []string) int {
	if len(sh.frames) == 0 && sh.sourceDepth == 0 {
		sh.errorf("return: can only `return' from a function or sourced script")
		return 2
	}
	status := sh.status
	if len(args) > 2 {
		if _, err := strconv.ParseInt(strings.TrimSpace(args[1]), 10, 64); err == nil {
			return sh.discard("return: too many arguments")
		}
	}
	if len(args) > 1 {
		n, err := strconv.ParseInt(strings.TrimSpace(args[1]), 10, 64)
		if err != nil {
			sh.errorf("return: %s: numeric argument required", args[1])
			status = 2
		} else {
			status = int(uint8(n))
		}
	}
	sh.status = status
	sh.flow = flowReturn
	return status
}

func builtinBreak(sh *shell, args []string) int {
	n := 1
	if len(args) > 1 && args[1] == "--" {
		args = append([]string{args[0]}, args[2:]...)
	}
	if len(args) > 2 {
		return sh.discard(args[0] + ": too many arguments")
	}
	if len(args) > 1 {
		v, err := strconv.Atoi(args[1])
		if err != nil {
			// bash exits, as for exit's bad argument
			sh.errorf("%s: %s: numeric argument required", args[0], args[1])
			sh.status = 128
			sh.flow = flowExit
			return 128
		}
		if v < 1 {
			sh.errorf("%s: %s: loop count out of range", args[0], args[1])
			return 1
		}
		n = v
	}
	if sh.loopDepth == 0 {
		sh.errorf("%s: only meaningful in a `for', `while', or `until' loop", args[0])
		return 0
	}
	if n > sh.loopDepth {
		n = sh.loopDepth
	}
	sh.flowN = n
	if args[0] == "break" {
		sh.flow = flowBreak
	} else {
		sh.flow = flowContinue
	}
	return 0
}

func builtinShift(sh *shell, args []string) int {
	n := 1
	if len(args) > 2 {
		return sh.discard("shift: too many arguments")
	}
	if len(args) > 1 {
		v, err := strconv.ParseInt(strings.TrimSpace(args[1]), 10, 64)
		if err != nil {
			sh.errorf("shift: %s: numeric argument required", args[1])
			return 1
		}
		if v < 0 {
			sh.errorf("shift: %s: shift count out of range", args[1])
			return 1
		}
		n = int(v)
	}
	p := sh.positional()
	if n > len(p) {
		if sh.shopt.shiftVerbose {
			sh.errorf("shift: shift count out of range")
		}
		return 1
	}
	sh.setPositional(p[n:])
	return 0
}

func builtinEval(sh *shell, args []string) (status int) {
	args = args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	} else if len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' {
		sh.errorf("eval: %s: invalid option", args[0][:2])
		sh.usageLine("eval: usage: eval [arg ...]")
		return 2
	}
	code := strings.Join(args, " ")
	if strings.TrimSpace(code) == "" {
		return 0
	}
	sh.evalDepth++
	defer func() { sh.evalDepth-- }()
	// an error that ends a command ends eval's code only
	defer func() {
		if p := recover(); p != nil {
			fp, ok := p.(fatalPanic)
			if !ok || fp.exit {
				panic(p)
			}
			sh.status = fp.status
			status = fp.status
		}
	}()
	if max := sh.r.lim.MaxShellDepth; max > 0 && int64(sh.evalDepth) > 10*max {
		sh.r.limit("maximum nested eval depth exceeded (%d)", 10*max)
	}
	name := ""
	if sh.src != nil {
		name = sh.src.name
	}
	line := sh.line
	src := &source{name: name, text: code}
	status = sh.runSource(src, false)
	sh.line = line
	if sh.syntaxError {
		sh.syntaxError = false
		if sh.flow == flowExit {
			return sh.status // (bash -c exits at an error in $(...))
		}
		return 2
	}
	return status
}

func builtinSource(sh *shell, args []string) int {
	if len(args) > 1 && args[1] == "--" {
		args = append([]string{args[0]}, args[2:]...)
	}
	if len(args) < 2 {
		sh.errorf("%s: filename argument required", args[0])
		sh.usageLine("%s: usage: %s filename [arguments]", args[0], args[0])
		return 2
	}
	file := args[1]
	fsys := sh.r.cfg.FS
	if fsys == nil {
		sh.errorf("%s: No such file or directory", file)
		return 1
	}
	abs := vfs.Abs(sh.dir, file)
	if sh.shopt.sourcepath && !strings.Contains(file, "/") {
		// a name without a slash is looked for in $PATH first
		if p, ok := sh.sourcePath(file); ok {
			abs = p
		}
	}
	data, err := fsys.ReadFile(sh.r.ctx, abs)
	if err != nil {
		sh.errorf("%s: %s", file, errReason(err))
		return 1
	}
	if max := sh.r.lim.MaxScriptBytes; max > 0 && len(data) > max {
		sh.errorf("%s: file exceeds %d bytes", file, max)
		return 1
	}
	sh.sourceDepth++
	if max := sh.r.lim.MaxShellDepth; max > 0 && int64(sh.sourceDepth) > 10*max {
		sh.r.limit("maximum nested source depth exceeded (%d)", 10*max)
	}
	fr := &frame{fn: &funcDef{name: "source", file: file}, isSource: true, callLine: sh.line}
	if sh.src != nil {
		fr.callFile = sh.src.name
	}
	if len(args) > 2 {
		fr.params = args[2:]
	} else {
		fr.params = sh.positional()
	}
	sh.frames = append(sh.frames, fr)
	line := sh.line
	defer func() {
		sh.sourceDepth--
		// the caller's positional parameters come back only when source
		// was given its own
		params := sh.frames[len(sh.frames)-1].params
		sh.frames = sh.frames[:len(sh.frames)-1]
		if len(args) <= 2 {
			sh.setPositional(params)
		}
		sh.line = line
	}()
	status := sh.runSource(&source{name: file, text: string(data)}, false)
	if sh.flow == flowReturn {
		sh.flow = flowNone
	}
	if sh.syntaxError {
		sh.syntaxError = false
		return 2
	}
	return status
}

// sourcePath finds a readable file for source in $PATH's directories.
func (sh *shell) sourcePath(name string) (string, bool) {
	path, ok := sh.varValue("PATH")
	if !ok {
		return "", false
	}
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			dir = "."
		}
		p := vfs.Abs(sh.dir, dir+"/"+name)
		if !strings.HasPrefix(p, vfs.WorkspaceDir+"/") && !strings.HasPrefix(p, vfs.TmpDir+"/") {
			continue
		}
		if info, err := sh.r.cfg.FS.Stat(sh.r.ctx, p); err == nil && info.Mode().IsRegular() {
			return p, true
		}
	}
	return "", false
}

func builtinExec(sh *shell, args []string) int {
	args = args[1:]
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		if args[0] == "--" {
			args = args[1:]
			break
		}
		switch args[0] {
		case "-c", "-l":
			args = args[1:]
		case "-a":
			if len(args) < 2 {
				return sh.usage("exec", "-a: option requires an argument")
			}
			sh.execArgv0 = args[1]
			args = args[2:]
		default:
			return sh.usage("exec", "%s: invalid option", args[0])
		}
	}
	if len(args) == 0 {
		return 0
	}
	// exec CMD: the command replaces the shell, which ends with its
	// status.
	status := sh.dispatch(args, nil, false)
	if sh.flow == flowNone || sh.flow == flowReturn {
		sh.status = status
		sh.flow = flowExit
	}
	return status
}

func builtinCommand(sh *shell, args []string) int {
	args = args[1:]
	describe := ""
	defPath := false
	args, st := sh.shortOptions("command", args, func(c rune) bool {
		switch c {
		case 'p':
			defPath = true
		case 'v':
			describe = "v"
		case 'V':
			describe = "V"
		default:
			return false
		}
		return true
	})
	if st != 0 {
		return st
	}
	if len(args) == 0 {
		return 0
	}
	if defPath && !sh.defaultPathLookup {
		sh.defaultPathLookup = true
		defer func() { sh.defaultPathLookup = false }()
	}
	if describe != "" {
		status := 0
		for _, n := range args {
			// bash's status is the last name's
			status = b2status(!sh.describe(n, describe))
		}
		return status
	}
	return sh.dispatch(args, nil, false)
}

func builtinBuiltin(sh *shell, args []string) int {
	if len(args) > 1 && args[1] == "--" {
		args = append(args[:1:1], args[2:]...)
	}
	if len(args) < 2 {
		return 0
	}
	name := args[1]
	if b, ok := sh.r.cfg.Builtins[name]; ok {
		return sh.embedderBuiltin(b, args[1:])
	}
	b, ok := builtins[name]
	if !ok || name == "bash" || name == "sh" {
		sh.errorf("builtin: %s: not a shell builtin", name)
		return 1
	}
	return b(sh, args[1:])
}

// kind says what a command name is: "alias", "keyword", "function",
// "builtin", "tool", "file" (a program along $PATH: a utility or a
// script), "path" (a name with a slash), or "".
func (sh *shell) kind(name string) string {
	if _, ok := sh.aliases.m[name]; ok && sh.shopt.expandAliases {
		return "alias"
	}
	if syntax.IsKeyword(name) || name == "[[" || name == "]]" || name == "{" || name == "}" || name == "!" ||
		name == "time" || name == "coproc" {
		return "keyword"
	}
	if _, ok := sh.funcs.m[name]; ok {
		return "function"
	}
	if _, ok := sh.r.cfg.Builtins[name]; ok {
		return "builtin"
	}
	if _, ok := builtins[name]; ok && name != "bash" && name != "sh" {
		return "builtin"
	}
	return sh.programKind(name)
}

// programKind is kind for what is not a shell word, function or
// builtin.
func (sh *shell) programKind(name string) string {
	if sh.r.cfg.Kind != nil && sh.r.cfg.Kind(name) == "tool" {
		return "tool"
	}
	if strings.Contains(name, "/") {
		if info, err := sh.r.cfg.FS.Stat(sh.r.ctx, vfs.Abs(sh.dir, name)); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
			return "path"
		}
		if base, ok := sh.binPath(name); ok && base != "" {
			return "path"
		}
		return ""
	}
	if _, ok := sh.findCommand(name, nil); ok {
		return "file"
	}
	return ""
}

// programPath is where a "file" command is, as bash shows it.
func (sh *shell) programPath(name string) string {
	if hit, ok := sh.findCommand(name, nil); ok {
		return hit.shown
	}
	return name
}

// describe prints what command -v / -V say of name.
func (sh *shell) describe(name, mode string) bool {
	k := sh.kind(name)
	switch mode {
	case "v":
		switch k {
		case "":
			return false
		case "alias":
			sh.out("command", "alias "+name+"="+shellQuote(sh.aliases.m[name])+"\n")
		case "file":
			sh.out("command", sh.programPath(name)+"\n")
		default:
			sh.out("command", name+"\n")
		}
		return true
	}
	switch k {
	case "":
		sh.errorf("command: %s: not found", name)
		return false
	case "alias":
		sh.out("command", name+" is aliased to `"+sh.aliases.m[name]+"'\n")
	case "keyword":
		sh.out("command", name+" is a shell keyword\n")
	case "function":
		sh.out("command", name+" is a function\n"+sh.funcText(sh.funcs.m[name]))
	case "builtin":
		sh.out("command", name+" is a shell builtin\n")
	case "tool":
		sh.out("command", name+" is a tool command ("+name+" --help describes it)\n")
	case "path":
		sh.out("command", name+" is "+name+"\n")
	default:
		sh.out("command", name+" is "+sh.programPath(name)+"\n")
	}
	return true
}

// kindHit is one thing a name is, for type: its kind, and for a program
// its path.
type kindHit struct {
	kind, path string
}

func builtinType(sh *shell, args []string) int {
	args = args[1:]
	mode, all, noFuncs := "", false, false
	args, st := sh.shortOptions("type", args, func(c rune) bool {
		switch c {
		case 't', 'p', 'P':
			mode = string(c)
		case 'a':
			all = true
		case 'f':
			noFuncs = true
		default:
			return false
		}
		return true
	})
	if st != 0 {
		return st
	}
	status := 0
	for _, n := range args {
		kinds := sh.kinds(n, all, noFuncs)
		switch mode {
		case "P":
			// a program, whatever else the name is
			kinds = sh.programHits(n, all)
		case "p":
			// the programs only (found: status 0 even if none)
			if all {
				var files []kindHit
				for _, k := range kinds {
					if k.kind == "file" || k.kind == "path" {
						files = append(files, k)
					}
				}
				if len(kinds) > 0 && len(files) == 0 {
					continue
				}
				kinds = files
			} else if len(kinds) > 0 && kinds[0].kind != "file" && kinds[0].kind != "path" {
				continue
			}
		}
		if len(kinds) == 0 {
			if mode == "" {
				sh.errorf("type: %s: not found", n)
			}
			status = 1
			continue
		}
		for _, k := range kinds {
			switch mode {
			case "t":
				kind := k.kind
				if kind == "tool" || kind == "path" {
					kind = "file"
				}
				sh.out("type", kind+"\n")
			case "p", "P":
				switch k.kind {
				case "file", "path":
					sh.out("type", k.path+"\n")
				}
			default:
				switch k.kind {
				case "alias":
					sh.out("type", n+" is aliased to `"+sh.aliases.m[n]+"'\n")
				case "keyword":
					sh.out("type", n+" is a shell keyword\n")
				case "function":
					sh.out("type", n+" is a function\n"+sh.funcText(sh.funcs.m[n]))
				case "builtin":
					sh.out("type", n+" is a shell builtin\n")
				case "tool":
					sh.out("type", n+" is a tool command ("+n+" --help describes it)\n")
				default:
					sh.out("type", n+" is "+k.path+"\n")
				}
			}
		}
	}
	return status
}

// programHits lists where name is as a program: a path, or along $PATH
// (all: every directory that has it).
func (sh *shell) programHits(name string, all bool) []kindHit {
	if sh.r.cfg.Kind != nil && sh.r.cfg.Kind(name) == "tool" {
		return nil
	}
	if strings.Contains(name, "/") {
		if sh.programKind(name) == "path" {
			return []kindHit{{"path", name}}
		}
		return nil
	}
	path, ok := sh.currentPath(nil)
	if !ok {
		return nil
	}
	var out []kindHit
	for _, h := range sh.searchPath(name, path, all) {
		out = append(out, kindHit{"file", h.shown})
	}
	return out
}

// kinds lists what a name is, in lookup order (all: every match).
func (sh *shell) kinds(name string, all, noFuncs bool) []kindHit {
	var out []kindHit
	add := func(k string) bool {
		out = append(out, kindHit{kind: k})
		return !all
	}
	if _, ok := sh.aliases.m[name]; ok && sh.shopt.expandAliases {
		if add("alias") {
			return out
		}
	}
	if syntax.IsKeyword(name) || name == "[[" || name == "]]" || name == "{" || name == "}" || name == "!" {
		if add("keyword") {
			return out
		}
	}
	if _, ok := sh.funcs.m[name]; ok && !noFuncs {
		if add("function") {
			return out
		}
	}
	if _, ok := builtins[name]; ok && name != "bash" && name != "sh" || sh.r.cfg.Builtins[name] != nil {
		if add("builtin") {
			return out
		}
	}
	if sh.r.cfg.Kind != nil && sh.r.cfg.Kind(name) == "tool" {
		add("tool")
		return out
	}
	return append(out, sh.programHits(name, all)...)
}

func builtinKill(sh *shell, args []string) int {
	args = args[1:]
	if len(args) > 0 && (args[0] == "-l" || args[0] == "-L") {
		status := 0
		if len(args) > 1 {
			for _, a := range args[1:] {
				n, err := strconv.Atoi(a)
				if err != nil {
					name := strings.TrimPrefix(strings.ToUpper(a), "SIG")
					found := false
					for i, s := range signalNames {
						if s == name {
							sh.out("kill", strconv.Itoa(i)+"\n")
							found = true
						}
					}
					if !found {
						sh.errorf("kill: %s: invalid signal specification", a)
						status = 1
					}
					continue
				}
				if n > 128 {
					n -= 128
				}
				if n == 0 {
					sh.out("kill", "EXIT\n")
					continue
				}
				if n < 0 || n >= len(signalNames) {
					sh.errorf("kill: %s: invalid signal specification", a)
					status = 1
					continue
				}
				sh.out("kill", signalNames[n]+"\n")
			}
			return status
		}
		var b strings.Builder
		for i := 1; i < len(signalNames); i++ {
			fmt.Fprintf(&b, "%2d) SIG%s", i, signalNames[i])
			if i%5 == 0 || i == len(signalNames)-1 {
				b.WriteByte('\n')
			} else {
				b.WriteByte('\t')
			}
		}
		sh.out("kill", b.String())
		return 0
	}
	if len(args) == 0 {
		sh.usageLine("kill: usage: kill [-s sigspec | -n signum | -sigspec] pid | jobspec ... or kill -l [sigspec]")
		return 2
	}
	sig := 15 // TERM
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		if args[0] == "--" {
			args = args[1:]
			break
		}
		if args[0] == "-s" || args[0] == "-n" {
			if len(args) < 2 {
				return sh.usage("kill", "%s: option requires an argument", args[0])
			}
			name, ok := trapName(args[1])
			if !ok {
				sh.errorf("kill: %s: invalid signal specification", args[1])
				return 1
			}
			sig = signalNumber(name)
			args = args[2:]
			continue
		}
		name, ok := trapName(args[0][1:])
		if !ok {
			sh.errorf("kill: %s: invalid signal specification", args[0][1:])
			return 1
		}
		sig = signalNumber(name)
		args = args[1:]
	}
	status := 0
	for _, a := range args {
		if strings.HasPrefix(a, "%") {
			j, ok := sh.jobSpec(a)
			if !ok {
				sh.errorf("kill: %s: no such job", a)
				status = 1
				continue
			}
			// the job ran to completion: the signal ends it if it would
			// still be running, else it is a process that exited and
			// was not waited for
			sh.signalJob(j, sig)
			continue
		}
		pid, err := strconv.ParseInt(a, 10, 64)
		if err != nil {
			sh.errorf("kill: %s: arguments must be process or job IDs", a)
			status = 1
			continue
		}
		if t := sh.signalTarget(pid); t != nil {
			t.signal(sig)
			continue
		}
		if j := sh.jobByPid(pid); j != nil {
			sh.signalJob(j, sig)
			continue
		}
		sh.errorf("kill: (%d) - No such process", pid)
		status = 1
	}
	return status
}

// signalNames are the signals of Linux, by number.
var signalNames = []string{"", "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1", "SEGV",
	"USR2", "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN", "TTOU", "URG", "XCPU", "XFSZ",
	"VTALRM", "PROF", "WINCH", "IO", "PWR", "SYS"}

func builtinTimes(sh *shell, args []string) int {
	sh.out("times", "0m0.000s 0m0.000s\n0m0.000s 0m0.000s\n")
	return 0
}

func builtinUmask(sh *shell, args []string) int {
	args = args[1:]
	symbolic, printP := false, false
	args, st := sh.shortOptions("umask", args, func(c rune) bool {
		switch c {
		case 'S':
			symbolic = true
		case 'p':
			printP = true
		default:
			return false
		}
		return true
	})
	if st != 0 {
		return st
	}
	if printP && len(args) == 0 && !symbolic {
		sh.out("umask", fmt.Sprintf("umask %04o\n", sh.r.umask))
		return 0
	}
	if len(args) > 0 && args[0] == "" {
		sh.errorf("umask: `': invalid symbolic mode operator")
		return 1
	}
	if len(args) == 0 {
		if symbolic {
			perm := func(bits int) string {
				s := ""
				if bits&4 == 0 {
					s += "r"
				}
				if bits&2 == 0 {
					s += "w"
				}
				if bits&1 == 0 {
					s += "x"
				}
				return s
			}
			m := sh.r.umask
			sh.out("umask", fmt.Sprintf("u=%s,g=%s,o=%s\n", perm(m>>6&7), perm(m>>3&7), perm(m&7)))
			return 0
		}
		sh.out("umask", fmt.Sprintf("%04o\n", sh.r.umask))
		return 0
	}
	if c := args[0][0]; c < '0' || c > '9' {
		bits, ok := sh.symbolicMode(args[0], ^sh.r.umask&0o777)
		if !ok {
			return 1
		}
		sh.r.umask = ^bits & 0o777
		return 0
	}
	n, err := strconv.ParseInt(args[0], 8, 32)
	if err != nil || n < 0 || n > 0o777 {
		sh.errorf("umask: %s: octal number out of range", args[0])
		return 1
	}
	sh.r.umask = int(n)
	return 0
}

// symbolicMode applies a symbolic mode (u+r,g-w,o=x, a=rwx) to the
// permission bits, as bash's umask parses it.
func (sh *shell) symbolicMode(mode string, bits int) (int, bool) {
	s := mode
	for {
		who, perm := 0, 0
		for len(s) > 0 && strings.IndexByte("agou", s[0]) >= 0 {
			switch s[0] {
			case 'u':
				who |= 0o700
			case 'g':
				who |= 0o070
			case 'o':
				who |= 0o007
			case 'a':
				who |= 0o777
			}
			s = s[1:]
		}
		op := byte(0)
		if len(s) > 0 {
			op = s[0]
			s = s[1:]
		}
		if op != '+' && op != '-' && op != '=' {
			sh.errorf("umask: `%c': invalid symbolic mode operator", op)
			return 0, false
		}
		for len(s) > 0 && strings.IndexByte("rwx", s[0]) >= 0 {
			switch s[0] {
			case 'r':
				perm |= 0o444
			case 'w':
				perm |= 0o222
			case 'x':
				perm |= 0o111
			}
			s = s[1:]
		}
		if len(s) > 0 && s[0] != ',' {
			sh.errorf("umask: `%c': invalid symbolic mode character", s[0])
			return 0, false
		}
		if who != 0 {
			perm &= who
		}
		switch op {
		case '+':
			bits |= perm
		case '-':
			bits &^= perm
		case '=':
			if who == 0 {
				who = 0o777
			}
			bits = bits&^who | perm
		}
		if len(s) == 0 {
			return bits, true
		}
		s = s[1:]
	}
}

// ulimitFlags are ulimit's resources: the letter, the line of ulimit -a,
// and the value a fresh sandbox reports. Values set are remembered, not
// enforced (the run's own limits apply).
var ulimitFlags = []struct {
	c     byte
	desc  string
	value string
}{
	{'R', "real-time non-blocking time  (microseconds, -R)", "unlimited"},
	{'c', "core file size              (blocks, -c)", "0"},
	{'d', "data seg size               (kbytes, -d)", "unlimited"},
	{'e', "scheduling priority                 (-e)", "0"},
	{'f', "file size                   (blocks, -f)", "unlimited"},
	{'i', "pending signals                     (-i)", "96365"},
	{'l', "max locked memory           (kbytes, -l)", "8192"},
	{'m', "max memory size             (kbytes, -m)", "unlimited"},
	{'n', "open files                          (-n)", "1024"},
	{'p', "pipe size                (512 bytes, -p)", "8"},
	{'q', "POSIX message queues         (bytes, -q)", "819200"},
	{'r', "real-time priority                  (-r)", "0"},
	{'s', "stack size                  (kbytes, -s)", "8192"},
	{'t', "cpu time                   (seconds, -t)", "unlimited"},
	{'u', "max user processes                  (-u)", "96365"},
	{'v', "virtual memory              (kbytes, -v)", "unlimited"},
	{'x', "file locks                          (-x)", "unlimited"},
}

// ulimitUnit is the unit of a resource's limit in bytes (1: a count).
func ulimitUnit(c byte) int64 {
	switch c {
	case 'c', 'f', 'p':
		return 512
	case 'd', 'l', 'm', 's', 'v', 'q':
		if c == 'q' {
			return 1
		}
		return 1024
	}
	return 1
}

func builtinUlimit(sh *shell, args []string) int {
	args = args[1:]
	var flags []byte
	all, soft, hard := false, false, false
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && len(args[0]) > 1 {
		a := args[0]
		if a == "--" {
			args = args[1:]
			break
		}
		if _, err := strconv.Atoi(a); err == nil {
			break
		}
		for _, c := range []byte(a[1:]) {
			switch {
			case c == 'a':
				all = true
			case c == 'H':
				hard = true
			case c == 'S':
				soft = true
			case strings.IndexByte("RcdefilmnpqrstuvxbkPT", c) >= 0:
				flags = append(flags, c)
			default:
				sh.errorf("ulimit: -%c: invalid option", c)
				sh.writeErr("ulimit: usage: ulimit [-SHabcdefiklmnpqrstuvxPRT] [limit]\n")
				return 2
			}
		}
		args = args[1:]
	}
	r := sh.r
	get := func(c byte, wantHard bool) string {
		r.cacheMu.Lock()
		defer r.cacheMu.Unlock()
		m := r.ulimitSoft
		if wantHard {
			m = r.ulimitHard
		}
		if v, ok := m[c]; ok {
			return v
		}
		for _, f := range ulimitFlags {
			if f.c == c {
				return f.value
			}
		}
		return "unlimited"
	}
	show := func(c byte) string { return get(c, hard && !soft) }
	if all {
		var b strings.Builder
		for _, f := range ulimitFlags {
			b.WriteString(f.desc + " " + show(f.c) + "\n")
		}
		sh.out("ulimit", b.String())
		return 0
	}
	if len(flags) == 0 {
		flags = []byte{'f'}
	}
	if len(args) == 0 {
		var b strings.Builder
		for _, c := range flags {
			if len(flags) > 1 {
				for _, f := range ulimitFlags {
					if f.c == c {
						b.WriteString(f.desc + " ")
					}
				}
			}
			b.WriteString(show(c) + "\n")
		}
		sh.out("ulimit", b.String())
		return 0
	}
	if !soft && !hard {
		soft, hard = true, true
	}
	// limits compare as numbers, unlimited above all
	num := func(v string) int64 {
		if v == "unlimited" {
			return math.MaxInt64
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	}
	for _, c := range flags {
		v := args[0]
		switch v {
		case "hard":
			v = get(c, true)
		case "soft":
			v = get(c, false)
		case "unlimited":
		default:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				sh.errorf("ulimit: %s: invalid number", v)
				return 1
			}
			if unit := ulimitUnit(c); n > math.MaxInt64/unit {
				sh.errorf("ulimit: %s: limit out of range", v)
				return 1
			}
		}
		name := string(c)
		for _, f := range ulimitFlags {
			if f.c == c {
				name = strings.TrimSpace(f.desc[:strings.IndexByte(f.desc, '(')])
			}
		}
		curHard := num(get(c, true))
		if hard && num(v) > curHard {
			sh.errorf("ulimit: %s: cannot modify limit: Operation not permitted", name)
			return 1
		}
		if soft && !hard && num(v) > curHard {
			sh.errorf("ulimit: %s: cannot modify limit: Invalid argument", name)
			return 1
		}
		lowerSoft := hard && num(get(c, false)) > num(v)
		r.cacheMu.Lock()
		if r.ulimitSoft == nil {
			r.ulimitSoft, r.ulimitHard = map[byte]string{}, map[byte]string{}
		}
		if soft || lowerSoft {
			r.ulimitSoft[c] = v
		}
		if hard {
			r.ulimitHard[c] = v
		}
		r.cacheMu.Unlock()
	}
	return 0
}

func builtinEnable(sh *shell, args []string) int {
	if len(args) == 1 || args[1] == "-a" || args[1] == "-p" {
		var b strings.Builder
		for _, n := range Builtins() {
			if n == "bash" || n == "sh" {
				continue
			}
			b.WriteString("enable " + n + "\n")
		}
		sh.out("enable", b.String())
		return 0
	}
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "-") {
			continue
		}
		if _, ok := builtins[a]; !ok {
			sh.errorf("enable: %s: not a shell builtin", a)
			return 1
		}
	}
	return 0
}

func builtinCaller(sh *shell, args []string) int {
	n := 0
	if len(args) > 1 {
		v, err := strconv.Atoi(args[1])
		if err != nil || v < 0 {
			sh.errorf("caller: %s: invalid number", args[1])
			return 2
		}
		n = v
	}
	idx := len(sh.frames) - 1 - n
	if idx < 0 {
		return 1
	}
	fr := sh.frames[idx]
	if len(args) > 1 {
		fn := "main"
		if idx > 0 {
			fn = sh.frames[idx-1].fn.name
		} else if !sh.fileScript {
			fn = "main"
		}
		if idx == 0 && !sh.fileScript {
			return 1
		}
		sh.out("caller", fmt.Sprintf("%d %s %s\n", fr.callLine, fn, fr.callFile))
		return 0
	}
	sh.out("caller", fmt.Sprintf("%d %s\n", fr.callLine, fr.callFile))
	return 0
}

func builtinLet(sh *shell, args []string) int {
	if len(args) < 2 {
		sh.errorf("let: expression expected")
		return 1
	}
	var last int64
	for _, a := range args[1:] {
		n, err := sh.arithString(a)
		if err != nil {
			sh.errorf("let: %s", err.Error())
			return 1
		}
		last = n
	}
	return b2status(last == 0)
}

// letClause runs let parsed as a clause.
func (sh *shell) letClause(c *syntax.LetClause) int {
	// let's arguments are words, all expanded before the first is
	// evaluated: a quoted one loses its quotes and counts whole
	// ('x *= 2'); unquoted ones were parsed as expressions
	texts := make([]string, len(c.Exprs))
	for i, x := range c.Exprs {
		if w, ok := x.(*syntax.Word); ok {
			texts[i] = sh.expandString(w)
		} else {
			texts[i] = sh.arithText(x)
		}
	}
	var last int64
	for _, text := range texts {
		n, err := sh.arithString(text)
		if err != nil {
			sh.errorf("let: %s", err.Error())
			return 1
		}
		last = n
	}
	return b2status(last == 0)
}

func builtinAlias(sh *shell, args []string) int {
	args = args[1:]
	for len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' {
		a := args[0]
		args = args[1:]
		if a == "--" {
			break
		}
		if bad := strings.Trim(a[1:], "p"); bad != "" {
			sh.errorf("alias: -%c: invalid option", bad[0])
			sh.usageLine("alias: usage: alias [-p] [name[=value] ... ]")
			return 2
		}
	}
	if len(args) == 0 {
		var b strings.Builder
		for _, k := range sortedKeys(sh.aliases.m) {
			b.WriteString("alias " + k + "=" + aliasQuote(sh.aliases.m[k]) + "\n")
		}
		sh.out("alias", b.String())
		return 0
	}
	status := 0
	for _, a := range args {
		name, val, ok := strings.Cut(a, "=")
		if !ok {
			v, found := sh.aliases.m[name]
			if !found {
				sh.errorf("alias: %s: not found", name)
				status = 1
				continue
			}
			sh.out("alias", "alias "+name+"="+aliasQuote(v)+"\n")
			continue
		}
		if !validAliasName(name) {
			sh.errorf("alias: `%s': invalid alias name", name)
			status = 1
			continue
		}
		sh.aliasesWritable()[name] = val
	}
	return status
}

// validAliasName reports whether alias (or BASH_ALIASES[name]=) accepts
// name.
func validAliasName(name string) bool {
	return name != "" && !strings.ContainsAny(name, "/$`=\"' \t\n;|&()<>")
}

// aliasQuote quotes an alias's value as alias prints it.
func aliasQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func builtinUnalias(sh *shell, args []string) int {
	args = args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	} else if len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' && args[0] != "-a" {
		sh.errorf("unalias: %s: invalid option", args[0][:2])
		sh.usageLine("unalias: usage: unalias [-a] name [name ...]")
		return 2
	}
	if len(args) > 0 && args[0] == "-a" {
		m := sh.aliasesWritable()
		for k := range m {
			delete(m, k)
		}
		return 0
	}
	if len(args) == 0 {
		sh.usageLine("unalias: usage: unalias [-a] name [name ...]")
		return 2
	}
	status := 0
	for _, a := range args {
		if _, ok := sh.aliases.m[a]; !ok {
			sh.errorf("unalias: %s: not found", a)
			status = 1
			continue
		}
		delete(sh.aliasesWritable(), a)
	}
	return status
}

func builtinHelp(sh *shell, args []string) int {
	sh.out("help", "GNU bash, version 5.2.15(1)-release (x86_64-pc-linux-gnu), in the demiurge sandbox.\n"+
		"Builtins: "+strings.Join(Builtins(), " ")+"\n")
	return 0
}

func builtinNoTerminal(sh *shell, args []string) int {
	sh.errorf("%s: not available in the sandbox (no terminal, no history or completion)", args[0])
	return 1
}

func builtinNoJobs(sh *shell, args []string) int {
	sh.errorf("%s: no job control", args[0])
	return 1
}

// builtinBash runs bash or sh as a child shell: bash -c SCRIPT [NAME
// [ARG]...], bash FILE [ARG]..., or the script on stdin.
func builtinBash(sh *shell, args []string) int {
	name := args[0]
	var opts []string
	var script, file string
	haveScript := false
	interactive, norc, rcfile := false, false, ""
	invalid := func(opt string) int {
		sh.writeErr(name + ": " + opt + ": invalid option\n" + bashUsage)
		return 2
	}
	i := 1
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" || a == "-" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' && a[0] != '+' {
			break
		}
		if strings.HasPrefix(a, "--") {
			switch a {
			case "--norc":
				norc = true
			case "--noprofile", "--posix", "--login", "--noediting", "--restricted", "--verbose",
				"--debug", "--debugger":
			case "--rcfile", "--init-file":
				i++
				if i < len(args) {
					rcfile = args[i]
				}
			case "--help":
				sh.out(name, bashUsage)
				return 0
			case "--version":
				sh.out(name, "GNU bash, version 5.2.15(1)-release (x86_64-pc-linux-gnu)\n")
				return 0
			default:
				return invalid(a)
			}
			continue
		}
		for _, f := range a[1:] {
			switch f {
			case 'c':
				haveScript = true
			case 'o', 'O':
				if i+1 >= len(args) {
					sh.writeErr(fmt.Sprintf("%s: -%c: option requires an argument\n", name, f))
					return 2
				}
				opts = append(opts, a[:1]+string(f), args[i+1])
				i++
			case 'e', 'u', 'x', 'f', 'n', 'v', 'a', 'C', 'E', 'T', 'h', 'B', 'H', 'k', 't', 'b', 'm', 'P':
				opts = append(opts, a[:1]+string(f))
			case 'i':
				interactive = a[0] == '-'
			case 's', 'l', 'p', 'r', 'D':
			default:
				return invalid(a[:1] + string(f))
			}
		}
	}
	if haveScript {
		if i >= len(args) {
			sh.writeErr(name + ": -c: option requires an argument\n")
			return 2
		}
		script = args[i]
		i++
	}
	rest := args[i:]
	var positional []string
	argv0 := name
	if sh.execArgv0 != "" {
		argv0, sh.execArgv0 = sh.execArgv0, ""
	}
	var stdin io.Reader = sh.fdReader(0)
	isFile := false
	switch {
	case haveScript:
		positional = rest
		if len(positional) > 0 {
			argv0, positional = positional[0], positional[1:]
		}
	case len(rest) > 0:
		file, positional = rest[0], rest[1:]
		data, err := sh.r.cfg.FS.ReadFile(sh.r.ctx, vfs.Abs(sh.dir, file))
		if err != nil {
			sh.writeErr(name + ": " + file + ": " + errReason(err) + "\n")
			if isNotExist(err) {
				// (bash's own quirk: 1 when started with errexit)
				for j, o := range opts {
					if o == "-e" || o == "-o" && j+1 < len(opts) && opts[j+1] == "errexit" {
						return 1
					}
				}
				return 127
			}
			return 126
		}
		if head := data[:min(len(data), 80)]; strings.IndexByte(string(head), 0) >= 0 {
			sh.writeErr(name + ": " + file + ": cannot execute binary file\n")
			return 126
		}
		script, argv0, isFile = string(data), file, true
	default:
		// the commands are read from stdin as they run (runFeed)
		if stdin == nil {
			return 0
		}
	}
	if !isFile && (interactive || !haveScript) {
		ia := &interactiveStart{name: name, norc: norc, rcfile: rcfile, stdin: !haveScript, interactive: interactive}
		return sh.runChild(argv0, script, opts, positional, sh.exported(), stdin, sh.fdWriter(1), sh.fdWriter(2), false, ia)
	}
	if isFile {
		var ia *interactiveStart
		if interactive {
			// bash -i FILE: interactive ($- has i, PS1, the rc file),
			// its commands read from the file
			ia = &interactiveStart{name: name, norc: norc, rcfile: rcfile, interactive: true}
		}
		return sh.runChild(argv0, script, opts, positional, sh.exported(), stdin, sh.fdWriter(1), sh.fdWriter(2), true, ia)
	}
	return sh.childShell(argv0, script, opts, positional, sh.exported(), stdin, sh.fdWriter(1), sh.fdWriter(2))
}

// bashUsage is what bash --help and a bad option print.
const bashUsage = `Usage:	bash [GNU long option] [option] ...
	bash [GNU long option] [option] script-file ...
GNU long options:
	--debug
	--debugger
	--dump-po-strings
	--dump-strings
	--help
	--init-file
	--login
	--noediting
	--noprofile
	--norc
	--posix
	--pretty-print
	--rcfile
	--restricted
	--verbose
	--version
Shell options:
	-ilrsD or -c command or -O shopt_option		(invocation only)
	-abefhkmnptuvxBCEHPT or -o option
`

// childShell runs script in a new shell of the same run: fresh variables
// (the exported ones), functions and options, the same directory and
// file system, and the run's limits.
func (sh *shell) childShell(argv0, script string, opts, params, env []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return sh.runChild(argv0, script, opts, params, env, stdin, stdout, stderr, false, nil)
}

func (sh *shell) runChild(argv0, script string, opts, params, env []string, stdin io.Reader, stdout, stderr io.Writer, file bool, ia *interactiveStart) (status int) {
	r := sh.r
	if max := r.lim.MaxShellDepth; max > 0 && r.depth.Add(1) > max {
		r.depth.Add(-1)
		r.limit("maximum nested shell depth exceeded (%d)", max)
	}
	defer r.depth.Add(-1)
	if max := r.lim.MaxScriptBytes; max > 0 && len(script) > max {
		io.WriteString(stderr, argv0+": script exceeds "+strconv.Itoa(max)+" bytes\n")
		return 2
	}
	child := &shell{
		r:       r,
		id:      r.ids.Add(1),
		pid:     r.pids.Add(1),
		funcs:   newFuncMap(),
		aliases: newAliasMap(),
		dir:     sh.dir,
		params:  params,
		argv0:   argv0,
		traps:   map[string]string{},
		secBase: sh.now(),
		child:   true,
	}
	child.procPid = child.pid
	child.bgSlept = sh.bgSlept
	child.randSeed = uint32(sh.r.cfg.Seed) ^ uint32(sh.r.cfg.Seed>>32) ^ uint32(child.pid)*2654435761
	child.opts.braceexpand, child.opts.hashall, child.opts.interactiveComments = true, true, true
	child.shopt = defaultShopts()
	child.dashC = !file
	child.fileScript = file
	child.fds = newFDTable(stdin, stdout, stderr)
	child.scopes = []*scope{{kind: scopeGlobal, vm: newVarMap(64)}}
	child.initVars(env)
	// a new process: $PPID is the $$ of the shell that started it
	child.scopes[0].vm.m["PPID"].str = strconv.FormatInt(sh.procPid, 10)
	r.addProc(child)
	defer r.dropProc(child)
	if _, ok := child.varValue("SHELL"); !ok {
		// bash sets SHELL from the password file when it is unset
		child.setString("SHELL", "/bin/bash", false)
	}
	child.initLocale()
	if _, ok := child.varValue("PATH"); !ok {
		// bash's default when the environment has none
		child.setString("PATH", "/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin:.", false)
	}
	for i := 0; i < len(opts); i++ {
		o := opts[i]
		switch o {
		case "-o", "+o":
			if i+1 < len(opts) {
				builtinSet(child, []string{"set", o, opts[i+1]})
				i++
			}
		case "-O", "+O":
			if i+1 < len(opts) {
				child.setShopt(opts[i+1], o == "-O")
				i++
			}
		default:
			builtinSet(child, []string{"set", o})
		}
	}
	defer child.release()
	defer func() {
		if p := recover(); p != nil {
			switch p := p.(type) {
			case fatalPanic:
				status = p.status
			case pipePanic:
				status = 141
			default:
				panic(p)
			}
		}
	}()
	if ia != nil && ia.stdin {
		child.dashC, child.readStdin = false, true
	}
	if ia != nil && ia.interactive {
		child.startInteractive(ia)
	}
	if child.flow != flowExit {
		src := &source{name: argv0, text: script}
		if ia != nil && ia.stdin {
			max := r.lim.MaxScriptBytes
			if max <= 0 {
				max = 1 << 20
			}
			src.feed = &stdinScript{sh: child, max: max}
		}
		child.runSource(src, true)
	}
	if ia != nil && ia.interactive && ia.stdin {
		eof := child.flow != flowExit
		status := child.exit()
		child.endInteractive(eof)
		return status
	}
	status = child.exit()
	child.saveHistory()
	return status
}

// signalTarget finds the shell a pid names for kill: the shell's own
// $BASHPID is itself, the $$ of a running shell (the script's, 1, or a
// child bash's, its $PPID in a grandchild) is that shell.
func (sh *shell) signalTarget(pid int64) *shell {
	if pid == sh.pid {
		return sh
	}
	return sh.r.proc(pid)
}

// signal sends signal n to a shell: it is handled after the command the
// shell is running (takeSignals). A signal already pending is not added
// again, as a process's pending signals do not queue.
func (sh *shell) signal(n int) {
	if n == 0 {
		return
	}
	sh.r.sigMu.Lock()
	defer sh.r.sigMu.Unlock()
	if slices.Contains(sh.sigPending, n) {
		return
	}
	sh.sigPending = append(sh.sigPending, n)
	atomic.StoreInt32(&sh.sigAny, 1)
}

// defaultIgnored are the signals whose default action leaves a process
// running.
var defaultIgnored = map[string]bool{"CHLD": true, "URG": true, "WINCH": true, "CONT": true, "STOP": true,
	"TSTP": true, "TTIN": true, "TTOU": true}

// takeSignals handles the signals sent to the shell: a trap runs its
// handler ($? kept), an ignored one nothing, and one whose default action
// ends a process ends the shell with status 128+n (its EXIT trap runs,
// except after SIGKILL).
func (sh *shell) takeSignals() {
	if atomic.LoadInt32(&sh.sigAny) == 0 {
		return
	}
	sh.r.sigMu.Lock()
	pending := sh.sigPending
	sh.sigPending = nil
	atomic.StoreInt32(&sh.sigAny, 0)
	sh.r.sigMu.Unlock()
	for _, n := range pending {
		name := signalNames[n]
		if handler, ok := sh.traps[name]; ok && name != "KILL" && name != "STOP" {
			if handler != "" {
				status := sh.status
				sh.runTrap(handler, name)
				if sh.flow == flowNone {
					sh.status = status
				}
			}
			continue
		}
		if defaultIgnored[name] {
			continue
		}
		sh.status = 128 + n
		sh.flow = flowExit
		// SIGKILL ends a process without its running anything: no
		// EXIT trap.
		sh.killed = name == "KILL"
		return
	}
}

// signalNumber is the number of a signal name of trapName (0 for EXIT
// and the shell's pseudo-signals).
func signalNumber(name string) int {
	if i := slices.Index(signalNames, name); i > 0 {
		return i
	}
	return 0
}
