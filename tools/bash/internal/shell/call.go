package shell

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// call runs a simple command: its words are expanded, its redirections
// made, its assignments done (for the command only when there is one),
// then the function, builtin or external command runs.
func (sh *shell) call(ce *syntax.CallExpr, redirs []*syntax.Redirect) int {
	sh.countCommand()
	sh.substStatus = -1
	if len(ce.Args) > 0 && !sh.shopt.extglob {
		if st, ok := negatedSubshell(ce.Args[0]); ok && len(ce.Args) == 1 {
			// !(cmds) without extglob: a negated subshell, as bash parses it
			status := sh.subshell(st)
			return b2status(status == 0)
		}
	}
	var args []string
	if len(ce.Args) > 0 {
		args = sh.expandFields(ce.Args)
	}
	if len(args) == 0 {
		return sh.assignOnly(ce, redirs)
	}
	cmdText := strings.Join(args, " ")
	if sh.inTrap == "" {
		// a trap's own commands leave $BASH_COMMAND the interrupted one
		sh.lastCmd = cmdText
	}
	if !sh.debugTrap(cmdText) {
		return sh.status
	}
	if args[0] == "exec" && execRedirectsOnly(args) {
		// exec with redirections only makes them the shell's own
		if sh.opts.xtrace {
			sh.xtraceArgs(args)
		}
		if _, ok := sh.redirect(redirs, true); !ok {
			return 1
		}
		return 0
	}
	var assigns []tempAssign
	if len(ce.Assigns) > 0 {
		assigns = sh.tempAssigns(ce.Assigns)
	}
	if sh.opts.xtrace {
		sh.xtraceAssigns(assigns)
		sh.xtraceArgs(args)
	}
	restore, ok := sh.redirect(redirs, false)
	if !ok {
		sh.lastArg = args[len(args)-1]
		return 1
	}
	if redirectsStdin(redirs) {
		// (a function's background jobs read that stdin)
		sh.stdinRedir++
		defer func() { sh.stdinRedir-- }()
	}
	if moved := slices.Clone(sh.movedFDs); len(moved) > 0 {
		_, isFunc := sh.funcs.m[args[0]]
		_, isBuiltin := builtins[args[0]]
		defer func() {
			restore()
			if isFunc || isBuiltin {
				sh.closeMoved(moved)
			}
		}()
	} else {
		defer restore()
	}
	status := sh.dispatch(args, assigns, true)
	sh.lastArg = args[len(args)-1]
	return status
}

// negatedSubshell reads a word !(...) that mvdan parsed as an extended
// glob as the statements of a subshell.
func negatedSubshell(w *syntax.Word) ([]*syntax.Stmt, bool) {
	if len(w.Parts) != 1 {
		return nil, false
	}
	eg, ok := w.Parts[0].(*syntax.ExtGlob)
	if !ok || eg.Op != syntax.GlobExcept {
		return nil, false
	}
	p := parsers.Get().(*syntax.Parser)
	defer parsers.Put(p)
	f, err := p.Parse(strings.NewReader(eg.Pattern.Value), "")
	if err != nil {
		return nil, false
	}
	return f.Stmts, true
}

// execRedirectsOnly reports whether exec runs no command.
func execRedirectsOnly(args []string) bool {
	for _, a := range args[1:] {
		if a != "--" {
			return false
		}
	}
	return true
}

// sglQuotedText is the text of a word that is one single-quoted string.
func sglQuotedText(w *syntax.Word) string {
	if len(w.Parts) == 1 {
		if sq, ok := w.Parts[0].(*syntax.SglQuoted); ok {
			return sq.Value
		}
	}
	return w.Lit()
}

// tempAssign is an assignment written before a command (x=1 cmd).
type tempAssign struct {
	name   string
	val    string
	append bool
}

// tempAssigns expands the assignments before a command.
func (sh *shell) tempAssigns(list []*syntax.Assign) []tempAssign {
	out := make([]tempAssign, 0, len(list))
	var sc *scope
	if len(list) > 1 {
		// each assignment is seen by those after it
		sc = &scope{kind: scopeTemp, vm: newVarMap(len(list))}
		sh.scopes = append(sh.scopes, sc)
		defer func() {
			for i := len(sh.scopes) - 1; i >= 0; i-- {
				if sh.scopes[i] == sc {
					sh.scopes = append(sh.scopes[:i], sh.scopes[i+1:]...)
					break
				}
			}
		}()
	}
	for _, as := range list {
		if as.Name == nil {
			continue
		}
		if as.Name.Value == badAssignCarrier && as.Value != nil {
			// an element assignment before a command (repairSpacedSubscript)
			sh.errorf("`%s': not a valid identifier", sglQuotedText(as.Value))
			continue
		}
		ta := tempAssign{name: as.Name.Value, append: as.Append}
		if as.Array != nil {
			// arrays before a command: bash ignores them with a message
			continue
		}
		ta.val = sh.expandAssign(as.Value)
		if as.Index != nil {
			continue
		}
		sh.checkTempLocale(ta.name, ta.val)
		if ta.append {
			if v, _ := sh.lookup(ta.name); v != nil && v.attrs&aInteger == 0 && v.assc == nil && v.arr == nil {
				ta.val, ta.append = v.str+ta.val, false
			}
		}
		if sc != nil {
			sc.vm.m[ta.name] = &variable{set: true, str: ta.val, attrs: aExport, owner: sh.id, tempEnv: true}
		}
		out = append(out, ta)
	}
	return out
}

// assignOnly runs a command of assignments only (and redirections): they
// apply to the shell; the status is that of the last command
// substitution, else 0.
func (sh *shell) assignOnly(ce *syntax.CallExpr, redirs []*syntax.Redirect) (status int) {
	assigned := false
	if len(redirs) > 0 {
		// the assignments first: their command substitutions do not see
		// the redirections (which are not made when an assignment's
		// expansion ends the shell: X=${x?err} > f creates no f)
		defer func() {
			if !assigned {
				return
			}
			restore, ok := sh.redirect(redirs, false)
			if ok {
				restore()
			} else if sh.flow == flowNone {
				// the command's status is the redirection's failure
				// (errexit then ends the shell with it)
				status = 1
				sh.status = 1
				sh.afterSimple()
			}
		}()
	}
	if !sh.debugTrap(assignText(ce.Assigns)) {
		assigned = true
		return sh.status
	}
	for _, as := range ce.Assigns {
		if err := sh.assign(as, false); err != nil {
			sh.fatal(err)
		}
	}
	assigned = true
	// bash leaves $_ empty after assignments alone
	sh.lastArg = ""
	if sh.opts.xtrace {
		for _, as := range ce.Assigns {
			if as.Name != nil {
				op := "="
				if as.Append {
					op = "+="
				}
				if as.Array != nil {
					sh.xtraceLine(as.Name.Value + op + "(" + sh.arrayTraceText(as.Array) + ")")
				} else {
					sh.xtraceLine(as.Name.Value + op + xtraceQuote(sh.valueForTrace(as)))
				}
			}
		}
	}
	if sh.substStatus >= 0 {
		return sh.substStatus
	}
	return 0
}

// assignText is the text of assignments, for $BASH_COMMAND.
func assignText(list []*syntax.Assign) string {
	var parts []string
	for _, as := range list {
		if as.Name != nil {
			parts = append(parts, as.Name.Value+"=")
		}
	}
	return strings.Join(parts, " ")
}

func (sh *shell) valueForTrace(as *syntax.Assign) string {
	if as.Index != nil {
		return ""
	}
	return sh.value(as.Name.Value)
}

func (sh *shell) arrayTraceText(a *syntax.ArrayExpr) string {
	var parts []string
	for _, el := range a.Elems {
		if el.Value != nil {
			parts = append(parts, xtraceQuote(sh.expandString(el.Value)))
		}
	}
	return strings.Join(parts, " ")
}

// assign performs one assignment of the script (x=v, x+=v, a[i]=v,
// a=(...)); local makes it in the current function's scope.
func (sh *shell) assign(as *syntax.Assign, local bool) error {
	if as.Name == nil {
		return nil
	}
	name := as.Name.Value
	if as.Array != nil && as.Index != nil {
		// a[i]=(...): bash refuses it when it runs it
		sub := strings.ReplaceAll(sh.arithText(as.Index), " ", "")
		return &assignError{name + "[" + sub + "]: cannot assign list to array member"}
	}
	if as.Array != nil {
		items, assocWanted := sh.arrayItems(name, as.Array)
		return sh.setArray(name, items, as.Append, assocWanted)
	}
	if as.Index != nil {
		if isEmptyArith(as.Index) {
			return &assignError{name + "[]: bad array subscript"}
		}
		v := sh.getVar(name)
		var key string
		if v != nil && v.assc != nil {
			key = sh.assocKey(as.Index)
		} else {
			if v != nil && v.attrs&aReadonly != 0 {
				return &assignError{name + ": readonly variable"}
			}
			n, err := sh.arithExpr(as.Index)
			if err != nil {
				return subscriptErr(err)
			}
			key = itoa(n)
		}
		val := sh.expandAssign(as.Value)
		return sh.setElem(name, key, val, as.Append)
	}
	val := sh.expandAssign(as.Value)
	sh.circularRef = false
	err := sh.setString(name, val, as.Append)
	if err == nil && sh.circularRef {
		// bash warned and the assignment fails
		panic(fatalPanic{status: 1})
	}
	return err
}

// bracedElem reads [k]=v{a,b} in an indexed array's literal as bash
// does: the brace expansion makes several words of the whole element,
// which are values, not keyed assignments (a=([k]=x{a,b}) sets a[0] to
// "[k]=xa" and a[1] to "[k]=xb"); ok is false for any other element.
func (sh *shell) bracedElem(el *syntax.ArrayElem, isAssoc bool) ([]string, bool) {
	if isAssoc || el.Index == nil || el.Value == nil || !sh.opts.braceexpand || !hasBraces(el.Value) {
		return nil, false
	}
	value, appendTo := elemValue(el)
	if value == nil || len(sh.braceExpand(value)) < 2 {
		return nil, false
	}
	eq := "]="
	if appendTo {
		eq = "]+="
	}
	parts := append([]syntax.WordPart{&syntax.Lit{Value: "[" + sh.arithTextOf(el.Index) + eq}}, value.Parts...)
	return sh.expandElemFields(&syntax.Word{Parts: parts}), true
}

// arrayItems expands the elements of (a b [k]=v); assocWanted is set
// when the variable is (or is to be) associative.
func (sh *shell) arrayItems(name string, arr *syntax.ArrayExpr) ([]arrayItem, bool) {
	v := sh.getVar(name)
	isAssoc := v != nil && v.assc != nil
	var items []arrayItem
	for _, el := range arr.Elems {
		if fields, ok := sh.bracedElem(el, isAssoc); ok {
			for _, f := range fields {
				items = append(items, arrayItem{val: f})
			}
			continue
		}
		if el.Index != nil {
			value, appendTo := elemValue(el)
			it := arrayItem{keyed: true, appendTo: appendTo}
			if isAssoc {
				it.key = sh.assocKey(el.Index)
			} else {
				it.key = sh.arithIndexText(el.Index)
			}
			if value != nil && isAssoc {
				it.val = sh.expandAssocValue(value)
			} else if value != nil {
				it.val = sh.expandAssign(value)
			}
			items = append(items, it)
			continue
		}
		if el.Value == nil {
			continue
		}
		if isAssoc {
			// (k v k v): words, split and globbed
			for _, f := range sh.expandElemFields(el.Value) {
				items = append(items, arrayItem{val: f})
			}
			continue
		}
		for _, f := range sh.expandElemFields(el.Value) {
			items = append(items, arrayItem{val: f})
		}
	}
	return items, isAssoc
}

// arithIndexText is the text of an indexed array's subscript, its
// expansions done (evaluated later, when assigned).
func (sh *shell) arithIndexText(x syntax.ArithmExpr) string {
	return sh.arithText(x)
}

// dispatch runs a command by name: a function, a builtin, or an external
// command. Functions come first unless fromCommand (command/builtin).
func (sh *shell) dispatch(args []string, assigns []tempAssign, functions bool) int {
	name := args[0]
	if name == arithCmdCarrier && len(args) == 2 {
		// (( expr )) that mvdan did not parse (see repair.go)
		n, err := sh.arithString(args[1])
		if err != nil {
			sh.errorf("((: %s", err.Error())
			return 1
		}
		return b2status(n == 0)
	}
	if name == catCarrier {
		in, out := sh.fds.get(0), sh.fds.get(1)
		if in == nil || in.r == nil || out == nil || out.w == nil {
			return 1
		}
		if _, err := io.Copy(out.w, in.r); err != nil {
			return 1
		}
		return 0
	}
	if name == badLineCarrier && len(args) == 2 {
		sh.errorf("syntax error near unexpected token `%s'", args[1])
		return 1
	}
	if name == badComsubCarrier && len(args) == 2 {
		// `...` that does not parse (repairBackquoteQuote)
		sh.writeErr(sh.argv0 + ": command substitution: line 1: unexpected EOF while looking for matching `" + args[1] + "'\n")
		return 2
	}
	if name == badFuncCarrier && len(args) == 2 {
		sh.errorf("`%s': not a valid identifier", args[1])
		return 1
	}
	if functions && !(sh.opts.posix && specialBuiltins[name]) {
		if fn, ok := sh.funcs.m[name]; ok && !sh.isTool(name) {
			return sh.withTemps(assigns, true, func() int { return sh.callFunc(fn, args) })
		}
	}
	if b, ok := sh.r.cfg.Builtins[name]; ok {
		return sh.withTemps(assigns, false, func() int { return sh.embedderBuiltin(b, args) })
	}
	if bi, ok := builtins[name]; ok {
		if specialBuiltins[name] && sh.opts.posix && len(assigns) > 0 {
			// POSIX: assignments before a special builtin stay (and
			// bash exports them): what the builtin left of them
			// (x=1 unset x leaves nothing, x=1 eval x=2 leaves 2)
			var kept []*variable
			var names []string
			status := sh.withTemps(assigns, false, func() int {
				st := sh.runBuiltin(bi, args)
				top := sh.scopes[len(sh.scopes)-1]
				for _, n := range sortedKeys(top.vm.m) {
					names = append(names, n)
					kept = append(kept, top.vm.m[n])
				}
				return st
			})
			for i, n := range names {
				v := kept[i]
				if !v.set || v.isArray() {
					continue
				}
				if err := sh.setString(n, v.str, false); err != nil {
					sh.fatal(err)
				}
				sh.declare("export", []declArg{{name: n}})
				if v.attrs&aReadonly != 0 {
					sh.declare("readonly", []declArg{{name: n}})
				}
			}
			return status
		}
		return sh.withTemps(assigns, false, func() int { return sh.runBuiltin(bi, args) })
	}
	return sh.external(args, assigns)
}

// withTemps runs f with the temporary assignments in a scope of their
// own (exported). For a function (forFunc) that scope becomes the
// function's locals, as in bash: v=x f; f's local v keeps x, and unset v
// in a function f calls reveals the global.
func (sh *shell) withTemps(assigns []tempAssign, forFunc bool, f func() int) int {
	if len(assigns) == 0 {
		return f()
	}
	sc := &scope{kind: scopeTemp, vm: newVarMap(len(assigns))}
	sh.scopes = append(sh.scopes, sc)
	if forFunc {
		sh.funcTemps = sc
	}
	for _, a := range assigns {
		v, _ := sh.lookup(a.name)
		if v != nil && v.attrs&aReadonly != 0 {
			sh.errorf("%s: readonly variable", a.name)
			continue
		}
		var attrs attr
		old := ""
		if v != nil {
			attrs = v.attrs &^ (aIndexed | aAssoc | aDynamic)
			old = v.str
		}
		val, err := sh.applyAttrs(attrs, old, a.val, a.append)
		if err != nil {
			sh.fatal(err)
		}
		sc.vm.m[a.name] = &variable{set: true, str: val, attrs: attrs | aExport, owner: sh.id, tempEnv: true}
	}
	defer func() {
		for i := len(sh.scopes) - 1; i >= 0; i-- {
			if sh.scopes[i] == sc {
				sh.scopes = append(sh.scopes[:i], sh.scopes[i+1:]...)
				break
			}
		}
	}()
	return f()
}

// callFunc calls a shell function.
func (sh *shell) callFunc(fn *funcDef, args []string) int {
	sh.funcDepth++
	if max := sh.r.lim.MaxFunctionDepth; max > 0 && int64(sh.funcDepth) > max {
		sh.r.limit("maximum function depth exceeded (%d)", max)
	}
	callLine, callFile := sh.line, ""
	if sh.src != nil {
		callFile = sh.src.name
	}
	sh.frames = append(sh.frames, &frame{fn: fn, params: args[1:], callLine: callLine, callFile: callFile})
	if t := sh.funcTemps; t != nil && sh.scopes[len(sh.scopes)-1] == t {
		// the assignments before the call are its locals (withTemps
		// takes the scope away when the call ends: popped here first)
		t.kind = scopeFunc
	} else {
		sh.scopes = append(sh.scopes, &scope{kind: scopeFunc, vm: emptyVarMap()})
	}
	sh.funcTemps = nil
	prevSrc := sh.src
	if fn.src != nil {
		sh.src = fn.src
	}
	savedOpts := sh.opts
	savedLoop := sh.loopDepth
	savedGetopts := sh.getoptsPos
	sh.loopDepth = 0
	defer func() {
		// on an unwinding panic too
		sh.src = prevSrc
		sh.loopDepth = savedLoop
		top := sh.scopes[len(sh.scopes)-1]
		if _, local := top.vm.m["OPTIND"]; local {
			// a function with its own OPTIND leaves getopts where
			// the caller's loop was, inside a bundle (-xyz) too
			sh.getoptsPos = savedGetopts
		}
		top.drop()
		sh.scopes = sh.scopes[:len(sh.scopes)-1]
		sh.frames = sh.frames[:len(sh.frames)-1]
		sh.funcDepth--
		if !sh.trapKeepsLine() {
			sh.line = callLine
		}
		_ = savedOpts
	}()
	sh.stmt(fn.body)
	if sh.flow == flowReturn {
		sh.flow = flowNone
	}
	if t, ok := sh.traps["RETURN"]; ok && t != "" && (sh.opts.functrace || sh.funcDepth == 1) && sh.inTrap != "RETURN" {
		status := sh.status
		sh.runTrap(t, "RETURN")
		if sh.flow == flowNone {
			sh.status = status
		}
	}
	return sh.status
}

// isTool reports whether name is a tool of the embedder: tools come
// before functions of the same name (a script cannot shadow a tool).
func (sh *shell) isTool(name string) bool {
	return sh.r.cfg.Kind != nil && sh.r.cfg.Kind(name) == "tool"
}

// emptyVarMap returns a map for a function's locals, made on first use.
func emptyVarMap() *varMap {
	vm := &varMap{}
	vm.refs.Store(1)
	return vm
}

// external runs a command the shell does not implement: a tool or
// utility of the embedder, or a script of the file system named by
// path.
func (sh *shell) external(args []string, assigns []tempAssign) int {
	name := args[0]
	byPath := false
	if strings.Contains(name, "/") {
		if base, ok := sh.binPath(name); ok {
			byPath = true
			args = append([]string{base}, args[1:]...)
			name = base
			if bi, ok := builtins[base]; ok && (shellUtility[base] || base == "bash" || base == "sh") {
				return sh.withTemps(assigns, false, func() int { return sh.runBuiltin(bi, args) })
			}
		} else {
			return sh.runPath(args, assigns)
		}
	}
	if name == "" {
		sh.errorf(": command not found")
		return 127
	}
	if sh.isUtility(name) && !byPath {
		// a utility is a program along $PATH, after the scripts of
		// directories before its own
		hit, ok := sh.runLookup(name, assigns)
		if !ok {
			return sh.notFound(name)
		}
		if hit.script {
			return sh.runPath(append([]string{hit.abs}, args[1:]...), assigns)
		}
		if name == "which" {
			return sh.withTemps(assigns, false, func() int { return sh.which(args) })
		}
	}
	c := sh.commandFor(args, assigns)
	found := false
	status := 0
	if sh.r.cfg.Exec != nil {
		status, found = sh.r.cfg.Exec(sh.r.ctx, c)
		sh.check()
	}
	if !found {
		if hit, ok := sh.runLookup(name, assigns); ok && hit.script {
			return sh.runPath(append([]string{hit.abs}, args[1:]...), assigns)
		}
		return sh.notFound(name)
	}
	return status
}

// shellUtility are the builtins that also exist as programs in /usr/bin,
// so that /bin/echo runs the builtin.
var shellUtility = map[string]bool{"echo": true, "printf": true, "test": true, "[": true, "true": true,
	"false": true, "pwd": true, "kill": true}

// binPath strips /usr/bin/ and friends from a command of the sandbox.
func (sh *shell) binPath(name string) (string, bool) {
	for _, dir := range []string{"/usr/local/bin/", "/usr/bin/", "/bin/", "/usr/local/sbin/", "/usr/sbin/", "/sbin/"} {
		base, ok := strings.CutPrefix(name, dir)
		if !ok || strings.Contains(base, "/") || base == "" {
			continue
		}
		if shellUtility[base] || base == "bash" || base == "sh" {
			return base, true
		}
		if sh.r.cfg.Kind != nil && sh.r.cfg.Kind(base) == "file" {
			return base, true
		}
	}
	return "", false
}

// commandFor describes an external command for Config.Exec.
func (sh *shell) commandFor(args []string, assigns []tempAssign) *Command {
	c := &Command{
		Args: args,
		Dir:  sh.dir,
		env: func() []string {
			if sh.envOverride != nil {
				return sh.envOverride
			}
			env := sh.exported()
			if len(assigns) > 0 {
				env = mergeEnv(env, assigns)
			}
			return env
		},
		Line:   sh.line,
		Stdout: sh.fdWriter(1),
		Stderr: sh.fdWriter(2),
		Stdin:  sh.fdReader(0),
	}
	if _, none := c.Stdin.(eofReader); none {
		c.Stdin = nil // nothing attached
	}
	if slept := sh.bgSlept; slept != nil {
		c.Sleep = func(d time.Duration) {
			if slept.Add(int64(d)) < 0 {
				slept.Store(math.MaxInt64)
			}
		}
	}
	by := args[0]
	c.Exec = func(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer) int {
		return sh.execFromUtility(by, argv, stdin, stdout, stderr)
	}
	c.ExecEnv = func(ctx context.Context, environ, argv []string, stdin io.Reader, stdout, stderr io.Writer) int {
		return sh.execFromUtilityEnv(by, environ, argv, stdin, stdout, stderr)
	}
	return c
}

// mergeEnv sets the temporary assignments in a sorted environment.
func mergeEnv(env []string, assigns []tempAssign) []string {
	m := make(map[string]string, len(env)+len(assigns))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	for _, a := range assigns {
		if a.append {
			m[a.name] += a.val
		} else {
			m[a.name] = a.val
		}
	}
	out := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, k+"="+m[k])
	}
	return out
}

// fdWriter returns what writes to fd go to (a discarding writer that
// fails, for a closed fd).
func (sh *shell) fdWriter(fd int) io.Writer {
	f := sh.fds.get(fd)
	if f == nil || f.w == nil {
		return badFD{}
	}
	return f.w
}

// fdReader returns fd's reader, nil when closed or not readable.
func (sh *shell) fdReader(fd int) io.Reader {
	f := sh.fds.get(fd)
	if f == nil || f.r == nil {
		return nil
	}
	return f.r
}

// badFD is a closed file descriptor.
type badFD struct{}

func (badFD) Write([]byte) (int, error) { return 0, errBadFD }

var errBadFD = &vfsErr{"Bad file descriptor"}

type vfsErr struct{ s string }

func (e *vfsErr) Error() string { return e.s }

// execFromUtility runs a command line for a utility by (xargs, find
// -exec, timeout, env, time) in a subshell of this shell. As the program
// it is in bash, the utility runs only programs (execvp): the sandbox's
// utilities, tools and scripts, bash and sh, and the builtins that are
// also programs in /usr/bin (echo, printf, test, kill, ...); a function
// or another builtin of that name is not found.
func (sh *shell) execFromUtility(by string, argv []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return sh.execFromUtilityEnv(by, nil, argv, stdin, stdout, stderr)
}

// execFromUtilityEnv is execFromUtility with the exported variables
// replaced by environ ("k=v" pairs) when it is not nil: in the child, the
// exported variables not in environ are hidden (as unset) and those in it
// are temporary assignments, as for NAME=VALUE cmd.
func (sh *shell) execFromUtilityEnv(by string, environ, argv []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(argv) == 0 {
		return 0
	}
	sub := sh.fork()
	var assigns []tempAssign
	if environ != nil {
		keep := make(map[string]bool, len(environ))
		for _, kv := range environ {
			k, v, _ := strings.Cut(kv, "=")
			keep[k] = true
			assigns = append(assigns, tempAssign{name: k, val: v})
		}
		// PATH stays for finding the command (env's execvp falls back to
		// a default path; bash sets one when the environment has none).
		hidden := &scope{kind: scopeTemp, vm: newVarMap(0)}
		current := map[string]bool{}
		for _, kv := range sub.exported() {
			current[kv] = true
			k, _, _ := strings.Cut(kv, "=")
			if !keep[k] && k != "PATH" {
				hidden.vm.m[k] = &variable{owner: sub.id, tempEnv: true}
			}
		}
		sub.scopes = append(sub.scopes, hidden)
		assigns = slices.DeleteFunc(assigns, func(a tempAssign) bool { return current[a.name+"="+a.val] })
		sub.envOverride = environ
	}
	if stdin != nil {
		sub.fds.set(0, newOFile(stdin, nil, nil, "/dev/stdin"))
	} else {
		sub.fds.set(0, newOFile(eofReader{}, nil, nil, "/dev/null"))
	}
	sub.fds.set(1, newOFile(nil, stdout, nil, "/dev/stdout"))
	sub.fds.set(2, newOFile(nil, stderr, nil, "/dev/stderr"))
	sub.execBy = by
	status := sub.runSubshell(func() {
		sub.countCommand()
		sub.status = sub.dispatchProgram(argv, assigns)
	})
	sub.release()
	return status
}

// dispatchProgram runs a command as execvp does: no function, and of
// bash's builtins only those that are programs too.
func (sh *shell) dispatchProgram(args []string, assigns []tempAssign) int {
	name := args[0]
	if _, ok := sh.r.cfg.Builtins[name]; ok {
		return sh.dispatch(args, assigns, false)
	}
	if _, ok := builtins[name]; ok && !sh.isUtility(name) {
		return sh.notFound(name)
	}
	return sh.dispatch(args, assigns, false)
}

// execNotFound is how a utility that runs commands reports one it cannot
// find (as GNU's do; quoted as the sandbox's utilities quote).
var execNotFound = map[string]string{
	"env":     "env: '%s': No such file or directory\n",
	"xargs":   "xargs: %s: No such file or directory\n",
	"timeout": "timeout: failed to run command '%s': No such file or directory\n",
	"find":    "find: '%s': No such file or directory\n",
	"time":    "time: cannot run %s: No such file or directory\n",
}

// notFound reports an unknown command: 127.
func (sh *shell) notFound(name string) int {
	if format, ok := execNotFound[sh.execBy]; ok {
		sh.writeErr(fmt.Sprintf(format, name))
		return 127
	}
	shown := name
	if len(shown) > 40 {
		shown = shown[:40] + "..."
	}
	msg := shown + ": command not found"
	if sh.r.cfg.Suggest != nil {
		if s := sh.r.cfg.Suggest(name); s != "" {
			msg += "; did you mean " + s + "?"
		}
	}
	sh.errorf("%s", msg)
	return 127
}

// runPath runs a command named by a path: a shell script of the file
// system.
func (sh *shell) runPath(args []string, assigns []tempAssign) int {
	p := args[0]
	for _, part := range strings.Split(p, "/") {
		if len(part) > 255 {
			sh.errorf("%s: File name too long", p)
			return 126
		}
	}
	abs := vfs.Abs(sh.dir, p)
	fsys := sh.r.cfg.FS
	if fsys == nil {
		sh.errorf("%s: No such file or directory", p)
		return 127
	}
	info, err := fsys.Stat(sh.r.ctx, abs)
	switch {
	case err != nil:
		sh.errorf("%s: %s", p, errReason(err))
		if isNotExist(err) {
			return 127
		}
		return 126
	case info.IsDir():
		sh.errorf("%s: Is a directory", p)
		return 126
	case info.Mode()&0o111 == 0:
		sh.errorf("%s: Permission denied", p)
		return 126
	}
	data, err := fsys.ReadFile(sh.r.ctx, abs)
	if err != nil {
		sh.errorf("%s: %s", p, errReason(err))
		return 126
	}
	script := string(data)
	if first, _, _ := strings.Cut(script, "\n"); strings.HasPrefix(first, "#!") {
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
			sh.errorf("%s: %s: bad interpreter: only shell scripts run in the sandbox", p, prog)
			return 126
		}
	}
	env := sh.exported()
	if len(assigns) > 0 {
		env = mergeEnv(env, assigns)
	}
	return sh.childShell(p, script, nil, args[1:], env, sh.fdReader(0), sh.fdWriter(1), sh.fdWriter(2))
}

func itoa(n int64) string {
	return formatInt(n)
}

// isEmptyArith reports whether a subscript is empty: a[]=x, which bash
// refuses and mvdan does not parse (repairSubscript writes the empty
// subscript as an empty ANSI-C quoted string).
func isEmptyArith(x syntax.ArithmExpr) bool {
	w, ok := x.(*syntax.Word)
	if !ok || len(w.Parts) != 1 {
		return false
	}
	q, ok := w.Parts[0].(*syntax.SglQuoted)
	return ok && q.Dollar && q.Value == ""
}
