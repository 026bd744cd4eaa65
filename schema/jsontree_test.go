package schema

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// jsonErrorTests are JSON documents that do not parse, and where the
// problem is: "line:column: message".
var jsonErrorTests = []struct{ in, want string }{
	{``, "1:1: unexpected end of JSON input"},
	{`{`, "1:2: unexpected end of JSON input"},
	{"{\n  \"a\": 1,\n", "3:1: unexpected end of JSON input"},
	{`[ , ]`, "1:3: invalid character ',' looking for beginning of value"},
	{"{\n  \"air_version\": \"1\",\n  \"defs\": [ , ]\n}", "3:13: invalid character ',' looking for beginning of value"},
	{`{"a" 1}`, "1:6: invalid character '1' after object key"},
	{`{"a":tru }`, "1:9: invalid character ' ' in literal true (expecting 'e')"},
	{`[1,]`, "1:4: invalid character ']' looking for beginning of value"},
	{`{"a":1,}`, "1:8: invalid character '}' looking for beginning of object key string"},
	{`{1:2}`, "1:2: invalid character '1' looking for beginning of object key string"},
	{"\"\\x\"", "1:3: invalid character 'x' in string escape code"},
	{"[\"a\nb\"]", "1:4: invalid character '\\n' in string literal"},
	{`[1]x`, "1:4: invalid character 'x' after top-level value"},
	{"[1]\n  [2]", "2:3: unexpected data after the JSON value"},
	{`{"é": "ü", "x": [ , ]}`, "1:19: invalid character ',' looking for beginning of value"}, // columns count characters
	{"{\"a\": 1,\n \"a\": 2}", "2:2: duplicate key \"a\" in the object at /"},
	{`{"b": {"a": 1, "a": 2}}`, "1:16: duplicate key \"a\" in the object at /b"},
}

// TestParseJSONErrors: a JSON syntax error is placed at the line and
// column of the first byte that is not JSON (or of the end, for an end
// that comes too soon); a duplicate key at the key.
func TestParseJSONErrors(t *testing.T) {
	for _, tc := range jsonErrorTests {
		t.Run(tc.in, func(t *testing.T) {
			_, err := parseJSON([]byte(tc.in))
			je, ok := errors.AsType[*jsonError](err)
			if !ok {
				t.Fatalf("parseJSON(%q) = %v; want a *jsonError", tc.in, err)
			}
			if got := fmtPos(je); got != tc.want {
				t.Errorf("parseJSON(%q): got %q; want %q", tc.in, got, tc.want)
			}
		})
	}
	// Deep nesting is placed too.
	deep := bytes.Repeat([]byte("["), maxJSONDepth+2)
	_, err := parseJSON(deep)
	if je, ok := errors.AsType[*jsonError](err); !ok || je.Msg != "JSON nested too deeply" || je.Line != 1 || je.Col != maxJSONDepth+2 {
		t.Errorf("parseJSON(%d [) = %v; want JSON nested too deeply at 1:%d", len(deep), err, maxJSONDepth+2)
	}
}

func fmtPos(e *jsonError) string { return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg) }
