package shell

import (
	"errors"
	"strconv"
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
	// badLineCarrier T stands for a line bash drops at a syntax error
	// near T (see repairNestedArray)
	badLineCarrier = ReservedPrefix + "badline_"
	// badAssignCarrier='a[1]' before a command stands for the array
	// element assignment a[1]=v written there, which bash refuses when it
	// runs the command (see repairSpacedSubscript)
	badAssignCarrier = ReservedPrefix + "badassign_"
	// elemAppendMarker starts the value of [k]=v in an array literal that
	// was [k]+=v (see repairElemAppend)
	elemAppendMarker = ReservedPrefix + "append_"
	// badComsubCarrier Q stands for a `...` whose text does not parse
	// (an unclosed quote Q): bash reports it when it expands it
	badComsubCarrier = ReservedPrefix + "badcomsub_"
	// catCarrier copies its stdin to its stdout: <(< file) runs it.
	catCarrier = ReservedPrefix + "cat_"
)

// ReservedPrefix starts the names the shell uses for itself (the
// carriers above); an embedder's commands may not start with it.
const ReservedPrefix = "__sh_"

// maxRepairs bounds the rewrites of one text.
const maxRepairs = 20

// textRepairs are tried in turn on a parse error (after repairAt): each
// gets the text, the error's offset and message.
var textRepairs = []func(text string, off int, msg string) (string, bool){
	repairParam,
	repairNames,
	func(text string, off int, _ string) (string, bool) { return repairSubscript(text, off) },
	repairInlineArray,
	repairSpacedSubscript,
	repairHeredocWord,
	repairElemList,
	repairElemAppend,
	repairBackquoteQuote,
	repairBackquoteInDquote,
	func(text string, off int, _ string) (string, bool) { return repairLet(text, off) },
	func(text string, off int, _ string) (string, bool) { return repairEmptyExtglob(text, off) },
	repairNestedArray,
}

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
			for _, r := range textRepairs {
				if fixed, ok = r(text, off, msg); ok {
					break
				}
			}
			if !ok {
				break
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
	if n := strings.LastIndexByte(text[:min(off+1, len(text))], '\n'); n > open {
		open = -1 // not on the error's line (a comment's "[")
	}
	if name := off; open < off {
		// the error at the name: its "[" follows
		for name < len(text) && (isAlnum(text[name]) || text[name] == '_') {
			name++
		}
		if name > off && name < len(text) && text[name] == '[' {
			open = name
		}
	}
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
	"cannot combine multiple", "zsh feature", "must follow a name",
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
	if w, ok := sh.subscriptCarried(text); ok {
		return text, w, true
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

// subscriptCarried reads ${name[sub]} of an indexed array whose
// subscript mvdan cannot parse as arithmetic (${a[(_$-=0)+1]}): as bash
// does, the subscript is expanded as in double quotes, then evaluated.
// It returns ${name[N]}, or false when text is not that case.
func (sh *shell) subscriptCarried(text string) (*syntax.Word, bool) {
	body := text[2 : len(text)-1]
	open := strings.IndexByte(body, '[')
	if open <= 0 || !strings.HasSuffix(body, "]") || !validName(body[:open]) {
		return nil, false
	}
	name, sub := body[:open], body[open+1:len(body)-1]
	if sub == "" {
		return nil, false // ${a[]}: a bad substitution (${a[ ]} is a[0])
	}
	if v := sh.getVar(name); v != nil && v.assc != nil || strings.ContainsAny(sub, "\"`") {
		return nil, false
	}
	sw := parseWordText(`"` + sub + `"`)
	if sw == nil {
		return nil, false
	}
	n, err := sh.arithString(sh.expandString(sw))
	if err != nil {
		return nil, false
	}
	w := parseWordText("${" + name + "[" + strconv.FormatInt(n, 10) + "]}")
	return w, w != nil
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
// assignments (B=(b b) cmd), which mvdan refuses and bash assigns as a
// string for the command: its words expanded as an assignment's value
// (quotes removed, no globbing), joined by one space, in parentheses
// (B=('x y' $v) is "(x y V)"). The parentheses and the blanks between
// words are quoted; the words stay as they are.
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
	fixed := text[:open] + inlineArrayWord(text[open+1:end]) + text[end+1:]
	if e := parseErr(fixed); e == nil || later(fixed, e, off) {
		return fixed, true
	}
	return text, false
}

// inlineArrayWord rewrites the words of an array literal (between its
// parentheses) as one assignment value: '(' word' 'word ')'.
func inlineArrayWord(list string) string {
	var b strings.Builder
	b.WriteString("'('")
	depth, braces := 0, 0
	pendingBlank := false
	for j := 0; j < len(list); j++ {
		c := list[j]
		if depth == 0 && braces == 0 && (c == ' ' || c == '\t' || c == '\n') {
			pendingBlank = b.Len() > len("'('")
			continue
		}
		if pendingBlank {
			b.WriteString("' '")
			pendingBlank = false
		}
		start := j
		switch c {
		case '\\':
			j++
		case '\'':
			if k := strings.IndexByte(list[j+1:], '\''); k >= 0 {
				j += k + 1
			}
		case '"':
			for j++; j < len(list) && list[j] != '"'; j++ {
				if list[j] == '\\' {
					j++
				}
			}
		case '(':
			depth++
		case ')':
			depth--
		case '{':
			if j > 0 && list[j-1] == '$' || braces > 0 {
				braces++
			}
		case '}':
			if braces > 0 {
				braces--
			}
		}
		b.WriteString(list[start:min(j+1, len(list))])
	}
	b.WriteString("')'")
	return b.String()
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

// repairSpacedSubscript handles name[...] where bash reads one word and
// mvdan another:
//
//   - an element assignment before a command (a=1 b[0]=2 cmd, a[1 + 2]=
//     cmd), which mvdan refuses and bash refuses only when it runs the
//     command ("`b[0]': not a valid identifier", the command still runs):
//     written badAssignCarrier='b[0]', the value dropped unexpanded;
//   - name[...] in a command's place with no = after it (a[5 + 3],
//     a[5 + 3]+): bash reads the subscript, blanks included, as part of
//     one word, the command's name; here the first character is escaped
//     and the blanks quoted, so that mvdan reads the same word.
func repairSpacedSubscript(text string, off int, msg string) (string, bool) {
	assign := msg == "inline variables cannot be arrays"
	if !assign && !(strings.HasPrefix(msg, "`a[b]") && strings.HasSuffix(msg, "must be followed by `=`")) {
		return text, false
	}
	i := off
	for i < len(text) && (isAlnum(text[i]) || text[i] == '_') {
		i++
	}
	if i == off || i >= len(text) || text[i] != '[' {
		return text, false
	}
	close := subscriptEnd(text, i)
	if close < 0 {
		return text, false
	}
	var fixed string
	if assign {
		rest := text[close:]
		eq := close
		switch {
		case strings.HasPrefix(rest, "="):
			eq++
		case strings.HasPrefix(rest, "+="):
			eq += 2
		default:
			return text, false
		}
		end := wordEnd(text, eq)
		name := text[off:close]
		fixed = text[:off] + badAssignCarrier + "='" + strings.ReplaceAll(name, "'", `'\''`) + "'" + text[end:]
	} else {
		var b strings.Builder
		b.WriteString(text[:off])
		b.WriteByte('\\')
		for j := off; j < close; {
			switch c := text[j]; c {
			case ' ', '\t':
				k := j
				for k < close && (text[k] == ' ' || text[k] == '\t') {
					k++
				}
				b.WriteString(`"` + text[j:k] + `"`)
				j = k
				continue
			case '\'', '"', '`', '$':
				k := wordEnd(text, j)
				if c == '$' {
					k = j + 1
					if j+1 < len(text) && (text[j+1] == '(' || text[j+1] == '{') {
						k = groupEnd(text, j+1)
					}
				} else if c == '\'' {
					if q := strings.IndexByte(text[j+1:], '\''); q >= 0 {
						k = j + q + 2
					}
				} else {
					k = quoteEnd(text, j+1, c)
				}
				b.WriteString(text[j:min(k, close)])
				j = min(k, close)
				continue
			}
			b.WriteByte(text[j])
			j++
		}
		b.WriteString(text[close:])
		fixed = b.String()
	}
	if e := parseErr(fixed); e == nil || later(fixed, e, off) {
		return fixed, true
	}
	return text, false
}

// subscriptEnd returns the offset after the "]" closing the "[" at
// text[open] (nested brackets, quotes and $(...) skipped; not past a
// newline), or -1.
func subscriptEnd(text string, open int) int {
	depth := 0
	for j := open; j < len(text); {
		switch c := text[j]; c {
		case '\n':
			return -1
		case '\\':
			j += 2
			continue
		case '\'':
			q := strings.IndexByte(text[j+1:], '\'')
			if q < 0 {
				return -1
			}
			j += q + 2
			continue
		case '"', '`':
			j = quoteEnd(text, j+1, c)
			continue
		case '$':
			if j+1 < len(text) && (text[j+1] == '(' || text[j+1] == '{') {
				j = groupEnd(text, j+1)
				continue
			}
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				return j + 1
			}
		}
		j++
	}
	return -1
}

// repairElemAppend handles [k]+=v in an array literal (a=([k]+=v)),
// which mvdan refuses and bash reads as appending v to element k: written
// [k]=elemAppendMarker v, which elemValue reads back.
func repairElemAppend(text string, off int, msg string) (string, bool) {
	if msg != "`[x]` must be followed by `=`" || off >= len(text) || text[off] != '[' {
		return text, false
	}
	close := subscriptEnd(text, off)
	if close < 0 || !strings.HasPrefix(text[close:], "+=") {
		return text, false
	}
	fixed := text[:close] + "=" + elemAppendMarker + text[close+2:]
	if e := parseErr(fixed); e == nil || later(fixed, e, off) {
		return fixed, true
	}
	return text, false
}

// elemValue is the value of an element of an array literal, and whether
// it was written [k]+=v (repairElemAppend).
func elemValue(el *syntax.ArrayElem) (*syntax.Word, bool) {
	w := el.Value
	if w == nil || el.Index == nil || len(w.Parts) == 0 {
		return w, false
	}
	l, ok := w.Parts[0].(*syntax.Lit)
	if !ok || !strings.HasPrefix(l.Value, elemAppendMarker) {
		return w, false
	}
	rest := l.Value[len(elemAppendMarker):]
	parts := make([]syntax.WordPart, 0, len(w.Parts))
	if rest != "" {
		parts = append(parts, &syntax.Lit{ValuePos: l.ValuePos, ValueEnd: l.ValueEnd, Value: rest})
	}
	parts = append(parts, w.Parts[1:]...)
	if len(parts) == 0 {
		return nil, true
	}
	return &syntax.Word{Parts: parts}, true
}

// repairBackquoteQuote handles `...` holding an unclosed double quote
// (echo `echo "`), which mvdan refuses and bash reads only when it
// expands it: a syntax error in the command substitution, which expands
// to nothing with status 2 and does not end the script. It is written
// $(badComsubCarrier '"'), which does that.
func repairBackquoteQuote(text string, off int, msg string) (string, bool) {
	if !strings.HasPrefix(msg, "reached \"`\" without closing quote") || off >= len(text) || text[off] != '"' {
		return text, false
	}
	open := strings.LastIndexByte(text[:off], '`')
	close := strings.IndexByte(text[off:], '`')
	if open < 0 || close < 0 || strings.IndexByte(text[open:off], '\n') >= 0 {
		return text, false
	}
	close += off
	fixed := text[:open] + "$(" + badComsubCarrier + ` '"')` + text[close+1:]
	if e := parseErr(fixed); e == nil || later(fixed, e, off) {
		return fixed, true
	}
	return text, false
}

// repairBackquoteInDquote handles `...` inside double quotes whose text
// mvdan reads otherwise than bash ("`[[ $(echo \\" > f) ]]`"): bash
// takes out the backslashes that quote \\, $, ` and " there and runs the
// rest as a script; written $(...) with those backslashes taken out,
// which mvdan reads the same way.
func repairBackquoteInDquote(text string, off int, _ string) (string, bool) {
	open := -1
	for j := min(off, len(text)-1); j >= 0 && text[j] != '\n'; j-- {
		if text[j] == '`' && (j == 0 || text[j-1] != '\\') {
			open = j
			break
		}
	}
	if open < 0 || !inDoubleQuotes(text, open) {
		return text, false
	}
	close := -1
	for j := open + 1; j < len(text); j++ {
		if text[j] == '\\' {
			j++
			continue
		}
		if text[j] == '`' {
			close = j
			break
		}
	}
	if close < off {
		return text, false
	}
	var b strings.Builder
	body := text[open+1 : close]
	for j := 0; j < len(body); j++ {
		if body[j] == '\\' && j+1 < len(body) && strings.IndexByte("\\$`\"", body[j+1]) >= 0 {
			j++
		}
		b.WriteByte(body[j])
	}
	fixed := text[:open] + "$(" + b.String() + ")" + text[close+1:]
	if e := parseErr(fixed); e == nil || later(fixed, e, off) {
		return fixed, true
	}
	return text, false
}

// inDoubleQuotes reports whether text[at] is inside double quotes and
// not inside a backquoted command (the backquote that opens one), as far
// as quotes, backquotes and comments tell (here-documents are not
// followed).
func inDoubleQuotes(text string, at int) bool {
	const (
		normal = iota
		single
		double
	)
	state := normal
	for i := 0; i <= at; i++ {
		if i == at {
			return state == double
		}
		c := text[i]
		switch state {
		case single:
			if c == '\'' {
				state = normal
			}
		case double:
			switch c {
			case '\\':
				i++
			case '"':
				state = normal
			case '`':
				i = backquoteEnd(text, i)
			}
		default:
			switch c {
			case '\\':
				i++
			case '\'':
				state = single
			case '"':
				state = double
			case '`':
				i = backquoteEnd(text, i)
			case '#':
				if i == 0 || strings.IndexByte(" \t\n;&|(", text[i-1]) >= 0 {
					for i < at && text[i] != '\n' {
						i++
					}
				}
			}
		}
	}
	return false // at was inside a backquoted command or a comment
}

// backquoteEnd is the offset of the backquote closing the one at
// text[open] (or the end).
func backquoteEnd(text string, open int) int {
	for j := open + 1; j < len(text); j++ {
		switch text[j] {
		case '\\':
			j++
		case '`':
			return j
		}
	}
	return len(text)
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
