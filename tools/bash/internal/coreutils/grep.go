package coreutils

import (
	"fmt"
	"regexp"
	"strings"
)

// maxRegexBytes bounds a pattern; RE2 matches in linear time, so the
// pattern size is the only cost to bound.
const maxRegexBytes = 64 * 1024

// compileRegex compiles a POSIX basic (ere=false) or extended regular
// expression into Go's RE2 syntax. Character classes such as [[:digit:]]
// are kept; back-references are not supported.
func compileRegex(pat string, ere, icase bool) (*regexp.Regexp, error) {
	if len(pat) > maxRegexBytes {
		return nil, fmt.Errorf("pattern exceeds %d bytes", maxRegexBytes)
	}
	var expr string
	if ere {
		expr = pat
	} else {
		expr = breToERE(pat)
	}
	if icase {
		expr = "(?i)" + expr
	}
	return regexp.Compile(expr)
}

// breToERE rewrites a basic regular expression: \( \) \{ \} \| \+ \? are
// the operators, and ( ) { } | + ? are literals.
func breToERE(p string) string {
	var b strings.Builder
	inBracket := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		if inBracket {
			b.WriteByte(c)
			if c == '[' && i+1 < len(p) && (p[i+1] == ':' || p[i+1] == '.' || p[i+1] == '=') {
				end := strings.Index(p[i+2:], string(p[i+1])+"]")
				if end >= 0 {
					b.WriteString(p[i+1 : i+2+end+2])
					i += end + 3
				}
				continue
			}
			if c == ']' {
				inBracket = false
			}
			continue
		}
		switch c {
		case '\\':
			if i+1 < len(p) {
				n := p[i+1]
				i++
				switch n {
				case '(', ')', '{', '}', '|', '+', '?':
					b.WriteByte(n)
				default:
					b.WriteByte('\\')
					b.WriteByte(n)
				}
			} else {
				b.WriteString(`\\`)
			}
		case '(', ')', '{', '}', '|', '+', '?':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '*':
			// A leading * (or after \( or ^) is a literal in BRE.
			s := b.String()
			if s == "" || strings.HasSuffix(s, "(") || s == "^" {
				b.WriteString(`\*`)
			} else {
				b.WriteByte('*')
			}
		case '[':
			inBracket = true
			b.WriteByte(c)
			if i+1 < len(p) && p[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				b.WriteString(`\]`)
				i++
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
