package shell

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

var parsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

// syntaxErr is a parse error in bash's words.
func syntaxMessage(err error) string {
	msg := err.Error()
	var pe syntax.ParseError
	if errors.As(err, &pe) {
		msg = pe.Text
	}
	return "syntax error: " + msg
}

// condParseError reports whether a parse error is one of [[ ]]'s.
func condParseError(err error) bool {
	var pe syntax.ParseError
	if !errors.As(err, &pe) {
		return false
	}
	m := pe.Text
	if strings.Contains(m, "test operator") || strings.Contains(m, "[[") || strings.Contains(m, "=~") {
		return true
	}
	// "`-f` must be followed by a word"
	return strings.HasPrefix(m, "`-") && strings.HasSuffix(m, "` must be followed by a word")
}

// parseLine returns the line of a parse error.
func parseLine(err error) int {
	var pe syntax.ParseError
	if errors.As(err, &pe) {
		return int(pe.Pos.Line())
	}
	return 0
}

// runMain runs the script's shell: the script a line at a time, then
// the EXIT trap.
func (sh *shell) runMain(text, name string) (status int) {
	defer func() {
		if p := recover(); p != nil {
			switch p := p.(type) {
			case stopPanic:
				status = 1
			case fatalPanic:
				status = p.status
			case pipePanic:
				status = 141
			default:
				sh.r.stop(fmt.Errorf("internal error: %v\n%s", p, debug.Stack()))
				status = 1
			}
		}
	}()
	if sh.r.lim.MaxScriptBytes > 0 && len(text) > sh.r.lim.MaxScriptBytes {
		sh.errorf("script exceeds %d bytes", sh.r.lim.MaxScriptBytes)
		return 2
	}
	if sh.dashC {
		sh.setString("BASH_EXECUTION_STRING", text, false)
	}
	sh.runSource(&source{name: name, text: text}, true)
	status = sh.exit()
	sh.saveHistory()
	return status
}

// exit runs the EXIT trap and returns the shell's exit status.
func (sh *shell) exit() int {
	status := sh.status
	if t, ok := sh.traps["EXIT"]; ok && t != "" && !sh.killed {
		delete(sh.traps, "EXIT")
		sh.flow = flowNone
		sh.runTrap(t, "EXIT")
		if sh.flow == flowExit {
			status = sh.status
		}
		sh.flow = flowNone
	}
	return status
}

// runSource parses and runs text a line at a time, as bash runs a -c
// string, a sourced file or eval's argument: a syntax error ends it with
// status 2 after the lines before it ran. At the top level of a shell,
// an error that ends a command (fatalPanic) goes on with the next line.
func (sh *shell) runSource(src *source, top bool) int {
	if src.feed != nil {
		return sh.runFeed(src, top)
	}
	text := src.text
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	prev := sh.src
	sh.src = src
	defer func() { sh.src = prev }()
	text, escaped := escapeRawBytes(text)
	repairs := 0
	for {
		restart, status := sh.runText(text, top, escaped, &repairs, nil)
		if restart == "" {
			return status
		}
		text = restart
		sh.src = &source{name: src.name, text: text}
	}
}

// runText runs text a line at a time. When a parse error can be repaired
// (see repairText), it returns the repaired rest of the text to run (the
// lines already run blanked, so that line numbers stay).
func (sh *shell) runText(text string, top, escaped bool, repairs *int, feed *stdinScript) (restart string, status int) {
	p := parsers.Get().(*syntax.Parser)
	defer parsers.Put(p)
	done := 0     // the offset up to which statements ran
	recorded := 0 // the offset up to which lines went to the history
	var in io.Reader = strings.NewReader(text)
	if feed != nil {
		in = feed
	}
	for stmts, err := range p.InteractiveSeq(in) {
		if feed != nil {
			// the text read so far
			text = feed.buf.String()
			sh.src.text = text
			if feed.err != nil {
				return "", sh.feedTooLong(feed)
			}
		}
		if err != nil {
			if rest, ok := sh.skipBadArrayAssign(text, done, err); ok {
				return rest, 1
			}
			if *repairs < maxRepairs {
				*repairs++
				if off, ok := errOffset(text, err); ok {
					if nl := strings.IndexByte(text[off:], '\n'); nl >= 0 {
						off += nl
					} else {
						off = len(text)
					}
					if fixed, ok := sh.aliasRepair(text, done, off); ok {
						return blankLines(text[:done]) + fixed[done:], 0
					}
				}
				rest := blankLines(text[:done]) + text[done:]
				if fixed, ok := repairText(rest, err); ok {
					return fixed, 0
				}
			}
			if line := parseLine(err); line > 0 {
				sh.line = line
			}
			sh.errorf("%s", syntaxMessage(err))
			if off, ok := errOffset(text, err); ok && sh.dashC && inCommandSubst(text, off) {
				// bash -c ends with 127 at a syntax error inside $(...),
				// even one eval reads
				sh.status = 127
				sh.syntaxError = true
				sh.flow = flowExit
				return "", 127
			}
			if !condParseError(err) {
				// (bash's parse errors in [[ ]] leave $? as it was)
				sh.status = 2
			}
			sh.syntaxError = true
			if top && !sh.child {
				sh.flow = flowExit
			}
			return "", 2
		}
		if len(stmts) == 0 || p.Incomplete() {
			// (a line that ends inside a command: its complete
			// commands run with the rest, as bash reads a whole list)
			continue
		}
		if end := int(stmts[len(stmts)-1].End().Offset()); end > done {
			done = min(end, len(text))
		}
		if top && sh.interactive && sh.readStdin && sh.histOff == 0 {
			sh.echoLines(text, recorded, int(stmts[0].Pos().Offset()), histLineEnd(text, done))
			if sh.flow != flowNone {
				break
			}
		}
		if top {
			recorded = sh.histRecord(text, recorded, int(stmts[0].Pos().Offset()), done, sh.histRemember && sh.histOff == 0)
		}
		if escaped {
			unescapeRawBytes(stmts)
		}
		joinDollarContinuations(stmts)
		splitFuncBodies(stmts)
		if sh.shopt.expandAliases && len(sh.aliases.m) > 0 {
			if *repairs < maxRepairs {
				start := int(stmts[0].Pos().Offset())
				lineEnd := len(text)
				if nl := strings.IndexByte(text[done:], '\n'); nl >= 0 {
					lineEnd = done + nl
				}
				if fixed, ok := sh.aliasHeredocRestart(text, start, lineEnd); ok {
					*repairs++
					return fixed, 0
				}
			}
			stmts = sh.expandAliases(stmts, text)
		}
		if !sh.checkDepth(stmts) {
			return "", sh.status
		}
		if top {
			sh.runTop(stmts)
		} else {
			sh.stmts(stmts)
		}
		if sh.flow != flowNone {
			break
		}
	}
	if feed != nil && feed.err != nil {
		return "", sh.feedTooLong(feed)
	}
	return "", sh.status
}

// feedTooLong ends a shell whose script, read from stdin, passed the
// bound, as a script given whole that is too long.
func (sh *shell) feedTooLong(feed *stdinScript) int {
	sh.writeErr(sh.argv0 + ": " + feed.err.Error() + "\n")
	sh.status, sh.flow = 2, flowExit
	return 2
}

// redirectsStdin reports whether redirections include one of fd 0.
func redirectsStdin(redirs []*syntax.Redirect) bool {
	for _, r := range redirs {
		fd := -1
		switch r.Op {
		case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
			fd = 0
		}
		if r.N != nil {
			n, err := strconv.Atoi(r.N.Value)
			if err != nil {
				continue
			}
			fd = n
		}
		if fd == 0 {
			return true
		}
	}
	return false
}

// stdinScript is the script of a shell that reads its commands from
// stdin (bash < file, cmd | bash): as bash does, it reads a line at a
// time, when the parser needs it, from whatever fd 0 is then, so that a
// command that reads stdin reads the script's next lines, and exec 0<f
// goes on with the commands of f.
type stdinScript struct {
	sh      *shell
	buf     strings.Builder // what the parser read (raw bytes escaped)
	pending string          // text to give before reading more (a repair's)
	max     int             // bound on what is read (MaxScriptBytes, else 1 MiB)
	read    int
	err     error // the bound was passed
}

func (f *stdinScript) Read(p []byte) (int, error) {
	if f.pending == "" {
		if f.err != nil {
			return 0, io.EOF
		}
		line, err := f.sh.readUpTo(0, '\n', f.max+1-f.read)
		f.read += len(line)
		if f.read > f.max {
			f.err = fmt.Errorf("script exceeds %d bytes", f.max)
			return 0, io.EOF
		}
		if line == "" {
			if err == nil {
				err = io.EOF
			}
			return 0, err
		}
		if !strings.HasSuffix(line, "\n") {
			line += "\n" // (the parser runs a last line that has one)
		}
		f.pending, _ = escapeRawBytes(line)
	}
	n := copy(p, f.pending)
	f.buf.WriteString(f.pending[:n])
	f.pending = f.pending[n:]
	return n, nil
}

// runFeed runs a script read from stdin as it is read (see stdinScript).
func (sh *shell) runFeed(src *source, top bool) int {
	prev := sh.src
	sh.src = src
	defer func() { sh.src = prev }()
	repairs := 0
	for {
		restart, status := sh.runText("", top, true, &repairs, src.feed)
		if restart == "" {
			return status
		}
		// a repair: the text read so far, repaired, then the rest
		feed := src.feed
		feed.buf.Reset()
		feed.pending = restart + feed.pending
		src = &source{name: src.name, feed: feed}
		sh.src = src
	}
}

// skipBadArrayAssign handles a compound assignment whose values are not
// all words (a=(x & y)) on a line of its own: bash reports the token and
// the line, sets $? to 1 and goes on with the next line, where other
// syntax errors end the script. It returns the text to run on (the lines
// up to the bad one blanked), or false when err is not that case.
func (sh *shell) skipBadArrayAssign(text string, done int, err error) (string, bool) {
	var pe syntax.ParseError
	if !errors.As(err, &pe) || pe.Text != "array element values must be words" {
		return "", false
	}
	off, ok := errOffset(text, err)
	if !ok || off < done || off >= len(text) {
		return "", false
	}
	start := strings.LastIndexByte(text[:off], '\n') + 1
	for _, l := range strings.Split(text[done:start], "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return "", false // the line continues a command begun above
		}
	}
	end := len(text)
	if nl := strings.IndexByte(text[off:], '\n'); nl >= 0 {
		end = off + nl
	}
	tok := text[off:end]
	if n := strings.IndexAny(tok, " \t"); n >= 0 {
		tok = tok[:n]
	}
	if tok == "" {
		tok = "newline"
	}
	for _, op := range []string{"&&", "||", ";;", "&", "|", ";", "(", ")", "<", ">"} {
		if strings.HasPrefix(tok, op) {
			tok = op
			break
		}
	}
	sh.line = int(pe.Pos.Line())
	sh.errorf("syntax error near unexpected token `%s'", tok)
	sh.errorf("`%s'", text[start:end])
	sh.status = 1
	return blankLines(text[:end]) + text[end:], true
}

// blankLines replaces text by as many newlines, keeping line numbers.
func blankLines(text string) string {
	return strings.Repeat("\n", strings.Count(text, "\n"))
}

// checkDepth refuses syntax nested deeper than the limit.
func (sh *shell) checkDepth(stmts []*syntax.Stmt) bool {
	max := sh.r.lim.MaxASTDepth
	if max <= 0 {
		return true
	}
	ok := true
	for _, st := range stmts {
		depth := 0
		syntax.Walk(st, func(n syntax.Node) bool {
			if !ok {
				return false
			}
			if n == nil {
				depth--
				return true
			}
			depth++
			if depth > max {
				ok = false
				return false
			}
			return true
		})
	}
	if !ok {
		sh.r.stop(&RejectedError{Msg: fmt.Sprintf("script nesting too deep (more than %d levels)", max)})
		panic(stopPanic{})
	}
	return ok
}

// runTop runs the commands of one line at the top level: an error that
// ends a command ends the line, with status 1, and the shell goes on.
func (sh *shell) runTop(stmts []*syntax.Stmt) {
	defer func() {
		if p := recover(); p != nil {
			fp, ok := p.(fatalPanic)
			if !ok {
				panic(p)
			}
			sh.status = fp.status
			sh.cleanupPsubs(0)
			// (an interactive shell goes on with the next line)
			if fp.exit && !sh.interactive || sh.level > 0 || sh.opts.errexit && fp.status != 0 {
				sh.flow = flowExit
			}
		}
	}()
	sh.stmts(stmts)
}

// stmts runs a list of statements; it stops early when control flow
// (break, continue, return, exit) is pending.
func (sh *shell) stmts(list []*syntax.Stmt) int {
	for _, st := range list {
		sh.stmt(st)
		if sh.flow != flowNone {
			break
		}
	}
	return sh.status
}

// stmt runs one statement and sets $?.
func (sh *shell) stmt(st *syntax.Stmt) {
	sh.check()
	if st.Cmd == nil && len(st.Redirs) == 0 || sh.opts.noexec {
		// (set -n: commands are read, not run)
		return
	}
	mark := len(sh.psubList)
	if st.Background || st.Coprocess || st.Disown {
		sh.background(st)
		sh.cleanupPsubs(mark)
		return
	}
	if st.Negated {
		sh.noErrexit++
		sh.command(st)
		sh.noErrexit--
		if sh.flow == flowNone || sh.flow == flowExit && false {
			sh.status = b2status(sh.status == 0)
		}
		sh.cleanupPsubs(mark)
		sh.takeSignals()
		return
	}
	sh.command(st)
	sh.cleanupPsubs(mark)
	sh.takeSignals()
}

func b2status(fail bool) int {
	if fail {
		return 1
	}
	return 0
}

// command runs the command of a statement with its redirections.
func (sh *shell) command(st *syntax.Stmt) {
	if ln := int(st.Pos().Line()); ln > 0 && !sh.trapKeepsLine() {
		sh.line = ln
	}
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		sh.status = sh.call(c, st.Redirs)
		sh.pipestatus = append(sh.pipestatus[:0:0], sh.status)
		sh.afterOwn(c)
		return
	case nil:
		// redirections alone: performed in a subshell-like scope
		sh.countCommand()
		restore, ok := sh.redirect(st.Redirs, false)
		if ok {
			restore()
			sh.status = 0
		} else {
			sh.status = 1
		}
		return
	}
	restore, ok := sh.redirect(st.Redirs, false)
	if !ok {
		sh.status = 1
		if _, sub := st.Cmd.(*syntax.Subshell); sub {
			sh.afterSimple()
		} else if sh.opts.errexit && sh.noErrexit == 0 {
			// a failed redirection of a compound command trips errexit
			// (bash 5.2), without the ERR trap
			sh.flow = flowExit
		}
		return
	}
	moved := slices.Clone(sh.movedFDs)
	stdinRedir := redirectsStdin(st.Redirs)
	if stdinRedir {
		sh.stdinRedir++
	}
	defer func() {
		if stdinRedir {
			sh.stdinRedir--
		}
		restore()
		if _, sub := st.Cmd.(*syntax.Subshell); !sub {
			sh.closeMoved(moved) // (a subshell's are its own)
		}
	}()
	switch c := st.Cmd.(type) {
	case *syntax.Block:
		sh.stmts(c.Stmts)
	case *syntax.Subshell:
		sh.status = sh.subshell(c.Stmts)
		sh.pipestatus = []int{sh.status}
		sh.afterOwn(c)
	case *syntax.BinaryCmd:
		sh.binary(c)
	case *syntax.IfClause:
		sh.ifClause(c)
	case *syntax.WhileClause:
		sh.whileClause(c)
	case *syntax.ForClause:
		sh.forClause(c)
	case *syntax.CaseClause:
		sh.caseClause(c)
	case *syntax.FuncDecl:
		sh.funcDecl(c)
	case *syntax.ArithmCmd:
		if !sh.debugTrap("((" + sh.arithTextOf(c.X) + "))") {
			return
		}
		sh.xtrace("((" + sh.arithTextOf(c.X) + "))")
		n, err := sh.arithExpr(c.X)
		if err != nil {
			sh.errorf("((: %s", err.Error())
			sh.status = 1
		} else {
			sh.status = b2status(n == 0)
		}
		sh.pipestatus = []int{sh.status}
		sh.afterSimple()
	case *syntax.TestClause:
		if !sh.debugTrap("[[ ... ]]") {
			return
		}
		sh.status = sh.testClause(c)
		sh.pipestatus = []int{sh.status}
		sh.afterSimple()
	case *syntax.DeclClause:
		sh.status = sh.declClause(c)
		sh.pipestatus = []int{sh.status}
		sh.afterOwn(c)
	case *syntax.LetClause:
		sh.countCommand()
		sh.status = sh.letClause(c)
		sh.afterOwn(c)
	case *syntax.TimeClause:
		sh.timeClause(c)
	case *syntax.CoprocClause:
		sh.errorf("coproc: coprocesses are not supported in the sandbox")
		sh.status = 2
	case *syntax.TestDecl:
		sh.errorf("@test: not supported")
		sh.status = 2
	default:
		sh.errorf("unsupported command %T", c)
		sh.status = 2
	}
}

// trapKeepsLine reports whether $LINENO stays the line of the command a
// trap interrupted: in DEBUG, ERR and RETURN traps. The handlers of EXIT
// and of signals count their own lines, from 1.
func (sh *shell) trapKeepsLine() bool {
	switch sh.inTrap {
	case "DEBUG", "ERR", "RETURN":
		return true
	}
	return false
}

// setLine sets $LINENO to a position's line (not inside a DEBUG, ERR or
// RETURN trap, which keeps the line of the command it interrupted).
func (sh *shell) setLine(p syntax.Pos) {
	if ln := int(p.Line()); ln > 0 && !sh.trapKeepsLine() {
		sh.line = ln
	}
}

// arithTextOf is the text of an expression, for xtrace.
func (sh *shell) arithTextOf(x syntax.ArithmExpr) string {
	var b strings.Builder
	syntax.NewPrinter().Print(&b, x)
	return b.String()
}

// afterSimple applies set -e and the ERR trap after a command that can
// fail on its own (a simple command, a subshell, a pipeline, [[ ]],
// (( ))): compound commands fail only through their parts.
func (sh *shell) afterSimple() {
	if sh.status == 0 || sh.flow != flowNone {
		return
	}
	sh.failed()
}

// afterOwn is afterSimple for command c, unless c is the command of a
// background job bash does not wait for (see background).
func (sh *shell) afterOwn(c syntax.Command) {
	if c == sh.asyncCmd {
		return
	}
	if sh.status == 0 || sh.flow != flowNone {
		return
	}
	sh.failed()
}

// failed reacts to a failed command: the ERR trap, then errexit, unless
// in a condition.
func (sh *shell) failed() {
	if sh.noErrexit > 0 {
		return
	}
	if t, ok := sh.traps["ERR"]; ok && t != "" && !sh.errTrapping && (sh.funcDepth == 0 || sh.opts.errtrace) {
		status := sh.status
		sh.errTrapping = true
		sh.runTrap(t, "ERR")
		sh.errTrapping = false
		if sh.flow == flowNone {
			sh.status = status
		}
	}
	if sh.opts.errexit && sh.flow == flowNone {
		sh.flow = flowExit
	}
}

// countCommand counts a command against the limit.
func (sh *shell) countCommand() {
	if max := sh.r.lim.MaxCommands; max > 0 && sh.r.commands.Add(1) > max {
		sh.r.limit("maximum command count exceeded (%d)", max)
	}
}

// binary runs &&, || and pipelines.
func (sh *shell) binary(c *syntax.BinaryCmd) {
	switch c.Op {
	case syntax.AndStmt, syntax.OrStmt:
		sh.noErrexit++
		sh.condDepth++
		sh.stmt(c.X)
		sh.noErrexit--
		sh.condDepth--
		if sh.flow != flowNone {
			return
		}
		if (sh.status == 0) == (c.Op == syntax.AndStmt) {
			sh.stmt(c.Y)
		}
	case syntax.Pipe, syntax.PipeAll:
		sh.pipeline(c)
	}
}

// ifClause runs if/elif/else.
func (sh *shell) ifClause(c *syntax.IfClause) {
	for c != nil {
		if len(c.Cond) == 0 && c.ThenPos == (syntax.Pos{}) {
			// else
			sh.stmts(c.Then)
			return
		}
		sh.noErrexit++
		sh.condDepth++
		sh.stmts(c.Cond)
		sh.noErrexit--
		sh.condDepth--
		if sh.flow != flowNone {
			return
		}
		if sh.status == 0 {
			sh.stmts(c.Then)
			return
		}
		c = c.Else
	}
	sh.status = 0
}

// loopTick counts an iteration of a loop against the limits.
func (sh *shell) loopTick(n *int64) {
	sh.check()
	*n++
	if max := sh.r.lim.MaxLoopIterations; max > 0 && *n > max {
		sh.r.limit("maximum loop iterations exceeded (%d)", max)
	}
	if max := sh.r.lim.MaxTotalLoopIterations; max > 0 && sh.r.iterations.Add(1) > max {
		sh.r.limit("maximum total loop iterations exceeded (%d)", max)
	}
}

// loopFlow handles break and continue at the end of an iteration: it
// reports whether the loop stops.
func (sh *shell) loopFlow() (stop bool) {
	switch sh.flow {
	case flowBreak:
		sh.flowN--
		if sh.flowN <= 0 {
			sh.flow = flowNone
		}
		return true
	case flowContinue:
		sh.flowN--
		if sh.flowN <= 0 {
			sh.flow = flowNone
			return false
		}
		return true
	case flowNone:
		return false
	}
	return true
}

func (sh *shell) whileClause(c *syntax.WhileClause) {
	sh.loopDepth++
	defer func() { sh.loopDepth-- }()
	var iters int64
	status := 0
	for {
		sh.loopTick(&iters)
		sh.noErrexit++
		sh.condDepth++
		sh.stmts(c.Cond)
		sh.noErrexit--
		sh.condDepth--
		if sh.flow != flowNone {
			if sh.loopFlow() {
				break
			}
			continue
		}
		if (sh.status == 0) == c.Until {
			break
		}
		sh.stmts(c.Do)
		status = sh.status
		if sh.loopFlow() {
			status = sh.status
			break
		}
	}
	sh.status = status
}

func (sh *shell) forClause(c *syntax.ForClause) {
	sh.loopDepth++
	defer func() { sh.loopDepth-- }()
	var iters int64
	switch loop := c.Loop.(type) {
	case *syntax.WordIter:
		var items []string
		if loop.InPos.IsValid() {
			items = sh.expandFields(loop.Items)
		} else {
			items = append([]string(nil), sh.positional()...)
		}
		name := loop.Name.Value
		if !validName(name) {
			// bash reports it at the loop's end, and in POSIX mode
			// it ends the shell
			if c.DonePos.IsValid() {
				sh.line = int(c.DonePos.Line())
			}
			sh.errorf("`%s': not a valid identifier", name)
			sh.status = 1
			if sh.opts.posix {
				panic(fatalPanic{status: 2, exit: true})
			}
			return
		}
		if c.Select {
			sh.selectLoop(name, items, c.Do)
			return
		}
		sh.status = 0
		for _, it := range items {
			sh.loopTick(&iters)
			sh.setLine(c.Pos())
			if !sh.debugTrap("for " + name) {
				return
			}
			if sh.opts.xtrace {
				parts := make([]string, len(items))
				for i, x := range items {
					parts[i] = xtraceQuote(x)
				}
				sh.xtraceLine("for " + name + " in " + strings.Join(parts, " "))
			}
			if err := sh.setString(name, it, false); err != nil {
				sh.fatal(err)
			}
			sh.stmts(c.Do)
			if sh.loopFlow() {
				break
			}
		}
	case *syntax.CStyleLoop:
		sh.setLine(c.Pos())
		if !sh.debugTrap("for ((") {
			return
		}
		if loop.Init != nil {
			sh.arith(loop.Init)
		}
		status := 0
		for {
			sh.loopTick(&iters)
			sh.setLine(c.Pos())
			if !sh.debugTrap("for ((") {
				return
			}
			if loop.Cond != nil {
				if sh.arith(loop.Cond) == 0 {
					break
				}
			}
			sh.stmts(c.Do)
			status = sh.status
			if sh.loopFlow() {
				status = sh.status
				break
			}
			if loop.Post != nil {
				sh.setLine(c.Pos())
				if !sh.debugTrap("for ((") {
					return
				}
				sh.arith(loop.Post)
			}
		}
		sh.status = status
	}
}

// selectLoop runs select: the menu on stderr, the choice from stdin.
func (sh *shell) selectLoop(name string, items []string, body []*syntax.Stmt) {
	var iters int64
	for {
		sh.loopTick(&iters)
		for i, it := range items {
			sh.writeErr(fmt.Sprintf("%d) %s\n", i+1, it))
		}
		ps3, ok := sh.varValue("PS3")
		if !ok {
			ps3 = "#? "
		}
		sh.writeErr(ps3)
		line, err := sh.readLineFrom(0, '\n')
		if err != nil && line == "" {
			sh.status = 1
			return
		}
		line = strings.TrimSuffix(line, "\n")
		sh.setString("REPLY", line, false)
		n, convErr := strconv.Atoi(strings.TrimSpace(line))
		choice := ""
		if convErr == nil && n >= 1 && n <= len(items) {
			choice = items[n-1]
		}
		if line == "" {
			continue
		}
		sh.setString(name, choice, false)
		sh.stmts(body)
		if sh.loopFlow() {
			return
		}
	}
}

func (sh *shell) caseClause(c *syntax.CaseClause) {
	sh.countCommand()
	if !sh.debugTrap("case") {
		return
	}
	word := sh.expandString(c.Word)
	sh.status = 0
	for i := 0; i < len(c.Items); i++ {
		item := c.Items[i]
		matched := false
		for _, pw := range item.Patterns {
			pat := sh.expandPattern(pw)
			if sh.matchPattern(pat, word) {
				matched = true
				break
			}
		}
		if !matched {
			continue
		}
		for {
			sh.stmts(item.Stmts)
			if sh.flow != flowNone {
				return
			}
			switch item.Op {
			case syntax.Fallthrough: // ;& runs the next body
				i++
				if i >= len(c.Items) {
					return
				}
				item = c.Items[i]
				continue
			case syntax.Resume, syntax.ResumeKorn: // ;;& tests the next patterns
			default:
				return
			}
			break
		}
	}
}

// funcDecl defines a function.
func (sh *shell) funcDecl(c *syntax.FuncDecl) {
	name := ""
	if c.Name != nil {
		name = c.Name.Value
	}
	if name == "" || strings.ContainsAny(name, "$`\"'") {
		sh.errorf("`%s': not a valid identifier", name)
		sh.status = 1
		return
	}
	if inner, ok := c.Body.Cmd.(*syntax.FuncDecl); ok && inner.Name != nil {
		// f() g() { ...; }: bash's parser wants a compound command
		sh.errorf("syntax error near unexpected token `%s'", inner.Name.Value)
		sh.status = 2
		sh.syntaxError = true
		panic(fatalPanic{status: 2, exit: true})
	}
	if sh.opts.posix && specialBuiltins[name] {
		sh.errorf("`%s': is a special builtin", name)
		sh.status = 2
		panic(fatalPanic{status: 2, exit: true})
	}
	if fn, ok := sh.funcs.m[name]; ok && fn.readonly() {
		sh.errorf("%s: readonly function", name)
		sh.status = 1
		return
	}
	file := ""
	if sh.src != nil {
		file = sh.src.name
	}
	sh.funcsWritable()[name] = &funcDef{name: name, body: c.Body, src: sh.src, line: int(c.Pos().Line()), file: file}
	sh.status = 0
}

func (fn *funcDef) readonly() bool { return fn.ro }

// subshell runs statements in a subshell: ( ... ).
func (sh *shell) subshell(stmts []*syntax.Stmt) int {
	sub := sh.fork()
	status := sub.runSubshell(func() { sub.stmts(stmts) })
	sub.release()
	return status
}

// runSubshell runs f as the body of a subshell (sh is the subshell): an
// error that ends a command ends the subshell, and the subshell's EXIT
// trap runs. It returns the subshell's exit status.
func (sh *shell) runSubshell(f func()) (status int) {
	func() {
		defer func() {
			if p := recover(); p != nil {
				switch p := p.(type) {
				case fatalPanic:
					sh.status = p.status
				case pipePanic:
					sh.status = 141
				default:
					panic(p)
				}
			}
		}()
		f()
	}()
	func() {
		defer func() {
			if p := recover(); p != nil {
				switch p := p.(type) {
				case fatalPanic:
					sh.status = p.status
				case pipePanic:
					sh.status = 141
				default:
					panic(p)
				}
			}
		}()
		status = sh.exit()
	}()
	sh.flow = flowNone
	return status
}

// background runs cmd &: the sandbox runs one thing at a time, so the job
// runs to completion now, in a subshell; $! is its id and wait returns
// its status.
func (sh *shell) background(st *syntax.Stmt) {
	if st.Coprocess {
		sh.errorf("coproc: coprocesses are not supported in the sandbox")
		sh.status = 2
		return
	}
	sub := sh.fork()
	sub.bgSlept = new(atomic.Int64)
	// a background job's stdin is /dev/null unless redirected, by it or
	// by a compound command it is in (for ...; done <<EOF), as bash's
	if sh.stdinRedir == 0 {
		sub.fds.set(0, newOFile(eofReader{}, nil, nil, "/dev/null"))
	}
	cp := *st
	cp.Background, cp.Disown = false, false
	// bash forks a simple command, a subshell or a pipeline and does not
	// wait for it: its own failure runs no ERR trap (what runs inside a
	// function, a subshell or a group still does)
	sub.asyncCmd = cp.Cmd
	start := sh.now()
	status := sub.runSubshell(func() { sub.stmt(&cp) })
	took := sh.now().Sub(start)
	sub.release()
	sh.lastBg = sub.pid
	// as if it ran beside what follows: it started when the script got
	// here, less the time earlier jobs took
	vstart := start.Add(-sh.bgTime)
	sh.bgTime += took
	sh.addJob(sub.pid, status, sh.jobText(&cp))
	// its sleeps took no time here: it ends that much later
	sh.jobs[len(sh.jobs)-1].end = vstart.Add(took).Add(time.Duration(sub.bgSlept.Load()))
	sh.status = 0
}

// joinDollarContinuations reads "$\<newline>?" as bash does, as "$?":
// bash removes a backslash-newline before it reads a word, mvdan after,
// leaving "$" and "?" as two literal parts.
func joinDollarContinuations(stmts []*syntax.Stmt) {
	fix := func(parts []syntax.WordPart) []syntax.WordPart {
		for i := 0; i+1 < len(parts); i++ {
			l, ok := parts[i].(*syntax.Lit)
			next, ok2 := parts[i+1].(*syntax.Lit)
			if !ok || !ok2 || !strings.HasSuffix(l.Value, "$") || l.End() != next.Pos() ||
				next.Pos().Line() == l.Pos().Line() || next.Value == "" {
				continue
			}
			if n := len(l.Value) - 1 - len(strings.TrimRight(l.Value[:len(l.Value)-1], "\\")); n%2 == 1 {
				continue // \$ is a literal $
			}
			name := next.Value[:1]
			if c := name[0]; c != '_' && !isAlnum(c) && strings.IndexByte("?$#!@*-", c) < 0 {
				continue
			}
			if c := name[0]; c == '_' || isAlnum(c) && (c < '0' || c > '9') {
				k := 1
				for k < len(next.Value) && (isAlnum(next.Value[k]) || next.Value[k] == '_') {
					k++
				}
				name = next.Value[:k]
			}
			pe := &syntax.ParamExp{Dollar: l.End(), Short: true, Param: &syntax.Lit{ValuePos: next.Pos(), ValueEnd: next.Pos(), Value: name}}
			var repl []syntax.WordPart
			if len(l.Value) > 1 {
				repl = append(repl, &syntax.Lit{ValuePos: l.ValuePos, ValueEnd: l.ValueEnd, Value: l.Value[:len(l.Value)-1]})
			}
			repl = append(repl, pe)
			if rest := next.Value[len(name):]; rest != "" {
				repl = append(repl, &syntax.Lit{ValuePos: next.ValuePos, ValueEnd: next.ValueEnd, Value: rest})
			}
			parts = append(parts[:i], append(repl, parts[i+2:]...)...)
		}
		return parts
	}
	for _, st := range stmts {
		syntax.Walk(st, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.Word:
				n.Parts = fix(n.Parts)
			case *syntax.DblQuoted:
				n.Parts = fix(n.Parts)
			}
			return true
		})
	}
}

// splitFuncBodies reads "f() { ...; } | cmd" as bash does: the function's
// body is the compound command alone, and the definition is a stage of
// the pipeline (or list); mvdan takes the whole pipeline as the body.
func splitFuncBodies(stmts []*syntax.Stmt) {
	for _, st := range stmts {
		syntax.Walk(st, func(n syntax.Node) bool {
			s, ok := n.(*syntax.Stmt)
			if !ok {
				return true
			}
			fd, ok := s.Cmd.(*syntax.FuncDecl)
			if !ok || fd.Body == nil || fd.Body.Negated || len(fd.Body.Redirs) > 0 {
				return true
			}
			bin, ok := fd.Body.Cmd.(*syntax.BinaryCmd)
			if !ok {
				return true
			}
			// the leftmost command of the list is the body
			leaf := &bin.X
			for {
				b, ok := (*leaf).Cmd.(*syntax.BinaryCmd)
				if !ok || (*leaf).Negated || len((*leaf).Redirs) > 0 {
					break
				}
				leaf = &b.X
			}
			body := *leaf
			def := &syntax.Stmt{Position: s.Position, Cmd: &syntax.FuncDecl{Position: fd.Position, RsrvWord: fd.RsrvWord,
				Parens: fd.Parens, Name: fd.Name, Names: fd.Names, Body: body}}
			*leaf = def
			s.Cmd = bin
			return true
		})
	}
}

// inCommandSubst reports whether off is inside a "$(" of text that is not
// closed before it.
func inCommandSubst(text string, off int) bool {
	for start := min(off, len(text)); ; {
		i := strings.LastIndex(text[:start], "$(")
		if i < 0 {
			return false
		}
		if strings.HasPrefix(text[i:], "$((") {
			start = i
			continue
		}
		if groupEnd(text, i+1) > off {
			return true
		}
		start = i
	}
}

// rawByteBase is where escapeRawBytes puts the bytes mvdan's lexer does
// not keep in a word: a byte b is the rune rawByteBase+b (in the last
// private-use plane, which scripts do not hold).
const rawByteBase = 0x10FF00

// escapeRawBytes prepares text for mvdan's parser, which refuses bytes
// that are not UTF-8 and reads a carriage return as a blank: bash keeps
// both in words (echo $'\xce' 'μ' with the first byte cut; a script with
// CRLF line ends runs "echo\r", not found). Each such byte becomes a rune
// of rawByteBase, which unescapeRawBytes turns back into the byte in the
// parsed text; ok is false (and text unchanged) when there is none.
func escapeRawBytes(text string) (string, bool) {
	if utf8.ValidString(text) && !strings.Contains(text, "\r") {
		return text, false
	}
	var b strings.Builder
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		if r == '\r' || r == utf8.RuneError && size == 1 {
			b.WriteRune(rawByteBase + rune(text[i]))
		} else {
			b.WriteString(text[i : i+size])
		}
		i += size
	}
	return b.String(), true
}

// unescapeRawBytes turns escapeRawBytes's runes back into their bytes in
// the literal text of stmts.
func unescapeRawBytes(stmts []*syntax.Stmt) {
	for _, st := range stmts {
		syntax.Walk(st, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.Lit:
				n.Value = unescapeRaw(n.Value)
			case *syntax.SglQuoted:
				n.Value = unescapeRaw(n.Value)
			}
			return true
		})
	}
}

// unescapeRaw turns escapeRawBytes's runes in s back into their bytes.
func unescapeRaw(s string) string {
	if !strings.ContainsFunc(s, isRawByteRune) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isRawByteRune(r) {
			b.WriteByte(byte(r - rawByteBase))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isRawByteRune(r rune) bool { return r >= rawByteBase && r <= rawByteBase+0xFF }
