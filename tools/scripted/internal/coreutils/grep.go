package coreutils

import (
	"fmt"
	"regexp"
	"strconv"
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

// grepCmd implements grep [-E -F -G -i -v -c -n -o -q -s -w -x -h -H
// -m NUM -e PATTERN] PATTERN on stdin. Exit 0 when a line matched, 1 when
// none did, 2 on error.
func grepCmd(c *cmd, args []string) int {
	var ere, fixed, icase, invert, count, number, only, quiet, word, line bool
	maxCount := -1
	var patterns []string
	rest, st, ok := c.flags(args, "em", 2, func(f, v string) error {
		switch f {
		case "-E", "--extended-regexp":
			ere = true
		case "-F", "--fixed-strings":
			fixed = true
		case "-G", "--basic-regexp":
			ere, fixed = false, false
		case "-i", "-y", "--ignore-case":
			icase = true
		case "-v", "--invert-match":
			invert = true
		case "-c", "--count":
			count = true
		case "-n", "--line-number":
			number = true
		case "-o", "--only-matching":
			only = true
		case "-q", "--quiet", "--silent":
			quiet = true
		case "-w", "--word-regexp":
			word = true
		case "-x", "--line-regexp":
			line = true
		case "-s", "--no-messages", "-h", "--no-filename", "-H", "--with-filename", "--color", "--colour":
		case "-e", "--regexp":
			patterns = append(patterns, v)
		case "-m", "--max-count":
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("invalid max count: %s", v)
			}
			maxCount = n
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if patterns == nil {
		if len(rest) == 0 {
			return c.errf(2, "usage: grep [OPTION]... PATTERN (input is read from stdin)")
		}
		patterns = strings.Split(rest[0], "\n")
		rest = rest[1:]
	}
	if st, ok := c.operands(rest); !ok {
		return st
	}
	var alts []string
	for _, p := range patterns {
		if fixed {
			p = regexp.QuoteMeta(p)
		} else if !ere {
			p = breToERE(p)
		}
		alts = append(alts, "(?:"+p+")")
	}
	expr := strings.Join(alts, "|")
	if word {
		expr = `\b(?:` + expr + `)\b`
	}
	if line {
		expr = "^(?:" + expr + ")$"
	}
	re, err := compileRegex(expr, true, icase)
	if err != nil {
		return c.errf(2, "invalid regular expression: %v", err)
	}
	matched := 0
	n := 0
	rerr := c.eachLine(func(l string, _ bool) bool {
		n++
		if maxCount >= 0 && matched >= maxCount {
			return false
		}
		var locs [][]int
		hit := false
		if only && !invert {
			locs = re.FindAllStringSubmatchIndex(l, -1)
			hit = len(locs) > 0
		} else {
			hit = re.MatchString(l)
		}
		if hit == invert {
			return true
		}
		matched++
		if quiet {
			return false
		}
		if count {
			return true
		}
		prefix := ""
		if number {
			prefix = strconv.Itoa(n) + ":"
		}
		if only && !invert {
			for _, loc := range locs {
				s, e := loc[0], loc[1]
				if e > s {
					c.out.WriteString(prefix)
					c.out.WriteString(l[s:e])
					c.out.WriteByte('\n')
				}
			}
			return true
		}
		c.out.WriteString(prefix)
		c.out.WriteString(l)
		c.out.WriteByte('\n')
		return true
	})
	if rerr != nil && !(quiet && matched > 0) {
		return c.readErr(rerr)
	}
	if count {
		fmt.Fprintf(c.out, "%d\n", matched)
	}
	if matched == 0 {
		return c.done(1)
	}
	return c.done(0)
}
