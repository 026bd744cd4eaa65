package shell

import (
	"errors"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Where mvdan's parser and bash's differ, a script bash runs may not
// parse. repair rewrites the text around a parse error into an
// equivalent mvdan parses, for the known cases:
//
//   - "((" that is not arithmetic but two subshells: bash tries
//     arithmetic and falls back; here "( (" is tried;
//   - arithmetic bash only checks when it evaluates it ($(( ${base}#a )),
//     $(( x$foo = 1 ))): the expression is carried as text,
//     $(__sh_arith_ "text") and __sh_arithcmd_ "text", and evaluated
//     as bash does (see arithCarrier);
//   - a parameter expansion bash rejects only when it expands it
//     (${a[0][0]}, ${#x/a/b}: "bad substitution", which ends the command,
//     not the script) or reads otherwise (${a[@]: :}: empty offset and
//     length are 0): $(__sh_param_ 'text'), see paramCarried.

const (
	arithCarrier    = ReservedPrefix + "arith_"
	arithCmdCarrier = ReservedPrefix + "arithcmd_"
	paramCarrier    = ReservedPrefix + "param_"
	badFuncCarrier  = ReservedPrefix + "badfunc_"
	badLineCarrier  = ReservedPrefix + "badline_"
	// catCarrier copies its stdin to its stdout: <(< file) runs it.
	catCarrier = ReservedPrefix + "cat_"
)

// ReservedPrefix starts the names the shell uses for itself (the
// carriers above); an embedder's commands may not start with it.
const ReservedPrefix = "__sh_"

// maxRepairs bounds the rewrites of one text.
const maxRepairs = 20

// repairText rewrites text until it parses or nothing helps; ok is false
// when it still does not parse.
func repairText(text string, err error) (string, bool) {
	repaired := false
	for range maxRepairs {
		off, ok := errOffset(text, err)
		if !ok {
			break
		}
		fixed, ok := repairAt(text, off)
		if !ok {
			var msg string
			var pe syntax.ParseError
			var le syntax.LangError
			switch {
			case errors.As(err, &pe):
				msg = pe.Text
			case errors.As(err, &le):
				// a zsh or mksh feature (${(M)x}): bash's bad substitution
				msg = le.Error()
			default:
				return text, repaired
			}
			if fixed, ok = repairParam(text, off, msg); !ok {
				if fixed, ok = repairNames(text, off, msg); !ok {
					if fixed, ok = repairSubscript(text, off); !ok {
						if fixed, ok = repairInlineArray(text, off, msg); !ok {
							if fixed, ok = repairHeredocWord(text, off, msg); !ok {
								if fixed, ok = repairElemList(text, off, msg); !ok {
									if fixed, ok = repairLet(text, off); !ok {
										if fixed, ok = repairEmptyExtglob(text, off); !ok {
											if fixed, ok = repairNestedArray(text, off, msg); !ok {
												break
											}
										}
									}
								}
							}
						}
					}
				}
			}
		}
		repaired = true
		nerr := parseErr(fixed)
		text, err = fixed, nerr
		if nerr == nil {
			break
		}
	}
	// what is left (if anything) is reported when the shell gets there
	return text, repaired
}

func parseErr(text string) error {
	p := parsers.Get().(*syntax.Parser)
	defer parsers.Put(p)
	_, err := p.Parse(strings.NewReader(text), "")
	return err
}

// errOffset is the byte offset of a parse error in text.
func errOffset(text string, err error) (int, bool) {
	var pos syntax.Pos
	var pe syntax.ParseError
	var le syntax.LangError
	switch {
	case errors.As(err, &pe):
		pos = pe.Pos
	case errors.As(err, &le):
		pos = le.Pos
	default:
		return 0, false
	}
	line, col := int(pos.Line()), int(pos.Col())
	if line <= 0 {
		return len(text), true
	}
	off := 0
	for l := 1; l < line; l++ {
		i := strings.IndexByte(text[off:], '\n')
		if i < 0 {
			return len(text), true
		}
		off += i + 1
	}
	off += max(col-1, 0)
	return min(off, len(text)), true
}

// repairNames handles names bash rejects when it runs the command:
// export a-b=1 (the word is quoted: "not a valid identifier" from
// export), $x-y() { ...; } (a carrier reports it; the body does not
// run).
func repairNames(text string, off int, msg string) (string, bool) {
	start := off
	for start > 0 && strings.IndexByte(" \t\n;&|(", text[start-1]) < 0 {
		start--
	}
	// let's arguments are words to bash ("let z=y*3  # comment")
	ls := start
	for ls > 0 && strings.IndexByte("\n;&|", text[ls-1]) < 0 {
		ls--
	}
	for ls < off && (text[ls] == ' ' || text[ls] == '\t') {
		ls++
	}
	if strings.HasPrefix(text[ls:], "let ") {
		fixed := text[:ls] + "builtin " + text[ls:]
		if e := parseErr(fixed); e == nil || later(fixed, e, off+len("builtin ")) {
			return fixed, true
		}
	}
	switch msg {
	case "invalid var name":
		eq := strings.IndexByte(text[start:], '=')
		if eq < 0 {
			return text, false
		}
		eq += start
		fixed := text[:eq] + `\` + text[eq:]
		if e := parseErr(fixed); e == nil || later(fixed, e, off) {
			return fixed, true
		}
	case "invalid func name":
		// the name runs from the start of the command to "()"
		for start > 0 && strings.IndexByte("\n;&|", text[start-1]) < 0 {
			start--
		}
		for start < off && (text[start] == ' ' || text[start] == '\t') {
			start++
		}
		open, close := -1, -1
		for i := off; i < len(text) && text[i] != '\n'; i++ {
			if text[i] != '(' {
				continue
			}
			j := i + 1
			for j < len(text) && (text[j] == ' ' || text[j] == '\t') {
				j++
			}
			if j < len(text) && text[j] == ')' {
				open, close = i, j
				break
			}
		}
		if open < 0 {
			return text, false
		}
		name := text[start:open]
		fixed := text[:start] + badFuncCarrier + " '" + strings.ReplaceAll(name, "'", `'\\''`) + "' &&" + text[close+1:]
		if e := parseErr(fixed); e == nil || later(fixed, e, off) {
			return fixed, true
		}
	}
	return text, false
}

// repairSubscript quotes the subscript of name[...]= around off, which
// mvdan parses as arithmetic and bash reads as a word when the array is
// associative (m[%]=1, m[,]=2): m["%"]=1.
func repairSubscript(text string, off int) (string, bool) {
	open := strings.LastIndexByte(text[:min(off+1, len(text))], '[')
	if open <= 0 {
		return text, false
	}
	start := open
	for start > 0 && (isAlnum(text[start-1]) || text[start-1] == '_') {
		start--
	}
	if start == open || start > 0 && strings.IndexByte(" \t\n;&|(", text[start-1]) < 0 {
		return text, false
	}
	close := strings.IndexByte(text[open:], ']')
	if close < 0 {
		return text, false
	}
	close += open
	if close < off || close+1 >= len(text) {
		return text, false
	}
	if rest := text[close+1:]; !strings.HasPrefix(rest, "=") && !strings.HasPrefix(rest, "+=") {
		return text, false
	}
	sub := text[open+1 : close]
	if strings.ContainsAny(sub, "\"'\\`") {
		return text, false
	}
	quoted := `"` + sub + `"`
	if sub == "" {
		// a[]=x: bash's "bad array subscript" when it runs (isEmptyArith)
		quoted = `$''`
	}
	fixed := text[:open+1] + quoted + text[close:]
	if e := parseErr(fixed); e == nil || later(fixed, e, off) {
		return fixed, true
	}
	return text, false
}

// paramErrors are the parse errors mvdan reports inside ${...} that
// bash reports when it expands the word.
var paramErrors = []string{
	"parameter expansion", "must be followed by an expression", "invalid parameter name",
	"cannot combine multiple", "zsh feature",
}

// repairParam carries the ${...} around off as text: $(__sh_param_ '...').
func repairParam(text string, off int, msg string) (string, bool) {
	hit := false
	for _, m := range paramErrors {
		if strings.Contains(msg, m) {
			hit = true
			break
		}
	}
	if !hit {
		return text, false
	}
	for start := min(off+2, len(text)); ; { // (the error may point at the "$" of "${")
		i := strings.LastIndex(text[:start], "${")
		if i < 0 {
			return text, false
		}
		start = i
		end := groupEnd(text, i+1)
		if end <= off || end > len(text) || text[end-1] != '}' {
			continue
		}
		inner := text[i:end]
		// one quoted word: $'...' when the text holds a quote
		quoted := "'" + inner + "'"
		if strings.Contains(inner, "'") {
			quoted = "$'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(inner) + "'"
		}
		carried := text[:i] + "$(" + paramCarrier + " " + quoted + ")" + text[end:]
		if e := parseErr(carried); e == nil || later(carried, e, off) {
			return carried, true
		}
	}
}

// paramCarried is the parameter expansion a carrier holds, as bash
// reads it (empty slice bounds are 0), or nil: it is a bad substitution.
func (sh *shell) paramCarried(cs *syntax.CmdSubst) (text string, w *syntax.Word, ok bool) {
	if len(cs.Stmts) != 1 {
		return "", nil, false
	}
	ce, isCall := cs.Stmts[0].Cmd.(*syntax.CallExpr)
	if !isCall || len(ce.Args) != 2 || ce.Args[0].Lit() != paramCarrier || len(ce.Args[1].Parts) != 1 {
		return "", nil, false
	}
	sq, isSq := ce.Args[1].Parts[0].(*syntax.SglQuoted)
	if !isSq {
		return "", nil, false
	}
	text = sq.Value
	if sq.Dollar {
		text = ansiC(text)
	}
	if strings.HasPrefix(text, "${#") && len(text) > 4 && (text[3] == '#' || text[3] == '%') {
		// ${##pat}, ${#%pat}: $# with a pattern removed
		rest := text[3 : len(text)-1]
		op := syntax.RemSmallPrefix
		switch {
		case strings.HasPrefix(rest, "##"):
			op, rest = syntax.RemLargePrefix, rest[2:]
		case strings.HasPrefix(rest, "#"):
			rest = rest[1:]
		case strings.HasPrefix(rest, "%%"):
			op, rest = syntax.RemLargeSuffix, rest[2:]
		default:
			op, rest = syntax.RemSmallSuffix, rest[1:]
		}
		pat := &syntax.Word{}
		if strings.ContainsAny(rest, "$`'\"\\") {
			pat = parseWordText(rest)
		} else if rest != "" {
			pat.Parts = []syntax.WordPart{&syntax.Lit{Value: rest}}
		}
		if pat != nil {
			pe := &syntax.ParamExp{Param: &syntax.Lit{Value: "#"}, Exp: &syntax.Expansion{Op: op, Word: pat}}
			return text, &syntax.Word{Parts: []syntax.WordPart{pe}}, true
		}
	}
	if fixed, ok := emptySliceBounds(text); ok {
		if w := parseWordText(fixed); w != nil && len(w.Parts) == 1 {
			if _, isPE := w.Parts[0].(*syntax.ParamExp); isPE {
				return text, w, true
			}
		}
	}
	return text, nil, true
}

// emptySliceBounds rewrites ${x: :} as ${x:0:0}.
func emptySliceBounds(text string) (string, bool) {
	body := text[2 : len(text)-1]
	i := 0
	for i < len(body) && (isAlnum(body[i]) || body[i] == '_' || strings.IndexByte("@*#?$!-", body[i]) >= 0 && i == 0) {
		i++
	}
	if i < len(body) && body[i] == '[' {
		j := strings.IndexByte(body[i:], ']')
		if j < 0 {
			return "", false
		}
		i += j + 1
	}
	if i >= len(body) || body[i] != ':' {
		return "", false
	}
	if i+1 < len(body) && strings.IndexByte("-=+?", body[i+1]) >= 0 {
		return "", false
	}
	if i+1 == len(body) {
		return "", false // ${x:}: bash's bad substitution (${x: } is ${x:0})
	}
	parts := strings.Split(body[i+1:], ":")
	if len(parts) > 2 {
		return "", false
	}
	for k, p := range parts {
		if strings.TrimSpace(p) == "" {
			parts[k] = "0"
		}
	}
	return "${" + body[:i] + ":" + strings.Join(parts, ":") + "}", true
}

// repairAt tries the rewrites at the last "((" before off.
func repairAt(text string, off int) (string, bool) {
	// (an error at "((" or "$((" itself points at its first character)
	for start := min(off+3, len(text)); ; {
		i := strings.LastIndex(text[:start], "((")
		if i < 0 {
			return text, false
		}
		start = i
		if i > 0 && text[i-1] == '(' {
			start = i + 1 // (the pair before overlaps this one)
			continue      // inside "(((": the outer pair is tried first
		}
		dollar := i > 0 && text[i-1] == '$'
		// bash's rule: "((" whose parentheses close with "))" is
		// arithmetic, else it opens two subshells
		end := matchArith(text, i+2)
		if end < 0 {
			// (every parenthesis of a run opens a subshell: "(((" is
			// "( ( (")
			n := 2
			for i+n < len(text) && text[i+n] == '(' {
				n++
			}
			split := text[:i] + strings.Repeat("( ", n-1) + "(" + text[i+n:]
			if e := parseErr(split); e == nil || later(split, e, off) {
				return split, true
			}
			continue
		}
		expr := strings.ReplaceAll(text[i+2:end], `"`, `\"`)
		expr = strings.ReplaceAll(expr, "\n", " ")
		var carried string
		if dollar {
			carried = text[:i-1] + "$(" + arithCarrier + ` "` + expr + `")` + text[end+2:]
		} else {
			carried = text[:i] + arithCmdCarrier + ` "` + expr + `"` + text[end+2:]
		}
		if e := parseErr(carried); e == nil || later(carried, e, off) {
			return carried, true
		}
	}
}

// later reports whether err is past off (the rewrite got further).
func later(text string, err error, off int) bool {
	o, ok := errOffset(text, err)
	return ok && o > off
}

// matchArith finds the "))" closing an arithmetic expression that starts
// at text[from], or -1.
func matchArith(text string, from int) int {
	depth := 0
	for j := from; j < len(text); j++ {
		switch text[j] {
		case '(':
			depth++
		case ')':
			if depth == 0 {
				if j+1 < len(text) && text[j+1] == ')' {
					return j
				}
				return -1
			}
			depth--
		case '\'':
			k := strings.IndexByte(text[j+1:], '\'')
			if k < 0 {
				return -1
			}
			j += k + 1
		}
	}
	return -1
}

// arithCarried evaluates $(__sh_arith_ "text"): the rewrite of an
// expression mvdan does not parse; ok is false for any other command
// substitution.
func (sh *shell) arithCarried(cs *syntax.CmdSubst) (string, bool) {
	if len(cs.Stmts) != 1 {
		return "", false
	}
	ce, ok := cs.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Args) != 2 || ce.Args[0].Lit() != arithCarrier || len(cs.Stmts[0].Redirs) > 0 {
		return "", false
	}
	text := sh.expandString(ce.Args[1])
	n, err := sh.arithString(text)
	if err != nil {
		sh.fatal(err)
	}
	return formatInt(n), true
}

// repairInlineArray handles an array literal in a command's prefix
// assignments (B=(b b) cmd), which mvdan refuses and bash assigns as the
// literal text "(b b)" for the command: the parentheses and what they
// hold are quoted.
func repairInlineArray(text string, off int, msg string) (string, bool) {
	if msg != "inline variables cannot be arrays" {
		return text, false
	}
	i := off
	for i < len(text) && (isAlnum(text[i]) || text[i] == '_') {
		i++
	}
	if i == off {
		return text, false
	}
	if strings.HasPrefix(text[i:], "+=") {
		i++
	}
	if !strings.HasPrefix(text[i:], "=(") {
		return text, false
	}
	open := i + 1
	depth := 0
	end := -1
scan:
	for j := open; j < len(text); j++ {
		switch text[j] {
		case '\\':
			j++
		case '\'':
			k := strings.IndexByte(text[j+1:], '\'')
			if k < 0 {
				return text, false
			}
			j += k + 1
		case '"':
			for j++; j < len(text) && text[j] != '"'; j++ {
				if text[j] == '\\' {
					j++
				}
			}
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				end = j
				break scan
			}
		}
	}
	if end < 0 {
		return text, false
	}
	lit := text[open : end+1]
	fixed := text[:open] + "'" + strings.ReplaceAll(lit, "'", `'\''`) + "'" + text[end+1:]
	if e := parseErr(fixed); e == nil || later(fixed, e, off) {
		return fixed, true
	}
	return text, false
}

// repairHeredocWord handles a here-document delimiter holding an
// expansion (cat <<${a}, <<$(a)), which mvdan refuses and bash takes as
// its text, unexpanded: the delimiter and the line that ends the body are
// renamed to a word of the shell's own (unquoted, so the body is still
// expanded).
func repairHeredocWord(text string, off int, msg string) (string, bool) {
	if msg != "expansions not allowed in heredoc words" {
		return text, false
	}
	op := strings.LastIndex(text[:min(off+1, len(text))], "<<")
	if op < 0 {
		return text, false
	}
	start := op + 2
	strip := false
	if start < len(text) && text[start] == '-' {
		start++
		strip = true
	}
	for start < len(text) && (text[start] == ' ' || text[start] == '\t') {
		start++
	}
	end := start
	depth := 0
	for end < len(text) {
		c := text[end]
		if c == '(' || c == '{' {
			depth++
		} else if (c == ')' || c == '}') && depth > 0 {
			depth--
		} else if depth == 0 && strings.IndexByte(" \t\n;&|<>()", c) >= 0 {
			break
		}
		end++
	}
	word := text[start:end]
	if word == "" || strings.ContainsAny(word, "'\"\\") {
		return text, false
	}
	nl := strings.IndexByte(text[end:], '\n')
	if nl < 0 {
		return text, false
	}
	body := end + nl + 1
	marker := ReservedPrefix + "eof_"
	for i := body; i < len(text); {
		j := strings.IndexByte(text[i:], '\n')
		lineEnd := len(text)
		if j >= 0 {
			lineEnd = i + j
		}
		line := text[i:lineEnd]
		lead := 0
		if strip {
			for lead < len(line) && line[lead] == '\t' {
				lead++
			}
		}
		if line[lead:] == word {
			fixed := text[:start] + marker + text[end:i+lead] + marker + text[lineEnd:]
			if e := parseErr(fixed); e == nil || later(fixed, e, off) {
				return fixed, true
			}
			return text, false
		}
		if j < 0 {
			break
		}
		i = lineEnd + 1
	}
	return text, false
}

// repairElemList handles a list assigned to an array element (a[0]=(3
// 4)), which mvdan refuses and bash refuses when it runs it: written
// a[0]+=(3 4), which mvdan parses and the shell refuses as bash does
// (assign: "cannot assign list to array member").
func repairElemList(text string, off int, msg string) (string, bool) {
	if msg != "arrays cannot be nested" {
		return text, false
	}
	eq := strings.LastIndex(text[:min(off+2, len(text))], "]=(")
	if eq < 0 {
		return text, false
	}
	fixed := text[:eq+1] + "+" + text[eq+1:]
	if e := parseErr(fixed); e == nil || later(fixed, e, off) {
		return fixed, true
	}
	return text, false
}

// repairLet handles let's arguments holding parentheses and spaces (let
// y=( x + 2 )), which bash reads as one word each, as it does an array
// assignment's, and mvdan as an expression that ends at the space: each
// such argument of the let before off is quoted (let 'y=( x + 2 )').
func repairLet(text string, off int) (string, bool) {
	lineStart := strings.LastIndexByte(text[:off], '\n') + 1
	i := strings.LastIndex(text[lineStart:off], "let ")
	if i < 0 {
		return text, false
	}
	i += lineStart
	if j := strings.TrimRight(text[lineStart:i], " \t"); j != "" && !strings.ContainsRune(";&|({!", rune(j[len(j)-1])) {
		fields := strings.Fields(j)
		switch fields[len(fields)-1] {
		case "if", "elif", "then", "else", "while", "until", "do", "time":
		default:
			return text, false // not a command's first word
		}
	}
	var b strings.Builder
	b.WriteString(text[:i+4])
	k := i + 4
	changed := false
	for k < len(text) {
		c := text[k]
		if c == ' ' || c == '\t' {
			b.WriteByte(c)
			k++
			continue
		}
		if strings.IndexByte(";&|)\n#", c) >= 0 {
			break
		}
		// one word: up to a blank or an operator outside parentheses
		start, depth, quoted := k, 0, false
		for k < len(text) {
			c := text[k]
			if c == '\'' || c == '"' {
				end := strings.IndexByte(text[k+1:], c)
				if end < 0 {
					return text, false
				}
				k += end + 2
				quoted = true
				continue
			}
			if c == '(' {
				depth++
			} else if c == ')' {
				if depth == 0 {
					break
				}
				depth--
			} else if depth == 0 && strings.IndexByte(" \t;&|\n", c) >= 0 {
				break
			} else if c == '\n' || c == '\\' {
				return text, false
			}
			k++
		}
		word := text[start:k]
		if depth == 0 && !quoted && strings.ContainsAny(word, "( \t") {
			changed = true
			word = `"` + word + `"`
		}
		b.WriteString(word)
	}
	if !changed {
		return text, false
	}
	fixed := b.String() + text[k:]
	if e := parseErr(fixed); e == nil || later(fixed, e, off) {
		return fixed, true
	}
	return text, false
}

// repairEmptyExtglob handles an extended glob with an empty pattern list
// (@(), matching the empty string), which mvdan refuses: a quoted empty
// string is put in the list, the same pattern.
func repairEmptyExtglob(text string, off int) (string, bool) {
	for _, at := range []int{off, off - 1, off + 1} {
		if at < 1 || at+1 >= len(text) || text[at] != '(' || text[at+1] != ')' ||
			strings.IndexByte("@?*+!", text[at-1]) < 0 {
			continue
		}
		fixed := text[:at+1] + "''" + text[at+1:]
		if e := parseErr(fixed); e == nil || later(fixed, e, off) {
			return fixed, true
		}
	}
	return text, false
}

// repairNestedArray handles an array literal inside an array literal
// (a=( x=() )): bash's parser reports it from the assignment's own parse,
// which drops the line it is on, not the script: the line does not run
// and its status is 1. The line is replaced by a carrier that says so.
func repairNestedArray(text string, off int, msg string) (string, bool) {
	if !strings.Contains(msg, "array element values must be words") || off >= len(text) || text[off] != '(' ||
		off == 0 || text[off-1] != '=' {
		return text, false
	}
	lineStart := strings.LastIndexByte(text[:off], '\n') + 1
	lineEnd := len(text)
	if nl := strings.IndexByte(text[off:], '\n'); nl >= 0 {
		lineEnd = off + nl
	}
	fixed := text[:lineStart] + badLineCarrier + " '('" + text[lineEnd:]
	if e := parseErr(fixed); e == nil || later(fixed, e, lineStart) {
		return fixed, true
	}
	return text, false
}
