package coreutils

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// bcNum is a decimal number v / 10^scale, as bc computes: fixed point,
// truncated, with a scale of its own.
type bcNum struct {
	v     *big.Int
	scale int
}

var bigTen = big.NewInt(10)

func pow10(n int) *big.Int { return new(big.Int).Exp(bigTen, big.NewInt(int64(n)), nil) }

func bcInt(n int64) bcNum { return bcNum{v: big.NewInt(n)} }

// rescale returns x with the given scale (truncating or padding).
func (x bcNum) rescale(s int) bcNum {
	switch {
	case s == x.scale:
		return x
	case s > x.scale:
		return bcNum{v: new(big.Int).Mul(x.v, pow10(s-x.scale)), scale: s}
	}
	return bcNum{v: new(big.Int).Quo(x.v, pow10(x.scale-s)), scale: s}
}

func (x bcNum) isZero() bool { return x.v.Sign() == 0 }

func (x bcNum) cmp(y bcNum) int {
	s := max(x.scale, y.scale)
	return x.rescale(s).v.Cmp(y.rescale(s).v)
}

// int64 truncates x to an integer.
func (x bcNum) int64() (int64, bool) {
	i := x.rescale(0).v
	if !i.IsInt64() {
		return 0, false
	}
	return i.Int64(), true
}

// maxBcDigits bounds the digits of one number.
const maxBcDigits = 100_000

// format renders x in base obase as bc prints it: no leading 0 before
// the point, lines cut at 70 characters with a backslash.
func (x bcNum) format(obase int) string {
	var s string
	neg := x.v.Sign() < 0
	abs := new(big.Int).Abs(x.v)
	if obase == 10 || obase < 2 || obase > 16 {
		digits := abs.String()
		if x.scale > 0 {
			if len(digits) <= x.scale {
				digits = strings.Repeat("0", x.scale-len(digits)+1) + digits
			}
			ip, fp := digits[:len(digits)-x.scale], digits[len(digits)-x.scale:]
			if ip == "0" {
				ip = ""
			}
			s = ip + "." + fp
		} else {
			s = digits
		}
		if abs.Sign() == 0 {
			s = "0"
		}
	} else {
		ip := new(big.Int).Quo(abs, pow10(x.scale))
		s = strings.ToUpper(ip.Text(obase))
	}
	if neg && abs.Sign() != 0 {
		s = "-" + s
	}
	if len(s) <= 70 {
		return s
	}
	var b strings.Builder
	for len(s) > 69 {
		b.WriteString(s[:69] + "\\\n")
		s = s[69:]
	}
	b.WriteString(s)
	return b.String()
}

// bcParse parses a decimal literal.
func bcParse(s string, ibase int) (bcNum, error) {
	ip, fp, _ := strings.Cut(s, ".")
	if ibase != 10 {
		v, ok := new(big.Int).SetString(ip, ibase)
		if !ok {
			return bcNum{}, fmt.Errorf("invalid number %s", s)
		}
		return bcNum{v: v}, nil
	}
	v, ok := new(big.Int).SetString(ip+fp, 10)
	if !ok {
		if ip+fp == "" {
			return bcInt(0), nil
		}
		return bcNum{}, fmt.Errorf("invalid number %s", s)
	}
	return bcNum{v: v, scale: len(fp)}, nil
}

// bcErr is a bc runtime or parse error.
type bcErr struct{ msg string }

func (e *bcErr) Error() string { return e.msg }

func bcFail(format string, args ...any) { panic(&bcErr{fmt.Sprintf(format, args...)}) }

// bc is one run of the calculator.
type bc struct {
	c       *cmd
	scale   int
	ibase   int
	obase   int
	vars    map[string]bcNum
	arrays  map[string]map[int64]bcNum
	funcs   map[string]*bcFunc
	locals  []map[string]bcNum
	last    bcNum
	steps   int
	mathLib bool
}

type bcFunc struct {
	params []string
	autos  []string
	body   []bcStmt
}

// bcCmd is bc: arbitrary precision arithmetic read from the files or
// stdin. It knows numbers with scale, + - * / % ^, sqrt, length, scale,
// variables and arrays, relational and boolean operators, ++ --, the
// assignment operators, if/else, while, for, break, continue, quit,
// print, strings, define/auto/return, comments, ibase/obase (2-16) and,
// with -l, the math library (s c a l e) and scale 20.
func bcCmd(c *cmd, args []string) int {
	mathLib := false
	files, st, ok := c.flags(args, "", 1, func(f, _ string) error {
		switch f {
		case "-l", "--mathlib":
			mathLib = true
		case "-q", "--quiet", "-s", "--standard", "-w", "--warn":
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if st, ok := c.operands(files); !ok {
		return st
	}
	src, err := c.readAll()
	if err != nil {
		return c.readErr(err)
	}
	b := &bc{c: c, ibase: 10, obase: 10, vars: map[string]bcNum{}, arrays: map[string]map[int64]bcNum{},
		funcs: map[string]*bcFunc{}, mathLib: mathLib, last: bcInt(0)}
	if mathLib {
		b.scale = 20
	}
	p := &bcParser{src: string(src)}
	status := 0
	func() {
		defer func() {
			if r := recover(); r != nil {
				var e *bcErr
				if err, ok := r.(error); ok && errors.As(err, &e) {
					c.out.Flush()
					fmt.Fprintf(c.env.Stderr, "bc: %s\n", e.msg)
					status = 1
					return
				}
				if _, ok := r.(bcQuit); ok {
					return
				}
				panic(r)
			}
		}()
		for {
			s := p.statement(true)
			if s == nil {
				return
			}
			b.exec(s, true)
		}
	}()
	return c.done(status)
}

type bcQuit struct{}

// --- syntax ---

type bcExpr interface{}

type (
	bcLit   struct{ s string }
	bcVar   struct{ name string }
	bcIndex struct {
		name string
		idx  bcExpr
	}
	bcBin struct {
		op   string
		l, r bcExpr
	}
	bcUnary struct {
		op string
		x  bcExpr
	}
	bcAssign struct {
		op  string // "=", "+=", ...
		lhs bcExpr
		rhs bcExpr
	}
	bcIncDec struct {
		lhs   bcExpr
		delta int64
		pre   bool
	}
	bcCall struct {
		name string
		args []bcExpr
	}
)

type bcStmt interface{}

type (
	bcExprStmt struct{ x bcExpr }
	bcStrStmt  struct{ s string }
	bcPrint    struct{ items []any } // string or bcExpr
	bcBlock    struct{ stmts []bcStmt }
	bcIf       struct {
		cond      bcExpr
		then, els bcStmt
	}
	bcWhile struct {
		cond bcExpr
		body bcStmt
	}
	bcFor struct {
		init, cond, post bcExpr
		body             bcStmt
	}
	bcBreak    struct{}
	bcContinue struct{}
	bcReturn   struct{ x bcExpr }
	bcQuitStmt struct{}
	bcDefine   struct {
		name string
		fn   *bcFunc
	}
)

type bcParser struct {
	src   string
	pos   int
	depth int
}

func (p *bcParser) skipSpace(newlines bool) {
	for p.pos < len(p.src) {
		ch := p.src[p.pos]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\r':
			p.pos++
		case ch == '\\' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '\n':
			p.pos += 2
		case ch == '\n' && newlines:
			p.pos++
		case ch == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		case ch == '/' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '*':
			end := strings.Index(p.src[p.pos+2:], "*/")
			if end < 0 {
				bcFail("unterminated comment")
			}
			p.pos += end + 4
		default:
			return
		}
	}
}

func (p *bcParser) peek() byte {
	p.skipSpace(false)
	if p.pos >= len(p.src) {
		return 0
	}
	return p.src[p.pos]
}

// accept consumes tok if it is next.
func (p *bcParser) accept(tok string) bool {
	p.skipSpace(false)
	if strings.HasPrefix(p.src[p.pos:], tok) {
		// A keyword must not run into a name.
		if isBcNameChar(tok[len(tok)-1]) && p.pos+len(tok) < len(p.src) && isBcNameChar(p.src[p.pos+len(tok)]) {
			return false
		}
		p.pos += len(tok)
		return true
	}
	return false
}

func (p *bcParser) expect(tok string) {
	if !p.accept(tok) {
		p.syntax("expected " + quote(tok))
	}
}

func (p *bcParser) syntax(msg string) {
	line := strings.Count(p.src[:min(p.pos, len(p.src))], "\n") + 1
	bcFail("syntax error on line %d: %s", line, msg)
}

func isBcNameChar(ch byte) bool {
	return ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_'
}

func (p *bcParser) name() string {
	p.skipSpace(false)
	start := p.pos
	for p.pos < len(p.src) && isBcNameChar(p.src[p.pos]) {
		p.pos++
	}
	if start == p.pos || p.src[start] >= '0' && p.src[start] <= '9' {
		p.pos = start
		return ""
	}
	return p.src[start:p.pos]
}

// statement parses one statement; nil at the end of the input.
func (p *bcParser) statement(top bool) bcStmt {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > 200 {
		p.syntax("nesting too deep")
	}
	for {
		p.skipSpace(true)
		if p.pos >= len(p.src) {
			return nil
		}
		if p.src[p.pos] == ';' {
			p.pos++
			continue
		}
		break
	}
	switch {
	case p.peek() == '{':
		p.pos++
		return &bcBlock{stmts: p.blockRest()}
	case p.peek() == '"':
		return &bcStrStmt{s: p.str()}
	case p.accept("if"):
		p.expect("(")
		cond := p.expr()
		p.expect(")")
		s := &bcIf{cond: cond, then: p.body()}
		save := p.pos
		p.skipSpace(true)
		for p.pos < len(p.src) && p.src[p.pos] == ';' {
			p.pos++
			p.skipSpace(true)
		}
		if p.accept("else") {
			s.els = p.body()
		} else {
			p.pos = save
		}
		return s
	case p.accept("while"):
		p.expect("(")
		cond := p.expr()
		p.expect(")")
		return &bcWhile{cond: cond, body: p.body()}
	case p.accept("for"):
		p.expect("(")
		s := &bcFor{}
		if p.peek() != ';' {
			s.init = p.expr()
		}
		p.expect(";")
		if p.peek() != ';' {
			s.cond = p.expr()
		}
		p.expect(";")
		if p.peek() != ')' {
			s.post = p.expr()
		}
		p.expect(")")
		s.body = p.body()
		return s
	case p.accept("break"):
		return &bcBreak{}
	case p.accept("continue"):
		return &bcContinue{}
	case p.accept("quit"), p.accept("halt"):
		return &bcQuitStmt{}
	case p.accept("return"):
		s := &bcReturn{}
		if ch := p.peek(); ch != ';' && ch != '\n' && ch != '}' && ch != 0 {
			s.x = p.expr()
		}
		return s
	case p.accept("print"):
		s := &bcPrint{}
		for {
			if p.peek() == '"' {
				s.items = append(s.items, p.str())
			} else {
				s.items = append(s.items, p.expr())
			}
			if !p.accept(",") {
				return s
			}
		}
	case p.accept("define"):
		name := p.name()
		if name == "" {
			p.syntax("expected a function name")
		}
		p.expect("(")
		fn := &bcFunc{}
		for !p.accept(")") {
			pn := p.name()
			if pn == "" {
				p.syntax("expected a parameter name")
			}
			p.accept("[]")
			fn.params = append(fn.params, pn)
			if !p.accept(",") && p.peek() != ')' {
				p.syntax("expected , or )")
			}
		}
		p.skipSpace(true)
		p.expect("{")
		p.skipSpace(true)
		if p.accept("auto") {
			for {
				an := p.name()
				if an == "" {
					p.syntax("expected a name after auto")
				}
				p.accept("[]")
				fn.autos = append(fn.autos, an)
				if !p.accept(",") {
					break
				}
			}
		}
		fn.body = p.blockRest()
		return &bcDefine{name: name, fn: fn}
	}
	return &bcExprStmt{x: p.expr()}
}

// blockRest parses the statements of a block whose { was read, and its }.
func (p *bcParser) blockRest() []bcStmt {
	var stmts []bcStmt
	for {
		p.skipSpace(true)
		for p.pos < len(p.src) && p.src[p.pos] == ';' {
			p.pos++
			p.skipSpace(true)
		}
		if p.accept("}") {
			return stmts
		}
		s := p.statement(false)
		if s == nil {
			p.syntax("missing }")
		}
		stmts = append(stmts, s)
	}
}

func (p *bcParser) body() bcStmt {
	p.skipSpace(true)
	s := p.statement(false)
	if s == nil {
		p.syntax("missing statement")
	}
	return s
}

func (p *bcParser) str() string {
	p.expect(`"`)
	end := strings.IndexByte(p.src[p.pos:], '"')
	if end < 0 {
		p.syntax("unterminated string")
	}
	s := p.src[p.pos : p.pos+end]
	p.pos += end + 1
	return s
}

func (p *bcParser) expr() bcExpr {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > 200 {
		p.syntax("expression nests too deeply")
	}
	lhs := p.or()
	for _, op := range []string{"+=", "-=", "*=", "/=", "%=", "^="} {
		if p.accept(op) {
			return &bcAssign{op: op, lhs: p.lvalue(lhs), rhs: p.expr()}
		}
	}
	save := p.pos
	if p.accept("=") {
		if p.peek() == '=' {
			p.pos = save
			return lhs
		}
		return &bcAssign{op: "=", lhs: p.lvalue(lhs), rhs: p.expr()}
	}
	return lhs
}

func (p *bcParser) lvalue(e bcExpr) bcExpr {
	switch e.(type) {
	case *bcVar, *bcIndex:
		return e
	}
	p.syntax("cannot assign to this expression")
	return nil
}

func (p *bcParser) or() bcExpr {
	l := p.and()
	for p.accept("||") {
		l = &bcBin{op: "||", l: l, r: p.and()}
	}
	return l
}

func (p *bcParser) and() bcExpr {
	l := p.not()
	for p.accept("&&") {
		l = &bcBin{op: "&&", l: l, r: p.not()}
	}
	return l
}

func (p *bcParser) not() bcExpr {
	if p.peek() == '!' && !strings.HasPrefix(p.src[p.pos:], "!=") {
		p.pos++
		return &bcUnary{op: "!", x: p.not()}
	}
	return p.rel()
}

func (p *bcParser) rel() bcExpr {
	l := p.add()
	for _, op := range []string{"==", "!=", "<=", ">=", "<", ">"} {
		if p.accept(op) {
			return &bcBin{op: op, l: l, r: p.add()}
		}
	}
	return l
}

func (p *bcParser) add() bcExpr {
	l := p.mul()
	for {
		switch {
		case p.peek() == '+' && !strings.HasPrefix(p.src[p.pos:], "+=") && !strings.HasPrefix(p.src[p.pos:], "++"):
			p.pos++
			l = &bcBin{op: "+", l: l, r: p.mul()}
		case p.peek() == '-' && !strings.HasPrefix(p.src[p.pos:], "-=") && !strings.HasPrefix(p.src[p.pos:], "--"):
			p.pos++
			l = &bcBin{op: "-", l: l, r: p.mul()}
		default:
			return l
		}
	}
}

func (p *bcParser) mul() bcExpr {
	l := p.unary()
	for {
		ch := p.peek()
		if (ch == '*' || ch == '/' || ch == '%') && !(p.pos+1 < len(p.src) && p.src[p.pos+1] == '=') {
			p.pos++
			l = &bcBin{op: string(ch), l: l, r: p.unary()}
			continue
		}
		return l
	}
}

func (p *bcParser) unary() bcExpr {
	if p.peek() == '-' && !strings.HasPrefix(p.src[p.pos:], "--") {
		p.pos++
		return &bcUnary{op: "-", x: p.unary()}
	}
	return p.pow()
}

func (p *bcParser) pow() bcExpr {
	base := p.postfix()
	if p.peek() == '^' && !strings.HasPrefix(p.src[p.pos:], "^=") {
		p.pos++
		return &bcBin{op: "^", l: base, r: p.unary()} // right associative
	}
	return base
}

func (p *bcParser) postfix() bcExpr {
	x := p.primary()
	switch x.(type) {
	case *bcVar, *bcIndex:
		if p.accept("++") {
			return &bcIncDec{lhs: x, delta: 1}
		}
		if p.accept("--") {
			return &bcIncDec{lhs: x, delta: -1}
		}
	}
	return x
}

func (p *bcParser) primary() bcExpr {
	ch := p.peek()
	switch {
	case ch == '(':
		p.pos++
		e := p.expr()
		p.expect(")")
		return e
	case ch >= '0' && ch <= '9' || ch >= 'A' && ch <= 'F' || ch == '.':
		start := p.pos
		for p.pos < len(p.src) && (p.src[p.pos] >= '0' && p.src[p.pos] <= '9' || p.src[p.pos] >= 'A' && p.src[p.pos] <= 'F' || p.src[p.pos] == '.') {
			p.pos++
		}
		return &bcLit{s: p.src[start:p.pos]}
	case p.accept("++"):
		return &bcIncDec{lhs: p.lvalue(p.primary()), delta: 1, pre: true}
	case p.accept("--"):
		return &bcIncDec{lhs: p.lvalue(p.primary()), delta: -1, pre: true}
	}
	name := p.name()
	if name == "" {
		if ch == 0 {
			p.syntax("unexpected end of input")
		}
		p.syntax(fmt.Sprintf("unexpected %q", ch))
	}
	if p.accept("(") {
		var args []bcExpr
		for !p.accept(")") {
			args = append(args, p.expr())
			if !p.accept(",") && p.peek() != ')' {
				p.syntax("expected , or )")
			}
		}
		return &bcCall{name: name, args: args}
	}
	if p.accept("[") {
		idx := p.expr()
		p.expect("]")
		return &bcIndex{name: name, idx: idx}
	}
	return &bcVar{name: name}
}

// --- evaluation ---

type bcFlow int

const (
	bcNormal bcFlow = iota
	bcBreakFlow
	bcContinueFlow
	bcReturnFlow
)

func (b *bc) tick() {
	b.steps++
	if b.steps&1023 == 0 && b.c.stopped() {
		bcFail("interrupted")
	}
}

func (b *bc) exec(s bcStmt, top bool) (bcFlow, bcNum) {
	b.tick()
	switch s := s.(type) {
	case *bcExprStmt:
		v := b.eval(s.x)
		if _, assign := s.x.(*bcAssign); !assign {
			b.c.out.WriteString(v.format(b.obase) + "\n")
			b.last = v
		}
	case *bcStrStmt:
		b.c.out.WriteString(bcUnescape(s.s))
	case *bcPrint:
		for _, it := range s.items {
			if str, ok := it.(string); ok {
				b.c.out.WriteString(bcUnescape(str))
				continue
			}
			v := b.eval(it)
			b.c.out.WriteString(v.format(b.obase))
			b.last = v
		}
	case *bcBlock:
		for _, st := range s.stmts {
			if f, v := b.exec(st, top); f != bcNormal {
				return f, v
			}
		}
	case *bcIf:
		if !b.eval(s.cond).isZero() {
			return b.exec(s.then, top)
		} else if s.els != nil {
			return b.exec(s.els, top)
		}
	case *bcWhile:
		for !b.eval(s.cond).isZero() {
			b.tick()
			f, v := b.exec(s.body, top)
			if f == bcBreakFlow {
				break
			}
			if f == bcReturnFlow {
				return f, v
			}
		}
	case *bcFor:
		if s.init != nil {
			b.eval(s.init)
		}
		for s.cond == nil || !b.eval(s.cond).isZero() {
			b.tick()
			f, v := b.exec(s.body, top)
			if f == bcBreakFlow {
				break
			}
			if f == bcReturnFlow {
				return f, v
			}
			if s.post != nil {
				b.eval(s.post)
			}
		}
	case *bcBreak:
		return bcBreakFlow, bcNum{}
	case *bcContinue:
		return bcContinueFlow, bcNum{}
	case *bcReturn:
		if s.x == nil {
			return bcReturnFlow, bcInt(0)
		}
		return bcReturnFlow, b.eval(s.x)
	case *bcQuitStmt:
		panic(bcQuit{})
	case *bcDefine:
		b.funcs[s.name] = s.fn
	}
	return bcNormal, bcNum{}
}

func bcUnescape(s string) string {
	r := strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\\`, `\`, `\q`, `"`, `\a`, "\a", `\b`, "\b", `\f`, "\f", `\r`, "\r")
	return r.Replace(s)
}

// get reads a variable. bc scopes dynamically: a function sees the
// parameters and auto variables of the functions that called it.
func (b *bc) get(name string) bcNum {
	for i := len(b.locals) - 1; i >= 0; i-- {
		if v, ok := b.locals[i][name]; ok {
			return v
		}
	}
	switch name {
	case "scale":
		return bcInt(int64(b.scale))
	case "ibase":
		return bcInt(int64(b.ibase))
	case "obase":
		return bcInt(int64(b.obase))
	case "last":
		return b.last
	}
	if v, ok := b.vars[name]; ok {
		return v
	}
	return bcInt(0)
}

func (b *bc) set(lhs bcExpr, v bcNum) {
	switch l := lhs.(type) {
	case *bcVar:
		for i := len(b.locals) - 1; i >= 0; i-- { // dynamic scope, as get
			if _, ok := b.locals[i][l.name]; ok {
				b.locals[i][l.name] = v
				return
			}
		}
		n, _ := v.int64()
		switch l.name {
		case "scale":
			if n < 0 || n > maxBcDigits {
				bcFail("scale must be between 0 and %d", maxBcDigits)
			}
			b.scale = int(n)
			return
		case "ibase":
			if n < 2 || n > 16 {
				bcFail("ibase must be between 2 and 16")
			}
			b.ibase = int(n)
			return
		case "obase":
			if n < 2 || n > 16 {
				bcFail("obase must be between 2 and 16 here")
			}
			b.obase = int(n)
			return
		case "last":
			b.last = v
			return
		}
		b.vars[l.name] = v
	case *bcIndex:
		i, ok := b.eval(l.idx).int64()
		if !ok || i < 0 || i > 1<<20 {
			bcFail("array index out of range")
		}
		arr := b.arrays[l.name]
		if arr == nil {
			arr = map[int64]bcNum{}
			b.arrays[l.name] = arr
		}
		arr[i] = v
	}
}

func (b *bc) eval(e bcExpr) bcNum {
	b.tick()
	switch e := e.(type) {
	case *bcLit:
		n, err := bcParse(e.s, b.ibase)
		if err != nil {
			bcFail("%v", err)
		}
		return n
	case *bcVar:
		return b.get(e.name)
	case *bcIndex:
		i, ok := b.eval(e.idx).int64()
		if !ok || i < 0 {
			bcFail("array index out of range")
		}
		if v, ok := b.arrays[e.name][i]; ok {
			return v
		}
		return bcInt(0)
	case *bcUnary:
		x := b.eval(e.x)
		if e.op == "!" {
			return bcBool(x.isZero())
		}
		return bcNum{v: new(big.Int).Neg(x.v), scale: x.scale}
	case *bcAssign:
		v := b.eval(e.rhs)
		if e.op != "=" {
			v = b.arith(e.op[:1], b.eval(e.lhs), v)
		}
		b.set(e.lhs, v)
		return v
	case *bcIncDec:
		old := b.eval(e.lhs)
		nv := b.arith("+", old, bcInt(e.delta))
		b.set(e.lhs, nv)
		if e.pre {
			return nv
		}
		return old
	case *bcBin:
		switch e.op {
		case "&&":
			return bcBool(!b.eval(e.l).isZero() && !b.eval(e.r).isZero())
		case "||":
			return bcBool(!b.eval(e.l).isZero() || !b.eval(e.r).isZero())
		case "==", "!=", "<", "<=", ">", ">=":
			c := b.eval(e.l).cmp(b.eval(e.r))
			return bcBool(map[string]bool{"==": c == 0, "!=": c != 0, "<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[e.op])
		}
		return b.arith(e.op, b.eval(e.l), b.eval(e.r))
	case *bcCall:
		return b.call(e)
	}
	bcFail("unknown expression")
	return bcNum{}
}

func bcBool(t bool) bcNum {
	if t {
		return bcInt(1)
	}
	return bcInt(0)
}

func (b *bc) checkSize(x bcNum) bcNum {
	if x.v.BitLen() > maxBcDigits*4 {
		bcFail("number too large (more than %d digits)", maxBcDigits)
	}
	return x
}

func (b *bc) arith(op string, x, y bcNum) bcNum {
	switch op {
	case "+", "-":
		s := max(x.scale, y.scale)
		xv, yv := x.rescale(s).v, y.rescale(s).v
		if op == "+" {
			return b.checkSize(bcNum{v: new(big.Int).Add(xv, yv), scale: s})
		}
		return b.checkSize(bcNum{v: new(big.Int).Sub(xv, yv), scale: s})
	case "*":
		full := bcNum{v: new(big.Int).Mul(x.v, y.v), scale: x.scale + y.scale}
		return b.checkSize(full.rescale(min(x.scale+y.scale, max(b.scale, x.scale, y.scale))))
	case "/":
		return b.div(x, y, b.scale)
	case "%":
		if y.isZero() {
			bcFail("divide by zero")
		}
		q := b.div(x, y, b.scale)
		prod := bcNum{v: new(big.Int).Mul(q.v, y.v), scale: q.scale + y.scale}
		s := max(b.scale+y.scale, x.scale)
		return b.arith("-", x.rescale(s), prod.rescale(s))
	case "^":
		n, ok := y.int64()
		if !ok || n > 1_000_000 || n < -1_000_000 {
			bcFail("exponent too large")
		}
		neg := n < 0
		if neg {
			n = -n
		}
		r := bcNum{v: new(big.Int).Exp(x.v, big.NewInt(n), nil), scale: x.scale * int(n)}
		if r.v.BitLen() > maxBcDigits*4 {
			bcFail("number too large (more than %d digits)", maxBcDigits)
		}
		if neg {
			return b.div(bcInt(1), r, b.scale)
		}
		return r.rescale(min(x.scale*int(n), max(b.scale, x.scale)))
	}
	bcFail("unknown operator %s", op)
	return bcNum{}
}

// div is x / y to scale digits, truncated.
func (b *bc) div(x, y bcNum, scale int) bcNum {
	if y.isZero() {
		bcFail("divide by zero")
	}
	// x.v/10^xs / (y.v/10^ys) = x.v * 10^(scale+ys-xs) / y.v / 10^scale
	shift := scale + y.scale - x.scale
	num := new(big.Int).Set(x.v)
	den := new(big.Int).Set(y.v)
	if shift >= 0 {
		num.Mul(num, pow10(shift))
	} else {
		den.Mul(den, pow10(-shift))
	}
	return b.checkSize(bcNum{v: num.Quo(num, den), scale: scale})
}

func (b *bc) call(e *bcCall) bcNum {
	arg := func(i int) bcNum {
		if i >= len(e.args) {
			bcFail("%s: missing argument", e.name)
		}
		return b.eval(e.args[i])
	}
	switch e.name {
	case "sqrt":
		x := arg(0)
		if x.v.Sign() < 0 {
			bcFail("square root of a negative number")
		}
		s := max(b.scale, x.scale)
		// sqrt(v / 10^xs) * 10^s = sqrt(v * 10^(2s - xs))
		v := new(big.Int).Mul(x.v, pow10(2*s-x.scale))
		return bcNum{v: v.Sqrt(v), scale: s}
	case "length":
		x := arg(0)
		d := len(new(big.Int).Abs(x.v).String())
		if x.v.Sign() == 0 {
			d = 1
		}
		return bcInt(int64(max(d, x.scale)))
	case "scale":
		return bcInt(int64(arg(0).scale))
	}
	if b.mathLib {
		if f := b.mathFunc(e.name); f != nil && len(e.args) == 1 {
			return f(arg(0))
		}
	}
	fn, ok := b.funcs[e.name]
	if !ok {
		bcFail("function %s not defined", e.name)
	}
	if len(e.args) != len(fn.params) {
		bcFail("function %s takes %d arguments", e.name, len(fn.params))
	}
	if len(b.locals) >= 500 {
		bcFail("function call nesting too deep")
	}
	frame := map[string]bcNum{}
	for i, pn := range fn.params {
		frame[pn] = b.eval(e.args[i])
	}
	for _, an := range fn.autos {
		frame[an] = bcInt(0)
	}
	b.locals = append(b.locals, frame)
	defer func() { b.locals = b.locals[:len(b.locals)-1] }()
	for _, st := range fn.body {
		if f, v := b.exec(st, false); f == bcReturnFlow {
			return v
		}
	}
	return bcInt(0)
}

// bcMath is the math library of bc -l: each function is computed with
// ten digits beyond scale and truncated to scale, as bc's own library
// does, so that results agree with GNU bc to the last digit.
func (b *bc) mathFunc(name string) func(bcNum) bcNum {
	switch name {
	case "e":
		return b.libExp
	case "l":
		return b.libLog
	case "a":
		return b.libAtan
	case "s":
		return b.libSin
	case "c":
		return b.libCos
	}
	return nil
}

// withScale runs f with the scale raised to s, then restores it.
func (b *bc) withScale(s int, f func() bcNum) bcNum {
	old := b.scale
	b.scale = s
	defer func() { b.scale = old }()
	return f()
}

func (b *bc) work() int { return b.scale + 10 }

// series sums terms until one is zero at the working scale.
func (b *bc) series(first bcNum, next func(term bcNum, n int64) bcNum) bcNum {
	sum, term := first, first
	for n := int64(1); n < 100000; n++ {
		b.tick()
		term = next(term, n)
		if term.isZero() {
			break
		}
		sum = b.arith("+", sum, term)
	}
	return sum
}

func (b *bc) libExp(x bcNum) bcNum {
	out := b.scale
	if n, ok := x.int64(); !ok || n > 100000 || n < -100000 {
		bcFail("e: argument too large")
	}
	r := b.withScale(b.work()+len(x.rescale(0).v.String()), func() bcNum {
		neg := x.v.Sign() < 0
		y := bcNum{v: new(big.Int).Abs(x.v), scale: x.scale}
		halvings := 0
		for y.cmp(bcInt(1)) > 0 {
			y = b.div(y, bcInt(2), b.scale)
			halvings++
		}
		// e^y = 1 + y + y^2/2! + ...
		sum := b.series(bcInt(1), func(t bcNum, n int64) bcNum {
			return b.div(b.arith("*", t, y), bcInt(n), b.scale)
		})
		for range halvings {
			sum = b.arith("*", sum, sum)
		}
		if neg {
			sum = b.div(bcInt(1), sum, b.scale)
		}
		return sum
	})
	return r.rescale(out)
}

func (b *bc) libLog(x bcNum) bcNum {
	if x.v.Sign() <= 0 {
		bcFail("l: logarithm of a number that is not positive")
	}
	out := b.scale
	r := b.withScale(b.work(), func() bcNum {
		// Bring x near 1 with square roots: l(x) = 2^k l(x^(1/2^k)).
		k := int64(0)
		y := x
		lo, hi := bcNum{v: big.NewInt(5), scale: 1}, bcNum{v: big.NewInt(15), scale: 1}
		for y.cmp(hi) > 0 || y.cmp(lo) < 0 {
			b.tick()
			s := max(b.scale, y.scale)
			v := new(big.Int).Mul(y.v, pow10(2*s-y.scale))
			y = bcNum{v: v.Sqrt(v), scale: s}
			k++
			if k > 2000 {
				bcFail("l: argument out of range")
			}
		}
		// l(y) = 2 (u + u^3/3 + u^5/5 ...), u = (y-1)/(y+1)
		u := b.div(b.arith("-", y, bcInt(1)), b.arith("+", y, bcInt(1)), b.scale)
		u2 := b.arith("*", u, u)
		pow := u
		sum := u
		for n := int64(3); n < 200000; n += 2 {
			b.tick()
			pow = b.arith("*", pow, u2)
			t := b.div(pow, bcInt(n), b.scale)
			if t.isZero() {
				break
			}
			sum = b.arith("+", sum, t)
		}
		f := new(big.Int).Lsh(big.NewInt(2), uint(k))
		return b.arith("*", sum, bcNum{v: f})
	})
	return r.rescale(out)
}

func (b *bc) libAtan(x bcNum) bcNum {
	out := b.scale
	r := b.withScale(b.work(), func() bcNum {
		neg := x.v.Sign() < 0
		y := bcNum{v: new(big.Int).Abs(x.v), scale: x.scale}
		// a(y) = 2 a(y / (1 + sqrt(1 + y^2))), until y is small.
		doublings := 0
		small := bcNum{v: big.NewInt(2), scale: 1}
		for y.cmp(small) > 0 {
			b.tick()
			one := bcInt(1)
			sq := b.call(&bcCall{name: "sqrt", args: []bcExpr{&bcLit{s: b.arith("+", one, b.arith("*", y, y)).format(10)}}})
			y = b.div(y, b.arith("+", one, sq), b.scale)
			doublings++
		}
		y2 := b.arith("*", y, y)
		pow, sum := y, y
		for n := int64(3); n < 200000; n += 2 {
			b.tick()
			pow = b.arith("*", pow, y2)
			t := b.div(pow, bcInt(n), b.scale)
			if t.isZero() {
				break
			}
			if (n/2)%2 == 1 {
				sum = b.arith("-", sum, t)
			} else {
				sum = b.arith("+", sum, t)
			}
		}
		sum = b.arith("*", sum, bcNum{v: new(big.Int).Lsh(big.NewInt(1), uint(doublings))})
		if neg {
			sum.v.Neg(sum.v)
		}
		return sum
	})
	return r.rescale(out)
}

func (b *bc) libSin(x bcNum) bcNum {
	out := b.scale
	r := b.withScale(b.work(), func() bcNum {
		pi := b.arith("*", bcInt(4), b.libAtan(bcInt(1)))
		twoPi := b.arith("*", bcInt(2), pi)
		// Reduce to [-pi, pi].
		q := b.div(x, twoPi, 0)
		y := b.arith("-", x, b.arith("*", q, twoPi))
		if y.cmp(pi) > 0 {
			y = b.arith("-", y, twoPi)
		} else if y.cmp(bcNum{v: new(big.Int).Neg(pi.v), scale: pi.scale}) < 0 {
			y = b.arith("+", y, twoPi)
		}
		y2 := b.arith("*", y, y)
		return b.series(y, func(t bcNum, n int64) bcNum {
			t = b.arith("*", t, y2)
			t = b.div(t, bcInt((2*n)*(2*n+1)), b.scale)
			t.v.Neg(t.v)
			return t
		})
	})
	return r.rescale(out)
}

func (b *bc) libCos(x bcNum) bcNum {
	out := b.scale
	r := b.withScale(b.work(), func() bcNum {
		pi := b.arith("*", bcInt(4), b.libAtan(bcInt(1)))
		half := b.div(pi, bcInt(2), b.scale)
		return b.libSin(b.arith("+", x, half))
	})
	return r.rescale(out)
}
