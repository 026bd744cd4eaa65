package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/demiurge-dev/demiurge/internal/levenshtein"
)

// A LoadError is one thing wrong with a suite's file: where (the file,
// the line and column when known, the JSON pointer of the value) and
// what, with how to fix it.
type LoadError struct {
	File    string
	Line    int // 0 when unknown
	Column  int
	Pointer string // "" for the file as a whole
	Msg     string
}

// Error is file:line:column: /pointer: message.
func (e *LoadError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
	}
	b.WriteString(": ")
	if e.Pointer != "" {
		b.WriteString(e.Pointer)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// LoadErrors are the problems of a suite, file by file, in file order.
type LoadErrors []*LoadError

// Error is the errors, one a line.
func (l LoadErrors) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// doc is a suite file read: its value as JSON would hold it (maps with
// string keys, []any, string, json.Number, bool, nil) and where each
// value sits in the text.
type doc struct {
	file  string
	value any
	root  ast.Node // nil for a file read as JSON without positions
}

// readDoc parses the YAML (or JSON, which YAML reads too) text b of file.
func readDoc(file string, b []byte) (*doc, *LoadError) {
	d := &doc{file: file}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, &LoadError{File: file, Msg: "the file is empty"}
	}
	if line, depth := nesting(b); depth > maxDepth {
		return nil, &LoadError{File: file, Line: line, Column: 1, Msg: fmt.Sprintf("values nested more than %d deep: a case is never that deep", maxDepth)}
	}
	f, err := parser.ParseBytes(b, 0)
	if err != nil {
		return nil, yamlError(file, err)
	}
	var docs []*ast.DocumentNode
	for _, dn := range f.Docs {
		if dn != nil && dn.Body != nil {
			docs = append(docs, dn)
		}
	}
	switch len(docs) {
	case 0:
		return nil, &LoadError{File: file, Msg: "the file holds no value (only comments?)"}
	case 1:
	default:
		tk := docs[1].GetToken()
		e := &LoadError{File: file, Msg: "the file holds more than one YAML document (---): write one case per file"}
		if tk != nil && tk.Position != nil {
			e.Line, e.Column = tk.Position.Line, tk.Position.Column
		}
		return nil, e
	}
	d.root = docs[0].Body
	if n := expandedSize(d.root, map[string]int{}); n > maxValues {
		return nil, &LoadError{File: file, Msg: fmt.Sprintf("the file's values, aliases (*name) expanded, number more than %d: write them out, or alias less", maxValues)}
	}
	var v any
	if err := yaml.NodeToValue(d.root, &v); err != nil {
		return nil, yamlError(file, err)
	}
	jv, verr := jsonValue(v, "")
	if verr != nil {
		return nil, d.errAt(verr.ptr, "%s", verr.msg)
	}
	d.value = jv
	return d, nil
}

// maxDepth bounds how deep a suite's values nest, and maxValues how many
// values a file holds once its aliases are expanded: the YAML parser takes
// time that grows with the square of the depth, and aliases of aliases
// grow exponentially ("billion laughs").
const (
	maxDepth  = 64
	maxValues = 100_000
)

// nesting returns the deepest nesting of b's values, roughly (flow
// brackets, sequence dashes and indentation, outside quotes and
// comments), and the line it is on: a bound checked before parsing.
func nesting(b []byte) (line, depth int) {
	flow := 0
	n := 1
	for _, l := range bytes.Split(b, []byte("\n")) {
		indent := 0
		for indent < len(l) && (l[indent] == ' ' || l[indent] == '\t') {
			indent++
		}
		dashes := 0 // "- " and "? " that open a value, outside quotes
		var quote byte
		peak := flow
		for i := indent; i < len(l); i++ {
			c := l[i]
			switch {
			case quote != 0:
				if c == quote {
					quote = 0
				} else if c == '\\' && quote == '"' {
					i++
				}
			case c == '"' || c == '\'':
				if i == 0 || l[i-1] == ' ' || l[i-1] == '[' || l[i-1] == '{' || l[i-1] == ',' || l[i-1] == ':' {
					quote = c
				}
			case (c == '-' || c == '?') && i+1 < len(l) && (l[i+1] == ' ' || l[i+1] == '\t') && (i == 0 || l[i-1] == ' ' || l[i-1] == '\t'):
				dashes++
			case c == '#' && (i == 0 || l[i-1] == ' '):
				i = len(l)
			case c == '[' || c == '{':
				flow++
				peak = max(peak, flow)
			case c == ']' || c == '}':
				flow = max(flow-1, 0)
			}
		}
		if d := peak + dashes + indent/2; d > depth {
			line, depth = n, d
		}
		n++
	}
	return line, depth
}

// expandedSize counts the values under n, each alias counted as the
// values of its anchor; anchors maps the anchors seen to their size.
func expandedSize(n ast.Node, anchors map[string]int) int {
	switch c := n.(type) {
	case nil:
		return 0
	case *ast.AnchorNode:
		size := expandedSize(c.Value, anchors)
		if c.Name != nil {
			anchors[c.Name.String()] = size
		}
		return size
	case *ast.AliasNode:
		if c.Value != nil {
			return max(anchors[c.Value.String()], 1)
		}
		return 1
	case *ast.TagNode:
		return expandedSize(c.Value, anchors)
	case *ast.MappingNode:
		size := 1
		for _, v := range c.Values {
			size += expandedSize(v, anchors)
			if size > maxValues {
				return size
			}
		}
		return size
	case *ast.MappingValueNode:
		return expandedSize(c.Key, anchors) + expandedSize(c.Value, anchors)
	case *ast.SequenceNode:
		size := 1
		for _, v := range c.Values {
			size += expandedSize(v, anchors)
			if size > maxValues {
				return size
			}
		}
		return size
	}
	return 1
}

// yamlError turns a parse error of goccy/go-yaml into a LoadError with
// its position.
func yamlError(file string, err error) *LoadError {
	e := &LoadError{File: file, Msg: err.Error()}
	var pe interface {
		GetMessage() string
		GetToken() *token.Token
	}
	if errors.As(err, &pe) {
		e.Msg = "YAML: " + pe.GetMessage()
		if tk := pe.GetToken(); tk != nil && tk.Position != nil {
			e.Line, e.Column = tk.Position.Line, tk.Position.Column
		}
	}
	return e
}

type valueErr struct{ ptr, msg string }

// jsonValue converts what the YAML decoder made into the values JSON
// has: maps with string keys, numbers as json.Number.
func jsonValue(v any, ptr string) (any, *valueErr) {
	switch x := v.(type) {
	case nil, bool, string:
		return x, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, err := jsonValue(e, ptr+"/"+escapePointer(k))
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := k.(string)
			if !ok {
				return nil, &valueErr{ptr, fmt.Sprintf("the key %v is not a string: quote it (%q)", k, fmt.Sprint(k))}
			}
			c, err := jsonValue(e, ptr+"/"+escapePointer(ks))
			if err != nil {
				return nil, err
			}
			out[ks] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := jsonValue(e, ptr+"/"+strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case int:
		return json.Number(strconv.FormatInt(int64(x), 10)), nil
	case int64:
		return json.Number(strconv.FormatInt(x, 10)), nil
	case uint64:
		return json.Number(strconv.FormatUint(x, 10)), nil
	case float64:
		b, err := json.Marshal(x)
		if err != nil {
			return nil, &valueErr{ptr, fmt.Sprintf("the number %v has no JSON form (write a finite number)", x)}
		}
		return json.Number(b), nil
	default:
		// A timestamp or another YAML type JSON has not: take its text.
		return nil, &valueErr{ptr, fmt.Sprintf("a %T where JSON values are expected: quote it to make it a string", v)}
	}
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// errAt makes a LoadError at the value ptr points to (its nearest
// ancestor the text has, if not itself).
func (d *doc) errAt(ptr, format string, args ...any) *LoadError {
	e := &LoadError{File: d.file, Pointer: ptr, Msg: fmt.Sprintf(format, args...)}
	if d.root != nil {
		if n := nodeAt(d.root, ptr); n != nil {
			e.Line, e.Column = position(n)
		}
	}
	if e.Pointer == "" {
		e.Pointer = "/"
	}
	return e
}

// keyAt is errAt at the key (not the value) of the member ptr names: what
// an unknown field's message points at.
func (d *doc) keyAt(ptr, format string, args ...any) *LoadError {
	e := d.errAt(ptr, format, args...)
	if d.root == nil {
		return e
	}
	i := strings.LastIndexByte(ptr, '/')
	if i < 0 {
		return e
	}
	parent, key := nodeAt(d.root, ptr[:i]), unescapePointer(ptr[i+1:])
	if m, ok := unwrap(parent).(*ast.MappingNode); ok {
		for _, mv := range m.Values {
			if mv.Key != nil && keyText(mv.Key) == key {
				if tk := mv.Key.GetToken(); tk != nil && tk.Position != nil {
					e.Line, e.Column = tk.Position.Line, tk.Position.Column
				}
			}
		}
	}
	return e
}

// position is where a node starts: a map's first key, else its token.
func position(n ast.Node) (line, col int) {
	switch c := unwrap(n).(type) {
	case *ast.MappingNode:
		if len(c.Values) > 0 && c.Values[0].Key != nil {
			n = c.Values[0].Key
		}
	case *ast.MappingValueNode:
		if c.Key != nil {
			n = c.Key
		}
	}
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		return tk.Position.Line, tk.Position.Column
	}
	return 0, 0
}

// nodeAt finds the node a JSON pointer names, or the nearest ancestor
// found.
func nodeAt(root ast.Node, ptr string) ast.Node {
	n := root
	if ptr == "" || ptr == "/" {
		return n
	}
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = unescapePointer(tok)
		var next ast.Node
		switch c := unwrap(n).(type) {
		case *ast.MappingNode:
			for _, mv := range c.Values {
				if mv.Key != nil && keyText(mv.Key) == tok {
					next = mv.Value
				}
			}
		case *ast.MappingValueNode:
			if c.Key != nil && keyText(c.Key) == tok {
				next = c.Value
			}
		case *ast.SequenceNode:
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(c.Values) {
				next = c.Values[i]
			}
		}
		if next == nil {
			return n
		}
		n = next
	}
	return n
}

// unwrap looks through anchors and tags to the value.
func unwrap(n ast.Node) ast.Node {
	for {
		switch c := n.(type) {
		case *ast.AnchorNode:
			n = c.Value
		case *ast.TagNode:
			n = c.Value
		default:
			return n
		}
	}
}

func keyText(k ast.MapKeyNode) string {
	if s, ok := k.(*ast.StringNode); ok {
		return s.Value
	}
	return strings.Trim(k.String(), `"'`)
}

// closest returns the name of want most like got (at most two edits away,
// or sharing a long prefix), for "did you mean" hints.
func closest(got string, want []string) string {
	best, bestD := "", 3
	for _, w := range want {
		d := levenshtein.Distance(got, w)
		if d < bestD || (d == bestD && best == "") {
			best, bestD = w, d
		}
	}
	if best != "" {
		return best
	}
	for _, w := range want {
		if len(got) >= 4 && (strings.HasPrefix(w, got) || strings.HasPrefix(got, w)) {
			return w
		}
	}
	return ""
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
