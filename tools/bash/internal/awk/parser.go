package awk

import (
	"fmt"
	"slices"
)

// Program is a parsed awk program. It is immutable: one Program may run
// many times, concurrently.
type Program struct {
	begins  []*blockStmt
	items   []*item
	ends    []*blockStmt
	funcs   []*function
	globals []string // names by index; the specials come first
	src     string
}

// The special variables, at fixed global indexes.
const (
	idxNR = iota
	idxNF
	idxFNR
	idxFS
	idxOFS
	idxORS
	idxRS
	idxFILENAME
	idxSUBSEP
	idxRSTART
	idxRLENGTH
	idxCONVFMT
	idxOFMT
	idxENVIRON
	idxARGC
	idxARGV
	numSpecials
)

var specialNames = []string{"NR", "NF", "FNR", "FS", "OFS", "ORS", "RS", "FILENAME", "SUBSEP",
	"RSTART", "RLENGTH", "CONVFMT", "OFMT", "ENVIRON", "ARGC", "ARGV"}

// maxNesting bounds how deeply expressions and statements nest, so that
// the recursive parser never exhausts the stack on hostile input.
const maxNesting = 500

type parser struct {
	toks    []token
	i       int
	tok     token
	globals map[string]int
	prog    *Program
	funcIdx map[string]int
	locals  map[string]int // the current function's parameters, or nil
	fn      *function
	loops   int
	depth   int
	// noGreater is set while parsing an unparenthesized print list, where
	// '>' redirects; noIn while parsing the variable of for (v in a).
	noGreater bool
	noIn      bool
	called    []token // user function calls, checked at the end
}

// Compile parses an awk program.
func Compile(src string) (*Program, error) {
	lx := newLexer(src)
	var toks []token
	for {
		t, err := lx.next()
		if err != nil {
			return nil, err
		}
		toks = append(toks, t)
		if t.kind == tEOF {
			break
		}
	}
	p := &parser{toks: toks, globals: map[string]int{}, funcIdx: map[string]int{}, prog: &Program{src: src}}
	for i, n := range specialNames {
		p.globals[n] = i
		p.prog.globals = append(p.prog.globals, n)
	}
	p.tok = toks[0]
	if err := p.program(); err != nil {
		return nil, err
	}
	return p.prog, nil
}

// perr is a parse error, carried by panic inside the parser and returned
// by Compile.
type perr struct{ err *SyntaxError }

func (p *parser) errf(format string, args ...any) {
	panic(perr{&SyntaxError{Line: p.tok.line, Col: p.tok.col, Msg: fmt.Sprintf(format, args...)}})
}

func (p *parser) program() (err error) {
	defer func() {
		if r := recover(); r != nil {
			pe, ok := r.(perr)
			if !ok {
				panic(r)
			}
			err = pe.err
		}
	}()
	p.optNewlines()
	for p.tok.kind != tEOF {
		p.itemDecl()
		p.terminators()
	}
	for _, c := range p.called {
		idx := p.funcIdx[c.str]
		if !p.prog.funcs[idx].defined {
			return &SyntaxError{Line: c.line, Col: c.col, Msg: fmt.Sprintf("function %s is called but never defined", c.str)}
		}
	}
	return nil
}

func (p *parser) advance() {
	if p.i < len(p.toks)-1 {
		p.i++
	}
	p.tok = p.toks[p.i]
}

func (p *parser) peek(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) expect(k tokKind) token {
	if p.tok.kind != k {
		p.unexpected(k.String())
	}
	t := p.tok
	p.advance()
	return t
}

func (p *parser) unexpected(want string) {
	got := p.tok.kind.String()
	switch p.tok.kind {
	case tName, tFuncName, tBuiltin:
		got = "name " + p.tok.str
	case tString:
		got = fmt.Sprintf("string %q", p.tok.str)
	case tNumber:
		got = fmt.Sprintf("number %v", p.tok.num)
	}
	if want == "" {
		p.errf("unexpected %s", got)
	}
	p.errf("unexpected %s; expected %s", got, want)
}

func (p *parser) optNewlines() {
	for p.tok.kind == tNewline {
		p.advance()
	}
}

// terminators skips the newlines and semicolons between items and
// statements.
func (p *parser) terminators() {
	for p.tok.kind == tNewline || p.tok.kind == tSemicolon {
		p.advance()
	}
}

func (p *parser) nest() {
	p.depth++
	if p.depth > maxNesting {
		p.errf("program nests too deeply (more than %d levels)", maxNesting)
	}
}

func (p *parser) unnest() { p.depth-- }

func (p *parser) itemDecl() {
	switch p.tok.kind {
	case tBegin:
		p.advance()
		p.optNewlines()
		if p.tok.kind != tLBrace {
			p.errf("BEGIN needs an action in braces")
		}
		p.prog.begins = append(p.prog.begins, p.block())
	case tEnd:
		p.advance()
		p.optNewlines()
		if p.tok.kind != tLBrace {
			p.errf("END needs an action in braces")
		}
		p.prog.ends = append(p.prog.ends, p.block())
	case tFunction:
		p.funcDecl()
	case tLBrace:
		p.prog.items = append(p.prog.items, &item{body: p.block()})
	default:
		it := &item{pattern: p.expr()}
		if p.tok.kind == tComma {
			p.advance()
			p.optNewlines()
			it.pattern2 = p.expr()
		}
		if p.tok.kind == tLBrace {
			it.body = p.block()
		}
		p.prog.items = append(p.prog.items, it)
	}
}

// function returns the index of the function called name, declaring it.
func (p *parser) function(name string) int {
	if idx, ok := p.funcIdx[name]; ok {
		return idx
	}
	idx := len(p.prog.funcs)
	p.funcIdx[name] = idx
	p.prog.funcs = append(p.prog.funcs, &function{name: name})
	return idx
}

func (p *parser) funcDecl() {
	p.advance()
	if p.tok.kind != tName && p.tok.kind != tFuncName {
		p.unexpected("a function name")
	}
	name := p.tok.str
	line := p.tok.line
	if _, special := p.globals[name]; special && slices.Contains(specialNames, name) {
		p.errf("function name %s is a special variable", name)
	}
	if p.fn != nil {
		p.errf("function %s defined inside another function", name)
	}
	p.advance()
	idx := p.function(name)
	fn := p.prog.funcs[idx]
	if fn.defined {
		p.errf("function %s defined twice", name)
	}
	fn.defined, fn.line = true, line
	p.expect(tLParen)
	p.locals = map[string]int{}
	for p.tok.kind != tRParen {
		if p.tok.kind != tName {
			p.unexpected("a parameter name")
		}
		pn := p.tok.str
		if _, dup := p.locals[pn]; dup {
			p.errf("function %s has parameter %s twice", name, pn)
		}
		if pn == name {
			p.errf("function %s has a parameter of its own name", name)
		}
		if slices.Contains(specialNames, pn) {
			p.errf("function %s: parameter %s is a special variable", name, pn)
		}
		p.locals[pn] = len(fn.params)
		fn.params = append(fn.params, pn)
		p.advance()
		if p.tok.kind == tComma {
			p.advance()
			p.optNewlines()
		} else if p.tok.kind != tRParen {
			p.unexpected(", or )")
		}
	}
	p.advance()
	fn.nlocals = len(fn.params)
	p.fn = fn
	p.optNewlines()
	fn.body = p.block()
	p.fn, p.locals = nil, nil
}

func (p *parser) block() *blockStmt {
	p.nest()
	defer p.unnest()
	p.expect(tLBrace)
	b := &blockStmt{}
	for {
		p.terminators()
		if p.tok.kind == tRBrace {
			p.advance()
			return b
		}
		if p.tok.kind == tEOF {
			p.errf("missing } at the end of the program")
		}
		b.stmts = append(b.stmts, p.stmt())
	}
}

// endSimple checks that a simple statement ends properly.
func (p *parser) endSimple() {
	switch p.tok.kind {
	case tSemicolon, tNewline:
		p.advance()
	case tRBrace, tEOF:
	default:
		p.unexpected("; or a newline")
	}
}

// body parses the statement of if, while and for.
func (p *parser) body() stmt {
	p.optNewlines()
	if p.tok.kind == tSemicolon {
		p.advance()
		return &blockStmt{}
	}
	return p.stmt()
}

func (p *parser) stmt() stmt {
	p.nest()
	defer p.unnest()
	switch p.tok.kind {
	case tLBrace:
		return p.block()
	case tIf:
		p.advance()
		p.expect(tLParen)
		cond := p.expr()
		p.expect(tRParen)
		s := &ifStmt{cond: cond, then: p.body()}
		// An else may follow newlines and a semicolon.
		save := p.i
		p.terminators()
		if p.tok.kind == tElse {
			p.advance()
			s.el = p.body()
		} else {
			p.i = save
			p.tok = p.toks[p.i]
		}
		return s
	case tWhile:
		p.advance()
		p.expect(tLParen)
		cond := p.expr()
		p.expect(tRParen)
		if p.tok.kind == tSemicolon {
			p.advance()
			return &whileStmt{cond: cond, body: &blockStmt{}}
		}
		p.loops++
		b := p.body()
		p.loops--
		return &whileStmt{cond: cond, body: b}
	case tDo:
		p.advance()
		p.loops++
		b := p.body()
		p.loops--
		p.terminators()
		p.expect(tWhile)
		p.expect(tLParen)
		cond := p.expr()
		p.expect(tRParen)
		p.endSimple()
		return &doStmt{body: b, cond: cond}
	case tFor:
		return p.forStmt()
	case tSemicolon:
		p.advance()
		return &blockStmt{}
	}
	s := p.simpleStmt()
	p.endSimple()
	return s
}

func (p *parser) forStmt() stmt {
	p.advance()
	p.expect(tLParen)
	// for (name in array) or for ((name) in array)
	if p.tok.kind == tName && p.peek(1).kind == tIn && (p.peek(2).kind == tName) && p.peek(3).kind == tRParen {
		v := p.variable(p.tok.str)
		p.advance()
		p.advance()
		arr := p.arrayRef()
		p.expect(tRParen)
		p.loops++
		b := p.body()
		p.loops--
		return &forInStmt{v: v, arr: arr, body: b}
	}
	s := &forStmt{}
	if p.tok.kind != tSemicolon {
		s.init = p.simpleStmt()
	}
	p.expect(tSemicolon)
	p.optNewlines()
	if p.tok.kind != tSemicolon {
		s.cond = p.expr()
	}
	p.expect(tSemicolon)
	p.optNewlines()
	if p.tok.kind != tRParen {
		s.post = p.simpleStmt()
	}
	p.expect(tRParen)
	if p.tok.kind == tSemicolon {
		p.advance()
		s.body = &blockStmt{}
		return s
	}
	p.loops++
	s.body = p.body()
	p.loops--
	return s
}

func (p *parser) simpleStmt() stmt {
	switch p.tok.kind {
	case tPrint, tPrintf:
		return p.printStmt()
	case tNext:
		p.advance()
		return &nextStmt{}
	case tNextfile:
		p.advance()
		return &nextfileStmt{}
	case tExit:
		p.advance()
		s := &exitStmt{}
		if p.startsExpr() {
			s.x = p.expr()
		}
		return s
	case tReturn:
		if p.fn == nil {
			p.errf("return outside a function")
		}
		p.advance()
		s := &returnStmt{}
		if p.startsExpr() {
			s.x = p.expr()
		}
		return s
	case tBreak:
		if p.loops == 0 {
			p.errf("break outside a loop")
		}
		p.advance()
		return &breakStmt{}
	case tContinue:
		if p.loops == 0 {
			p.errf("continue outside a loop")
		}
		p.advance()
		return &continueStmt{}
	case tDelete:
		p.advance()
		arr := p.arrayRef()
		s := &deleteStmt{arr: arr}
		if p.tok.kind == tLBracket {
			p.advance()
			s.keys = p.exprList(tRBracket)
			p.expect(tRBracket)
		}
		return s
	}
	return &exprStmt{x: p.expr()}
}

// startsExpr reports whether the current token can start an expression.
func (p *parser) startsExpr() bool {
	switch p.tok.kind {
	case tNumber, tString, tRegex, tName, tFuncName, tBuiltin, tDollar, tNot, tLParen, tMinus, tPlus,
		tIncr, tDecr, tGetline:
		return true
	}
	return false
}

func (p *parser) printStmt() stmt {
	s := &printStmt{printf: p.tok.kind == tPrintf}
	p.advance()
	old := p.noGreater
	p.noGreater = true
	if p.startsExpr() {
		s.args = p.exprList(0)
	}
	p.noGreater = old
	if len(s.args) == 1 {
		if l, ok := s.args[0].(*listExpr); ok {
			s.args = l.items
		}
	}
	for _, a := range s.args {
		if _, ok := a.(*listExpr); ok {
			p.errf("a parenthesized list is only allowed as the whole argument list of print, or before in")
		}
	}
	if s.printf && len(s.args) == 0 {
		p.errf("printf needs a format")
	}
	switch p.tok.kind {
	case tGreater, tAppend, tPipe:
		s.redir = p.tok.kind
		p.advance()
		p.noGreater = true
		s.dest = p.concat()
		p.noGreater = old
	case tPipeAll:
		p.errf("|& (coprocesses) is not supported")
	}
	return s
}

// exprList parses expressions separated by commas (newlines allowed after
// a comma).
func (p *parser) exprList(end tokKind) []expr {
	var out []expr
	if p.tok.kind == end && end != 0 {
		return nil
	}
	for {
		out = append(out, p.expr())
		if p.tok.kind != tComma {
			return out
		}
		p.advance()
		p.optNewlines()
	}
}

// variable resolves a name to a local or global variable.
func (p *parser) variable(name string) *varExpr {
	if p.locals != nil {
		if i, ok := p.locals[name]; ok {
			return &varExpr{scope: 1, idx: i, name: name}
		}
	}
	if _, isFunc := p.funcIdx[name]; isFunc && p.prog.funcs[p.funcIdx[name]].defined {
		p.errf("function %s used as a variable", name)
	}
	i, ok := p.globals[name]
	if !ok {
		i = len(p.prog.globals)
		p.globals[name] = i
		p.prog.globals = append(p.prog.globals, name)
	}
	return &varExpr{scope: 0, idx: i, name: name}
}

func (p *parser) arrayRef() *varExpr {
	if p.tok.kind != tName {
		p.unexpected("an array name")
	}
	v := p.variable(p.tok.str)
	p.advance()
	return v
}

func isLvalue(e expr) bool {
	switch e.(type) {
	case *varExpr, *fieldExpr, *indexExpr:
		return true
	}
	return false
}

func (p *parser) expr() expr {
	p.nest()
	defer p.unnest()
	lhs := p.ternary()
	switch p.tok.kind {
	case tAssign, tAddAssign, tSubAssign, tMulAssign, tDivAssign, tModAssign, tPowAssign:
		if !isLvalue(lhs) {
			if g, ok := lhs.(*groupExpr); ok && isLvalue(g.x) {
				lhs = g.x
			} else {
				p.errf("cannot assign to this expression")
			}
		}
		op := p.tok.kind
		p.advance()
		p.optNewlines()
		return &assignExpr{lhs: lhs, op: op, rhs: p.expr()}
	}
	return lhs
}

func (p *parser) ternary() expr {
	cond := p.or()
	if p.tok.kind != tQuestion {
		return cond
	}
	p.advance()
	p.optNewlines()
	yes := p.expr()
	p.optNewlines()
	p.expect(tColon)
	p.optNewlines()
	no := p.expr()
	return &condExpr{cond: cond, yes: yes, no: no}
}

func (p *parser) or() expr {
	l := p.and()
	for p.tok.kind == tOr {
		p.advance()
		p.optNewlines()
		l = &binaryExpr{op: tOr, l: l, r: p.and()}
	}
	return l
}

func (p *parser) and() expr {
	l := p.in()
	for p.tok.kind == tAnd {
		p.advance()
		p.optNewlines()
		l = &binaryExpr{op: tAnd, l: l, r: p.in()}
	}
	return l
}

func (p *parser) in() expr {
	l := p.match()
	for p.tok.kind == tIn && !p.noIn {
		p.advance()
		keys := []expr{l}
		if le, ok := l.(*listExpr); ok {
			keys = le.items
		}
		l = &inExpr{keys: keys, arr: p.arrayRef()}
	}
	return l
}

func (p *parser) match() expr {
	l := p.compare()
	for p.tok.kind == tTilde || p.tok.kind == tNoMatch {
		neg := p.tok.kind == tNoMatch
		p.advance()
		l = &matchExpr{x: l, re: p.compare(), neg: neg}
	}
	return l
}

func (p *parser) compare() expr {
	l := p.pipeGetline()
	switch p.tok.kind {
	case tLess, tLessEqual, tNotEqual, tEqual, tGreaterEqual:
	case tGreater:
		if p.noGreater {
			return l
		}
	default:
		return l
	}
	op := p.tok.kind
	p.advance()
	return &binaryExpr{op: op, l: l, r: p.pipeGetline()}
}

// pipeGetline parses cmd | getline [var], which binds looser than
// concatenation.
func (p *parser) pipeGetline() expr {
	l := p.concat()
	for p.tok.kind == tPipe && p.peek(1).kind == tGetline {
		p.advance()
		p.advance()
		g := &getlineExpr{from: getCmd, src: l}
		if p.startsLvalue() {
			g.lhs = p.lvalue()
		}
		l = g
	}
	return l
}

// startsConcat reports whether the current token can start the right
// operand of a concatenation.
func (p *parser) startsConcat() bool {
	switch p.tok.kind {
	case tNumber, tString, tRegex, tName, tFuncName, tBuiltin, tDollar, tNot, tLParen, tIncr, tDecr, tMinus:
		if p.tok.kind == tIn {
			return false
		}
		return true
	}
	return false
}

func (p *parser) concat() expr {
	l := p.additive()
	for p.startsConcat() && p.tok.kind != tMinus && p.tok.kind != tNot {
		p.nest()
		l = &binaryExpr{op: tString, l: l, r: p.additive()}
		p.unnest()
	}
	return l
}

func (p *parser) additive() expr {
	l := p.multiplicative()
	for p.tok.kind == tPlus || p.tok.kind == tMinus {
		op := p.tok.kind
		p.advance()
		l = &binaryExpr{op: op, l: l, r: p.multiplicative()}
	}
	return l
}

func (p *parser) multiplicative() expr {
	l := p.unary()
	for p.tok.kind == tStar || p.tok.kind == tSlash || p.tok.kind == tPercent {
		op := p.tok.kind
		p.advance()
		l = &binaryExpr{op: op, l: l, r: p.unary()}
	}
	return l
}

func (p *parser) unary() expr {
	switch p.tok.kind {
	case tNot, tMinus, tPlus:
		p.nest()
		defer p.unnest()
		op := p.tok.kind
		p.advance()
		return &unaryExpr{op: op, x: p.unary()}
	}
	return p.power()
}

func (p *parser) power() expr {
	base := p.postfix()
	if p.tok.kind == tCaret {
		p.nest()
		defer p.unnest()
		p.advance()
		// Right associative; the exponent may carry a sign: 2^-1.
		var exp expr
		if p.tok.kind == tMinus || p.tok.kind == tPlus || p.tok.kind == tNot {
			op := p.tok.kind
			p.advance()
			exp = &unaryExpr{op: op, x: p.power()}
		} else {
			exp = p.power()
		}
		return &binaryExpr{op: tCaret, l: base, r: exp}
	}
	return base
}

func (p *parser) postfix() expr {
	x := p.primary()
	if isLvalue(x) && (p.tok.kind == tIncr || p.tok.kind == tDecr) {
		d := 1.0
		if p.tok.kind == tDecr {
			d = -1
		}
		p.advance()
		return &incDecExpr{lhs: x, delta: d}
	}
	return x
}

// startsLvalue reports whether the current token starts a variable, a
// field or an array element (the target of getline).
func (p *parser) startsLvalue() bool {
	return p.tok.kind == tDollar || p.tok.kind == tName
}

func (p *parser) lvalue() expr {
	if p.tok.kind == tDollar {
		p.advance()
		return &fieldExpr{index: p.dollarOperand()}
	}
	name := p.tok.str
	p.advance()
	if p.tok.kind == tLBracket {
		p.advance()
		keys := p.exprList(tRBracket)
		p.expect(tRBracket)
		return &indexExpr{arr: p.variable(name), keys: keys}
	}
	return p.variable(name)
}

// dollarOperand parses what follows $: a primary, or ++/-- and a sign.
func (p *parser) dollarOperand() expr {
	p.nest()
	defer p.unnest()
	switch p.tok.kind {
	case tIncr, tDecr:
		d := 1.0
		if p.tok.kind == tDecr {
			d = -1
		}
		p.advance()
		lv := p.dollarOperand()
		if !isLvalue(lv) {
			p.errf("++ and -- need a variable")
		}
		return &incDecExpr{lhs: lv, pre: true, delta: d}
	case tMinus, tPlus, tNot:
		op := p.tok.kind
		p.advance()
		return &unaryExpr{op: op, x: p.dollarOperand()}
	}
	return p.primary()
}

func (p *parser) primary() expr {
	p.nest()
	defer p.unnest()
	t := p.tok
	switch t.kind {
	case tNumber:
		p.advance()
		return &numLit{v: t.num}
	case tString:
		p.advance()
		return &strLit{v: t.str}
	case tRegex:
		p.advance()
		re, err := compileRegex(t.str)
		if err != nil {
			p.errf("invalid regular expression /%s/: %v", t.str, err)
		}
		return &regexLit{src: t.str, re: re}
	case tDollar:
		p.advance()
		return &fieldExpr{index: p.dollarOperand()}
	case tIncr, tDecr:
		d := 1.0
		if t.kind == tDecr {
			d = -1
		}
		p.advance()
		lv := p.primary()
		if !isLvalue(lv) {
			p.errf("++ and -- need a variable")
		}
		return &incDecExpr{lhs: lv, pre: true, delta: d}
	case tMinus, tPlus, tNot:
		p.advance()
		return &unaryExpr{op: t.kind, x: p.unary()}
	case tLParen:
		p.advance()
		oldG, oldIn := p.noGreater, p.noIn
		p.noGreater, p.noIn = false, false
		first := p.expr()
		if p.tok.kind == tComma {
			p.advance()
			p.optNewlines()
			items := append([]expr{first}, p.exprList(tRParen)...)
			p.expect(tRParen)
			p.noGreater, p.noIn = oldG, oldIn
			if p.tok.kind != tIn && !p.noGreater {
				p.errf("a parenthesized list must be followed by in")
			}
			return &listExpr{items: items}
		}
		p.expect(tRParen)
		p.noGreater, p.noIn = oldG, oldIn
		return &groupExpr{x: first}
	case tGetline:
		p.advance()
		g := &getlineExpr{from: getSimple}
		if p.startsLvalue() {
			g.lhs = p.lvalue()
		}
		if p.tok.kind == tLess {
			p.advance()
			g.from = getFile
			g.src = p.postfix()
		}
		return g
	case tFuncName:
		p.advance()
		p.expect(tLParen)
		p.optNewlines()
		args := p.exprList(tRParen)
		p.optNewlines()
		p.expect(tRParen)
		if p.locals != nil {
			if _, shadow := p.locals[t.str]; shadow {
				p.errf("%s is a parameter, not a function", t.str)
			}
		}
		idx := p.function(t.str)
		p.called = append(p.called, t)
		return &callExpr{fn: idx, name: t.str, args: args}
	case tBuiltin:
		return p.builtin()
	case tName:
		p.advance()
		if p.tok.kind == tLBracket {
			p.advance()
			keys := p.exprList(tRBracket)
			if len(keys) == 0 {
				p.errf("empty array subscript")
			}
			p.expect(tRBracket)
			return &indexExpr{arr: p.variable(t.str), keys: keys}
		}
		return p.variable(t.str)
	}
	p.unexpected("")
	return nil
}

func (p *parser) builtin() expr {
	name := p.tok.str
	p.advance()
	b := &builtinExpr{name: name}
	if p.tok.kind != tLParen {
		if name == "length" {
			return b // length without parentheses: length($0)
		}
		p.errf("%s needs (arguments)", name)
	}
	p.advance()
	p.optNewlines()
	b.args = p.exprList(tRParen)
	p.optNewlines()
	p.expect(tRParen)
	lo, hi := 0, 0
	switch name {
	case "length":
		lo, hi = 0, 1
	case "substr":
		lo, hi = 2, 3
	case "index", "atan2":
		lo, hi = 2, 2
	case "split":
		lo, hi = 2, 3
	case "sub", "gsub":
		lo, hi = 2, 3
	case "match":
		lo, hi = 2, 3
	case "gensub":
		lo, hi = 3, 4
	case "sprintf":
		lo, hi = 1, 1<<20
	case "sin", "cos", "exp", "log", "sqrt", "int", "tolower", "toupper", "system":
		lo, hi = 1, 1
	case "rand":
		lo, hi = 0, 0
	case "srand", "fflush":
		lo, hi = 0, 1
	case "close":
		lo, hi = 1, 2
	}
	if len(b.args) < lo || len(b.args) > hi {
		if lo == hi {
			p.errf("%s takes %d arguments, not %d", name, lo, len(b.args))
		}
		p.errf("%s takes %d to %d arguments, not %d", name, lo, hi, len(b.args))
	}
	switch name {
	case "split":
		if _, ok := b.args[1].(*varExpr); !ok {
			p.errf("split's second argument must be an array name")
		}
	case "match":
		if len(b.args) == 3 {
			if _, ok := b.args[2].(*varExpr); !ok {
				p.errf("match's third argument must be an array name")
			}
		}
	case "sub", "gsub":
		if len(b.args) == 3 && !isLvalue(b.args[2]) {
			p.errf("%s's third argument must be a variable, field or array element", name)
		}
	}
	return b
}
