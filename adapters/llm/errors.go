package llm

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
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

// The kinds of ProviderError.
const (
	// KindHTTP: the provider answered with an HTTP error status (Status).
	KindHTTP ErrorKind = "http"
	// KindTimeout: no complete answer within Config.Timeout.
	KindTimeout ErrorKind = "timeout"
	// KindConnection: the connection failed or broke before a complete
	// answer (refused, reset, a body cut off mid-way).
	KindConnection ErrorKind = "connection"
	// KindBadResponse: the body is not the JSON the protocol promises.
	KindBadResponse ErrorKind = "bad_response"
	// KindStreamCut: a stream ended before its final event.
	KindStreamCut ErrorKind = "stream_cut"
	// KindFailed: the provider reported the response itself as failed
	// (Responses status "failed", a stream "error" event).
	KindFailed ErrorKind = "failed"
)

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

func (e *ProviderError) Error() string {
	var b strings.Builder
	b.WriteString("llm: ")
	b.WriteString(e.Provider)
	b.WriteString(": ")
	switch e.Kind {
	case KindHTTP:
		fmt.Fprintf(&b, "HTTP %d", e.Status)
	case KindTimeout:
		b.WriteString("timeout")
	case KindConnection:
		b.WriteString("connection failed")
	case KindBadResponse:
		b.WriteString("unexpected response")
		if e.Status != 0 {
			fmt.Fprintf(&b, " (HTTP %d)", e.Status)
		}
	case KindStreamCut:
		b.WriteString("stream cut off")
	case KindFailed:
		b.WriteString("response failed")
	default:
		b.WriteString(string(e.Kind))
	}
	for _, s := range []string{e.Type, e.Code} {
		if s != "" {
			b.WriteString(" ")
			b.WriteString(s)
		}
	}
	if e.Param != "" {
		fmt.Fprintf(&b, " (param %s)", e.Param)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
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
