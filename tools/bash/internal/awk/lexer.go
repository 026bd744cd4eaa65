package awk

import (
	"fmt"
	"strconv"
	"strings"
)

// tokKind is the kind of a token.
type tokKind int

const (
	tEOF tokKind = iota
	tNewline
	tLBrace
	tRBrace
	tLParen
	tRParen
	tLBracket
	tRBracket
	tSemicolon
	tComma
	tPlus
	tMinus
	tStar
	tSlash
	tPercent
	tCaret
	tNot
	tGreater
	tLess
	tPipe
	tQuestion
	tColon
	tTilde
	tNoMatch
	tDollar
	tAssign
	tAddAssign
	tSubAssign
	tMulAssign
	tDivAssign
	tModAssign
	tPowAssign
	tEqual
	tLessEqual
	tGreaterEqual
	tNotEqual
	tIncr
	tDecr
	tAnd
	tOr
	tAppend
	tPipeAll // |& (refused)

	tNumber
	tString
	tRegex
	tName
	tFuncName // a name followed directly by '('
	tBuiltin  // a builtin function name

	// keywords
	tBegin
	tEnd
	tFunction
	tIf
	tElse
	tWhile
	tFor
	tDo
	tBreak
	tContinue
	tNext
	tNextfile
	tExit
	tReturn
	tDelete
	tIn
	tGetline
	tPrint
	tPrintf
)

var tokNames = map[tokKind]string{
	tEOF: "end of program", tNewline: "newline", tLBrace: "{", tRBrace: "}", tLParen: "(", tRParen: ")",
	tLBracket: "[", tRBracket: "]", tSemicolon: ";", tComma: ",", tPlus: "+", tMinus: "-", tStar: "*",
	tSlash: "/", tPercent: "%", tCaret: "^", tNot: "!", tGreater: ">", tLess: "<", tPipe: "|",
	tQuestion: "?", tColon: ":", tTilde: "~", tNoMatch: "!~", tDollar: "$", tAssign: "=",
	tAddAssign: "+=", tSubAssign: "-=", tMulAssign: "*=", tDivAssign: "/=", tModAssign: "%=",
	tPowAssign: "^=", tEqual: "==", tLessEqual: "<=", tGreaterEqual: ">=", tNotEqual: "!=",
	tIncr: "++", tDecr: "--", tAnd: "&&", tOr: "||", tAppend: ">>", tPipeAll: "|&",
	tNumber: "number", tString: "string", tRegex: "regular expression", tName: "name",
	tFuncName: "function name", tBuiltin: "builtin function",
	tBegin: "BEGIN", tEnd: "END", tFunction: "function", tIf: "if", tElse: "else", tWhile: "while",
	tFor: "for", tDo: "do", tBreak: "break", tContinue: "continue", tNext: "next", tNextfile: "nextfile",
	tExit: "exit", tReturn: "return", tDelete: "delete", tIn: "in", tGetline: "getline",
	tPrint: "print", tPrintf: "printf",
}

func (k tokKind) String() string {
	if s, ok := tokNames[k]; ok {
		return s
	}
	return fmt.Sprintf("token %d", int(k))
}

var keywords = map[string]tokKind{
	"BEGIN": tBegin, "END": tEnd, "function": tFunction, "func": tFunction, "if": tIf, "else": tElse,
	"while": tWhile, "for": tFor, "do": tDo, "break": tBreak, "continue": tContinue, "next": tNext,
	"nextfile": tNextfile, "exit": tExit, "return": tReturn, "delete": tDelete, "in": tIn,
	"getline": tGetline, "print": tPrint, "printf": tPrintf,
}

// builtinNames are the builtin functions.
var builtinNames = map[string]bool{
	"length": true, "substr": true, "index": true, "split": true, "sub": true, "gsub": true,
	"match": true, "sprintf": true, "sin": true, "cos": true, "atan2": true, "exp": true, "log": true,
	"sqrt": true, "int": true, "rand": true, "srand": true, "tolower": true, "toupper": true,
	"system": true, "close": true, "fflush": true, "gensub": true,
}

type token struct {
	kind tokKind
	str  string  // names, strings, regexes
	num  float64 // numbers
	line int
	col  int
}

// lexer turns awk source into tokens. Whether a '/' starts a regular
// expression or divides depends on the previous token, as in every awk.
type lexer struct {
	src  string
	pos  int
	line int
	col  int
	last tokKind
}

func newLexer(src string) *lexer { return &lexer{src: src, line: 1, col: 1, last: tNewline} }

// SyntaxError is a problem in an awk program's source, at a line and
// column.
type SyntaxError struct {
	Line, Col int
	Msg       string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("syntax error at source line %d, column %d: %s", e.Line, e.Col, e.Msg)
}

func (l *lexer) errf(format string, args ...any) *SyntaxError {
	return &SyntaxError{Line: l.line, Col: l.col, Msg: fmt.Sprintf(format, args...)}
}

func (l *lexer) advance(n int) {
	for range n {
		if l.pos < len(l.src) && l.src[l.pos] == '\n' {
			l.line++
			l.col = 1
		} else {
			l.col++
		}
		l.pos++
	}
}

// regexAllowed reports whether a '/' after the previous token starts a
// regular expression.
func (l *lexer) regexAllowed() bool {
	switch l.last {
	case tName, tNumber, tString, tRegex, tRParen, tRBracket, tDollar, tIncr, tDecr, tBuiltin:
		return false
	}
	return true
}

func (l *lexer) next() (token, error) {
	tok, err := l.scan()
	if err == nil {
		l.last = tok.kind
	}
	return tok, err
}

func (l *lexer) scan() (token, error) {
	// Skip blanks, comments and escaped newlines.
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			l.advance(1)
		case c == '\\' && l.pos+1 < len(l.src) && l.src[l.pos+1] == '\n':
			l.advance(2)
		case c == '\\' && l.pos+2 < len(l.src) && l.src[l.pos+1] == '\r' && l.src[l.pos+2] == '\n':
			l.advance(3)
		case c == '#':
			for l.pos < len(l.src) && l.src[l.pos] != '\n' {
				l.advance(1)
			}
		default:
			goto token
		}
	}
token:
	tok := token{line: l.line, col: l.col}
	if l.pos >= len(l.src) {
		tok.kind = tEOF
		return tok, nil
	}
	c := l.src[l.pos]
	two := ""
	if l.pos+1 < len(l.src) {
		two = l.src[l.pos : l.pos+2]
	}
	simple := func(k tokKind, n int) (token, error) {
		tok.kind = k
		l.advance(n)
		return tok, nil
	}
	switch two {
	case "+=":
		return simple(tAddAssign, 2)
	case "-=":
		return simple(tSubAssign, 2)
	case "*=":
		return simple(tMulAssign, 2)
	case "%=":
		return simple(tModAssign, 2)
	case "^=":
		return simple(tPowAssign, 2)
	case "==":
		return simple(tEqual, 2)
	case "<=":
		return simple(tLessEqual, 2)
	case ">=":
		return simple(tGreaterEqual, 2)
	case "!=":
		return simple(tNotEqual, 2)
	case "++":
		return simple(tIncr, 2)
	case "--":
		return simple(tDecr, 2)
	case "&&":
		return simple(tAnd, 2)
	case "||":
		return simple(tOr, 2)
	case ">>":
		return simple(tAppend, 2)
	case "!~":
		return simple(tNoMatch, 2)
	case "|&":
		return simple(tPipeAll, 2)
	case "**":
		if l.pos+2 < len(l.src) && l.src[l.pos+2] == '=' {
			return simple(tPowAssign, 3)
		}
		return simple(tCaret, 2)
	case "/=":
		if !l.regexAllowed() {
			return simple(tDivAssign, 2)
		}
	}
	switch c {
	case '\n':
		return simple(tNewline, 1)
	case '{':
		return simple(tLBrace, 1)
	case '}':
		return simple(tRBrace, 1)
	case '(':
		return simple(tLParen, 1)
	case ')':
		return simple(tRParen, 1)
	case '[':
		return simple(tLBracket, 1)
	case ']':
		return simple(tRBracket, 1)
	case ';':
		return simple(tSemicolon, 1)
	case ',':
		return simple(tComma, 1)
	case '+':
		return simple(tPlus, 1)
	case '-':
		return simple(tMinus, 1)
	case '*':
		return simple(tStar, 1)
	case '%':
		return simple(tPercent, 1)
	case '^':
		return simple(tCaret, 1)
	case '!':
		return simple(tNot, 1)
	case '>':
		return simple(tGreater, 1)
	case '<':
		return simple(tLess, 1)
	case '|':
		return simple(tPipe, 1)
	case '?':
		return simple(tQuestion, 1)
	case ':':
		return simple(tColon, 1)
	case '~':
		return simple(tTilde, 1)
	case '$':
		return simple(tDollar, 1)
	case '=':
		return simple(tAssign, 1)
	case '/':
		if !l.regexAllowed() {
			return simple(tSlash, 1)
		}
		return l.regex(tok)
	case '"':
		return l.str(tok)
	}
	if c >= '0' && c <= '9' || c == '.' && l.pos+1 < len(l.src) && l.src[l.pos+1] >= '0' && l.src[l.pos+1] <= '9' {
		return l.number(tok)
	}
	if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
		start := l.pos
		for l.pos < len(l.src) {
			d := l.src[l.pos]
			if d == '_' || d >= 'a' && d <= 'z' || d >= 'A' && d <= 'Z' || d >= '0' && d <= '9' {
				l.advance(1)
				continue
			}
			break
		}
		name := l.src[start:l.pos]
		tok.str = name
		if k, ok := keywords[name]; ok {
			tok.kind = k
			return tok, nil
		}
		if builtinNames[name] {
			tok.kind = tBuiltin
			return tok, nil
		}
		tok.kind = tName
		if l.pos < len(l.src) && l.src[l.pos] == '(' {
			tok.kind = tFuncName
		}
		return tok, nil
	}
	return tok, l.errf("unexpected character %q", c)
}

func (l *lexer) number(tok token) (token, error) {
	start := l.pos
	s := l.src
	if l.pos+1 < len(s) && s[l.pos] == '0' && (s[l.pos+1] == 'x' || s[l.pos+1] == 'X') {
		l.advance(2)
		for l.pos < len(s) && isHexDigit(s[l.pos]) {
			l.advance(1)
		}
		v, err := strconv.ParseUint(s[start+2:l.pos], 16, 64)
		if err != nil {
			return tok, l.errf("invalid number %q", s[start:l.pos])
		}
		tok.kind, tok.num = tNumber, float64(v)
		return tok, nil
	}
	for l.pos < len(s) && (s[l.pos] >= '0' && s[l.pos] <= '9' || s[l.pos] == '.') {
		l.advance(1)
	}
	if l.pos < len(s) && (s[l.pos] == 'e' || s[l.pos] == 'E') {
		j := l.pos + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && s[j] >= '0' && s[j] <= '9' {
			l.advance(j - l.pos)
			for l.pos < len(s) && s[l.pos] >= '0' && s[l.pos] <= '9' {
				l.advance(1)
			}
		}
	}
	text := s[start:l.pos]
	if len(text) > 1 && text[0] == '0' && strings.Trim(text, "01234567") == "" {
		// A leading 0 makes an octal constant, as in gawk.
		if v, err := strconv.ParseUint(text, 8, 64); err == nil {
			tok.kind, tok.num = tNumber, float64(v)
			return tok, nil
		}
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		// "1.2.3" lexes as 1.2 followed by .3 in awk; take the longest
		// valid prefix.
		for end := len(text) - 1; end > 0; end-- {
			if v, err = strconv.ParseFloat(text[:end], 64); err == nil {
				l.pos, l.col = start+end, l.col-(len(text)-end)
				break
			}
		}
		if err != nil {
			return tok, l.errf("invalid number %q", text)
		}
	}
	tok.kind, tok.num = tNumber, v
	return tok, nil
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func (l *lexer) str(tok token) (token, error) {
	l.advance(1)
	var b strings.Builder
	for {
		if l.pos >= len(l.src) || l.src[l.pos] == '\n' {
			return tok, &SyntaxError{Line: tok.line, Col: tok.col, Msg: "unterminated string"}
		}
		c := l.src[l.pos]
		if c == '"' {
			l.advance(1)
			break
		}
		if c == '\\' && l.pos+1 < len(l.src) {
			n := l.src[l.pos+1]
			if n == '\n' {
				l.advance(2)
				continue
			}
			l.advance(1)
			l.escape(&b)
			continue
		}
		b.WriteByte(c)
		l.advance(1)
	}
	tok.kind, tok.str = tString, b.String()
	return tok, nil
}

// escape reads the escape sequence after a backslash (at l.pos) into b.
// An unknown escape keeps its backslash, as bwk awk and mawk do, so that
// "\." used as a regular expression still matches a dot.
func (l *lexer) escape(b *strings.Builder) {
	c := l.src[l.pos]
	switch c {
	case 'n':
		b.WriteByte('\n')
	case 't':
		b.WriteByte('\t')
	case 'r':
		b.WriteByte('\r')
	case '\\':
		b.WriteByte('\\')
	case '"':
		b.WriteByte('"')
	case '/':
		b.WriteByte('/')
	case 'a':
		b.WriteByte(7)
	case 'b':
		b.WriteByte(8)
	case 'f':
		b.WriteByte(12)
	case 'v':
		b.WriteByte(11)
	case '0', '1', '2', '3', '4', '5', '6', '7':
		v := 0
		n := 0
		for n < 3 && l.pos < len(l.src) && l.src[l.pos] >= '0' && l.src[l.pos] <= '7' {
			v = v*8 + int(l.src[l.pos]-'0')
			l.advance(1)
			n++
		}
		b.WriteByte(byte(v))
		return
	default:
		b.WriteByte('\\')
		b.WriteByte(c)
	}
	l.advance(1)
}

func (l *lexer) regex(tok token) (token, error) {
	l.advance(1)
	var b strings.Builder
	inBracket := false
	for {
		if l.pos >= len(l.src) || l.src[l.pos] == '\n' {
			return tok, &SyntaxError{Line: tok.line, Col: tok.col, Msg: "unterminated regular expression"}
		}
		c := l.src[l.pos]
		if c == '\\' && l.pos+1 < len(l.src) {
			if l.src[l.pos+1] == '/' {
				b.WriteByte('/')
			} else {
				b.WriteByte('\\')
				b.WriteByte(l.src[l.pos+1])
			}
			l.advance(2)
			continue
		}
		switch {
		case c == '[' && !inBracket:
			inBracket = true
			b.WriteByte(c)
			l.advance(1)
			if l.pos < len(l.src) && l.src[l.pos] == '^' {
				b.WriteByte('^')
				l.advance(1)
			}
			if l.pos < len(l.src) && l.src[l.pos] == ']' {
				b.WriteByte(']')
				l.advance(1)
			}
			continue
		case c == '[' && inBracket && l.pos+1 < len(l.src) && l.src[l.pos+1] == ':':
			end := strings.Index(l.src[l.pos:], ":]")
			if end > 0 && !strings.Contains(l.src[l.pos:l.pos+end], "\n") {
				b.WriteString(l.src[l.pos : l.pos+end+2])
				l.advance(end + 2)
				continue
			}
		case c == ']' && inBracket:
			inBracket = false
		case c == '/' && !inBracket:
			l.advance(1)
			tok.kind, tok.str = tRegex, b.String()
			return tok, nil
		}
		b.WriteByte(c)
		l.advance(1)
	}
}
