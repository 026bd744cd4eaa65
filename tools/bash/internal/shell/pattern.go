package shell

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/tools/bash/internal/escape"
)

// pattern is a compiled bash pattern (case, [[ == ]], ${x#pat}, globs):
// * ? [...] with classes, backslash escapes, and the extended operators
// ?() *() +() @() !().
type pattern struct {
	seq    []pnode
	lit    string
	isLit  bool
	nocase bool
	bytes  bool // a character is a byte (LC_ALL=C)
}

type pnodeKind uint8

const (
	pLit   pnodeKind = iota
	pAny             // ?
	pStar            // *
	pClass           // [...]
	pExt             // ?( *( +( @( !(
)

type pnode struct {
	kind  pnodeKind
	r     rune
	class *charClass
	ext   *extGroup
}

type charClass struct {
	neg    bool
	ranges []rune // pairs lo, hi
	named  []string
}

type extGroup struct {
	op   byte // ? * + @ !
	alts [][]pnode
}

// compilePattern compiles pat (cached per run).
func (sh *shell) compilePattern(pat string, nocase, extglob bool) *pattern {
	key := pat
	if nocase {
		key = "\x00i" + key
	}
	if sh.byteText {
		key = "\x00b" + key
	}
	r := sh.r
	r.cacheMu.Lock()
	p, ok := r.patMemo[key]
	r.cacheMu.Unlock()
	if ok {
		return p
	}
	if sh.byteText {
		p = compileBytePattern(pat, nocase)
	} else {
		p = compilePattern(pat, nocase, true)
	}
	r.cacheMu.Lock()
	if len(r.patMemo) > 4096 {
		r.patMemo = map[string]*pattern{}
	}
	r.patMemo[key] = p
	r.cacheMu.Unlock()
	return p
}

func compilePattern(pat string, nocase, extglob bool) *pattern {
	return compilePatternMode(pat, nocase, extglob, false)
}

// compileBytePattern compiles pat for a locale whose characters are
// bytes: ? and [...] match one byte, and a multibyte character of the
// pattern matches its bytes.
func compileBytePattern(pat string, nocase bool) *pattern {
	return compilePatternMode(pat, nocase, true, true)
}

func compilePatternMode(pat string, nocase, extglob, bytes bool) *pattern {
	p := &pattern{nocase: nocase, bytes: bytes}
	seq, _ := parseSeq(pat, 0, extglob, false, bytes)
	p.seq = seq
	var b strings.Builder
	p.isLit = true
	for _, n := range seq {
		if n.kind != pLit {
			p.isLit = false
			break
		}
		writeByteRune(&b, n.r)
	}
	if p.isLit && !nocase {
		p.lit = b.String()
	} else {
		p.isLit = false
	}
	return p
}

// literal returns the text a pattern without specials matches.
func (p *pattern) literal() (string, bool) { return p.lit, p.isLit }

// parseSeq parses pattern text from i until the end (or, inGroup, until
// an unescaped | or ) at this level). It returns the nodes and where it
// stopped.
func parseSeq(pat string, i int, extglob, inGroup, bytes bool) ([]pnode, int) {
	var seq []pnode
	for i < len(pat) {
		c := pat[i]
		if inGroup && (c == '|' || c == ')') {
			return seq, i
		}
		if extglob && i+1 < len(pat) && pat[i+1] == '(' && strings.IndexByte("?*+@!", c) >= 0 {
			if g, end, ok := parseExt(pat, i, extglob, bytes); ok {
				seq = append(seq, pnode{kind: pExt, ext: g})
				i = end
				continue
			}
		}
		switch c {
		case '\\':
			if i+1 < len(pat) {
				r, n := decodeRune(pat[i+1:], bytes)
				seq = append(seq, pnode{kind: pLit, r: r})
				i += 1 + n
				continue
			}
			seq = append(seq, pnode{kind: pLit, r: '\\'})
			i++
		case '*':
			if len(seq) == 0 || seq[len(seq)-1].kind != pStar {
				seq = append(seq, pnode{kind: pStar})
			}
			i++
		case '?':
			seq = append(seq, pnode{kind: pAny})
			i++
		case '[':
			if cl, end, ok := parseClass(pat, i, bytes); ok {
				seq = append(seq, pnode{kind: pClass, class: cl})
				i = end
				continue
			}
			seq = append(seq, pnode{kind: pLit, r: '['})
			i++
		default:
			r, n := decodeRune(pat[i:], bytes)
			seq = append(seq, pnode{kind: pLit, r: r})
			i += n
		}
	}
	return seq, i
}

// parseExt parses an extended group starting at pat[i] (the operator).
func parseExt(pat string, i int, extglob, bytes bool) (*extGroup, int, bool) {
	g := &extGroup{op: pat[i]}
	j := i + 2
	for {
		alt, end := parseSeq(pat, j, extglob, true, bytes)
		if end >= len(pat) {
			return nil, 0, false
		}
		g.alts = append(g.alts, alt)
		if pat[end] == ')' {
			return g, end + 1, true
		}
		j = end + 1 // past |
	}
}

// parseClass parses a bracket expression starting at pat[i] == '['.
func parseClass(pat string, i int, bytes bool) (*charClass, int, bool) {
	cl := &charClass{}
	j := i + 1
	if j < len(pat) && (pat[j] == '!' || pat[j] == '^') {
		cl.neg = true
		j++
	}
	first := true
	for j < len(pat) {
		c := pat[j]
		if c == ']' && !first {
			return cl, j + 1, true
		}
		first = false
		if c == '[' && j+1 < len(pat) && (pat[j+1] == ':' || pat[j+1] == '=' || pat[j+1] == '.') {
			kind := pat[j+1]
			end := strings.Index(pat[j+2:], string(kind)+"]")
			if end >= 0 {
				name := pat[j+2 : j+2+end]
				j = j + 2 + end + 2
				switch kind {
				case ':':
					cl.named = append(cl.named, name)
				default:
					for k := 0; k < len(name); {
						r, n := decodeRune(name[k:], bytes)
						cl.ranges = append(cl.ranges, r, r)
						k += n
					}
				}
				continue
			}
		}
		var lo rune
		var n int
		if c == '\\' && j+1 < len(pat) {
			lo, n = decodeRune(pat[j+1:], bytes)
			n++
		} else {
			lo, n = decodeRune(pat[j:], bytes)
		}
		j += n
		hi := lo
		if j+1 < len(pat) && pat[j] == '-' && pat[j+1] != ']' {
			k := j + 1
			if pat[k] == '\\' && k+1 < len(pat) {
				k++
			}
			r, m := decodeRune(pat[k:], bytes)
			hi = r
			j = k + m
		}
		cl.ranges = append(cl.ranges, lo, hi)
	}
	return nil, 0, false
}

func (cl *charClass) matches(r rune, nocase bool) bool {
	in := cl.has(r)
	if !in && nocase {
		if u := unicode.ToUpper(r); u != r {
			in = cl.has(u)
		}
		if l := unicode.ToLower(r); !in && l != r {
			in = cl.has(l)
		}
	}
	return in != cl.neg
}

func (cl *charClass) has(r rune) bool {
	for k := 0; k+1 < len(cl.ranges); k += 2 {
		if r >= cl.ranges[k] && r <= cl.ranges[k+1] {
			return true
		}
	}
	for _, name := range cl.named {
		if classHas(name, r) {
			return true
		}
	}
	return false
}

func classHas(name string, r rune) bool {
	switch name {
	case "alnum":
		return unicode.IsLetter(r) || unicode.IsDigit(r)
	case "alpha":
		return unicode.IsLetter(r)
	case "ascii":
		return r < 128
	case "blank":
		return r == ' ' || r == '\t'
	case "cntrl":
		return unicode.IsControl(r)
	case "digit":
		return r >= '0' && r <= '9'
	case "graph":
		return unicode.IsGraphic(r) && !unicode.IsSpace(r)
	case "lower":
		return unicode.IsLower(r)
	case "print":
		return unicode.IsPrint(r)
	case "punct":
		return r < 128 && unicode.IsPunct(r) || r < 128 && unicode.IsSymbol(r)
	case "space":
		return unicode.IsSpace(r)
	case "upper":
		return unicode.IsUpper(r)
	case "word":
		return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
	case "xdigit":
		return r < 128 && escape.IsHex(byte(r))
	}
	return false
}

// match reports whether the whole of s matches.
func (p *pattern) match(s string) bool {
	if p.isLit {
		return s == p.lit
	}
	m := matcher{nocase: p.nocase, bytes: p.bytes}
	return m.seq(p.seq, s, 0, len(s))
}

type matcher struct {
	nocase bool
	bytes  bool // a character is a byte
	// failed remembers where the rest of a pattern after a * did not
	// match, so that several stars stay polynomial.
	failed map[memoKey]bool
}

type memoKey struct {
	p      *pnode
	n      int
	i, end int
}

// seq reports whether nodes match s[i:end] exactly.
func (m *matcher) seq(nodes []pnode, s string, i, end int) bool {
	for k := 0; k < len(nodes); k++ {
		n := nodes[k]
		switch n.kind {
		case pLit:
			if i >= end {
				return false
			}
			r, w := decodeRune(s[i:end], m.bytes)
			if r != n.r && !(m.nocase && foldEq(r, n.r)) {
				return false
			}
			i += w
		case pAny:
			if i >= end {
				return false
			}
			_, w := decodeRune(s[i:end], m.bytes)
			i += w
		case pClass:
			if i >= end {
				return false
			}
			r, w := decodeRune(s[i:end], m.bytes)
			if !n.class.matches(r, m.nocase) {
				return false
			}
			i += w
		case pStar:
			rest := nodes[k+1:]
			if len(rest) == 0 {
				return true
			}
			// a literal after * must appear: skip positions quickly
			for j := i; j <= end; {
				key := memoKey{&rest[0], len(rest), j, end}
				if !m.failed[key] {
					if m.seq(rest, s, j, end) {
						return true
					}
					if m.failed == nil {
						m.failed = map[memoKey]bool{}
					}
					m.failed[key] = true
				}
				if j == end {
					break
				}
				_, w := decodeRune(s[j:end], m.bytes)
				j += w
			}
			return false
		case pExt:
			return m.ext(n.ext, nodes[k+1:], s, i, end)
		}
	}
	return i == end
}

// ext matches an extended group at s[i:], followed by rest, to end.
func (m *matcher) ext(g *extGroup, rest []pnode, s string, i, end int) bool {
	switch g.op {
	case '@', '?':
		if g.op == '?' && m.seq(rest, s, i, end) {
			return true
		}
		for j := end; j >= i; j-- {
			if j < end && !m.bytes && !utf8.RuneStart(s[j]) {
				continue
			}
			if m.anyAlt(g, s, i, j) && m.seq(rest, s, j, end) {
				return true
			}
		}
		return false
	case '*', '+':
		if g.op == '*' && m.seq(rest, s, i, end) {
			return true
		}
		for j := end; j > i; j-- {
			if j < end && !m.bytes && !utf8.RuneStart(s[j]) {
				continue
			}
			if m.anyAlt(g, s, i, j) {
				// one repetition done: zero or more remain
				star := &extGroup{op: '*', alts: g.alts}
				if m.ext(star, rest, s, j, end) {
					return true
				}
			}
		}
		return false
	case '!':
		for j := end; j >= i; j-- {
			if j < end && !m.bytes && !utf8.RuneStart(s[j]) {
				continue
			}
			if !m.anyAlt(g, s, i, j) && m.seq(rest, s, j, end) {
				return true
			}
		}
		return false
	}
	return false
}

func (m *matcher) anyAlt(g *extGroup, s string, i, j int) bool {
	for _, alt := range g.alts {
		if m.seq(alt, s, i, j) {
			return true
		}
	}
	return false
}

func foldEq(a, b rune) bool {
	return unicode.ToLower(a) == unicode.ToLower(b)
}

// hasGlobChars reports whether a pattern has unescaped specials.
func hasGlobChars(pat string, extglob bool) bool {
	for i := 0; i < len(pat); i++ {
		switch pat[i] {
		case '\\':
			i++
		case '*', '?', '[':
			return true
		case '+', '@', '!':
			if extglob && i+1 < len(pat) && pat[i+1] == '(' {
				return true
			}
		}
	}
	return false
}

// unescapePattern removes a pattern's backslashes.
func unescapePattern(pat string) string {
	if strings.IndexByte(pat, '\\') < 0 {
		return pat
	}
	var b strings.Builder
	for i := 0; i < len(pat); i++ {
		if pat[i] == '\\' && i+1 < len(pat) {
			i++
		}
		b.WriteByte(pat[i])
	}
	return b.String()
}

// matchPattern reports whether s matches pat (case and [[ ]]).
func (sh *shell) matchPattern(pat, s string) bool {
	p := sh.compilePattern(pat, sh.shopt.nocasematch, true)
	return p.match(s)
}

// byteRunes: a byte that is not UTF-8 is matched as itself, as the rune
// byteRunes+b (private use, plane 16), so that a pattern and a string
// with the same invalid bytes match.
const byteRunes = 0x10FF00

func decodeByteRune(s string) (rune, int) {
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && n == 1 {
		return byteRunes + rune(s[0]), 1
	}
	return r, n
}

// decodeRune is decodeByteRune, or with bytes every byte of 0x80 and
// above as its byte rune.
func decodeRune(s string, bytes bool) (rune, int) {
	if bytes && s[0] >= 0x80 {
		return byteRunes + rune(s[0]), 1
	}
	return decodeByteRune(s)
}

func writeByteRune(b *strings.Builder, r rune) {
	if r >= byteRunes+0x80 && r <= byteRunes+0xff {
		b.WriteByte(byte(r - byteRunes))
		return
	}
	b.WriteRune(r)
}
