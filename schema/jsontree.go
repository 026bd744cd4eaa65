package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
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
// data are errors; the error names the byte offset.
func parseJSON(data []byte) (*jnode, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := parseNode(dec, "", 0)
	if err != nil {
		return nil, jsonErr(dec, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("offset %d: unexpected data after the JSON value", dec.InputOffset())
	}
	return n, nil
}

func jsonErr(dec *json.Decoder, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("offset %d: %v", se.Offset, se)
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("offset %d: unexpected end of JSON", dec.InputOffset())
	}
	return fmt.Errorf("offset %d: %w", dec.InputOffset(), err)
}

func parseNode(dec *json.Decoder, ptr string, depth int) (*jnode, error) {
	if depth > maxJSONDepth {
		return nil, errors.New("JSON nested too deeply")
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
				e, err := parseNode(dec, childPtr(ptr, strconv.Itoa(len(n.arr))), depth+1)
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
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key is %v, want a string", kt)
				}
				if seen[key] {
					return nil, fmt.Errorf("duplicate key %q at %s", key, displayPtr(ptr))
				}
				seen[key] = true
				v, err := parseNode(dec, childPtr(ptr, key), depth+1)
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
