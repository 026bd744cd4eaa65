package shell

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"

	"github.com/demiurge-dev/demiurge/tools/bash/internal/escape"
)

// field is one word being built by expansion: its characters, and the
// same characters as a glob pattern in which quoted ones are escaped.
type field struct {
	s       []byte
	pat     []byte
	glob    bool // an unquoted glob character was seen
	started bool // has characters, or quotes that make it a word even if empty
}

// expander builds the fields of one or more words.
type expander struct {
	sh     *shell
	fields []field
	cur    field
	// noSplit: the words are not split or globbed (assignments, [[ ]],
	// case, here-strings); "$@" is joined with spaces.
	noSplit bool
	// pattern: the result is a pattern (quoted characters escaped).
	pattern bool
	// assign: tilde expansion also after ':' and the first '='.
	assign bool
	// noTilde: no tilde expansion (the values of an associative array's
	// [k]=v).
	noTilde bool
	// noGlob skips pathname expansion.
	noGlob bool
	// heredoc: a here-document's body, where \" is not an escape.
	heredoc bool
	// splitLits: unquoted literal text is split too (the word of
	// ${x:-word} unquoted).
	splitLits bool
	// assignWord: a command word that looks like an assignment.
	assignWord bool
	// checked is the size of the current word up to which the memory
	// budget was checked.
	checked int
	// strMode collects one string (no splitting, no globbing, no
	// pattern) as pieces joined once at the end: a big value is copied
	// once, not at every append.
	strMode bool
	pieces  []string
	size    int
}

// newStringExpander returns an expander of one string.
func (sh *shell) newStringExpander() *expander {
	return &expander{sh: sh, noSplit: true, noGlob: true, strMode: true}
}

// str is the string a string expander built.
func (e *expander) str() string {
	if !e.strMode {
		return string(e.cur.s)
	}
	if len(e.pieces) == 1 {
		return e.pieces[0]
	}
	return strings.Join(e.pieces, "")
}

// piece appends s in string mode.
func (e *expander) piece(s string) {
	if s == "" {
		return
	}
	e.size += len(s)
	if e.size >= 1<<20 && e.size >= e.checked {
		e.checked = e.size * 2
		if err := e.sh.r.budget.Check(int64(e.size)); err != nil {
			e.sh.r.stop(err)
			panic(stopPanic{})
		}
	}
	e.pieces = append(e.pieces, s)
}

// wantPat reports whether the pattern form of the fields is needed.
func (e *expander) wantPat() bool { return !e.noGlob || e.pattern }

// grow checks, as a word grows past a megabyte and each doubling after,
// that the memory budget can hold it.
func (e *expander) grow(n int) {
	size := len(e.cur.s) + n
	if size < 1<<20 || size < e.checked {
		return
	}
	e.checked = size * 2
	if err := e.sh.r.budget.Check(int64(size)); err != nil {
		e.sh.r.stop(err)
		panic(stopPanic{})
	}
}

// addQuoted appends characters that are quoted: neither split nor globbed.
func (e *expander) addQuoted(s string) {
	e.cur.started = true
	if e.strMode {
		e.piece(s)
		return
	}
	e.grow(len(s))
	e.cur.s = append(e.cur.s, s...)
	if !e.wantPat() {
		return
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isPatternSpecial(c) {
			e.cur.pat = append(e.cur.pat, '\\')
		}
		e.cur.pat = append(e.cur.pat, c)
	}
}

// addExpanded appends the unquoted result of an expansion: split on IFS
// (unless noSplit) and glob-active.
func (e *expander) addExpanded(s string) {
	if e.noSplit {
		if s != "" {
			e.cur.started = true
		}
		if e.strMode {
			e.piece(s)
			return
		}
		e.grow(len(s))
		e.cur.s = append(e.cur.s, s...)
		if e.wantPat() {
			e.cur.pat = append(e.cur.pat, s...)
		}
		if !e.cur.glob && e.sh.hasGlob(s) {
			e.cur.glob = true
		}
		return
	}
	ifs := e.sh.ifsSplitter()
	if ifs.empty {
		e.addNoSplit(s)
		return
	}
	i := 0
	n := len(s)
	for i < n {
		// a token up to the next IFS character
		j := i
		for j < n {
			if is, _, _ := ifs.at(s, j); is {
				break
			}
			_, w := utf8.DecodeRuneInString(s[j:])
			j += w
		}
		if j > i {
			e.addNoSplit(s[i:j])
		}
		if j >= n {
			break
		}
		// a separator: IFS whitespace, at most one other IFS character,
		// IFS whitespace
		k := j
		for k < n {
			is, w, ws := ifs.at(s, k)
			if !is || !ws {
				break
			}
			k += w
		}
		hard := false
		if k < n {
			if is, w, ws := ifs.at(s, k); is && !ws {
				hard = true
				k += w
				for k < n {
					is, w, ws := ifs.at(s, k)
					if !is || !ws {
						break
					}
					k += w
				}
			}
		}
		if hard || e.cur.started {
			e.endField(hard)
		}
		i = k
	}
}

// ifsSplit is the current IFS, ready for splitting.
type ifsSplit struct {
	val   string
	empty bool
	ascii [128]bool
	other []rune
}

// at reports whether s[i:] starts with an IFS character, its width and
// whether it is IFS whitespace.
func (f *ifsSplit) at(s string, i int) (is bool, width int, ws bool) {
	c := s[i]
	if c < 0x80 {
		return f.ascii[c], 1, f.ascii[c] && isIFSSpace(c)
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	for _, o := range f.other {
		if o == r {
			return true, w, false
		}
	}
	return false, w, false
}

// ifsSplitter returns the splitter of the current IFS (cached).
func (sh *shell) ifsSplitter() *ifsSplit {
	v := sh.ifs()
	if sh.ifsCache != nil && sh.ifsCache.val == v {
		return sh.ifsCache
	}
	f := &ifsSplit{val: v, empty: v == ""}
	for _, r := range v {
		if r < 0x80 {
			f.ascii[r] = true
		} else {
			f.other = append(f.other, r)
		}
	}
	sh.ifsCache = f
	return f
}

// addNoSplit appends text that is not split but is globbed: unquoted
// literal text of the script (already free of its backslashes, which mark
// quoted characters through addQuoted) and expansions where no splitting
// applies.
func (e *expander) addNoSplit(s string) {
	if s == "" {
		return
	}
	e.cur.started = true
	if e.strMode {
		e.piece(s)
		return
	}
	e.grow(len(s))
	e.cur.s = append(e.cur.s, s...)
	if e.wantPat() {
		e.cur.pat = append(e.cur.pat, s...)
	}
	if !e.cur.glob && e.sh.hasGlob(s) {
		e.cur.glob = true
	}
}

// endField ends the current field; force keeps it even if empty.
func (e *expander) endField(force bool) {
	if e.cur.started || force {
		e.cur.started = true
		e.fields = append(e.fields, e.cur)
	}
	e.cur = field{}
	e.checked = 0
}

func isIFS(ifs string, c byte) bool {
	return strings.IndexByte(ifs, c) >= 0
}

func isIFSSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' }

// isPatternSpecial reports whether c means something in a pattern.
// hasGlob reports whether unquoted text holds a glob: * ? [, or with
// extglob an extended pattern's opening (@( !( +( ).
func (sh *shell) hasGlob(s string) bool {
	if strings.ContainsAny(s, "*?[") {
		return true
	}
	return sh.shopt.extglob && (strings.Contains(s, "@(") || strings.Contains(s, "!(") || strings.Contains(s, "+("))
}

func isPatternSpecial(c byte) bool {
	switch c {
	case '*', '?', '[', ']', '\\', '(', ')', '|', '@', '!', '+':
		return true
	}
	return false
}

// expandFields expands words into fields: brace expansion, then tilde,
// parameter, command and arithmetic expansion, word splitting, pathname
// expansion and quote removal.
func (sh *shell) expandFields(words []*syntax.Word) []string {
	var out []string
	for _, w := range words {
		out = sh.expandWordTo(out, w)
	}
	return out
}

func (sh *shell) expandWordTo(out []string, w *syntax.Word) []string {
	return sh.expandWordMode(out, w, true)
}

// expandElemFields expands an element of an array literal, a=(x=~):
// a word like an assignment is not one there (bash keeps x=~).
func (sh *shell) expandElemFields(w *syntax.Word) []string {
	return sh.expandWordMode(nil, w, false)
}

// expandWordMode is expandWordTo; assignLike: a word that looks like an
// assignment has its tildes after = and : expanded (declare x=~).
func (sh *shell) expandWordMode(out []string, w *syntax.Word, assignLike bool) []string {
	if lit, ok := simpleLit(w); ok {
		return append(out, lit)
	}
	words := []*syntax.Word{w}
	if sh.opts.braceexpand && hasBraces(w) {
		sh.braceQuoteChars = false
		words = sh.braceExpand(w)
		if sh.braceQuoteChars {
			for i, bw := range words {
				words[i] = sh.rescanBraceWord(bw)
			}
		}
	}
	for _, bw := range words {
		e := &expander{sh: sh, noGlob: sh.opts.noglob}
		if l, ok := bw.Parts[0].(*syntax.Lit); ok && assignLike && !sh.opts.posix {
			if i := strings.IndexByte(l.Value, '='); i > 0 && validName(l.Value[:i]) {
				e.assignWord = true
				e.assign = true
			}
		}
		e.word(bw.Parts, false)
		e.endField(false)
		for _, f := range e.fields {
			out = sh.globField(out, f, e.noGlob)
		}
	}
	return out
}

// simpleLit returns a word that is one literal without specials.
func simpleLit(w *syntax.Word) (string, bool) {
	if len(w.Parts) != 1 {
		return "", false
	}
	l, ok := w.Parts[0].(*syntax.Lit)
	if !ok {
		return "", false
	}
	v := l.Value
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '\\', '*', '?', '[', '~', '{':
			return "", false
		}
	}
	return v, true
}

// expandString expands a word to one string, without splitting or
// globbing (assignments, [[ ]] operands, case words, here-strings).
func (sh *shell) expandString(w *syntax.Word) string {
	if w == nil {
		return ""
	}
	if lit, ok := simpleLit(w); ok {
		return lit
	}
	e := sh.newStringExpander()
	e.word(w.Parts, false)
	return e.str()
}

// expandAssign expands an assignment's value: as expandString, with
// tilde expansion after ':' too.
func (sh *shell) expandAssign(w *syntax.Word) string {
	if w == nil {
		return ""
	}
	if lit, ok := simpleLit(w); ok {
		return lit
	}
	e := sh.newStringExpander()
	e.assign = true
	e.word(w.Parts, false)
	return e.str()
}

// expandAssocValue expands the value of an associative array's [k]=v:
// as an assignment's, without tilde expansion (as bash).
func (sh *shell) expandAssocValue(w *syntax.Word) string {
	if w == nil {
		return ""
	}
	if lit, ok := simpleLit(w); ok {
		return lit
	}
	e := sh.newStringExpander()
	e.assign, e.noTilde = true, true
	e.word(w.Parts, false)
	return e.str()
}

// expandPattern expands a word to a pattern: quoted characters escaped.
func (sh *shell) expandPattern(w *syntax.Word) string {
	if w == nil {
		return ""
	}
	e := &expander{sh: sh, noSplit: true, noGlob: true, pattern: true}
	e.word(w.Parts, false)
	return string(e.cur.pat)
}

// word expands the parts of a word into the expander; quoted says the
// parts are inside double quotes.
func (e *expander) word(parts []syntax.WordPart, quoted bool) {
	for i, p := range parts {
		switch x := p.(type) {
		case *syntax.Lit:
			e.lit(x.Value, quoted, i == 0)
		case *syntax.SglQuoted:
			v := x.Value
			if x.Dollar {
				v = ansiC(v)
			}
			e.addQuoted(v)
		case *syntax.DblQuoted:
			if len(x.Parts) == 1 {
				if pe, ok := x.Parts[0].(*syntax.ParamExp); ok && e.mayBeList(pe) && !e.noSplit && !e.pattern {
					// "$@" with no parameters is no word at all
					e.param(pe, true)
					continue
				}
			}
			e.cur.started = true
			e.word(x.Parts, true)
		case *syntax.ParamExp:
			if quoted {
				if e.atParam(x) {
					continue
				}
				e.addQuoted(e.sh.paramString(x, true))
			} else {
				e.paramUnquoted(x)
			}
		case *syntax.CmdSubst:
			if text, w, ok := e.sh.paramCarried(x); ok {
				if w == nil {
					e.sh.errorf("%s: bad substitution", text)
					panic(fatalPanic{status: 1})
				}
				e.word(w.Parts, quoted)
				continue
			}
			out := e.sh.cmdSubst(x)
			if quoted {
				e.addQuoted(out)
			} else {
				e.addExpanded(out)
			}
		case *syntax.ArithmExp:
			n := e.sh.arith(x.X)
			s := strconv.FormatInt(n, 10)
			if quoted {
				e.addQuoted(s)
			} else {
				e.addExpanded(s)
			}
		case *syntax.ProcSubst:
			e.addQuoted(e.sh.procSubst(x))
		case *syntax.ExtGlob:
			e.extGlob(x)
		case *syntax.BraceExp:
			// left over when brace expansion is off: the text itself
			e.addNoSplit(braceText(x))
		}
	}
}

// extGlob expands an extended glob @(...): mvdan keeps its text raw, so
// the expansions and quotes inside it are done here.
func (e *expander) extGlob(x *syntax.ExtGlob) {
	e.cur.started = true
	e.cur.glob = true
	// (in a string, as an assignment's value, it is its text)
	lit := e.addNoSplit
	lit(x.Op.String())
	raw := x.Pattern.Value
	for i := 0; i < len(raw); {
		c := raw[i]
		switch c {
		case '\\':
			if i+1 < len(raw) {
				e.addQuoted(raw[i+1 : i+2])
				i += 2
				continue
			}
			lit("\\")
			i++
		case '\'':
			end := strings.IndexByte(raw[i+1:], '\'')
			if end < 0 {
				lit(raw[i:])
				i = len(raw)
				continue
			}
			e.addQuoted(raw[i+1 : i+1+end])
			i += end + 2
		case '"', '$', '`':
			end := shellSegmentEnd(raw, i)
			seg := raw[i:end]
			if w := parseWordText(seg); w != nil {
				e.word(w.Parts, false)
			} else {
				lit(seg)
			}
			i = end
		default:
			lit(raw[i : i+1])
			i++
		}
	}
	lit(")")
}

// shellSegmentEnd finds the end of the quoted string or expansion that
// starts at s[i] ("...", $name, ${...}, $(...), `...`).
func shellSegmentEnd(s string, i int) int {
	switch s[i] {
	case '"':
		for j := i + 1; j < len(s); j++ {
			if s[j] == '\\' {
				j++
				continue
			}
			if s[j] == '"' {
				return j + 1
			}
		}
		return len(s)
	case '`':
		for j := i + 1; j < len(s); j++ {
			if s[j] == '\\' {
				j++
				continue
			}
			if s[j] == '`' {
				return j + 1
			}
		}
		return len(s)
	}
	// $
	if i+1 >= len(s) {
		return len(s)
	}
	switch c := s[i+1]; {
	case c == '{' || c == '(':
		closeC := byte('}')
		if c == '(' {
			closeC = ')'
		}
		depth := 0
		for j := i + 1; j < len(s); j++ {
			switch s[j] {
			case c:
				depth++
			case closeC:
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(s)
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		j := i + 1
		for j < len(s) && (s[j] == '_' || isAlnum(s[j])) {
			j++
		}
		return j
	default:
		return i + 2
	}
}

// parseWordText parses text as one shell word.
func parseWordText(text string) *syntax.Word {
	p := parsers.Get().(*syntax.Parser)
	defer parsers.Put(p)
	f, err := p.Parse(strings.NewReader("x "+text), "")
	if err != nil || len(f.Stmts) != 1 {
		return nil
	}
	ce, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Args) != 2 {
		return nil
	}
	return ce.Args[1]
}

// lit expands literal text: backslash escapes, tilde expansion.
func (e *expander) lit(v string, quoted, first bool) {
	if quoted {
		// inside double quotes a backslash escapes only $ ` " \ and newline
		if strings.IndexByte(v, '\\') < 0 {
			e.addQuoted(v)
			return
		}
		var b strings.Builder
		for i := 0; i < len(v); i++ {
			c := v[i]
			if c == '\\' && i+1 < len(v) {
				switch v[i+1] {
				case '$', '`', '\\':
					b.WriteByte(v[i+1])
					i++
					continue
				case '"':
					if !e.heredoc {
						b.WriteByte('"')
						i++
						continue
					}
				case '\n':
					i++
					continue
				}
			}
			b.WriteByte(c)
		}
		e.addQuoted(b.String())
		return
	}
	if e.noTilde {
		// [k]=~ of an associative array: bash keeps the ~
	} else if first && len(v) > 0 && v[0] == '~' {
		v = e.tilde(v)
	} else if first && e.assignWord {
		// a word that looks like an assignment (x=~/bin): bash expands
		// the tilde after '=' too
		if i := strings.IndexByte(v, '='); i > 0 && validName(v[:i]) && i+1 < len(v) && v[i+1] == '~' {
			e.addNoSplit(v[:i+1])
			v = e.tilde(v[i+1:])
		}
	}
	if e.assign && !e.noTilde && strings.Contains(v, ":~") {
		v = e.assignTildes(v)
	}
	add := e.addNoSplit
	if e.splitLits {
		add = e.addExpanded
	}
	if strings.IndexByte(v, '\\') < 0 {
		add(v)
		return
	}
	start := 0
	for i := 0; i < len(v); i++ {
		if v[i] != '\\' {
			continue
		}
		add(v[start:i])
		if i+1 < len(v) {
			if v[i+1] != '\n' {
				e.addQuoted(v[i+1 : i+2])
			}
			i++
		}
		start = i + 1
	}
	add(v[start:])
}

// tilde expands a leading ~ or ~+ ~- or ~user (the sandbox's users are
// root and its own, see sandboxUsers: another ~name is kept as it is, as
// bash does for an unknown user).
func (e *expander) tilde(v string) string {
	end := strings.IndexByte(v, '/')
	// (bash ends the prefix at ':' in every word: echo ~:x is $HOME:x)
	if c := strings.IndexByte(v, ':'); c >= 0 && (end < 0 || c < end) {
		end = c
	}
	prefix, rest := v, ""
	if end >= 0 {
		prefix, rest = v[:end], v[end:]
	}
	var dir string
	switch prefix {
	case "~":
		h, ok := e.sh.varValue("HOME")
		if !ok {
			h = "/workspace"
		}
		dir = h
	case "~+":
		dir = e.sh.dir
	case "~-":
		o, ok := e.sh.varValue("OLDPWD")
		if !ok {
			return v
		}
		dir = o
	default:
		h, ok := e.sh.userHome(prefix[1:])
		if !ok {
			return v
		}
		dir = h
	}
	// the directory is quoted (not globbed)
	e.addQuoted(dir)
	return rest
}

// assignTildes expands ~ after each ':' of an assignment's value.
func (e *expander) assignTildes(v string) string {
	parts := strings.Split(v, ":")
	for i := 1; i < len(parts); i++ {
		p := parts[i]
		if p == "~" || strings.HasPrefix(p, "~/") {
			parts[i] = e.sh.value("HOME") + p[1:]
		} else if name, rest, _ := strings.Cut(p, "/"); strings.HasPrefix(name, "~") {
			if h, ok := e.sh.userHome(name[1:]); ok {
				if strings.Contains(p, "/") {
					rest = "/" + rest
				}
				parts[i] = h + rest
			}
		}
	}
	return strings.Join(parts, ":")
}

// braceText is the source text of an unexpanded brace expression.
func braceText(b *syntax.BraceExp) string {
	var sb strings.Builder
	sb.WriteByte('{')
	sep := ","
	if b.Sequence {
		sep = ".."
	}
	for i, w := range b.Elems {
		if i > 0 {
			sb.WriteString(sep)
		}
		sb.WriteString(wordText(w))
	}
	sb.WriteByte('}')
	return sb.String()
}

// wordText is the literal text of a word (for messages and braces).
func wordText(w *syntax.Word) string {
	var sb strings.Builder
	printer := syntax.NewPrinter()
	printer.Print(&sb, w)
	return sb.String()
}

// ansiC decodes the escapes of $'...'. A NUL ends the string, as in
// bash, whose strings are C strings.
func ansiC(s string) string {
	out := ansiCAll(s)
	if i := strings.IndexByte(out, 0); i >= 0 {
		return out[:i]
	}
	return out
}

func ansiCAll(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch c = s[i]; c {
		case 'a', 'b', 'e', 'E', 'f', 'n', 'r', 't', 'v', '\\', '"', '?':
			b.WriteByte(escape.Letter(c))
		case '\'':
			b.WriteByte(c)
		case 'c':
			// \cX is control-X; \c? is DEL; \c\\ takes both backslashes
			if i+1 < len(s) {
				i++
				switch {
				case s[i] == '?':
					b.WriteByte(0x7f)
				case s[i] == '\\' && i+1 < len(s) && s[i+1] == '\\':
					i++
					b.WriteByte('\\' & 0x1f)
				default:
					b.WriteByte(s[i] & 0x1f)
				}
			}
		case 'x', 'u', 'U':
			if c == 'x' && i+1 < len(s) && s[i+1] == '{' {
				// \x{HH...}: every hex digit up to the brace, one byte
				j, v := i+2, 0
				for ; j < len(s) && escape.IsHex(s[j]); j++ {
					v = v*16 + escape.HexVal(s[j])
				}
				if j > i+2 {
					b.WriteByte(byte(v))
				}
				if j < len(s) && s[j] == '}' {
					j++
				}
				i = j - 1
				continue
			}
			i += escape.Numeric(&b, s[i+1:], c)
		case '0', '1', '2', '3', '4', '5', '6', '7':
			n := int(c - '0')
			for j := 0; j < 2 && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '7'; j++ {
				n = n*8 + int(s[i+1]-'0')
				i++
			}
			b.WriteByte(byte(n))
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String()
}

// hasBraces reports whether a word may hold a brace expansion.
func hasBraces(w *syntax.Word) bool {
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.BraceExp:
			return true
		case *syntax.Lit:
			if strings.IndexByte(x.Value, '{') >= 0 {
				return true
			}
		}
	}
	return false
}

// maxBraceWords bounds the words one brace expansion makes.
const maxBraceWords = 1 << 20

// braceExpand expands the braces of a word into words.
func (sh *shell) braceExpand(w *syntax.Word) []*syntax.Word {
	split := sh.splitBraces(w)
	words := []*syntax.Word{{}}
	for _, p := range split.Parts {
		b, ok := p.(*syntax.BraceExp)
		if !ok {
			for _, nw := range words {
				nw.Parts = append(nw.Parts, p)
			}
			continue
		}
		alts := sh.braceAlternatives(b)
		if len(words)*len(alts) > maxBraceWords {
			sh.r.limit("brace expansion makes more than %d words", maxBraceWords)
		}
		next := make([]*syntax.Word, 0, len(words)*len(alts))
		for _, nw := range words {
			for _, alt := range alts {
				parts := make([]syntax.WordPart, 0, len(nw.Parts)+len(alt.Parts))
				parts = append(parts, nw.Parts...)
				parts = append(parts, alt.Parts...)
				next = append(next, &syntax.Word{Parts: parts})
			}
		}
		words = next
	}
	// nested braces in the alternatives
	var out []*syntax.Word
	for _, nw := range words {
		if hasBraceExp(nw) {
			out = append(out, sh.braceExpand(nw)...)
		} else {
			out = append(out, mergeLits(nw))
		}
	}
	return out
}

// mergeLits joins adjacent literal parts (a brace expansion leaves
// "~" "root" apart, which tilde expansion must see as "~root").
//
// It also joins $name with the name characters after it: bash expands
// braces in the text, so {$a,b}_c makes $a_c, the variable a_c.
func mergeLits(w *syntax.Word) *syntax.Word {
	for i := 1; i < len(w.Parts); i++ {
		if pe, ok := w.Parts[i-1].(*syntax.ParamExp); ok && pe.Short && pe.Param != nil && validName(pe.Param.Value) {
			if l, ok := w.Parts[i].(*syntax.Lit); ok {
				n := 0
				for n < len(l.Value) && isNameByte(l.Value[n]) {
					n++
				}
				if n > 0 {
					npe := *pe
					npe.Param = &syntax.Lit{ValuePos: pe.Param.ValuePos, ValueEnd: pe.Param.ValueEnd, Value: pe.Param.Value + l.Value[:n]}
					parts := append([]syntax.WordPart(nil), w.Parts[:i-1]...)
					parts = append(parts, &npe)
					if n < len(l.Value) {
						parts = append(parts, &syntax.Lit{ValuePos: l.ValuePos, ValueEnd: l.ValueEnd, Value: l.Value[n:]})
					}
					parts = append(parts, w.Parts[i+1:]...)
					return mergeLits(&syntax.Word{Parts: parts})
				}
			}
		}
		a, ok1 := w.Parts[i-1].(*syntax.Lit)
		b, ok2 := w.Parts[i].(*syntax.Lit)
		if ok1 && ok2 {
			parts := append([]syntax.WordPart(nil), w.Parts[:i-1]...)
			parts = append(parts, &syntax.Lit{ValuePos: a.ValuePos, ValueEnd: b.ValueEnd, Value: a.Value + b.Value})
			parts = append(parts, w.Parts[i+1:]...)
			return mergeLits(&syntax.Word{Parts: parts})
		}
	}
	return w
}

func hasBraceExp(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if _, ok := p.(*syntax.BraceExp); ok {
			return true
		}
	}
	return false
}

// splitBraces returns w with its brace expressions parsed (cached per
// word: mvdan's SplitBraces works on a copy here).
func (sh *shell) splitBraces(w *syntax.Word) *syntax.Word {
	cp := &syntax.Word{Parts: append([]syntax.WordPart(nil), w.Parts...)}
	syntax.SplitBraces(cp)
	return cp
}

// braceAlternatives lists the words of one brace expression.
func (sh *shell) braceAlternatives(b *syntax.BraceExp) []*syntax.Word {
	if !b.Sequence {
		return b.Elems
	}
	lit := func(i int) string {
		if i >= len(b.Elems) {
			return ""
		}
		return b.Elems[i].Lit()
	}
	from, to, incr := lit(0), lit(1), lit(2)
	mk := func(s string) *syntax.Word { return &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: s}}} }
	step := int64(1)
	if incr != "" {
		n, err := strconv.ParseInt(incr, 10, 64)
		if err != nil {
			return []*syntax.Word{mk(braceText(b))}
		}
		step = n
		if step < 0 {
			step = -step
		}
		if step == 0 {
			step = 1
		}
	}
	x, err1 := strconv.ParseInt(from, 10, 64)
	y, err2 := strconv.ParseInt(to, 10, 64)
	if err1 == nil && err2 == nil {
		width := 0
		if (len(from) > 1 && (from[0] == '0' || from[0] == '-' && from[1] == '0')) ||
			(len(to) > 1 && (to[0] == '0' || to[0] == '-' && to[1] == '0')) {
			width = max(len(from), len(to))
		}
		n := (max(x, y)-min(x, y))/step + 1
		if n > maxBraceWords {
			sh.r.limit("brace expansion makes more than %d words", maxBraceWords)
		}
		out := make([]*syntax.Word, 0, n)
		format := func(v int64) string {
			s := strconv.FormatInt(v, 10)
			if width > 0 {
				neg := v < 0
				if neg {
					s = s[1:]
				}
				w := width
				if neg {
					w--
				}
				for len(s) < w {
					s = "0" + s
				}
				if neg {
					s = "-" + s
				}
			}
			return s
		}
		if x <= y {
			for v := x; v <= y; v += step {
				out = append(out, mk(format(v)))
				if v > y-step { // no overflow
					break
				}
			}
		} else {
			for v := x; v >= y; v -= step {
				out = append(out, mk(format(v)))
				if v < y+step {
					break
				}
			}
		}
		return out
	}
	if utf8.RuneCountInString(from) == 1 && utf8.RuneCountInString(to) == 1 && len(from) == 1 && len(to) == 1 {
		a, c := from[0], to[0]
		if min(a, c) <= '`' && max(a, c) >= '\\' {
			// the range holds \ or `, which bash reads again (rescanBraceWord)
			sh.braceQuoteChars = true
		}
		var out []*syntax.Word
		if a <= c {
			for v := int(a); v <= int(c); v += int(step) {
				out = append(out, mk(string(rune(v))))
			}
		} else {
			for v := int(a); v >= int(c); v -= int(step) {
				out = append(out, mk(string(rune(v))))
			}
		}
		return out
	}
	return []*syntax.Word{mk(braceText(b))}
}

// rescanBraceWord reads a word a character range made ({z..A}) as bash
// does, which expands braces in the text and then reads the words again:
// a backquote with text after it opens a command substitution that does
// not close ("bad substitution", which ends the command); a lone
// backslash at the end quotes nothing (the word is empty, not dropped).
func (sh *shell) rescanBraceWord(w *syntax.Word) *syntax.Word {
	for i, p := range w.Parts {
		l, ok := p.(*syntax.Lit)
		if !ok {
			continue
		}
		last := i == len(w.Parts)-1
		for j := 0; j < len(l.Value); j++ {
			switch l.Value[j] {
			case '\\':
				if j == len(l.Value)-1 && last {
					parts := append([]syntax.WordPart(nil), w.Parts[:i]...)
					if j > 0 {
						parts = append(parts, &syntax.Lit{ValuePos: l.ValuePos, ValueEnd: l.ValueEnd, Value: l.Value[:j]})
					}
					parts = append(parts, &syntax.SglQuoted{})
					return &syntax.Word{Parts: parts}
				}
				j++
			case '`':
				if j == len(l.Value)-1 && last {
					continue // a bare backquote is itself
				}
				var b strings.Builder
				b.WriteString(l.Value[j:])
				for _, rest := range w.Parts[i+1:] {
					syntax.NewPrinter().Print(&b, rest)
				}
				sh.errorf("bad substitution: no closing \"`\" in %s", b.String())
				panic(fatalPanic{status: 1})
			}
		}
	}
	return w
}

// isNameByte reports whether c may be in a variable's name.
func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// sandboxUsers are the users of the sandbox besides its own (Config.User,
// whose home is $HOME), as a container's /etc/passwd has them: what ~name
// expands to and compgen -A user lists.
var sandboxUsers = []struct{ name, home string }{{"root", "/root"}}

// userHome is the home directory of a sandbox user.
func (sh *shell) userHome(name string) (string, bool) {
	if name == "" {
		return "", false
	}
	if name == sh.r.cfg.User {
		return sh.value("HOME"), true
	}
	for _, u := range sandboxUsers {
		if u.name == name {
			return u.home, true
		}
	}
	return "", false
}
