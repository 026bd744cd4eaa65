package cli

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Text that demiurge prints on a terminal comes from elsewhere: the
// model's answers, tools' outputs and arguments, MCP servers' messages,
// errors that quote them. A control sequence in it would reach the
// terminal as a command (OSC 52 writes the clipboard, others move the
// cursor, retitle the window, redraw lines, or hide text); so run, trace
// and the error line show control characters escaped, as Go writes them in
// a string (\x1b, \r, \u009b), unless --raw asks for them as they are.

// isControl reports whether r is a character that a terminal may take as
// a command, or that changes how the text around it reads: a C0 control
// other than newline and tab, DEL, a C1 control, and the bidirectional
// overrides and isolates (which reorder what is shown).
func isControl(r rune) bool {
	switch {
	case r < 0x20:
		return r != '\n' && r != '\t'
	case r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// escapeName is a name (a workspace path) as a line of a listing shows
// it: escapeControls, with a newline and a tab escaped too (\n, \t), so
// that a name can neither move the cursor nor pass for another line.
func escapeName(s string) string {
	if !strings.ContainsAny(s, "\n\t") {
		return escapeControls(s)
	}
	return escapeControls(strings.NewReplacer("\n", `\n`, "\t", `\t`).Replace(s))
}

// escapeControls returns s with each control character (isControl) and
// each byte that is not UTF-8 written as an escape: \x1b, \r, \u009b. A
// carriage return just before a newline stays (text with CRLF line ends).
func escapeControls(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || isControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\r' && i+1 < len(s) && s[i+1] == '\n':
			b.WriteByte('\r')
		case !isControl(r):
			b.WriteString(s[i : i+n])
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\v':
			b.WriteString(`\v`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

// escapingWriter writes to w what it is given with control characters
// escaped (escapeControls). A character cut between two writes is kept
// until the next write completes it; Flush writes what is kept.
type escapingWriter struct {
	w    io.Writer
	kept []byte // the start of a character the last write ended with
}

// textOut returns w, or an escapingWriter over w unless raw.
func textOut(w io.Writer, raw bool) io.Writer {
	if raw {
		return w
	}
	return &escapingWriter{w: w}
}

func (e *escapingWriter) Write(p []byte) (int, error) {
	buf := append(e.kept, p...)
	e.kept = nil
	// Keep a last character that is not complete yet (at most 3 bytes).
	if cut := incompleteTail(buf); cut < len(buf) {
		e.kept = append([]byte(nil), buf[cut:]...)
		buf = buf[:cut]
	}
	if _, err := io.WriteString(e.w, escapeControls(string(buf))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes the bytes kept from the last write, escaped.
func (e *escapingWriter) Flush() error {
	if len(e.kept) == 0 {
		return nil
	}
	s := escapeControls(string(e.kept))
	e.kept = nil
	_, err := io.WriteString(e.w, s)
	return err
}

// incompleteTail returns where the last, incomplete UTF-8 character of b
// starts (a valid start whose following bytes have not come yet), or
// len(b) if b ends with a whole character or with bytes that no later
// byte makes valid. A carriage return at the end is kept too, to see
// whether a newline follows.
func incompleteTail(b []byte) int {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return n - 1
	}
	for i := len(b) - 1; i >= 0 && i >= len(b)-3; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			return len(b)
		}
	}
	return len(b)
}

// flushOut flushes w if it keeps bytes (an escapingWriter).
func flushOut(w io.Writer) {
	if f, ok := w.(interface{ Flush() error }); ok {
		_ = f.Flush()
	}
}
