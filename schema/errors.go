package schema

import (
	"fmt"
	"sort"
	"strings"
)

// ValidationError is one problem found in AIR: the file it is in (empty
// for values and built-ins), the JSON pointer of the offending node, and
// what is wrong. Its text form is "file: /json/pointer: message", or
// "file:line:column: message" for a file that is not JSON.
type ValidationError struct {
	File    string
	Pointer string
	// Line and Column place a problem that has no JSON pointer, a file
	// that is not JSON, in the file (1-based; the column counts
	// characters); they are 0 otherwise.
	Line, Column int
	Msg          string
	// Warning marks a problem that does not stop a world from loading
	// (for example: no policy is configured, so external effects are denied).
	Warning bool
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	switch {
	case e.Line > 0:
		// file:line:column, as compilers and editors write it.
		if e.File != "" {
			b.WriteString(e.File)
			b.WriteString(":")
		}
		fmt.Fprintf(&b, "%d:%d: ", e.Line, e.Column)
	default:
		if e.File != "" {
			b.WriteString(e.File)
			b.WriteString(": ")
		}
		b.WriteString(displayPtr(e.Pointer))
		b.WriteString(": ")
	}
	if e.Warning {
		b.WriteString("warning: ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList is every problem found at once, sorted by file and pointer. It
// is returned as an error only when it holds at least one error that is not
// a warning.
type ErrorList []*ValidationError

func (l ErrorList) Error() string {
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Errors returns the problems that are not warnings.
func (l ErrorList) Errors() ErrorList {
	var out ErrorList
	for _, e := range l {
		if !e.Warning {
			out = append(out, e)
		}
	}
	return out
}

// Warnings returns the problems that are warnings.
func (l ErrorList) Warnings() ErrorList {
	var out ErrorList
	for _, e := range l {
		if e.Warning {
			out = append(out, e)
		}
	}
	return out
}

// problems collects validation errors for one file.
type problems struct {
	file string
	list *ErrorList
}

func newProblems(file string) *problems { return &problems{file: file, list: &ErrorList{}} }

func (p *problems) forFile(file string) *problems { return &problems{file: file, list: p.list} }

func (p *problems) add(ptr, format string, args ...any) {
	*p.list = append(*p.list, &ValidationError{File: p.file, Pointer: ptr, Msg: fmt.Sprintf(format, args...)})
}

// addAt adds an error at a line and column of the file: one that has no
// JSON pointer.
func (p *problems) addAt(line, col int, msg string) {
	*p.list = append(*p.list, &ValidationError{File: p.file, Line: line, Column: col, Msg: msg})
}

func (p *problems) warn(ptr, format string, args ...any) {
	*p.list = append(*p.list, &ValidationError{File: p.file, Pointer: ptr, Msg: fmt.Sprintf(format, args...), Warning: true})
}

func (p *problems) empty() bool { return len(*p.list) == 0 }

func (p *problems) hasErrors() bool { return len(p.list.Errors()) > 0 }

// hasErrorsAt reports whether an error of p's file is at ptr or under it.
func (p *problems) hasErrorsAt(ptr string) bool {
	for _, e := range *p.list {
		if !e.Warning && e.File == p.file && (e.Pointer == ptr || strings.HasPrefix(e.Pointer, ptr+"/")) {
			return true
		}
	}
	return false
}

// sorted returns the problems sorted by file, pointer and message, without
// duplicates, so output is stable.
func (p *problems) sorted() ErrorList {
	l := append(ErrorList(nil), (*p.list)...)
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i], l[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Pointer != b.Pointer {
			return a.Pointer < b.Pointer
		}
		return a.Msg < b.Msg
	})
	out := l[:0]
	for i, e := range l {
		if i > 0 && *e == *l[i-1] {
			continue
		}
		out = append(out, e)
	}
	return out
}

// PathError is a problem at a path inside a value, such as
// `$.messages[3].role: unknown variant tag "Bot" (want User|Assistant)`.
type PathError struct {
	Path string
	Msg  string
}

func (e *PathError) Error() string { return e.Path + ": " + e.Msg }
