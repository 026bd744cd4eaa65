package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/demiurge-dev/demiurge/cas"
)

// Errors of Edit.
var (
	// ErrEmptyOld is returned when the text to replace is empty.
	ErrEmptyOld = errors.New("workspace: old_string is empty")
	// ErrSameText is returned when the replacement equals the text it
	// replaces: the edit would change nothing.
	ErrSameText = errors.New("workspace: old_string and new_string are the same")
)

// maxEditLines bounds the line numbers an EditError lists.
const maxEditLines = 20

// EditError reports that the text to replace does not occur exactly once.
type EditError struct {
	// Count is how many times it occurs (non-overlapping).
	Count int
	// Lines are the 1-based line numbers where the first occurrences
	// start (at most 20).
	Lines []int
}

func (e *EditError) Error() string {
	if e.Count == 0 {
		return "old_string not found"
	}
	lines := make([]string, len(e.Lines))
	for i, l := range e.Lines {
		lines[i] = strconv.Itoa(l)
	}
	more := ""
	if e.Count > len(e.Lines) {
		more = ", ..."
	}
	return fmt.Sprintf("old_string occurs %d times (lines %s%s); it must occur exactly once", e.Count, strings.Join(lines, ", "), more)
}

// Edit replaces the one occurrence of old in content with new and returns
// the new content and the number of replacements. If old does not occur,
// or occurs more than once and replaceAll is false, it returns an
// *EditError saying how often and on which lines. With replaceAll every
// (non-overlapping) occurrence is replaced. An empty old is ErrEmptyOld;
// old equal to new is ErrSameText. content is not modified.
func Edit(content []byte, old, new string, replaceAll bool) ([]byte, int, error) {
	if old == "" {
		return nil, 0, ErrEmptyOld
	}
	if old == new {
		return nil, 0, ErrSameText
	}
	o := []byte(old)
	n := bytes.Count(content, o)
	if n == 0 || n > 1 && !replaceAll {
		e := &EditError{Count: n}
		if n > 1 {
			e.Lines = matchLines(content, o, maxEditLines)
		}
		return nil, 0, e
	}
	return bytes.ReplaceAll(content, o, []byte(new)), n, nil
}

// matchLines returns the 1-based line numbers of the first max
// non-overlapping occurrences of old in content.
func matchLines(content, old []byte, max int) []int {
	var lines []int
	line, from := 1, 0
	for len(lines) < max {
		i := bytes.Index(content[from:], old)
		if i < 0 {
			break
		}
		line += bytes.Count(content[from:from+i], []byte{'\n'})
		lines = append(lines, line)
		line += bytes.Count(old, []byte{'\n'})
		from += i + len(old)
	}
	return lines
}

// EditFile applies Edit to the file at path p and writes the result back
// with the file's mode. It returns the new root and the number of
// replacements. Errors are *PathError, wrapping an *EditError when old does
// not occur exactly once.
func EditFile(ctx context.Context, s Store, root cas.Ref, p, old, new string, replaceAll bool) (cas.Ref, int, error) {
	const op = "edit"
	data, e, err := ReadBytes(ctx, s, root, p, nil)
	if err != nil {
		if pe, ok := errors.AsType[*PathError](err); ok {
			pe.Op = op
		}
		return cas.Ref{}, 0, err
	}
	c, _ := CleanPath(p) // ReadBytes checked it
	out, n, err := Edit(data, old, new, replaceAll)
	if err != nil {
		return cas.Ref{}, 0, &PathError{Op: op, Path: c, Err: err}
	}
	newRoot, _, err := WriteBytes(ctx, s, root, c, out, e.Mode)
	if err != nil {
		if pe, ok := errors.AsType[*PathError](err); ok {
			pe.Op = op
		}
		return cas.Ref{}, 0, err
	}
	return newRoot, n, nil
}
