package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3/option"

	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/internal/readall"
)

// sentBody is a request body the caller made of parts (see splice.go,
// native.go): it goes out part by part, never joined.
type sentBody interface {
	reader() io.Reader
	Len() int
}

// capture records one HTTP exchange as it passes through the SDK: the exact
// request body, and the status, header and body of the response.
type capture struct {
	stream   bool          // the request asks for a stream
	sent     sentBody      // the request body, when the caller spliced it (see splice.go, native.go)
	request  []byte        // the request body as sent, when it was not spliced
	status   int           // 0 until a response arrives
	header   http.Header   // the response header
	body     []byte        // the whole body (not for a successful stream)
	tee      *bytes.Buffer // a successful stream's bytes read so far (capped)
	readErr  error         // reading a non-stream body failed
	tooLarge bool          // the body was larger than maxBody
}

// middleware is an SDK middleware that fills c. A non-stream body (and the
// body of a failed stream request) is read whole here and handed on from
// memory; a successful stream's body is teed as the SDK reads it.
func (c *capture) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	var b []byte
	if c.sent != nil {
		// The body is the caller's, its transcript last already: its
		// parts go out one by one, unjoined (joined only if the attempt
		// fails, as its evidence).
		body := c.sent
		req.Body = io.NopCloser(body.reader())
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(body.reader()), nil }
		req.ContentLength = int64(body.Len())
	} else if req.GetBody != nil {
		if rc, err := req.GetBody(); err == nil {
			b, _ = readall.Sized(rc, req.ContentLength)
			rc.Close()
		}
	} else if req.Body != nil {
		var err error
		b, err = readall.Sized(req.Body, req.ContentLength)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	if b != nil && c.sent == nil {
		// The transcript goes last, where it grows: successive requests of
		// a chat then differ only at their end, and keeping each as chunks
		// (see Generator.record) costs its new bytes.
		for _, key := range []string{"input", "messages"} {
			if moved, ok := memberLast(b, key); ok {
				b = moved
				break
			}
		}
		c.request = b
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		req.ContentLength = int64(len(b))
	}
	// The request leaves the process here, and not before its intent is
	// durable: the call may have started while the world was committing it
	// (effects.EarlyAdapter).
	if err := effects.WaitDurable(req.Context()); err != nil {
		return nil, err
	}
	resp, err := next(req)
	if err != nil || resp == nil {
		return resp, err
	}
	c.status = resp.StatusCode
	c.header = resp.Header.Clone()
	if c.stream && resp.StatusCode < 400 {
		c.tee = new(bytes.Buffer)
		resp.Body = &teeBody{ReadCloser: resp.Body, buf: c.tee}
		return resp, nil
	}
	b, err = readall.Sized(io.LimitReader(resp.Body, maxBody+1), min(resp.ContentLength, maxBody+1))
	resp.Body.Close()
	if err != nil {
		c.readErr = err
		return nil, fmt.Errorf("read response body: %w", err)
	}
	if len(b) > maxBody {
		c.tooLarge = true
		return nil, fmt.Errorf("response body is larger than %d bytes", maxBody)
	}
	c.body = b
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, nil
}

// teeBody copies what is read from a stream into buf, up to maxBody bytes.
type teeBody struct {
	io.ReadCloser
	buf *bytes.Buffer
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if n > 0 && t.buf.Len() < maxBody {
		t.buf.Write(p[:min(n, maxBody-t.buf.Len())])
	}
	return n, err
}

// contentTypeJSON reports whether a header declares a JSON body.
func contentTypeJSON(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// errorFields reads the provider's error fields from an error body, in any
// of the shapes servers use: {"error":{"message","type","code","param"}},
// {"error":"text"}, or {"message","type","code"} at the top level. Fields
// that are numbers are given as their text.
func errorFields(body []byte) (typ, msg, code, param string) {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return "", "", "", ""
	}
	fields := top
	if e, ok := top["error"]; ok {
		var inner map[string]json.RawMessage
		if json.Unmarshal(e, &inner) == nil && inner != nil {
			fields = inner
		} else {
			return "", scalarText(e), "", ""
		}
	}
	msg = scalarText(fields["message"])
	if msg == "" {
		msg = scalarText(fields["detail"])
	}
	return scalarText(fields["type"]), msg, scalarText(fields["code"]), scalarText(fields["param"])
}

// scalarText returns a JSON string's text or a number's or bool's literal;
// "" for null, absent or anything else.
func scalarText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	case '{', '[', 'n':
	default:
		if json.Valid(raw) {
			return string(raw)
		}
	}
	return ""
}

// retryableStatus reports whether a failure of kind (an HTTP error
// status's) may succeed if sent again: rate limits, server errors and a
// model's malformed tool call are, the others are not. The server's
// x-should-retry header decides if present, but for a used-up quota and
// refused credentials (401, 403), which no retry mends: the same key
// sent again is refused again, after the backoff's wait.
func retryableStatus(kind ErrorKind, h http.Header) bool {
	if kind == KindQuota || kind == KindAuth {
		return false
	}
	switch h.Get("x-should-retry") {
	case "true":
		return true
	case "false":
		return false
	}
	return kind == KindRateLimited || kind == KindServer || kind == KindModelFailure
}

// upstreamError returns what a router's error body says of the provider
// behind it (OpenRouter's error.metadata: provider_name and raw), or "".
func upstreamError(body []byte) string {
	var e struct {
		Error struct {
			Metadata struct {
				ProviderName string          `json:"provider_name"`
				Raw          json.RawMessage `json:"raw"`
			} `json:"metadata"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	md := e.Error.Metadata
	raw := scalarText(md.Raw)
	if raw == "" && len(md.Raw) > 0 && string(md.Raw) != "null" {
		raw = string(md.Raw)
	}
	if raw != "" {
		// The raw text is often the upstream's own JSON error.
		if _, msg, _, _ := errorFields([]byte(raw)); msg != "" {
			raw = msg
		}
	}
	switch {
	case md.ProviderName != "" && raw != "":
		return "upstream " + md.ProviderName + ": " + raw
	case md.ProviderName != "":
		return "upstream " + md.ProviderName
	}
	return raw
}

// retryAfter reads the wait a server asks for (retry-after-ms, then
// Retry-After in seconds or as a date); ok is false if it asks for none.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && s < 1e9 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// requestIDOf returns the provider's id of a request from the response
// header: x-request-id (OpenAI and most), request-id (Anthropic).
func requestIDOf(h http.Header) string {
	if id := h.Get("x-request-id"); id != "" {
		return id
	}
	return h.Get("request-id")
}

// rateLimits describes the rate-limit headers of a response
// (anthropic-ratelimit-*, x-ratelimit-*), sorted: "requests-limit=50,
// requests-remaining=0, requests-reset=2026-…"; "" if it has none.
func rateLimits(h http.Header) string {
	var out []string
	for k, v := range h {
		lk := strings.ToLower(k)
		for _, prefix := range []string{"anthropic-ratelimit-", "x-ratelimit-"} {
			if rest, ok := strings.CutPrefix(lk, prefix); ok && len(v) > 0 {
				out = append(out, rest+"="+clipText(v[0], 40))
			}
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// hint tells the user what to do about an HTTP error of kind.
func hint(kind ErrorKind, provider, baseURL string, keySent bool) string {
	keys := strings.Join(KeyEnv(provider), " or ")
	switch kind {
	case KindAuth:
		if !keySent {
			return "no API key was sent: set " + keys + " (or bind the world's llm/api secret)"
		}
		return "check the API key (" + keys + ", or the secret bound to the world's llm/api), and that it may use this model and endpoint"
	case KindNotFound:
		h := fmt.Sprintf("check the model name and the base URL %s", baseURL)
		if provider == ProviderResponses {
			h += "; a server without the Responses API needs provider " + ProviderChat
		}
		return h
	case KindRateLimited:
		return "rate limit or quota reached; wait, lower the request rate, or check the account's quota"
	case KindQuota:
		return "the account's quota or credit is used up: check its plan and billing (waiting will not help)"
	case KindServer:
		return "the provider failed; try again later"
	case KindModelFailure:
		return "the model kept writing malformed tool calls; try again, or another model"
	}
	return "the provider rejected the request; fix what the message names"
}

// memberLast returns the JSON object body with its member key moved to
// the end (the members' bytes as they were), and whether it has one. It
// scans the body once, byte by byte (a request can be megabytes), and
// gives up (false) on anything but a well-formed object.
func memberLast(body []byte, key string) ([]byte, bool) {
	type span struct{ from, to int } // a member: its key to the end of its value
	var members []span
	found := -1
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, false
	}
	i = skipSpace(body, i+1)
	for i < len(body) && body[i] != '}' {
		from := i
		end, ok := skipString(body, i)
		if !ok {
			return nil, false
		}
		k := body[i+1 : end-1]
		i = skipSpace(body, end)
		if i >= len(body) || body[i] != ':' {
			return nil, false
		}
		if i, ok = skipValue(body, skipSpace(body, i+1)); !ok {
			return nil, false
		}
		if string(k) == key {
			found = len(members)
		}
		members = append(members, span{from, i})
		i = skipSpace(body, i)
		if i < len(body) && body[i] == ',' {
			i = skipSpace(body, i+1)
		} else if i >= len(body) || body[i] != '}' {
			return nil, false
		}
	}
	if i >= len(body) || skipSpace(body, i+1) != len(body) || found < 0 {
		return nil, false
	}
	if found == len(members)-1 {
		return body, true
	}
	out := make([]byte, 0, len(body))
	out = append(out, '{')
	for j, m := range append(append(members[:found:found], members[found+1:]...), members[found]) {
		if j > 0 {
			out = append(out, ',')
		}
		out = append(out, body[m.from:m.to]...)
	}
	return append(out, '}'), true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the end of the JSON string at b[i].
func skipString(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return 0, false
}

// skipValue returns the end of the JSON value at b[i] (its syntax is
// checked only as far as finding its end needs).
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				end, ok := skipString(b, i)
				if !ok {
					return 0, false
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
		}
		return 0, false
	}
	start := i
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\n' && b[i] != '\t' && b[i] != '\r' {
		i++
	}
	return i, i > start
}
