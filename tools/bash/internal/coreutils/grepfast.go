package coreutils

import (
	"bytes"
	"regexp"
	"regexp/syntax"
)

// grepWindow is how much input one regular-expression search of
// countSelected covers: small enough for Go's backtracking matcher (far
// faster than its NFA on large inputs), large enough that a rare match
// costs few calls.
const grepWindow = 16 << 10

// grepLineByLine turns the whole-input search off (for tests that compare
// the two).
var grepLineByLine = false

// lineSearcher finds the next line that holds a match in newline-ended
// input without matching line by line: a literal pattern with
// bytes.Index, a pattern that cannot match a newline with one search per
// window of lines. Lines matched line by line cost a regexp call each
// (about 150 ns), which made `grep -c` over 8M lines take seconds.
type lineSearcher struct {
	literal []byte         // the pattern is this literal (case-sensitive)
	multi   *regexp.Regexp // else the pattern with ^ and $ at line ends
}

// newLineSearcher returns a searcher for re, or nil when re may match
// across a newline (then lines are matched one by one).
func newLineSearcher(re *regexp.Regexp) *lineSearcher {
	parsed, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil || mayMatchNewline(parsed) {
		return nil
	}
	parsed = parsed.Simplify()
	for parsed.Op == syntax.OpCapture && len(parsed.Sub) == 1 {
		parsed = parsed.Sub[0]
	}
	switch {
	case parsed.Op == syntax.OpEmptyMatch:
		return &lineSearcher{literal: []byte{}}
	case parsed.Op == syntax.OpLiteral && parsed.Flags&syntax.FoldCase == 0:
		return &lineSearcher{literal: []byte(string(parsed.Rune))}
	}
	// A pattern anchored at the line start is tried at every byte of a
	// window (Go's matcher does not skip to line starts): line by line is
	// faster.
	first := parsed
	for first.Op == syntax.OpConcat || first.Op == syntax.OpCapture {
		first = first.Sub[0]
	}
	if first.Op == syntax.OpBeginLine || first.Op == syntax.OpBeginText {
		return nil
	}
	multi, err := regexp.Compile("(?m:" + re.String() + ")")
	if err != nil {
		return nil
	}
	return &lineSearcher{multi: multi}
}

// mayMatchNewline reports whether re can consume a '\n'.
func mayMatchNewline(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpAnyChar:
		return true
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if r == '\n' {
				return true
			}
		}
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i] <= '\n' && '\n' <= re.Rune[i+1] {
				return true
			}
		}
	}
	for _, sub := range re.Sub {
		if mayMatchNewline(sub) {
			return true
		}
	}
	return false
}

// next returns the start and end (after its '\n', or len(data)) of the
// first line at or after off that holds a match, or -1, -1.
func (s *lineSearcher) next(data []byte, off int) (start, end int) {
	for off < len(data) {
		var at int
		if s.literal != nil {
			i := bytes.Index(data[off:], s.literal)
			if i < 0 {
				return -1, -1
			}
			at = off + i
		} else {
			stop := len(data)
			if off+grepWindow < stop {
				stop = off + grepWindow
				if nl := bytes.IndexByte(data[stop:], '\n'); nl >= 0 {
					stop += nl + 1
				} else {
					stop = len(data)
				}
			}
			// The window ends before its last '\n': with (?m), $ also
			// matches at the end of the text, and ^ after a final '\n'.
			window := data[off:stop]
			if window[len(window)-1] == '\n' {
				window = window[:len(window)-1]
			}
			loc := s.multi.FindIndex(window)
			if loc == nil {
				off = stop
				continue
			}
			at = off + loc[0]
		}
		start = bytes.LastIndexByte(data[off:at], '\n') + 1 + off
		end = len(data)
		if nl := bytes.IndexByte(data[at:], '\n'); nl >= 0 {
			end = at + nl + 1
		}
		return start, end
	}
	return -1, -1
}

// countSelected counts the lines of newline-ended data that grep selects
// (matching, or not matching with -v), stopping at limit (-1: none); ok
// is false when the pattern needs line-by-line matching.
func (o *grepOpts) countSelected(data []byte, limit int) (n int, ok bool) {
	if o.eol != '\n' || grepLineByLine {
		return 0, false
	}
	if !o.searcherBuilt {
		o.searcher, o.searcherBuilt = newLineSearcher(o.re), true
	}
	s := o.searcher
	if s == nil || o.invert && limit >= 0 {
		return 0, false
	}
	matched := 0
	for off := 0; off < len(data); {
		if limit >= 0 && matched >= limit {
			break
		}
		start, end := s.next(data, off)
		if start < 0 {
			break
		}
		matched++
		off = end
	}
	if !o.invert {
		return matched, true
	}
	lines := bytes.Count(data, []byte{'\n'})
	if len(data) > 0 && data[len(data)-1] != '\n' {
		lines++
	}
	return lines - matched, true
}
