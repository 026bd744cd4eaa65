package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// jkind is the kind of a JSON node.
type jkind uint8

const (
	jNull jkind = iota
	jBool
	jNumber
	jString
	jArray
	jObject
)

func (k jkind) String() string {
	return [...]string{"null", "boolean", "number", "string", "array", "object"}[k]
}

// jnode is a parsed JSON value that keeps object keys in document order
// and knows its JSON pointer, so every problem can be reported as
// "file: /json/pointer: message".
type jnode struct {
	kind jkind
	ptr  string // JSON pointer from the document root
	b    bool
	num  json.Number
	str  string
	arr  []*jnode
	obj  []jfield
}

type jfield struct {
	key string
	val *jnode
}

// get returns the member named key of an object node.
func (n *jnode) get(key string) *jnode {
	if n == nil || n.kind != jObject {
		return nil
	}
	for _, f := range n.obj {
		if f.key == key {
			return f.val
		}
	}
	return nil
}

// keys returns the member names of an object node, without "$comment".
func (n *jnode) keys() []string {
	var ks []string
	for _, f := range n.obj {
		if f.key != "$comment" {
			ks = append(ks, f.key)
		}
	}
	return ks
}

// fields returns the members of an object node, without "$comment"
// (AgentOS puts comments in defs and types; they carry no meaning).
func (n *jnode) fields() []jfield {
	out := make([]jfield, 0, len(n.obj))
	for _, f := range n.obj {
		if f.key != "$comment" {
			out = append(out, f)
		}
	}
	return out
}

// child returns the JSON pointer of a member or element of n.
func childPtr(parent, token string) string {
	token = strings.ReplaceAll(token, "~", "~0")
	token = strings.ReplaceAll(token, "/", "~1")
	return parent + "/" + token
}

// maxJSONDepth bounds nesting, so hostile input costs bounded stack.
const maxJSONDepth = 256

// parseJSON parses one JSON document. Duplicate object keys and trailing
// data are errors; every error is a *jsonError, which says where in data
// the problem is as a line and a column.
func parseJSON(data []byte) (*jnode, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := parseNode(dec, data, "", 0)
	if err == nil {
		end := dec.InputOffset()
		if _, err = dec.Token(); err == io.EOF {
			return n, nil
		}
		if err == nil {
			// More JSON after the value: where it starts.
			return nil, newJSONError(data, skipSpace(data, end), "unexpected data after the JSON value")
		}
	}
	return nil, jsonErr(data, dec, err)
}

// A jsonError is a problem in a JSON document (a byte that is not JSON,
// an end that comes too soon, a key given twice) and where it is.
type jsonError struct {
	// Line and Col are 1-based; Col counts characters, not bytes.
	Line, Col int
	Msg       string
}

func (e *jsonError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Col, e.Msg)
}

// newJSONError is a problem at byte offset off of data (len(data) for its
// end).
func newJSONError(data []byte, off int64, msg string) *jsonError {
	off = max(0, min(off, int64(len(data))))
	before := data[:off]
	line := 1 + bytes.Count(before, []byte("\n"))
	col := 1 + utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:])
	return &jsonError{Line: line, Col: col, Msg: msg}
}

// skipSpace returns the offset of the first byte at or after off that is
// not JSON white space.
func skipSpace(data []byte, off int64) int64 {
	for off < int64(len(data)) && strings.IndexByte(" \t\r\n", data[off]) >= 0 {
		off++
	}
	return off
}

// jsonErr places an error of the decoder in data.
func jsonErr(data []byte, dec *json.Decoder, err error) error {
	var je *jsonError
	if errors.As(err, &je) {
		return je
	}
	// The decoder's offsets are approximate (before or after the token
	// it was reading); the scanner behind Unmarshal stops at the first
	// byte that is not JSON: its Offset counts the bytes read with it,
	// or is the end of data for an end that comes too soon.
	var raw json.RawMessage
	var se *json.SyntaxError
	if errors.As(json.Unmarshal(data, &raw), &se) {
		off := se.Offset - 1
		if se.Offset >= int64(len(data)) && strings.HasPrefix(se.Error(), "unexpected end") {
			off = int64(len(data))
		}
		return newJSONError(data, off, se.Error())
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return newJSONError(data, int64(len(data)), "unexpected end of JSON input")
	}
	return newJSONError(data, dec.InputOffset(), err.Error())
}

func parseNode(dec *json.Decoder, data []byte, ptr string, depth int) (*jnode, error) {
	if depth > maxJSONDepth {
		return nil, newJSONError(data, skipSpace(data, dec.InputOffset()), "JSON nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case nil:
		return &jnode{kind: jNull, ptr: ptr}, nil
	case bool:
		return &jnode{kind: jBool, ptr: ptr, b: t}, nil
	case json.Number:
		return &jnode{kind: jNumber, ptr: ptr, num: t}, nil
	case string:
		return &jnode{kind: jString, ptr: ptr, str: t}, nil
	case json.Delim:
		switch t {
		case '[':
			n := &jnode{kind: jArray, ptr: ptr}
			for dec.More() {
				e, err := parseNode(dec, data, childPtr(ptr, strconv.Itoa(len(n.arr))), depth+1)
				if err != nil {
					return nil, err
				}
				n.arr = append(n.arr, e)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return n, nil
		case '{':
			n := &jnode{kind: jObject, ptr: ptr}
			seen := map[string]bool{}
			for dec.More() {
				at := dec.InputOffset() // before the key, its comma and white space
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key is %v, want a string", kt)
				}
				if seen[key] {
					if at = skipSpace(data, at); at < int64(len(data)) && data[at] == ',' {
						at = skipSpace(data, at+1)
					}
					return nil, newJSONError(data, at, fmt.Sprintf("duplicate key %q in the object at %s", key, displayPtr(ptr)))
				}
				seen[key] = true
				v, err := parseNode(dec, data, childPtr(ptr, key), depth+1)
				if err != nil {
					return nil, err
				}
				n.obj = append(n.obj, jfield{key: key, val: v})
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return n, nil
		}
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

func displayPtr(p string) string {
	if p == "" {
		return "/"
	}
	return p
}
