package vcr

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

// cassette is a small cassette in the form pydantic-ai's serializer writes
// (written here for the tests, not copied): a JSON request stored parsed,
// and an SSE response stored as a string.
const cassette = `interactions:
- request:
    headers:
      Accept:
      - application/json
      authorization:
      - Bearer scrubbed
      content-type:
      - application/json
      user-agent:
      - test
    method: post
    parsed_body:
      model: gpt-x
      temperature: 0.2
      max_tokens: 100
      stream: true
      stop: null
      messages:
      - content: 'yes'
        role: user
      - content: "line one\nline two \"quoted\" é ✓"
        role: assistant
    uri: https://api.example.com/v1/chat/completions
  response:
    body:
      string: "data: {\"a\":1}\r\n\r\ndata: [DONE]\r\n\r\n"
    headers:
      content-type:
      - text/event-stream
      x-ratelimit-remaining-requests:
      - '99'
      set-cookie:
      - a=b
      vary:
      - Origin
      - X-Origin
    status:
      code: 200
      message: OK
- request:
    body: '{"b": 1.50, "a": [1e3, true]}'
    headers: {}
    method: POST
    uri: https://api.example.com/v1/x
  response:
    parsed_body:
      error:
        code: 400
        message: |-
          bad
          request
    headers:
      content-type:
      - application/json
    status:
      code: 400
      message: Bad Request
version: 1
`

func TestConvert(t *testing.T) {
	spec := Spec{Repo: "o/r", Commit: strings.Repeat("a", 40), Path: "c.yaml", License: "MIT", Vendor: "openai", API: "chat", Notes: "n"}
	got, err := Convert([]byte(cassette), spec)
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "source": {
    "repo": "o/r",
    "commit": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "path": "c.yaml",
    "license": "MIT"
  },
  "vendor": "openai",
  "api": "chat",
  "notes": "n",
  "interactions": [
    {
      "request": {
        "method": "POST",
        "url": "https://api.example.com/v1/chat/completions",
        "headers": {
          "accept": "application/json",
          "content-type": "application/json"
        },
        "body": {
          "model": "gpt-x",
          "temperature": 0.2,
          "max_tokens": 100,
          "stream": true,
          "stop": null,
          "messages": [
            {
              "content": "yes",
              "role": "user"
            },
            {
              "content": "line one\nline two \"quoted\" é ✓",
              "role": "assistant"
            }
          ]
        }
      },
      "response": {
        "status": 200,
        "headers": {
          "content-type": "text/event-stream",
          "x-ratelimit-remaining-requests": "99"
        },
        "body_text": "data: {\"a\":1}\r\n\r\ndata: [DONE]\r\n\r\n"
      }
    },
    {
      "request": {
        "method": "POST",
        "url": "https://api.example.com/v1/x",
        "headers": {},
        "body": {
          "b": 1.50,
          "a": [
            1e3,
            true
          ]
        }
      },
      "response": {
        "status": 400,
        "headers": {
          "content-type": "application/json"
        },
        "body": {
          "error": {
            "code": 400,
            "message": "bad\nrequest"
          }
        }
      }
    }
  ]
}
`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if !json.Valid(got) {
		t.Error("not JSON")
	}

	spec.Interactions = []int{1}
	one, err := Convert([]byte(cassette), spec)
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ Interactions []json.RawMessage }
	if err := json.Unmarshal(one, &r); err != nil || len(r.Interactions) != 1 || !bytes.Contains(r.Interactions[0], []byte(`"status": 400`)) {
		t.Errorf("interaction 1 alone: %d interactions, %v\n%s", len(r.Interactions), err, one)
	}
	spec.Interactions = []int{2}
	if _, err := Convert([]byte(cassette), spec); err == nil || !strings.Contains(err.Error(), "the cassette has 2") {
		t.Errorf("interaction 2 of 2: %v", err)
	}
}

// TestPlainScalars: a plain scalar means what PyYAML (YAML 1.1), which
// wrote the cassette, reads in it, not what a YAML 1.2 reader would.
func TestPlainScalars(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{`1e5`, `"1e5"`}, // YAML 1.1 floats need a point: a string
		{`1.0e+05`, `100000.0`},
		{`1.0e-05`, `1e-05`},
		{`3.0`, `3.0`},
		{`0.1`, `0.1`},
		{`-0.0`, `-0.0`},
		{`1.5e+16`, `1.5e+16`},
		{`123456789.123`, `123456789.123`},
		{`.5`, `0.5`},
		{`1_000`, `1000`},
		{`0x1F`, `31`},
		{`017`, `15`},
		{`0b101`, `5`},
		{`-42`, `-42`},
		{`123456789012345678901234567890`, `123456789012345678901234567890`},
		{`yes`, `true`},
		{`Off`, `false`},
		{`on`, `true`},
		{`~`, `null`},
		{`Null`, `null`},
		{`0o17`, `"0o17"`},
		{`'1.5'`, `"1.5"`},
		{`"yes"`, `"yes"`},
		{`abc def`, `"abc def"`},
		{`!!str 12`, `"12"`},
	} {
		v, err := parseYAML([]byte("k: " + tc.yaml + "\n"))
		if err != nil {
			t.Errorf("%s: %v", tc.yaml, err)
			continue
		}
		var b bytes.Buffer
		if err := writeJSON(&b, v.(*object).values["k"], 0); err != nil {
			t.Errorf("%s: %v", tc.yaml, err)
			continue
		}
		if b.String() != tc.want {
			t.Errorf("%s: %s; want %s", tc.yaml, b.String(), tc.want)
		}
	}
	for _, bad := range []string{`1:20`, `.inf`, `.NaN`, `2001-12-14`, `2001-12-14t21:59:43.10-05:00`, `!!python/object:x {}`, `*nothing`} {
		if _, err := parseYAML([]byte("k: " + bad + "\n")); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestPythonFloat: floats are written as Python's repr writes them.
func TestPythonFloat(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{0, "0.0"}, {1, "1.0"}, {0.1, "0.1"}, {4.25e-06, "4.25e-06"}, {0.0001, "0.0001"}, {0.00001, "1e-05"},
		{1e15, "1000000000000000.0"}, {1e16, "1e+16"}, {123.456, "123.456"}, {-2.5, "-2.5"},
		{1.7976931348623157e308, "1.7976931348623157e+308"}, {5e-324, "5e-324"}, {0.00435825, "0.00435825"},
		{math.Copysign(0, -1), "-0.0"}, {1234567.0, "1234567.0"},
	} {
		if got := pythonFloat(tc.f); got != tc.want {
			t.Errorf("%v: %s; want %s", tc.f, got, tc.want)
		}
	}
}

// TestYAMLForms: the forms PyYAML writes a long string in (a double-quoted
// one folded over lines with escapes, a literal block, a plain scalar
// over lines) read back as the string; anchors and aliases are the same
// value twice; a gzip body stored as !!binary is its text.
func TestYAMLForms(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"ok": true}`))
	zw.Close()
	b64 := base64.StdEncoding.EncodeToString(gz.Bytes())
	y := "a: \"one two\n  three\\\n  \\ four \\u00e9\\t\"\n" +
		"b: |\n  x\n   y\n\n  z\n" +
		"c: plain words\n  over lines\n" +
		"d: &id001\n  k: v\n" +
		"e: *id001\n" +
		"f: !!binary |\n  " + b64[:10] + "\n  " + b64[10:] + "\n"
	v, err := parseYAML([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	o := v.(*object)
	for k, want := range map[string]string{"a": "one two three four é\t", "b": "x\n y\n\nz\n", "c": "plain words over lines"} {
		if o.values[k] != want {
			t.Errorf("%s: %q; want %q", k, o.values[k], want)
		}
	}
	var d, e bytes.Buffer
	writeJSON(&d, o.values["d"], 0)
	writeJSON(&e, o.values["e"], 0)
	if d.String() != e.String() || !strings.Contains(d.String(), `"k": "v"`) {
		t.Errorf("anchor %s, alias %s", d.String(), e.String())
	}
	text, ok, err := bodyText(o.values["f"])
	if err != nil || !ok || text != `{"ok": true}` {
		t.Errorf("gzip body: %q %v %v", text, ok, err)
	}
}

// TestStrings: a string is escaped as Python's json module escapes it
// with ensure_ascii=False.
func TestStrings(t *testing.T) {
	var b bytes.Buffer
	writeString(&b, "a\"b\\c\n\r\t\b\f\x01\x1f\x7f<>&é\u2028😀")
	if want := `"a\"b\\c\n\r\t\b\f\u0001\u001f` + "\x7f<>&é\u2028😀\""; b.String() != want {
		t.Errorf("%s; want %s", b.String(), want)
	}
}

// TestBadCassettes: what is not a cassette is an error that says why,
// never a panic.
func TestBadCassettes(t *testing.T) {
	spec := Spec{}
	for _, tc := range []struct{ name, yaml, want string }{
		{"not YAML", "a: [", "not YAML"},
		{"a list", "- 1\n", "not a mapping"},
		{"no interactions", "version: 1\n", "no interactions"},
		{"no request", "interactions:\n- response: {}\n", "no request"},
		{"no method", "interactions:\n- request: {uri: x}\n  response: {status: {code: 200}}\n", "no method"},
		{"no status", "interactions:\n- request: {method: GET, uri: x}\n  response: {}\n", "no status"},
		{"a status without a code", "interactions:\n- request: {method: GET, uri: x}\n  response: {status: {message: OK}}\n", "no code"},
		{"headers not a mapping", "interactions:\n- request: {method: GET, uri: x, headers: [a]}\n  response: {status: {code: 200}}\n", "headers that are not a mapping"},
		{"a key twice", "interactions:\n- request: {method: GET, method: POST, uri: x}\n  response: {status: {code: 200}}\n", ""},
		{"binary not text", "interactions:\n- request: {method: GET, uri: x}\n  response: {status: {code: 200}, body: {string: !!binary /w==}}\n", "not UTF-8"},
		{"deep", "k: " + strings.Repeat("[", 600) + strings.Repeat("]", 600) + "\n", "nested more than 500 deep"},
		{"aliases of aliases", laughs(9), "aliases repeat more than"},
	} {
		_, err := Convert([]byte(tc.yaml), spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error with %q", tc.name, err, tc.want)
		}
	}
}

// laughs is a YAML document whose aliases stand for 10^n values.
func laughs(n int) string {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// FuzzConvert: no cassette makes Convert panic, and what it returns is
// JSON.
func FuzzConvert(f *testing.F) {
	f.Add([]byte(cassette))
	f.Add([]byte("interactions:\n- request: {method: GET, uri: x}\n  response: {status: {code: 200}, body: {string: 'data: x'}}\n"))
	f.Add([]byte("interactions:\n- request: {method: GET, uri: x, body: '{\"a\": 1}'}\n  response: {status: {code: 204}, headers: {Content-Type: [a, b]}}\n"))
	f.Add([]byte("a: &x [1, 2.5, yes, ~]\nb: *x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := Convert(b, Spec{Notes: "n"})
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("not JSON:\n%s", out)
		}
	})
}
