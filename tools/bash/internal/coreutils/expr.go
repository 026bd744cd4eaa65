package coreutils

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// exprCmd evaluates an expression: expr ARG... with | & < <= = == != >=
// > + - * / % : (match), match, substr, index, length and parentheses.
// Exit 0 when the value is neither null nor 0, 1 when it is, 2 on error.
func exprCmd(c *cmd, args []string) int {
	p := &exprParser{args: args}
	v, err := p.or()
	if err == nil && p.i < len(p.args) {
		err = fmt.Errorf("syntax error: unexpected argument %s", quote(p.args[p.i]))
	}
	if err != nil {
		return c.errf(2, "%v", err)
	}
	c.out.WriteString(v + "\n")
	if v == "" || v == "0" || v == "-0" {
		return c.done(1)
	}
	return c.done(0)
}

type exprParser struct {
	args []string
	i    int
}

func (p *exprParser) peek() string {
	if p.i < len(p.args) {
		return p.args[p.i]
	}
	return ""
}

func (p *exprParser) more() bool { return p.i < len(p.args) }

func exprInt(s string) (*big.Int, bool) {
	n, ok := new(big.Int).SetString(strings.TrimPrefix(s, "+"), 10)
	return n, ok && s != ""
}

func (p *exprParser) or() (string, error) {
	l, err := p.and()
	for err == nil && p.peek() == "|" && p.more() {
		p.i++
		var r string
		if r, err = p.and(); err != nil {
			break
		}
		if l == "" || l == "0" {
			l = r
		}
		if l == "" {
			l = "0"
		}
	}
	return l, err
}

func (p *exprParser) and() (string, error) {
	l, err := p.compare()
	for err == nil && p.peek() == "&" && p.more() {
		p.i++
		var r string
		if r, err = p.compare(); err != nil {
			break
		}
		if l == "" || l == "0" || r == "" || r == "0" {
			l = "0"
		}
	}
	return l, err
}

func (p *exprParser) compare() (string, error) {
	l, err := p.additive()
	for err == nil {
		op := p.peek()
		switch op {
		case "<", "<=", "=", "==", "!=", ">=", ">":
		default:
			return l, nil
		}
		p.i++
		var r string
		if r, err = p.additive(); err != nil {
			break
		}
		var cmp int
		ln, lok := exprInt(l)
		rn, rok := exprInt(r)
		if lok && rok {
			cmp = ln.Cmp(rn)
		} else {
			cmp = strings.Compare(l, r)
		}
		res := map[string]bool{"<": cmp < 0, "<=": cmp <= 0, "=": cmp == 0, "==": cmp == 0, "!=": cmp != 0, ">=": cmp >= 0, ">": cmp > 0}[op]
		l = "0"
		if res {
			l = "1"
		}
	}
	return l, err
}

func (p *exprParser) additive() (string, error) {
	l, err := p.multiplicative()
	for err == nil && (p.peek() == "+" || p.peek() == "-") {
		op := p.peek()
		p.i++
		var r string
		if r, err = p.multiplicative(); err != nil {
			break
		}
		l, err = exprArith(op, l, r)
	}
	return l, err
}

func (p *exprParser) multiplicative() (string, error) {
	l, err := p.match()
	for err == nil && (p.peek() == "*" || p.peek() == "/" || p.peek() == "%") {
		op := p.peek()
		p.i++
		var r string
		if r, err = p.match(); err != nil {
			break
		}
		l, err = exprArith(op, l, r)
	}
	return l, err
}

func exprArith(op, l, r string) (string, error) {
	a, ok1 := exprInt(l)
	b, ok2 := exprInt(r)
	if !ok1 || !ok2 {
		return "", fmt.Errorf("non-integer argument")
	}
	switch op {
	case "+":
		return new(big.Int).Add(a, b).String(), nil
	case "-":
		return new(big.Int).Sub(a, b).String(), nil
	case "*":
		return new(big.Int).Mul(a, b).String(), nil
	}
	if b.Sign() == 0 {
		return "", fmt.Errorf("division by zero")
	}
	q, m := new(big.Int).QuoRem(a, b, new(big.Int))
	if op == "/" {
		return q.String(), nil
	}
	return m.String(), nil
}

func (p *exprParser) match() (string, error) {
	l, err := p.unary()
	for err == nil && p.peek() == ":" {
		p.i++
		var r string
		if r, err = p.unary(); err != nil {
			break
		}
		l, err = exprMatch(l, r)
	}
	return l, err
}

// exprMatch anchors a basic regular expression at the start: the
// matched length, or the first \(group\).
func exprMatch(s, pat string) (string, error) {
	re, err := compileRegex("^(?:"+breToERE(pat)+")", true, false)
	if err != nil {
		return "", fmt.Errorf("invalid regular expression: %v", err)
	}
	m := re.FindStringSubmatch(s)
	if re.NumSubexp() > 0 {
		if m == nil {
			return "", nil
		}
		return m[1], nil
	}
	if m == nil {
		return "0", nil
	}
	return strconv.Itoa(utf8.RuneCountInString(m[0])), nil
}

func (p *exprParser) unary() (string, error) {
	if !p.more() {
		return "", fmt.Errorf("syntax error: missing argument")
	}
	a := p.args[p.i]
	switch a {
	case "(":
		p.i++
		v, err := p.or()
		if err != nil {
			return "", err
		}
		if p.peek() != ")" || !p.more() {
			return "", fmt.Errorf("syntax error: expecting ')'")
		}
		p.i++
		return v, nil
	case "match":
		if p.i+2 < len(p.args) {
			p.i += 3
			return exprMatch(p.args[p.i-2], p.args[p.i-1])
		}
	case "length":
		if p.i+1 < len(p.args) {
			p.i += 2
			return strconv.Itoa(utf8.RuneCountInString(p.args[p.i-1])), nil
		}
	case "index":
		if p.i+2 < len(p.args) {
			p.i += 3
			s, chars := p.args[p.i-2], p.args[p.i-1]
			for i, r := range []rune(s) {
				if strings.ContainsRune(chars, r) {
					return strconv.Itoa(i + 1), nil
				}
			}
			return "0", nil
		}
	case "substr":
		if p.i+3 < len(p.args) {
			p.i += 4
			s := []rune(p.args[p.i-3])
			pos, err1 := strconv.Atoi(p.args[p.i-2])
			n, err2 := strconv.Atoi(p.args[p.i-1])
			if err1 != nil || err2 != nil || pos < 1 || n < 1 || pos > len(s) {
				return "", nil
			}
			end := min(len(s), pos-1+n)
			return string(s[pos-1 : end]), nil
		}
	case "+":
		if p.i+1 < len(p.args) {
			p.i += 2
			return p.args[p.i-1], nil
		}
	}
	p.i++
	return a, nil
}
