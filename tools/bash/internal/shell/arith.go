package shell

import (
	"errors"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Arithmetic is evaluated as bash does: the expression's text, its
// $-expansions done, is parsed and evaluated; a variable's value is
// itself an expression. mvdan's parse of $((...)) only says where the
// expansions are: the text is rebuilt from it (arithText) and parsed
// here, so that a="1 + 2"; $(( $a * 3 )) is 7 as in bash.

// arithError is an arithmetic error: "expr: msg (error token is "tok")".
type arithError struct {
	expr, msg, token string
	noToken          bool
	// subscript: the error is in an array subscript, which ends the
	// shell (bash's expansion error) rather than the command
	subscript bool
}

// subscriptErr marks an error of a subscript's expression.
func subscriptErr(err error) error {
	var ae *arithError
	if errors.As(err, &ae) {
		ae2 := *ae
		ae2.subscript = true
		return &ae2
	}
	return err
}

func (e *arithError) Error() string {
	s := strings.TrimRight(e.expr, "") + ": " + e.msg
	if !e.noToken {
		s += " (error token is \"" + e.token + "\")"
	}
	return s
}

// maxArithDepth bounds the recursion of variables holding expressions.
const maxArithDepth = 1024

// arithNode is a parsed expression.
type arithNode interface{}

type (
	aNum struct{ v int64 }
	aVar struct {
		name  string
		index arithNode // nil: no subscript
		key   string    // the subscript's text (associative arrays)
		pos   int
	}
	aUnary struct {
		op byte // ! ~ - +
		x  arithNode
	}
	aIncDec struct {
		inc, post bool
		x         *aVar
		pos       int
	}
	aBin struct {
		op   string
		x, y arithNode
		ypos int // where y starts, for error tokens
	}
	aAssign struct {
		op  string // "" for =, else the operator of op=
		x   *aVar
		y   arithNode
		pos int
	}
	aCond  struct{ c, t, f arithNode }
	aComma struct{ x, y arithNode }
	// aBad is a node that fails when evaluated (a syntax error found
	// while parsing, reported only if reached — bash parses as it goes).
)

// arith evaluates an expression of the script; an error ends the
// command (see fatal).
func (sh *shell) arith(x syntax.ArithmExpr) int64 {
	n, err := sh.arithExpr(x)
	if err != nil {
		sh.fatal(err)
	}
	return n
}

// subscript evaluates an indexed array's subscript: an error ends the
// shell, as in bash.
func (sh *shell) subscript(x syntax.ArithmExpr) int64 {
	n, err := sh.arithExpr(x)
	if err != nil {
		sh.fatal(subscriptErr(err))
	}
	return n
}

// arithExpr evaluates an expression of the script.
func (sh *shell) arithExpr(x syntax.ArithmExpr) (int64, error) {
	if x == nil {
		return 0, nil
	}
	if w, ok := x.(*syntax.Word); ok {
		if lit := w.Lit(); lit != "" {
			if n, err := strconv.ParseInt(lit, 10, 64); err == nil && (lit[0] != '0' || lit == "0") {
				return n, nil
			}
		}
	}
	text := sh.arithText(x)
	return sh.arithString(text)
}

// arithString evaluates expression text.
func (sh *shell) arithString(text string) (int64, error) {
	return sh.arithEval(text, 0)
}

func (sh *shell) arithEval(text string, depth int) (int64, error) {
	if depth > maxArithDepth {
		return 0, &arithError{expr: text, msg: "expression recursion level exceeded", token: text}
	}
	if n, ok := quickNumber(text); ok {
		return n, nil
	}
	node, err := sh.arithParse(text)
	if err != nil {
		return 0, err
	}
	if node == nil {
		return 0, nil
	}
	ev := arithEvaluator{sh: sh, text: text, depth: depth}
	return ev.eval(node)
}

// quickNumber reads a plain decimal number.
func quickNumber(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	i := 0
	neg := false
	if s[0] == '-' {
		neg = true
		i = 1
		if len(s) == 1 {
			return 0, false
		}
	}
	if s[i] == '0' && len(s) > i+1 {
		return 0, false
	}
	n := int64(0)
	for ; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// arithParse parses text (cached per run).
func (sh *shell) arithParse(text string) (arithNode, error) {
	r := sh.r
	r.cacheMu.Lock()
	node, ok := r.arithMemo[text]
	r.cacheMu.Unlock()
	if ok {
		if e, isErr := node.(*arithError); isErr {
			return nil, e
		}
		return node, nil
	}
	p := arithParser{text: text}
	node, err := p.parse()
	r.cacheMu.Lock()
	if len(r.arithMemo) > 8192 {
		r.arithMemo = map[string]arithNode{}
	}
	if err != nil {
		r.arithMemo[text] = err
	} else {
		r.arithMemo[text] = node
	}
	r.cacheMu.Unlock()
	if err != nil {
		return nil, err
	}
	return node, nil
}

// arithText rebuilds the text of an expression of the script, its
// expansions done.
func (sh *shell) arithText(x syntax.ArithmExpr) string {
	var b strings.Builder
	sh.writeArith(&b, x)
	return b.String()
}

func (sh *shell) writeArith(b *strings.Builder, x syntax.ArithmExpr) {
	switch x := x.(type) {
	case *syntax.BinaryArithm:
		if x.Op == syntax.TernQuest {
			sh.writeArith(b, x.X)
			b.WriteString(" ? ")
			if y, ok := x.Y.(*syntax.BinaryArithm); ok && y.Op == syntax.TernColon {
				sh.writeArith(b, y.X)
				b.WriteString(" : ")
				sh.writeArith(b, y.Y)
				return
			}
			sh.writeArith(b, x.Y)
			return
		}
		sh.writeArith(b, x.X)
		b.WriteByte(' ')
		b.WriteString(x.Op.String())
		b.WriteByte(' ')
		sh.writeArith(b, x.Y)
	case *syntax.UnaryArithm:
		if x.Post {
			sh.writeArith(b, x.X)
			b.WriteString(x.Op.String())
			return
		}
		b.WriteString(x.Op.String())
		if x.Op == syntax.Minus || x.Op == syntax.Plus {
			b.WriteByte(' ')
		}
		sh.writeArith(b, x.X)
	case *syntax.ParenArithm:
		b.WriteByte('(')
		sh.writeArith(b, x.X)
		b.WriteByte(')')
	case *syntax.Word:
		sh.writeArithWord(b, x)
	}
}

// writeArithWord writes a word of an expression: names and numbers as
// they are, a naked subscript a[i] with its expression, anything else
// expanded.
func (sh *shell) writeArithWord(b *strings.Builder, w *syntax.Word) {
	if len(w.Parts) == 1 {
		switch p := w.Parts[0].(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
			return
		case *syntax.ParamExp:
			if p.Short && p.Index != nil && !p.Dollar.IsValid() && p.Param != nil {
				// a[i] without $: the subscript stays an expression
				b.WriteString(p.Param.Value)
				b.WriteByte('[')
				if v := sh.getVar(p.Param.Value); v != nil && v.assc != nil {
					b.WriteString(sh.assocKey(p.Index))
				} else {
					sh.writeArith(b, p.Index)
				}
				b.WriteByte(']')
				return
			}
		}
	}
	for _, p := range w.Parts {
		if _, ok := p.(*syntax.SglQuoted); ok {
			// single quotes are not removed in an expression (bash
			// reads it as if in double quotes): they make it fail
			for _, p := range w.Parts {
				if sq, ok := p.(*syntax.SglQuoted); ok {
					v := sq.Value
					if sq.Dollar {
						v = ansiC(v)
					}
					b.WriteString("'" + v + "'")
				} else {
					b.WriteString(sh.expandString(&syntax.Word{Parts: []syntax.WordPart{p}}))
				}
			}
			return
		}
	}
	b.WriteString(sh.expandString(w))
}

// arithParser parses expression text (bash's expr.c grammar).
type arithParser struct {
	text string
	pos  int
	tok  string // the current token
	tpos int    // where it starts
	kind byte   // 'n' number, 'v' name, 'o' operator, 0 end
}

func (p *arithParser) errAt(pos int, msg string) *arithError {
	tok := ""
	if pos < len(p.text) {
		tok = p.text[pos:]
	}
	return &arithError{expr: p.text, msg: msg, token: tok}
}

var arithOps = []string{"<<=", ">>=", "**=", "&&=", "||=", "**", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
	"++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "^=", "|=",
	"+", "-", "*", "/", "%", "<", ">", "&", "^", "|", "!", "~", "?", ":", ",", "=", "(", ")", "[", "]"}

func (p *arithParser) next() error {
	for p.pos < len(p.text) && (p.text[p.pos] == ' ' || p.text[p.pos] == '\t' || p.text[p.pos] == '\n' || p.text[p.pos] == '\r') {
		p.pos++
	}
	p.tpos = p.pos
	if p.pos >= len(p.text) {
		p.tok, p.kind = "", 0
		return nil
	}
	c := p.text[p.pos]
	switch {
	case c >= '0' && c <= '9':
		j := p.pos
		for j < len(p.text) && (isAlnum(p.text[j]) || p.text[j] == '#' || p.text[j] == '@' || p.text[j] == '_') {
			j++
		}
		p.tok, p.kind = p.text[p.pos:j], 'n'
		p.pos = j
		return nil
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		j := p.pos
		for j < len(p.text) && (isAlnum(p.text[j]) || p.text[j] == '_') {
			j++
		}
		p.tok, p.kind = p.text[p.pos:j], 'v'
		p.pos = j
		return nil
	}
	for _, op := range arithOps {
		if strings.HasPrefix(p.text[p.pos:], op) {
			p.tok, p.kind = op, 'o'
			p.pos += len(op)
			return nil
		}
	}
	if c == '\'' || c == '"' {
		// not an operand: "operand expected"
		p.tok, p.kind = string(c), 'o'
		p.pos++
		return nil
	}
	return p.errAt(p.pos, "syntax error: invalid arithmetic operator")
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func (p *arithParser) parse() (arithNode, error) {
	if err := p.next(); err != nil {
		return nil, err
	}
	if p.kind == 0 {
		return nil, nil
	}
	n, err := p.comma()
	if err != nil {
		return nil, err
	}
	if p.kind != 0 {
		return nil, p.errAt(p.tpos, "syntax error in expression")
	}
	return n, nil
}

func (p *arithParser) comma() (arithNode, error) {
	x, err := p.assign()
	if err != nil {
		return nil, err
	}
	for p.kind == 'o' && p.tok == "," {
		if err := p.next(); err != nil {
			return nil, err
		}
		y, err := p.assign()
		if err != nil {
			return nil, err
		}
		x = &aComma{x, y}
	}
	return x, nil
}

func isAssignOp(t string) bool {
	switch t {
	case "=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "^=", "|=", "**=":
		return true
	}
	return false
}

func (p *arithParser) assign() (arithNode, error) {
	start := p.tpos
	x, err := p.cond()
	if err != nil {
		return nil, err
	}
	if p.kind == 'o' && isAssignOp(p.tok) {
		op := p.tok
		v, ok := x.(*aVar)
		if !ok {
			return nil, p.errAt(p.tpos, "attempted assignment to non-variable")
		}
		if err := p.next(); err != nil {
			return nil, err
		}
		y, err := p.assign()
		if err != nil {
			return nil, err
		}
		return &aAssign{op: strings.TrimSuffix(op, "="), x: v, y: y, pos: start}, nil
	}
	return x, nil
}

func (p *arithParser) cond() (arithNode, error) {
	c, err := p.binary(0)
	if err != nil {
		return nil, err
	}
	if p.kind == 'o' && p.tok == "?" {
		if err := p.next(); err != nil {
			return nil, err
		}
		t, err := p.comma()
		if err != nil {
			return nil, err
		}
		if p.kind != 'o' || p.tok != ":" {
			return nil, p.errAt(p.tpos, "syntax error: `:' expected for conditional expression")
		}
		if err := p.next(); err != nil {
			return nil, err
		}
		f, err := p.cond()
		if err != nil {
			return nil, err
		}
		return &aCond{c, t, f}, nil
	}
	return c, nil
}

// binary operator precedence levels, lowest first.
var arithLevels = [][]string{
	{"||"}, {"&&"}, {"|"}, {"^"}, {"&"}, {"==", "!="}, {"<", ">", "<=", ">="}, {"<<", ">>"}, {"+", "-"}, {"*", "/", "%"},
}

func (p *arithParser) binary(level int) (arithNode, error) {
	if level == len(arithLevels) {
		return p.power()
	}
	x, err := p.binary(level + 1)
	if err != nil {
		return nil, err
	}
	for p.kind == 'o' && contains(arithLevels[level], p.tok) {
		op := p.tok
		if err := p.next(); err != nil {
			return nil, err
		}
		ypos := p.tpos
		y, err := p.binary(level + 1)
		if err != nil {
			return nil, err
		}
		x = &aBin{op: op, x: x, y: y, ypos: ypos}
	}
	return x, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (p *arithParser) power() (arithNode, error) {
	x, err := p.unary()
	if err != nil {
		return nil, err
	}
	if p.kind == 'o' && p.tok == "**" {
		if err := p.next(); err != nil {
			return nil, err
		}
		ypos := p.tpos
		y, err := p.power()
		if err != nil {
			return nil, err
		}
		return &aBin{op: "**", x: x, y: y, ypos: ypos}, nil
	}
	return x, nil
}

func (p *arithParser) unary() (arithNode, error) {
	if p.kind == 'o' {
		switch p.tok {
		case "!", "~", "-", "+":
			op := p.tok[0]
			if err := p.next(); err != nil {
				return nil, err
			}
			x, err := p.unary()
			if err != nil {
				return nil, err
			}
			return &aUnary{op: op, x: x}, nil
		case "++", "--":
			inc := p.tok == "++"
			pos := p.tpos
			if err := p.next(); err != nil {
				return nil, err
			}
			if p.kind != 'v' {
				// ++5 is +(+5) in bash
				x, err := p.unary()
				if err != nil {
					return nil, err
				}
				op := byte('+')
				if !inc {
					op = '-'
				}
				return &aUnary{op: op, x: &aUnary{op: op, x: x}}, nil
			}
			x, err := p.primary()
			if err != nil {
				return nil, err
			}
			v, ok := x.(*aVar)
			if !ok {
				return nil, p.errAt(pos, "syntax error: operand expected")
			}
			return &aIncDec{inc: inc, x: v, pos: pos}, nil
		}
	}
	x, err := p.primary()
	if err != nil {
		return nil, err
	}
	if v, ok := x.(*aVar); ok && p.kind == 'o' && (p.tok == "++" || p.tok == "--") {
		inc := p.tok == "++"
		pos := p.tpos
		if err := p.next(); err != nil {
			return nil, err
		}
		return &aIncDec{inc: inc, post: true, x: v, pos: pos}, nil
	}
	return x, nil
}

func (p *arithParser) primary() (arithNode, error) {
	switch p.kind {
	case 'n':
		n, err := parseArithNumber(p.tok)
		if err != nil {
			e := p.errAt(p.tpos, err.Error())
			e.token = p.tok
			return nil, e
		}
		if err := p.next(); err != nil {
			return nil, err
		}
		return &aNum{n}, nil
	case 'v':
		v := &aVar{name: p.tok, pos: p.tpos}
		if err := p.next(); err != nil {
			return nil, err
		}
		if p.kind == 'o' && p.tok == "[" {
			start := p.pos
			// the subscript's text, for associative arrays
			depth := 1
			j := start
			for j < len(p.text) && depth > 0 {
				switch p.text[j] {
				case '[':
					depth++
				case ']':
					depth--
				}
				j++
			}
			if depth != 0 {
				return nil, p.errAt(start, "bad array subscript")
			}
			v.key = strings.TrimSpace(p.text[start : j-1])
			if strings.ContainsAny(v.key, "$`") {
				// a[$(cmd)] in a variable's value: expanded when read
				v.index = &aDeferred{text: v.key}
			} else {
				sub := arithParser{text: p.text[start : j-1]}
				idx, err := sub.parse()
				if err != nil {
					v.index = &aBad{err: err}
				} else {
					v.index = idx
					if idx == nil {
						v.index = &aNum{0}
					}
				}
			}
			p.pos = j
			if err := p.next(); err != nil {
				return nil, err
			}
		}
		return v, nil
	case 'o':
		if p.tok == "(" {
			if err := p.next(); err != nil {
				return nil, err
			}
			x, err := p.comma()
			if err != nil {
				return nil, err
			}
			if p.kind != 'o' || p.tok != ")" {
				return nil, p.errAt(p.tpos, "syntax error: missing `)'")
			}
			if err := p.next(); err != nil {
				return nil, err
			}
			return x, nil
		}
	}
	return nil, p.errAt(p.tpos, "syntax error: operand expected")
}

// aBad is a subscript that did not parse: an error when evaluated.
type aBad struct{ err error }

// aDeferred is a subscript with expansions, expanded when evaluated.
type aDeferred struct{ text string }

// parseArithNumber reads 12, 0x1f, 017, 2#101, 64#zZ.
func parseArithNumber(s string) (int64, error) {
	base := int64(10)
	digits := s
	switch {
	case strings.Contains(s, "#"):
		b, rest, _ := strings.Cut(s, "#")
		n, err := strconv.ParseInt(b, 10, 64)
		if len(b) > 1 && b[0] == '0' {
			return 0, errString("invalid number")
		}
		if err != nil || n < 2 || n > 64 {
			return 0, errString("invalid arithmetic base")
		}
		base, digits = n, rest
		if digits == "" {
			return 0, errString("invalid integer constant")
		}
	case len(s) > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'):
		base, digits = 16, s[2:]
		if digits == "" {
			return 0, errString("invalid integer constant")
		}
	case len(s) > 1 && s[0] == '0':
		base, digits = 8, s[1:]
	}
	var n int64
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		var d int64
		switch {
		case c >= '0' && c <= '9':
			d = int64(c - '0')
		case c >= 'a' && c <= 'z':
			d = int64(c-'a') + 10
		case c >= 'A' && c <= 'Z':
			d = int64(c - 'A')
			if base <= 36 {
				d += 10
			} else {
				d += 36
			}
		case c == '@':
			d = 62
		case c == '_':
			d = 63
		default:
			return 0, errString("invalid number")
		}
		if d >= base {
			return 0, errString("value too great for base")
		}
		n = n*base + d
	}
	return n, nil
}

type errString string

func (e errString) Error() string { return string(e) }

// arithEvaluator evaluates a parsed expression.
type arithEvaluator struct {
	sh    *shell
	text  string
	depth int
}

func (ev *arithEvaluator) err(pos int, msg string) error {
	tok := ""
	if pos >= 0 && pos < len(ev.text) {
		tok = ev.text[pos:]
	}
	return &arithError{expr: ev.text, msg: msg, token: tok}
}

func (ev *arithEvaluator) eval(n arithNode) (int64, error) {
	switch n := n.(type) {
	case *aNum:
		return n.v, nil
	case *aVar:
		return ev.readVar(n)
	case *aUnary:
		x, err := ev.eval(n.x)
		if err != nil {
			return 0, err
		}
		switch n.op {
		case '!':
			return b2i(x == 0), nil
		case '~':
			return ^x, nil
		case '-':
			return -x, nil
		}
		return x, nil
	case *aIncDec:
		x, err := ev.readVar(n.x)
		if err != nil {
			return 0, err
		}
		nv := x + 1
		if !n.inc {
			nv = x - 1
		}
		if err := ev.assign(n.x, nv); err != nil {
			return 0, err
		}
		if n.post {
			return x, nil
		}
		return nv, nil
	case *aBin:
		switch n.op {
		case "&&":
			x, err := ev.eval(n.x)
			if err != nil || x == 0 {
				return 0, err
			}
			y, err := ev.eval(n.y)
			return b2i(y != 0), err
		case "||":
			x, err := ev.eval(n.x)
			if err != nil {
				return 0, err
			}
			if x != 0 {
				return 1, nil
			}
			y, err := ev.eval(n.y)
			return b2i(y != 0), err
		}
		x, err := ev.eval(n.x)
		if err != nil {
			return 0, err
		}
		y, err := ev.eval(n.y)
		if err != nil {
			return 0, err
		}
		return ev.binop(n.op, x, y, n.ypos)
	case *aAssign:
		y, err := ev.eval(n.y)
		if err != nil {
			return 0, err
		}
		if n.op != "" {
			x, err := ev.readVar(n.x)
			if err != nil {
				return 0, err
			}
			y, err = ev.binop(n.op, x, y, n.pos)
			if err != nil {
				return 0, err
			}
		}
		return y, ev.assign(n.x, y)
	case *aCond:
		c, err := ev.eval(n.c)
		if err != nil {
			return 0, err
		}
		if c != 0 {
			return ev.eval(n.t)
		}
		return ev.eval(n.f)
	case *aComma:
		if _, err := ev.eval(n.x); err != nil {
			return 0, err
		}
		return ev.eval(n.y)
	case *aBad:
		return 0, n.err
	case *aDeferred:
		return ev.sh.arithString(ev.sh.expandSubscript(n.text))
	}
	return 0, nil
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func (ev *arithEvaluator) binop(op string, x, y int64, ypos int) (int64, error) {
	switch op {
	case "+":
		return x + y, nil
	case "-":
		return x - y, nil
	case "*":
		return x * y, nil
	case "/", "%":
		if y == 0 {
			return 0, ev.err(ypos, "division by 0")
		}
		if x == -1<<63 && y == -1 {
			if op == "/" {
				return x, nil
			}
			return 0, nil
		}
		if op == "/" {
			return x / y, nil
		}
		return x % y, nil
	case "**":
		if y < 0 {
			return 0, ev.err(ypos, "exponent less than 0")
		}
		r := int64(1)
		for y > 0 {
			if y&1 == 1 {
				r *= x
			}
			x *= x
			y >>= 1
		}
		return r, nil
	case "<<":
		return x << (uint64(y) & 63), nil
	case ">>":
		return x >> (uint64(y) & 63), nil
	case "<":
		return b2i(x < y), nil
	case ">":
		return b2i(x > y), nil
	case "<=":
		return b2i(x <= y), nil
	case ">=":
		return b2i(x >= y), nil
	case "==":
		return b2i(x == y), nil
	case "!=":
		return b2i(x != y), nil
	case "&":
		return x & y, nil
	case "^":
		return x ^ y, nil
	case "|":
		return x | y, nil
	}
	return 0, ev.err(ypos, "syntax error: invalid arithmetic operator")
}

// readVar reads a variable as a number: its value evaluated as an
// expression (empty or unset: 0).
func (ev *arithEvaluator) readVar(v *aVar) (int64, error) {
	sh := ev.sh
	var s string
	var ok bool
	if v.index != nil {
		vr := sh.getVar(v.name)
		if vr == nil {
			if _, err := ev.eval(v.index); err != nil {
				return 0, subscriptErr(err)
			}
		} else {
			if vr.assc != nil {
				s, ok = vr.assc.get(ev.assocKey(v))
			} else {
				idx, err := ev.eval(v.index)
				if err != nil {
					return 0, subscriptErr(err)
				}
				s, ok = sh.element(vr, strconv.FormatInt(idx, 10))
			}
		}
	} else {
		s, ok = sh.varValue(v.name)
	}
	if !ok {
		if sh.opts.nounset {
			name := v.name
			if v.index != nil {
				name += "[" + v.key + "]"
			}
			sh.exitFatal(name + ": unbound variable")
		}
		return 0, nil
	}
	if s == "" {
		return 0, nil
	}
	if n, ok := quickNumber(s); ok {
		return n, nil
	}
	return sh.arithEval(s, ev.depth+1)
}

// assocKey is the key of m[key] in an expression: its text, with
// $-expansions already done.
func (ev *arithEvaluator) assocKey(v *aVar) string {
	if _, ok := v.index.(*aDeferred); ok {
		return ev.sh.expandSubscript(v.key)
	}
	return v.key
}

func (ev *arithEvaluator) assign(v *aVar, n int64) error {
	sh := ev.sh
	val := strconv.FormatInt(n, 10)
	if v.index != nil {
		vr := sh.getVar(v.name)
		if vr != nil && vr.assc != nil {
			return sh.setElem(v.name, ev.assocKey(v), val, false)
		}
		idx, err := ev.eval(v.index)
		if err != nil {
			return subscriptErr(err)
		}
		return sh.setElem(v.name, strconv.FormatInt(idx, 10), val, false)
	}
	return sh.setString(v.name, val, false)
}
