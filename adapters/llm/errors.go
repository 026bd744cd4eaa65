package llm

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/demiurge-dev/demiurge/cas"
)

// ErrInvalidParams is returned (wrapped, with the reason) when the params,
// a message blob or the tools blob cannot make a request. Retrying does not
// help; the params or blobs must change.
var ErrInvalidParams = errors.New("llm: invalid params")

// ErrorKind classifies a ProviderError.
type ErrorKind string

// The kinds of ProviderError, one for each way a call fails. Only
// KindRateLimited, KindServer, KindUnreachable, KindStreamCut,
// KindConnection and KindModelFailure are retried (a KindFailed response
// whose code says the server failed is too).
const (
	// KindAuth: the provider refused the credentials (HTTP 401 or 403).
	KindAuth ErrorKind = "auth"
	// KindBadRequest: the provider refused the request (HTTP 400, 422 and
	// other 4xx statuses not named here).
	KindBadRequest ErrorKind = "bad_request"
	// KindNotFound: the model or the endpoint does not exist (HTTP 404).
	KindNotFound ErrorKind = "not_found"
	// KindRateLimited: a rate limit was hit (HTTP 429); the provider's
	// Retry-After is honoured up to a minute.
	KindRateLimited ErrorKind = "rate_limited"
	// KindQuota: the account's quota or credit is used up (OpenAI's
	// insufficient_quota, sent with HTTP 429): waiting does not help, so
	// it is not retried.
	KindQuota ErrorKind = "quota"
	// KindServer: the provider failed or asked to be tried again (HTTP
	// 5xx, 408, 409).
	KindServer ErrorKind = "server"
	// KindModelFailure: the provider reports that the model wrote a
	// malformed tool call (Groq's tool_use_failed); the same request may
	// succeed, so it is retried.
	KindModelFailure ErrorKind = "model_failure"
	// KindUnreachable: no answer at all: the connection, DNS lookup or TLS
	// handshake failed.
	KindUnreachable ErrorKind = "unreachable"
	// KindTimeout: no complete answer within Config.Timeout.
	KindTimeout ErrorKind = "timeout"
	// KindConnection: the connection broke after the answer began, before
	// its body was complete.
	KindConnection ErrorKind = "connection"
	// KindStreamCut: a stream ended before its final event.
	KindStreamCut ErrorKind = "stream_cut"
	// KindBadResponse: the body is not the JSON the protocol promises.
	KindBadResponse ErrorKind = "bad_response"
	// KindFailed: the provider reported the response itself as failed
	// (Responses status "failed", a stream "error" event).
	KindFailed ErrorKind = "failed"
)

// KindHTTP is the kind every HTTP error status had before the kinds by
// class; recorded failed attempts of older sessions may carry it.
const KindHTTP ErrorKind = "http"

// kindLabel is how Error names a kind.
var kindLabel = map[ErrorKind]string{
	KindAuth:         "authentication failed",
	KindBadRequest:   "bad request",
	KindNotFound:     "not found",
	KindRateLimited:  "rate limited",
	KindQuota:        "quota exhausted",
	KindServer:       "server error",
	KindModelFailure: "the model wrote a malformed tool call",
	KindUnreachable:  "unreachable",
	KindTimeout:      "timeout",
	KindConnection:   "connection broken",
	KindStreamCut:    "stream cut off",
	KindBadResponse:  "unparsable response",
	KindFailed:       "response failed",
	KindHTTP:         "HTTP error",
}

// KindOf returns the kind of failure an error message names, if it is the
// message of a *ProviderError (its Error text, as a failed llm.generate
// receipt records it: "llm: PROVIDER: KIND-LABEL …"); ok is false for any
// other message.
func KindOf(msg string) (kind ErrorKind, ok bool) {
	rest, found := strings.CutPrefix(msg, "llm: ")
	if !found {
		return "", false
	}
	_, rest, found = strings.Cut(rest, ": ")
	if !found {
		return "", false
	}
	best := 0
	for k, l := range kindLabel {
		if strings.HasPrefix(rest, l) && len(l) > best && (len(rest) == len(l) || strings.ContainsRune(" :(", rune(rest[len(l)]))) {
			kind, best = k, len(l)
		}
	}
	return kind, best > 0
}

// statusKind classifies an HTTP error status and the provider's error
// code.
func statusKind(status int, code string) ErrorKind {
	switch {
	case code == "tool_use_failed":
		return KindModelFailure
	case code == "insufficient_quota":
		return KindQuota
	case status == 401, status == 403:
		return KindAuth
	case status == 404, code == "model_not_found": // OpenAI's Responses API answers 400
		return KindNotFound
	case status == 429:
		return KindRateLimited
	case status >= 500, status == 408, status == 409:
		return KindServer
	}
	return KindBadRequest
}

// ProviderError is returned when the provider could not produce a
// response: an HTTP error, a timeout, a broken connection or stream, or a
// body that is not what the protocol promises. Its message names the
// provider, what happened, the provider's own message, and what to do.
type ProviderError struct {
	Provider string    // ProviderResponses or ProviderChat
	Kind     ErrorKind // what went wrong
	Status   int       // HTTP status; 0 if no response arrived
	// Type, Code, Param and Message are the provider's error fields
	// (Message is our description when the provider gave none).
	Type, Code, Param, Message string
	// RequestID is the provider's x-request-id header, if any.
	RequestID string
	// Retryable reports whether this kind of failure is retried (it was,
	// up to Config.MaxAttempts, before this error was returned).
	Retryable bool
	// Attempts is how many attempts were made in all.
	Attempts int
	// RequestRef and ResponseRef name the last attempt's request body and
	// raw response body in the store given to Generate; zero if there was
	// none or it could not be stored.
	RequestRef, ResponseRef cas.Ref
	// Hint tells the user what to do about it.
	Hint string
	// Err is the underlying transport or decode error, if any.
	Err error

	header http.Header // the response header of an HTTP error, for Retry-After
}

// retryAfter returns the wait the provider asked for, if it did.
func (e *ProviderError) retryAfter() (time.Duration, bool) {
	return retryAfter(e.header, time.Now())
}

// Error reads like
//
//	llm: openai-chat: bad request (HTTP 400 invalid_request_error, param max_tokens): Unsupported parameter … [request req_12] (after 3 attempts); fix what the message names
//
// naming the provider, the kind, the provider's own status, type, code
// and message, its request id, and what to do.
func (e *ProviderError) Error() string {
	var b strings.Builder
	b.WriteString("llm: ")
	b.WriteString(e.Provider)
	b.WriteString(": ")
	if l, ok := kindLabel[e.Kind]; ok {
		b.WriteString(l)
	} else {
		b.WriteString(string(e.Kind))
	}
	var detail []string
	if e.Status != 0 {
		detail = append(detail, fmt.Sprintf("HTTP %d", e.Status))
	}
	for _, s := range []string{e.Type, e.Code} {
		if s != "" && s != strconv.Itoa(e.Status) && !slices.Contains(detail, s) {
			detail = append(detail, s)
		}
	}
	if e.Param != "" {
		detail = append(detail, "param "+e.Param)
	}
	if len(detail) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(detail, ", "))
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request %s]", e.RequestID)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// Unwrap returns the underlying transport or decode error.
func (e *ProviderError) Unwrap() error { return e.Err }

// invalidf returns an error wrapping ErrInvalidParams.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidParams, fmt.Sprintf(format, args...))
}

// clipText makes provider text safe and short for an error message: valid
// UTF-8, control characters as spaces, at most max runes.
func clipText(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	n := 0
	lastSpace := false
	for _, r := range s {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			if lastSpace {
				continue
			}
			r, lastSpace = ' ', true
		} else {
			lastSpace = false
		}
		if n == max {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimSpace(b.String())
}

// redactMin is the shortest API key that is searched for and redacted;
// shorter "keys" (such as a local server's placeholder) would match
// ordinary text.
const redactMin = 8

// redacted is what replaces an API key in stored evidence and errors.
const redacted = "[REDACTED]"

// redactString replaces every occurrence of key in s.
func redactString(s, key string) string {
	if len(key) < redactMin || !strings.Contains(s, key) {
		return s
	}
	return strings.ReplaceAll(s, key, redacted)
}

// redactBytes replaces every occurrence of key in b, returning b itself
// when there is none.
func redactBytes(b []byte, key string) []byte {
	if len(key) < redactMin || !bytes.Contains(b, []byte(key)) {
		return b
	}
	return bytes.ReplaceAll(b, []byte(key), []byte(redacted))
}

// redactError rewrites the text fields of a ProviderError.
func (e *ProviderError) redact(key string) {
	e.Type = redactString(e.Type, key)
	e.Code = redactString(e.Code, key)
	e.Param = redactString(e.Param, key)
	e.Message = redactString(e.Message, key)
	e.Hint = redactString(e.Hint, key)
	if e.Err != nil && len(key) >= redactMin && strings.Contains(e.Err.Error(), key) {
		e.Err = errors.New(redactString(e.Err.Error(), key))
	}
}
