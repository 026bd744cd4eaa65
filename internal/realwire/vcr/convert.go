// Package vcr converts a cassette of recorded HTTP traffic, in the YAML
// form vcrpy writes and pydantic-ai keeps under tests/**/cassettes (a
// JSON body stored parsed, as parsed_body, or as a string), into a
// recording in the realwire format (internal/realwire; the format and its
// conventions are in adapters/llm/testdata/realwire/README.md).
//
// The conversion keeps what was recorded and adds nothing: the requests
// and responses in recorded order, each JSON body with its keys in the
// cassette's order, a text body (an SSE stream) verbatim, the headers the
// format keeps (Keep). Its output is the JSON Python's json.dumps(indent=2,
// ensure_ascii=False) writes for the same values, and a line feed, so that the recordings
// converted once by a throw-away script are reproduced byte for byte.
package vcr

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Spec says what recording to make of a cassette: where it came from and
// what it shows, which the cassette does not say.
type Spec struct {
	// Repo, Commit, Path and License are the source: the repository
	// ("pydantic/pydantic-ai"), its 40-hex commit, the cassette's path in
	// it and its licence ("MIT").
	Repo, Commit, Path, License string
	// Vendor and API are the recording's ("openrouter", "chat").
	Vendor, API string
	// Notes says what the recording shows.
	Notes string
	// Interactions lists the cassette's interactions to keep (from 0), in
	// order; empty keeps them all.
	Interactions []int
}

// maxBody bounds a body once decompressed, and maxOutput a recording.
const (
	maxBody   = 64 << 20
	maxOutput = 256 << 20
)

// Convert reads a cassette and returns the recording spec describes, as
// JSON (a line feed at the end).
func Convert(cassette []byte, spec Spec) ([]byte, error) {
	doc, err := parseYAML(cassette)
	if err != nil {
		return nil, fmt.Errorf("vcr: %w", err)
	}
	top, ok := doc.(*object)
	if !ok {
		return nil, errors.New("vcr: the cassette is not a mapping")
	}
	v, _ := top.get("interactions")
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, errors.New("vcr: the cassette has no interactions list")
	}
	keep := spec.Interactions
	if len(keep) == 0 {
		for i := range list {
			keep = append(keep, i)
		}
	}
	var interactions []any
	for _, i := range keep {
		if i < 0 || i >= len(list) {
			return nil, fmt.Errorf("vcr: interaction %d asked for; the cassette has %d", i, len(list))
		}
		it, err := interaction(list[i])
		if err != nil {
			return nil, fmt.Errorf("vcr: interaction %d: %w", i, err)
		}
		interactions = append(interactions, it)
	}
	rec := newObject(
		"source", newObject("repo", spec.Repo, "commit", spec.Commit, "path", spec.Path, "license", spec.License),
		"vendor", spec.Vendor,
		"api", spec.API,
		"notes", spec.Notes,
		"interactions", interactions,
	)
	var b bytes.Buffer
	if err := writeJSON(&b, rec, 0); err != nil {
		return nil, fmt.Errorf("vcr: %w", err)
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

func newObject(kv ...any) *object {
	o := &object{values: map[string]any{}}
	for i := 0; i+1 < len(kv); i += 2 {
		k := kv[i].(string)
		o.keys = append(o.keys, k)
		o.values[k] = kv[i+1]
	}
	return o
}

func interaction(v any) (*object, error) {
	it, ok := v.(*object)
	if !ok {
		return nil, errors.New("not a mapping")
	}
	rq, _ := it.get("request")
	req, ok := rq.(*object)
	if !ok {
		return nil, errors.New("no request mapping")
	}
	rs, _ := it.get("response")
	resp, ok := rs.(*object)
	if !ok {
		return nil, errors.New("no response mapping")
	}

	method, _ := req.get("method")
	m, ok := method.(string)
	if !ok {
		return nil, errors.New("the request has no method")
	}
	uri, _ := req.get("uri")
	u, ok := uri.(string)
	if !ok {
		return nil, errors.New("the request has no uri")
	}
	rh, err := headers(req)
	if err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	var reqBody any
	if pb, ok := req.get("parsed_body"); ok {
		reqBody = pb
	} else {
		raw, _ := req.get("body")
		text, isText, err := bodyText(raw)
		if err != nil {
			return nil, fmt.Errorf("request body: %w", err)
		}
		if isText && text != "" {
			if reqBody, err = parseJSON(text); err != nil {
				reqBody = text // not JSON: kept as the string it was
			}
		}
	}

	st, _ := resp.get("status")
	status, ok := st.(*object)
	if !ok {
		return nil, errors.New("the response has no status")
	}
	code, _ := status.get("code")
	if _, ok := code.(number); !ok {
		return nil, errors.New("the response's status has no code")
	}
	sh, err := headers(resp)
	if err != nil {
		return nil, fmt.Errorf("response: %w", err)
	}
	out := newObject("status", code, "headers", sh)
	if pb, ok := resp.get("parsed_body"); ok {
		out.keys = append(out.keys, "body")
		out.values["body"] = pb
	} else {
		raw, _ := resp.get("body")
		if o, ok := raw.(*object); ok {
			raw, _ = o.get("string")
		}
		text, isText, err := bodyText(raw)
		if err != nil {
			return nil, fmt.Errorf("response body: %w", err)
		}
		var body any
		if isText {
			body, err = parseJSON(text)
		}
		if isText && err == nil {
			out.keys = append(out.keys, "body")
			out.values["body"] = body
		} else {
			out.keys = append(out.keys, "body_text")
			out.values["body_text"] = text
		}
	}
	return newObject(
		"request", newObject("method", strings.ToUpper(m), "url", u, "headers", rh, "body", reqBody),
		"response", out,
	), nil
}

// bodyText returns a body as text: a string as it is, !!binary bytes
// gunzipped when they are gzip; isText is false when there is none.
func bodyText(v any) (text string, isText bool, err error) {
	switch b := v.(type) {
	case nil:
		return "", false, nil
	case string:
		return b, true, nil
	case []byte:
		if len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b {
			z, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return "", false, err
			}
			b, err = io.ReadAll(io.LimitReader(z, maxBody+1))
			if err != nil {
				return "", false, fmt.Errorf("gzip: %w", err)
			}
			if len(b) > maxBody {
				return "", false, fmt.Errorf("more than %d bytes once decompressed", maxBody)
			}
		}
		if !utf8.Valid(b) {
			return "", false, errors.New("a binary body that is not UTF-8 text")
		}
		return string(b), true, nil
	}
	return "", false, fmt.Errorf("a body of type %T", v)
}

// Keep reports whether the realwire format keeps a header (name lower
// case): content-type and accept, the request id, retry-after(-ms), rate
// limits (x-ratelimit-*), OpenAI's openai-*, Azure's apim-request-id,
// x-ms-region and x-ms-rai-invoked, Groq's x-groq-*, x-should-retry.
// Cookies, auth and everything else go.
func Keep(name string) bool {
	switch name {
	case "content-type", "accept", "x-request-id", "retry-after", "retry-after-ms",
		"apim-request-id", "x-ms-region", "x-ms-rai-invoked", "x-should-retry":
		return true
	}
	for _, p := range []string{"x-ratelimit-", "openai-", "x-groq-"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// headers returns a request's or response's kept headers, names lower
// case, in the cassette's order, several values joined with ", ".
func headers(o *object) (*object, error) {
	out := newObject()
	v, _ := o.get("headers")
	if v == nil {
		return out, nil
	}
	h, ok := v.(*object)
	if !ok {
		return nil, errors.New("headers that are not a mapping")
	}
	for _, k := range h.keys {
		name := strings.ToLower(k)
		if !Keep(name) {
			continue
		}
		var vals []string
		switch x := h.values[k].(type) {
		case []any:
			for _, e := range x {
				s, ok := scalarText(e)
				if !ok {
					return nil, fmt.Errorf("header %s: a value that is not a scalar", k)
				}
				vals = append(vals, s)
			}
		default:
			s, ok := scalarText(x)
			if !ok {
				return nil, fmt.Errorf("header %s: a value that is not a scalar", k)
			}
			vals = append(vals, s)
		}
		if _, dup := out.values[name]; dup {
			return nil, fmt.Errorf("header %s twice", name)
		}
		out.keys = append(out.keys, name)
		out.values[name] = strings.Join(vals, ", ")
	}
	return out, nil
}

func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case number:
		return string(x), true
	case bool:
		if x {
			return "True", true
		}
		return "False", true
	}
	return "", false
}

// parseJSON reads a JSON text keeping its keys' order and its numbers'
// literals.
func parseJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	v, err := jsonValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("text after the JSON value")
	}
	return v, nil
}

func jsonValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("JSON nested more than %d deep", maxDepth)
	}
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := newObject()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, errors.New("a JSON key that is not a string")
				}
				v, err := jsonValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				if _, dup := o.values[k]; dup {
					return nil, fmt.Errorf("the JSON key %q twice", k)
				}
				o.keys = append(o.keys, k)
				o.values[k] = v
			}
			_, err := dec.Token()
			return o, err
		case '[':
			out := []any{}
			for dec.More() {
				v, err := jsonValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			}
			_, err := dec.Token()
			return out, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		return number(t.String()), nil
	}
	return t, nil // string, bool, nil
}

// writeJSON writes v as Python's json.dumps(v, indent=2,
// ensure_ascii=False) does.
func writeJSON(b *bytes.Buffer, v any, depth int) error {
	if depth > maxDepth+4 {
		return fmt.Errorf("values nested more than %d deep", maxDepth)
	}
	if b.Len() > maxOutput {
		return fmt.Errorf("a recording of more than %d bytes", maxOutput)
	}
	nl := func(d int) {
		b.WriteByte('\n')
		for range 2 * d {
			b.WriteByte(' ')
		}
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case number:
		b.WriteString(string(x))
	case string:
		writeString(b, x)
	case []byte:
		return errors.New("a binary value outside a body")
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			nl(depth + 1)
			if err := writeJSON(b, e, depth+1); err != nil {
				return err
			}
		}
		nl(depth)
		b.WriteByte(']')
	case *object:
		if len(x.keys) == 0 {
			b.WriteString("{}")
			return nil
		}
		b.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			nl(depth + 1)
			writeString(b, k)
			b.WriteString(": ")
			if err := writeJSON(b, x.values[k], depth+1); err != nil {
				return err
			}
		}
		nl(depth)
		b.WriteByte('}')
	default:
		return fmt.Errorf("a value of type %T", v)
	}
	return nil
}

// writeString writes s as Python's json module does with
// ensure_ascii=False: the control characters, quote and backslash
// escaped, everything else as it is.
func writeString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}
