package shell

import (
	"strings"
)

// Bash expands aliases as it reads, before it parses: an alias may hold
// half a command ("for i in 1 2; do echo ", "{", "("), which no parse of
// the line before expansion can carry. expandAliases (misc.go) expands
// aliases in the parsed line; when the line does not parse,
// aliasRepair expands them in its text, as bash's reader does, and the
// line is parsed again.

// aliasRepair expands the aliases in command position in text[from:upto]
// and returns the text with them expanded; ok is false when there was
// nothing to expand. A word that names an alias and is left as it is
// (an alias inside its own expansion) is quoted (\name), so that the
// parsed line is not expanded again.
func (sh *shell) aliasRepair(text string, from, upto int) (string, bool) {
	if !sh.shopt.expandAliases || len(sh.aliases.m) == 0 || from >= upto || upto > len(text) {
		return text, false
	}
	seg := text[from:upto]
	out, changed := sh.aliasExpandText(seg, nil, true, 0)
	if !changed {
		return text, false
	}
	return text[:from] + out + text[upto:], true
}

// aliasExpandText expands seg; active are the aliases being expanded
// (not expanded again), cmd whether seg starts in command position.
func (sh *shell) aliasExpandText(seg string, active []string, cmd bool, depth int) (string, bool) {
	var b strings.Builder
	changed := false
	next := false // the previous word was an alias ending in a blank
	i := 0
	for i < len(seg) {
		c := seg[i]
		switch {
		case c == ' ' || c == '\t':
			b.WriteByte(c)
			i++
			continue
		case c == '\n' || c == ';' || c == '&' || c == '|' || c == '(' || c == ')':
			// after an operator (a case pattern's ")" too) a command
			// follows
			b.WriteByte(c)
			i++
			cmd, next = true, false
			continue
		case c == '#' && (i == 0 || seg[i-1] == ' ' || seg[i-1] == '\t' || seg[i-1] == '\n'):
			j := strings.IndexByte(seg[i:], '\n')
			if j < 0 {
				j = len(seg) - i
			}
			b.WriteString(seg[i : i+j])
			i += j
			continue
		case c == '<' || c == '>':
			// a redirection: the operator, then its word
			j := i
			for j < len(seg) && strings.IndexByte("<>&-|", seg[j]) >= 0 {
				j++
			}
			for j < len(seg) && (seg[j] == ' ' || seg[j] == '\t') {
				j++
			}
			k := wordEnd(seg, j)
			b.WriteString(seg[i:k])
			i = k
			continue
		}
		j := wordEnd(seg, i)
		if j == i {
			b.WriteByte(c)
			i++
			continue
		}
		word := seg[i:j]
		i = j
		if cmd || next {
			if val, ok := sh.aliases.m[word]; ok && isAliasWord(word) {
				if slicesContains(active, word) || depth > 100 {
					b.WriteString(`\` + word)
					cmd, next = false, false
					continue
				}
				exp, _ := sh.aliasExpandText(val, append(active, word), cmd || next, depth+1)
				if sh.aliasTails != nil {
					if t, ok := splitAliasHeredoc(exp); ok {
						exp = t.head
						*sh.aliasTails = append(*sh.aliasTails, t)
					}
				}
				b.WriteString(exp)
				changed = true
				blank := strings.HasSuffix(val, " ") || strings.HasSuffix(val, "\t")
				// the expansion leaves the reader where its text leaves it
				cmd = aliasEndsInCommand(val)
				next = blank
				continue
			}
		}
		b.WriteString(word)
		switch {
		case cmd && strings.Contains(word, "=") && isAssignWord(word):
			// an assignment: a command may still follow
		case cmd && commandKeyword[word]:
			// a keyword after which a command comes
		default:
			cmd = false
		}
		next = false
	}
	return b.String(), changed
}

// commandKeyword are the reserved words after which a command comes.
var commandKeyword = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "do": true,
	"while": true, "until": true, "!": true, "{": true, "time": true,
}

// aliasEndsInCommand reports whether an alias's value leaves the reader
// in command position (it ends with an operator or a keyword).
func aliasEndsInCommand(val string) bool {
	t := strings.TrimRight(val, " \t")
	if t == "" {
		return true
	}
	if strings.IndexByte(";&|(\n", t[len(t)-1]) >= 0 {
		return true
	}
	f := strings.Fields(t)
	return commandKeyword[f[len(f)-1]]
}

func isAliasWord(w string) bool {
	return w != "" && !strings.ContainsAny(w, "\\'\"$`=")
}

func isAssignWord(w string) bool {
	eq := strings.IndexByte(w, '=')
	name := w[:eq]
	name = strings.TrimSuffix(name, "+")
	if k := strings.IndexByte(name, '['); k > 0 {
		name = name[:k]
	}
	return validName(name)
}

func slicesContains(s []string, w string) bool {
	for _, x := range s {
		if x == w {
			return true
		}
	}
	return false
}

// wordEnd returns the end of the shell word starting at seg[i]: up to
// an unquoted blank or operator, quotes and $( ), ${ }, ` ` skipped.
func wordEnd(seg string, i int) int {
	for i < len(seg) {
		c := seg[i]
		switch c {
		case ' ', '\t', '\n', ';', '&', '|', '(', ')', '<', '>':
			return i
		case '\\':
			i += 2
		case '\'':
			k := strings.IndexByte(seg[i+1:], '\'')
			if k < 0 {
				return len(seg)
			}
			i += k + 2
		case '"', '`':
			i = quoteEnd(seg, i+1, c)
		case '$':
			if i+1 < len(seg) && (seg[i+1] == '(' || seg[i+1] == '{') {
				i = groupEnd(seg, i+1)
			} else {
				i++
			}
		default:
			i++
		}
	}
	return min(i, len(seg))
}

// quoteEnd returns the offset after the closing q of a quote opened
// before seg[i].
func quoteEnd(seg string, i int, q byte) int {
	for i < len(seg) {
		switch seg[i] {
		case '\\':
			i += 2
			continue
		case q:
			return i + 1
		case '$':
			if q == '"' && i+1 < len(seg) && (seg[i+1] == '(' || seg[i+1] == '{') {
				i = groupEnd(seg, i+1)
				continue
			}
		}
		i++
	}
	return len(seg)
}

// groupEnd returns the offset after the bracket closing seg[i] ('(' or
// '{').
func groupEnd(seg string, i int) int {
	open := seg[i]
	close := byte(')')
	if open == '{' {
		close = '}'
	}
	depth := 0
	for i < len(seg) {
		switch c := seg[i]; c {
		case '\\':
			i += 2
			continue
		case '\'':
			if open == '(' {
				k := strings.IndexByte(seg[i+1:], '\'')
				if k < 0 {
					return len(seg)
				}
				i += k + 2
				continue
			}
		case '"':
			i = quoteEnd(seg, i+1, '"')
			continue
		case open:
			depth++
		case close:
			depth--
			if depth == 0 {
				return i + 1
			}
		}
		i++
	}
	return len(seg)
}

// aliasHeredoc is an alias's text holding a here-document operator with
// lines after it: bash reads the document's body from the script's next
// lines, never from the alias (its reader takes here-document lines from
// the input), and the alias's own lines after the operator's run as
// commands after the body.
type aliasHeredoc struct {
	head  string // the text up to the end of the operator's line
	tail  string // the lines after it
	delim string // the delimiter, unquoted
	strip bool   // <<-
}

// splitAliasHeredoc splits an alias's (expanded) text at the end of the
// line of its first here-document operator; ok is false when it has
// none or no line after it.
func splitAliasHeredoc(v string) (aliasHeredoc, bool) {
	for i := 0; i+1 < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
			continue
		case '\'':
			k := strings.IndexByte(v[i+1:], '\'')
			if k < 0 {
				return aliasHeredoc{}, false
			}
			i += k + 1
			continue
		case '"':
			i = quoteEnd(v, i+1, '"') - 1
			continue
		case '<':
		default:
			continue
		}
		if v[i+1] != '<' || i+2 < len(v) && v[i+2] == '<' {
			continue
		}
		j := i + 2
		t := aliasHeredoc{}
		if j < len(v) && v[j] == '-' {
			t.strip = true
			j++
		}
		for j < len(v) && (v[j] == ' ' || v[j] == '\t') {
			j++
		}
		end := wordEnd(v, j)
		if end == j {
			return aliasHeredoc{}, false
		}
		t.delim = strings.NewReplacer(`\`, "", `'`, "", `"`, "").Replace(v[j:end])
		nl := strings.IndexByte(v[end:], '\n')
		if nl < 0 {
			return aliasHeredoc{}, false
		}
		nl += end
		t.head, t.tail = v[:nl], v[nl+1:]
		return t, true
	}
	return aliasHeredoc{}, false
}

// aliasHeredocRestart rewrites the script when the line text[from:lineEnd]
// uses an alias holding a here-document (see aliasHeredoc): the alias's
// text up to the operator's line, the body from the lines after the
// line, then the alias's remaining lines, then the rest of the script.
// ok is false when no such alias is used there. (The alias's lines count
// as lines of the script here: $LINENO after them is that much larger
// than bash's.)
func (sh *shell) aliasHeredocRestart(text string, from, lineEnd int) (string, bool) {
	has := false
	for _, v := range sh.aliases.m {
		if _, ok := splitAliasHeredoc(v); ok {
			has = true
			break
		}
	}
	if !has || from >= lineEnd || lineEnd > len(text) {
		return text, false
	}
	var tails []aliasHeredoc
	sh.aliasTails = &tails
	out, changed := sh.aliasExpandText(text[from:lineEnd], nil, true, 0)
	sh.aliasTails = nil
	if !changed || len(tails) != 1 {
		return text, false
	}
	t := tails[0]
	var b strings.Builder
	b.WriteString(text[:from])
	b.WriteString(out)
	b.WriteByte('\n')
	rest := ""
	if lineEnd < len(text) {
		rest = text[lineEnd+1:]
	}
	found := false
	for rest != "" {
		line, after, _ := strings.Cut(rest, "\n")
		b.WriteString(line + "\n")
		rest = after
		cmp := line
		if t.strip {
			cmp = strings.TrimLeft(cmp, "\t")
		}
		if cmp == t.delim {
			found = true
			break
		}
	}
	if !found {
		sh.line = strings.Count(text[:lineEnd], "\n") + 1
		sh.errorf("warning: here-document at line %d delimited by end-of-file (wanted `%s')", sh.line, t.delim)
		b.WriteString(t.delim + "\n")
	}
	b.WriteString(t.tail)
	if t.tail != "" && !strings.HasSuffix(t.tail, "\n") {
		b.WriteByte('\n')
	}
	b.WriteString(rest)
	return blankLines(text[:from]) + b.String()[from:], true
}
