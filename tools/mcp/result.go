package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Output limits: how much of a result's text a tool keeps. The rest is
// cut on a UTF-8 boundary as the text is assembled, with a note of the
// result's size.
const (
	// DefaultOutputLimit is the limit of a tool's output (as bash's in
	// omega).
	DefaultOutputLimit = 30000
	// DefaultReadLimit is the limit of a tool the server marks read-only
	// (readOnlyHint), such as a file read (as omega's read tool).
	DefaultReadLimit = 50000
)

// capped is a text builder that keeps at most limit bytes, cut on a UTF-8
// boundary, while counting everything written to it. It never holds more
// than limit bytes.
type capped struct {
	limit int
	total int
	b     strings.Builder
	full  bool
}

func newCapped(limit int) *capped {
	c := &capped{limit: limit}
	c.b.Grow(min(limit, 4096))
	return c
}

// WriteString adds s: what fits whole, and of the first piece that does
// not fit, its longest prefix that ends on a character boundary.
func (c *capped) WriteString(s string) {
	c.total += len(s)
	if c.full {
		return
	}
	room := c.limit - c.b.Len()
	if len(s) <= room {
		c.b.WriteString(s)
		return
	}
	cut := room
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	c.b.WriteString(s[:cut])
	c.full = true
}

// Cut reports whether text was dropped.
func (c *capped) Cut() bool { return c.full }

// String returns the text kept, with a note of the cut if there was one.
func (c *capped) String() string {
	if !c.full {
		return c.b.String()
	}
	return c.b.String() + fmt.Sprintf("\n[output cut at %d of %d bytes]", c.b.Len(), c.total)
}

// render writes a result's content to w: text blocks as they are,
// separated by newlines; other blocks as a one-line description (an
// embedded text resource with its text); then structuredContent as
// compact JSON unless it adds nothing to the text blocks: a text block
// holds the same JSON, or it is an object of strings each of which is a
// text block (the reference filesystem server's {"content": TEXT} beside
// TEXT), which printed the result twice. Secrets are replaced in each
// piece.
func render(w *capped, res *sdk.CallToolResult, secrets []string) {
	n := 0
	put := func(s string) {
		if n > 0 {
			w.WriteString("\n")
		}
		n++
		w.WriteString(redact(s, secrets))
	}
	var structured []byte
	if res.StructuredContent != nil {
		structured = compactJSON(res.StructuredContent, "")
	}
	dup := false
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			if structured != nil && !dup && sameJSON(c.Text, structured) {
				dup = true
			}
			put(c.Text)
		case *sdk.ImageContent:
			put(fmt.Sprintf("[image %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data)))
		case *sdk.AudioContent:
			put(fmt.Sprintf("[audio %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data)))
		case *sdk.ResourceLink:
			put(fmt.Sprintf("[resource link %s%s]", c.URI, describe(c.Name, c.MIMEType)))
		case *sdk.EmbeddedResource:
			r := c.Resource
			switch {
			case r == nil:
				put("[resource]")
			case r.Blob != nil:
				put(fmt.Sprintf("[resource %s, %s, %d bytes]", r.URI, orUnknown(r.MIMEType), len(r.Blob)))
			default:
				put(fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))
			}
		default:
			b, _ := json.Marshal(c)
			put(fmt.Sprintf("[content %s]", b))
		}
	}
	if structured != nil && !dup && !wrapsText(res) {
		put(string(structured))
	}
}

// wrapsText reports whether res's structuredContent is an object whose
// values are all strings, each the text of one of res's text blocks
// (whitespace at the ends aside): the text again, with nothing more.
func wrapsText(res *sdk.CallToolResult) bool {
	obj, ok := res.StructuredContent.(map[string]any)
	if !ok || len(obj) == 0 {
		return false
	}
	texts := map[string]bool{}
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			texts[strings.TrimSpace(t.Text)] = true
		}
	}
	for _, v := range obj {
		s, ok := v.(string)
		if !ok || !texts[strings.TrimSpace(s)] {
			return false
		}
	}
	return true
}

// sameJSON reports whether text is JSON equal to the compact JSON js.
func sameJSON(text string, js []byte) bool {
	t := strings.TrimSpace(text)
	if t == "" || (t[0] != '{' && t[0] != '[') || len(t) < len(js)/2 {
		return false
	}
	var v any
	if json.Unmarshal([]byte(t), &v) != nil {
		return false
	}
	return bytes.Equal(compactJSON(v, ""), js)
}

func orUnknown(s string) string {
	if s == "" {
		return "of unknown type"
	}
	return s
}

func describe(name, mime string) string {
	var parts []string
	if name != "" {
		parts = append(parts, name)
	}
	if mime != "" {
		parts = append(parts, mime)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
