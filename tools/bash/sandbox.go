package bash

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Generated names. User code may not mention anything starting with
// reservedPrefix (checkScript rejects it); generated calls carry no source
// position, which is how the call handler tells them from user code.
const (
	reservedPrefix = "__sbx"

	genTick      = "__sbx_tick"      // first statement of a loop body: tick <loop>
	genLoop      = "__sbx_loop"      // before a loop: reset its counter
	genLoopZero  = "__sbx_loop0"     // same, for C-style loops (status 0, see instrument)
	genEnter     = "__sbx_enter"     // first statement of a function: enter <depth>
	genVars      = "__sbx_vars"      // after an assignment: vars <name>...
	genPipe      = "__sbx_pipe"      // before a pipeline: pipe <stages>
	genPipeEnd   = "__sbx_pipe_end"  // after a pipeline: pipe_end <stages>
	execStatus   = "__sbx_status"    // re-emits the last exit status
	execTool     = "__sbx_tool"      // tool <name> <argv...>
	execDenied   = "__sbx_denied"    // denied <name>: command not found
	execPrintf   = "__sbx_printf"    // the sandbox's printf
	execHelp     = "__sbx_help"      // in-script help
	execCommandV = "__sbx_command_v" // command -v/-V
	execCat      = "__sbx_cat"       // $(< file): cat with the redirection
	execTrue     = "__sbx_true"      // ":" when the script defines its own ":"
	execType     = "__sbx_type"      // type, command -V
	execError    = "__sbx_error"     // error <message> <status>
	genFunc      = "__sbx_func"      // after a function definition: func <name>
	genPsub      = "__sbx_psub"      // <(...): makes a file and prints its path
	genBody      = "__sbx_body"      // last statement of a while body: body <loop> (records its status)
	genLoopEnd   = "__sbx_loopend"   // after a while loop: loopend <loop> (its status)
	execExit     = "__sbx_exit"      // exit <status>: a command with that status
	depthVar     = "__sbx_depth"
	pidVar       = "__sbx_pid" // unset: $$ and $PPID with operators read it
)

// rejection is a script refused before it runs.
type rejection struct{ msg string }

func (e *rejection) Error() string { return e.msg }

// scriptShape is what checkScript learns about a script.
type scriptShape struct {
	funcs  int  // function definitions
	pipes  int  // pipe operators: each runs one more concurrent stage
	shadow bool // defines ":", "true" or "false"
}

// checkScript rejects what the sandbox cannot contain: process
// substitution, background jobs and coprocesses, reserved names, and
// syntax nested deeper than maxDepth.
func checkScript(f *syntax.File, maxDepth int) (scriptShape, error) {
	var err error
	var shape scriptShape
	depth := 0
	syntax.Walk(f, func(n syntax.Node) bool {
		if err != nil {
			return false
		}
		if n == nil {
			depth--
			return true
		}
		depth++
		if depth > maxDepth {
			err = &rejection{fmt.Sprintf("script nesting too deep (more than %d levels)", maxDepth)}
			return false
		}
		switch x := n.(type) {
		case *syntax.FuncDecl:
			shape.funcs++
			if x.Name != nil && (x.Name.Value == ":" || x.Name.Value == "true" || x.Name.Value == "false") {
				shape.shadow = true
			}
		case *syntax.BinaryCmd:
			if x.Op == syntax.Pipe || x.Op == syntax.PipeAll {
				shape.pipes++
			}
		case *syntax.ProcSubst:
			if x.Op != syntax.CmdIn {
				err = &rejection{fmt.Sprintf("line %d: output process substitution >(...) is not supported in the sandbox; write to a file or use a pipe", x.Pos().Line())}
			}
		case *syntax.CoprocClause:
			err = &rejection{fmt.Sprintf("line %d: coproc is not supported in the sandbox", x.Pos().Line())}
		case *syntax.Stmt:
			if x.Coprocess {
				err = &rejection{fmt.Sprintf("line %d: coprocesses are not supported in the sandbox", x.Pos().Line())}
			}
		case *syntax.Lit:
			if strings.Contains(x.Value, reservedPrefix) {
				err = &rejection{fmt.Sprintf("line %d: names containing %s are reserved by the sandbox", x.Pos().Line(), reservedPrefix)}
			}
		}
		return err == nil
	})
	return shape, err
}

// instrumenter rewrites a checked script so that the call handler can
// enforce the limits:
//
//   - every loop is preceded by "__sbx_loop N" (resets its counter) and
//     its body starts with "__sbx_tick N";
//   - every function body starts with
//     `local __sbx_depth=$((${__sbx_depth:-0}+1)); __sbx_enter "$__sbx_depth"`;
//   - every pipeline is bracketed by "__sbx_pipe K" and "__sbx_pipe_end K";
//   - every assignment is followed by "__sbx_vars NAME...", and an
//     element assignment m[k]=v is preceded by m+=() (see setArrays);
//   - "~user" words are quoted (tilde expansion would read the host's
//     user database), and $$ / $PPID read sandbox values.
//
// Generated calls are written `call && :` so that they keep $? and never
// trigger errexit; C-style loop bodies end with ":" because mvdan stops a
// C-style loop after an iteration whose last command failed.
type instrumenter struct {
	pipes   bool // bracket pipelines (only needed when stages can fan out)
	base    int  // the id of the first loop
	loops   int
	loopIDs map[syntax.Command]int
	seen    map[syntax.Command]bool
	gen     map[*syntax.Stmt]bool
}

// Without functions, at most shape.pipes stages run at once (loops run
// their pipelines one after the other), so pipelines are bracketed only
// when the script defines functions or has more pipes than maxStages.
//
// Loop ids start at base: a script run by bash -c inside a script gets
// ids of its own.
func instrument(f *syntax.File, shape scriptShape, maxStages int64, base int) (loops int) {
	ins := &instrumenter{
		base:    base,
		pipes:   shape.funcs > 0 || int64(shape.pipes) > maxStages,
		loopIDs: make(map[syntax.Command]int),
		seen:    make(map[syntax.Command]bool),
		gen:     make(map[*syntax.Stmt]bool),
	}
	syntax.Walk(f, ins.visit)
	return ins.loops
}

func word(s string) *syntax.Word {
	return &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: s}}}
}

func (ins *instrumenter) call(args ...string) *syntax.Stmt {
	words := make([]*syntax.Word, len(args))
	for i, a := range args {
		words[i] = word(a)
	}
	st := &syntax.Stmt{Cmd: &syntax.CallExpr{Args: words}}
	ins.gen[st] = true
	return st
}

// keep wraps a generated statement as `st && :`, which leaves $? as it
// was (the exec handler re-emits it) and is exempt from errexit.
func (ins *instrumenter) keep(st *syntax.Stmt) *syntax.Stmt {
	out := &syntax.Stmt{Cmd: &syntax.BinaryCmd{Op: syntax.AndStmt, X: st, Y: ins.call(":")}}
	ins.gen[out] = true
	return out
}

func (ins *instrumenter) visit(n syntax.Node) bool {
	switch x := n.(type) {
	case *syntax.File:
		x.Stmts = ins.list(x.Stmts)
	case *syntax.Block:
		x.Stmts = ins.list(x.Stmts)
	case *syntax.Subshell:
		x.Stmts = ins.list(x.Stmts)
	case *syntax.CmdSubst:
		catShortcut(x)
		x.Stmts = ins.list(x.Stmts)
	case *syntax.IfClause:
		x.Cond = ins.list(x.Cond)
		x.Then = ins.list(x.Then)
	case *syntax.CaseItem:
		x.Stmts = ins.list(x.Stmts)
	case *syntax.WhileClause:
		x.Cond = ins.list(x.Cond)
		x.Do = ins.loopBody(x, x.Do, false, true)
	case *syntax.ForClause:
		_, cstyle := x.Loop.(*syntax.CStyleLoop)
		x.Do = ins.loopBody(x, x.Do, cstyle, cstyle)
	case *syntax.FuncDecl:
		ins.function(x)
	case *syntax.Stmt:
		ins.stmt(x)
	case *syntax.CallExpr:
		if len(x.Args) == 0 {
			x.Assigns = setArrays(x.Assigns)
		}
	case *syntax.Word:
		quoteTildes(x)
		x.Parts = hidePIDs(x.Parts)
		for i, p := range x.Parts {
			if ps, ok := p.(*syntax.ProcSubst); ok && ps.Op == syntax.CmdIn {
				x.Parts[i] = procSubst(ps)
			}
		}
	case *syntax.DblQuoted:
		x.Parts = hidePIDs(x.Parts)
	case *syntax.ParamExp:
		// ${$:-x} and other forms with operators: an unset variable.
		if x.Param != nil && !x.Excl && (x.Param.Value == "$" || x.Param.Value == "PPID") {
			x.Param = &syntax.Lit{Value: pidVar}
		}
	}
	return true
}

const psubVar = "__sbx_p"

// procSubst rewrites <(cmds) as $(p=<new file>; { cmds; } >"$p"; printf
// %s "$p"): the commands run first, into a file of /tmp (the sandbox has
// no pipes with names), and the word is the file's path.
func procSubst(ps *syntax.ProcSubst) syntax.WordPart {
	f, err := parse(psubVar+`=$(`+genPsub+`); { :; } >"$`+psubVar+`"; printf %s "$`+psubVar+`"`, "")
	if err != nil {
		panic("bash: generated process substitution does not parse: " + err.Error())
	}
	zeroPositions(f)
	block := f.Stmts[1].Cmd.(*syntax.Block)
	block.Stmts = ps.Stmts
	return &syntax.CmdSubst{Stmts: f.Stmts}
}

// catShortcut rewrites $(< file) as $(__sbx_cat < file): the
// interpreter's own shortcut reports a failed open twice and leaves $? 0.
func catShortcut(cs *syntax.CmdSubst) {
	if len(cs.Stmts) != 1 {
		return
	}
	st := cs.Stmts[0]
	if st.Cmd != nil || len(st.Redirs) != 1 || st.Redirs[0].Op != syntax.RdrIn || st.Negated || st.Background {
		return
	}
	st.Cmd = &syntax.CallExpr{Args: []*syntax.Word{word(execCat)}}
}

// setArrays puts `name+=()` before each element assignment (name[k]=v,
// name[k]+=v) of a command that only assigns: the interpreter sets the
// element of an array declared without a value (declare -A m) but leaves
// the array itself unset, so that set -u then reads ${m[k]} as unbound.
// Appending no elements sets it and changes nothing else (a readonly array
// reports its error twice, and set -x shows the m+=()).
func setArrays(assigns []*syntax.Assign) []*syntax.Assign {
	n := 0
	for _, as := range assigns {
		if as.Index != nil && as.Name != nil {
			n++
		}
	}
	if n == 0 {
		return assigns
	}
	out := make([]*syntax.Assign, 0, len(assigns)+n)
	for _, as := range assigns {
		if as.Index != nil && as.Name != nil {
			out = append(out, &syntax.Assign{Append: true, Name: &syntax.Lit{Value: as.Name.Value}, Array: &syntax.ArrayExpr{}})
		}
		out = append(out, as)
	}
	return out
}

// hidePIDs replaces $$ and $PPID (host process ids) by the sandbox's: 1
// and 0.
func hidePIDs(parts []syntax.WordPart) []syntax.WordPart {
	for i, p := range parts {
		pe, ok := p.(*syntax.ParamExp)
		if !ok || pe.Param == nil || pe.Excl || pe.Length || pe.Width || pe.Index != nil ||
			pe.Slice != nil || pe.Repl != nil || pe.Names != 0 || pe.Exp != nil {
			continue
		}
		switch pe.Param.Value {
		case "$":
			parts[i] = &syntax.Lit{Value: "1"}
		case "PPID":
			parts[i] = &syntax.Lit{Value: "0"}
		}
	}
	return parts
}

// list instruments a statement list: a variable check after each
// assignment.
func (ins *instrumenter) list(stmts []*syntax.Stmt) []*syntax.Stmt {
	var out []*syntax.Stmt
	for i, st := range stmts {
		names, check := assignedNames(st)
		if !check || ins.gen[st] {
			if out != nil {
				out = append(out, st)
			}
			continue
		}
		if out == nil {
			out = append(make([]*syntax.Stmt, 0, len(stmts)+4), stmts[:i]...)
		}
		out = append(out, st, ins.keep(ins.call(append([]string{genVars}, names...)...)))
	}
	if out == nil {
		return stmts
	}
	return out
}

// assignedNames reports whether st may grow variables, and which.
func assignedNames(st *syntax.Stmt) ([]string, bool) {
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		if len(c.Args) == 0 {
			names := make([]string, 0, len(c.Assigns))
			for _, a := range c.Assigns {
				if a.Name != nil {
					names = append(names, a.Name.Value)
				}
			}
			return names, len(c.Assigns) > 0
		}
		if lit := c.Args[0].Lit(); lit == "read" || lit == "mapfile" || lit == "readarray" || lit == "printf" {
			return nil, true // names only known at run time: full scan
		}
	case *syntax.BinaryCmd:
		// The last stage of a pipeline runs in the current shell.
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			return assignedNames(c.Y)
		}
	case *syntax.DeclClause:
		var names []string
		for _, a := range c.Args {
			if a.Name != nil {
				names = append(names, a.Name.Value)
			}
		}
		return names, true
	}
	return nil, false
}

// loopBody instruments a loop's body: a tick first; with keepStatus, a
// record of the last command's status at the end (while loops and C-style
// for loops return it, which the interpreter does not keep).
func (ins *instrumenter) loopBody(loop syntax.Command, body []*syntax.Stmt, cstyle, keepStatus bool) []*syntax.Stmt {
	id, ok := ins.loopIDs[loop]
	if !ok { // not reached through a Stmt; give it an id anyway
		id = ins.base + ins.loops
		ins.loops++
		ins.loopIDs[loop] = id
	}
	out := make([]*syntax.Stmt, 0, len(body)+2)
	out = append(out, ins.keep(ins.call(genTick, strconv.Itoa(id))))
	out = append(out, ins.list(body)...)
	if keepStatus {
		out = append(out, ins.keep(ins.call(genBody, strconv.Itoa(id))))
	}
	if cstyle {
		out = append(out, ins.call(":"))
	}
	return out
}

func (ins *instrumenter) stmt(st *syntax.Stmt) {
	// A background job runs in the foreground: the sandbox runs one
	// thing at a time (wait is a no-op).
	st.Background, st.Disown = false, false
	if ins.gen[st] || st.Cmd == nil || ins.seen[st.Cmd] {
		return
	}
	switch c := st.Cmd.(type) {
	case *syntax.FuncDecl:
		// Mark the function defined once the definition has run, for
		// type and command -v.
		ins.seen[c] = true
		if c.Name == nil {
			return
		}
		inner := &syntax.Stmt{Cmd: c}
		st.Cmd = &syntax.Block{Stmts: []*syntax.Stmt{inner, ins.keep(ins.call(genFunc, c.Name.Value))}}
	case *syntax.CallExpr:
		ins.printfToVar(st, c)
	case *syntax.WhileClause, *syntax.ForClause:
		ins.seen[c] = true
		id := ins.base + ins.loops
		ins.loops++
		ins.loopIDs[c] = id
		start := ins.keep(ins.call(genLoop, strconv.Itoa(id)))
		keepStatus := true
		if f, ok := c.(*syntax.ForClause); ok {
			_, cstyle := f.Loop.(*syntax.CStyleLoop)
			keepStatus = cstyle
			if cstyle {
				start = ins.call(genLoopZero, strconv.Itoa(id))
			}
		}
		inner := &syntax.Stmt{Cmd: c}
		block := &syntax.Block{Stmts: []*syntax.Stmt{start, inner}}
		if !keepStatus {
			st.Cmd = block
			break
		}
		// { start; loop; } && loopend: the loop's status comes from its
		// body's last command, and as in bash it never trips errexit.
		bst := &syntax.Stmt{Cmd: block}
		ins.gen[bst] = true
		st.Cmd = &syntax.BinaryCmd{Op: syntax.AndStmt, X: bst, Y: ins.keep(ins.call(genLoopEnd, strconv.Itoa(id)))}
	case *syntax.BinaryCmd:
		if !ins.pipes || c.Op != syntax.Pipe && c.Op != syntax.PipeAll {
			return
		}
		k := ins.pipeStages(c) - 1 // the first stage runs in this shell's goroutine
		n := strconv.Itoa(k)
		inner := &syntax.Stmt{Cmd: c}
		st.Cmd = &syntax.Block{Stmts: []*syntax.Stmt{
			ins.keep(ins.call(genPipe, n)),
			inner,
			ins.keep(ins.call(genPipeEnd, n)),
		}}
	}
}

// printfToVar rewrites `printf -v NAME FORMAT ARGS...` (which the
// interpreter's builtin does not support) as
// `NAME=$(__sbx_printf FORMAT ARGS...; __sbx_printf .); NAME=${NAME%.}`:
// the dot keeps trailing newlines, which $(...) would strip.
func (ins *instrumenter) printfToVar(st *syntax.Stmt, c *syntax.CallExpr) {
	if len(c.Args) < 4 || len(c.Assigns) > 0 || c.Args[0].Lit() != "printf" || c.Args[1].Lit() != "-v" {
		return
	}
	name := c.Args[2].Lit()
	if !syntax.ValidName(name) {
		return
	}
	format := &syntax.CallExpr{Args: append([]*syntax.Word{word(execPrintf)}, c.Args[3:]...)}
	dot := &syntax.CallExpr{Args: []*syntax.Word{word(execPrintf), word(".")}}
	subst := &syntax.CmdSubst{Stmts: []*syntax.Stmt{{Cmd: format}, {Cmd: dot}}}
	assign := &syntax.Stmt{Cmd: &syntax.CallExpr{Assigns: []*syntax.Assign{{
		Name: &syntax.Lit{Value: name}, Value: &syntax.Word{Parts: []syntax.WordPart{subst}},
	}}}}
	trim := &syntax.Stmt{Cmd: &syntax.CallExpr{Assigns: []*syntax.Assign{{
		Name: &syntax.Lit{Value: name},
		Value: &syntax.Word{Parts: []syntax.WordPart{&syntax.ParamExp{
			Param: &syntax.Lit{Value: name},
			Exp:   &syntax.Expansion{Op: syntax.RemSmallSuffix, Word: word(".")},
		}}},
	}}}}
	st.Cmd = &syntax.Block{Stmts: []*syntax.Stmt{assign, trim}}
}

// pipeStages counts the stages of a pipeline and marks its nested pipe
// nodes so that they are not counted again.
func (ins *instrumenter) pipeStages(c *syntax.BinaryCmd) int {
	ins.seen[c] = true
	n := 0
	for _, side := range []*syntax.Stmt{c.X, c.Y} {
		if b, ok := side.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) &&
			len(side.Redirs) == 0 && !side.Negated {
			n += ins.pipeStages(b)
		} else {
			n++
		}
	}
	return n
}

// funcPrologue is the generated start of every function body.
const funcPrologue = `local ` + depthVar + `=$(( ${` + depthVar + `:-0} + 1 ))
` + genEnter + ` "$` + depthVar + `" && :`

func (ins *instrumenter) function(fd *syntax.FuncDecl) {
	if fd.Body == nil {
		return
	}
	prologue, err := parse(funcPrologue, "")
	if err != nil {
		panic("bash: generated function prologue does not parse: " + err.Error())
	}
	zeroPositions(prologue)
	stmts := prologue.Stmts
	for _, st := range stmts {
		ins.gen[st] = true
	}
	fd.Body = &syntax.Stmt{Cmd: &syntax.Block{Stmts: append(stmts, fd.Body)}}
}

// quoteTildes quotes a '~' that starts a tilde prefix ("~user") in the
// word's unquoted literal parts, so that the interpreter never looks the
// user up in the host's user database. "~" and "~/x" (HOME) are kept.
func quoteTildes(w *syntax.Word) {
	for i := 0; i < len(w.Parts); i++ {
		l, ok := w.Parts[i].(*syntax.Lit)
		if !ok {
			continue
		}
		j := strings.IndexByte(l.Value, '~')
		if j < 0 || j+1 >= len(l.Value) {
			continue
		}
		next := l.Value[j+1]
		if next == '/' || next == ':' {
			continue
		}
		parts := make([]syntax.WordPart, 0, len(w.Parts)+2)
		parts = append(parts, w.Parts[:i]...)
		if j > 0 {
			parts = append(parts, &syntax.Lit{Value: l.Value[:j]})
		}
		parts = append(parts, &syntax.SglQuoted{Value: "~"}, &syntax.Lit{Value: l.Value[j+1:]})
		parts = append(parts, w.Parts[i+1:]...)
		w.Parts = parts
		if j > 0 {
			i++ // skip the prefix literal: the loop's i++ then skips the quote
		}
	}
}

var posType = reflect.TypeFor[syntax.Pos]()

// zeroPositions clears every source position in a syntax tree, so that
// its calls count as generated.
func zeroPositions(n any) {
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Struct:
			if v.Type() == posType {
				if v.CanSet() {
					v.Set(reflect.Zero(posType))
				}
				return
			}
			for i := range v.NumField() {
				walk(v.Field(i))
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		}
	}
	walk(reflect.ValueOf(n))
}
