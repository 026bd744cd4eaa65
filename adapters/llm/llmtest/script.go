// Package llmtest is a fake OpenAI-style model server for tests: it speaks
// the Responses API (POST …/responses) and Chat Completions
// (POST …/chat/completions), as JSON or as a server-sent-event stream when
// the request says "stream": true, and answers each request with the next
// Turn of a script (or from a callback). It records every request for
// assertions.
//
// The answers are deterministic: ids ("resp_…", "fc_…", "call_…",
// "chatcmpl-…") derive from the turn's position and the call's index, and
// token counts from the request's size, so a recorded session replays to the
// same bytes.
//
// A script can be written in Go or read from JSON (ParseScript, LoadScript),
// for end-to-end tests that point a built binary at Server.URL:
//
//	{"turns": [
//	  {"calls": [{"name": "workspace_read", "arguments": "{\"path\":\"README.md\"}"}]},
//	  {"text": "The README says hello."},
//	  {"status": 500},
//	  {"text": "cut", "cut_off": true},
//	  {"calls": [{"name": "bash", "arguments": "{\"script\": \"ls"}], "delay": "50ms"}
//	]}
package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// Script is a list of canned turns, answered in order, one per request.
type Script struct {
	Turns []Turn `json:"turns"`
}

// Turn is one answer of the fake model: text and/or function calls, or a
// failure. The zero Turn answers an empty assistant message.
type Turn struct {
	// Text is the assistant's message ("" for none). In a stream it is sent
	// word by word.
	Text string `json:"text,omitempty"`
	// Calls are function calls, in order; several make a parallel turn.
	// Arguments are sent exactly as given, so they may be malformed JSON,
	// and Name may name no tool the request offered.
	Calls []Call `json:"calls,omitempty"`
	// Reasoning, if set, puts a reasoning item with this summary first in a
	// Responses output (with encrypted_content when the request includes
	// "reasoning.encrypted_content"), a signed thinking block first in an
	// Anthropic answer, a thought part first in a Gemini answer. Chat
	// Completions ignores it.
	Reasoning string `json:"reasoning,omitempty"`
	// Redacted, if set, puts a redacted_thinking block with this data
	// (sealed by the server) first in an Anthropic answer.
	Redacted string `json:"redacted,omitempty"`
	// Refusal is a refusal message part (Responses) or the message's
	// "refusal" field (Chat Completions).
	Refusal string `json:"refusal,omitempty"`

	// Status, if 400 or more, answers that HTTP error with an OpenAI error
	// body ({"error":{"message","type","param","code"}}) filled from Error
	// or from defaults for the status.
	Status int `json:"status,omitempty"`
	// Error overrides the fields of the error body.
	Error *ErrorBody `json:"error,omitempty"`
	// Header adds response headers, such as Retry-After.
	Header map[string]string `json:"header,omitempty"`
	// Body, if set, is sent verbatim instead of the rendered answer (with
	// Status, default 200, and ContentType, default "text/html; charset=utf-8"):
	// a body that is not the expected JSON.
	Body string `json:"body,omitempty"`
	// ContentType is the content type of Body.
	ContentType string `json:"content_type,omitempty"`

	// CutOff drops the connection mid-answer: a stream after about half its
	// events, before response.completed (or the finish chunk); a JSON body
	// after half its bytes.
	CutOff bool `json:"cut_off,omitempty"`
	// Incomplete ends a Responses answer with status "incomplete" and this
	// reason (such as "max_output_tokens"); Chat Completions answers
	// finish_reason "length". Anthropic answers stop_reason max_tokens
	// for "max_output_tokens", "max_tokens" or "length", else the reason
	// as given ("pause_turn"); Gemini answers finishReason MAX_TOKENS for
	// those, SAFETY for "content_filter", else the reason as given
	// ("RECITATION", "MALFORMED_FUNCTION_CALL").
	Incomplete string `json:"incomplete,omitempty"`
	// WebSearch, if set, puts a search of Anthropic's web_search server
	// tool after the text of an Anthropic answer: a server_tool_use block
	// with this query and its web_search_tool_result, as the answer of a
	// turn the API paused in its server tools' loop carries.
	WebSearch string `json:"web_search,omitempty"`
	// Continues marks an Anthropic answer that continues the answer
	// before it, which paused (Incomplete "pause_turn"): the request must
	// end with the paused content, as it came, as an assistant message
	// (as Anthropic's docs say to send a paused turn back), else it is
	// refused with HTTP 400.
	Continues bool `json:"continues,omitempty"`
	// Blocked answers a Gemini request with no candidate and this
	// promptFeedback.blockReason ("SAFETY"), as the API answers a prompt
	// it blocks.
	Blocked string `json:"blocked,omitempty"`
	// Failed ends a Responses answer with status "failed" and this error
	// (a stream with response.failed); Chat Completions answers HTTP 500.
	Failed *ErrorBody `json:"failed,omitempty"`
	// StreamError sends an "error" event instead of the answer when the
	// request streams (Responses), or HTTP 500 otherwise.
	StreamError *ErrorBody `json:"stream_error,omitempty"`
	// IgnoreStream answers a streaming request with a plain JSON body, as
	// servers without streaming do.
	IgnoreStream bool `json:"ignore_stream,omitempty"`

	// Delay waits before answering (the request's cancellation ends the
	// wait).
	Delay Duration `json:"delay,omitempty"`
	// EventDelay waits between the events of a stream, so text arrives
	// word by word as from a real model.
	EventDelay Duration `json:"event_delay,omitempty"`
	// Hold, if not nil, makes a stream stop before its last event until
	// Hold is closed (or the request ends): a test closes it from the
	// client's delta callback to prove deltas arrive while the answer is
	// still being written.
	Hold <-chan struct{} `json:"-"`
	// Usage overrides the token counts.
	Usage *Usage `json:"usage,omitempty"`
	// Cost, if set, is the answer's own cost in US dollars, as OpenRouter
	// and AI gateways report it in the usage (usage.cost), in a Responses
	// or Chat Completions answer.
	Cost *float64 `json:"cost,omitempty"`
	// NoUsage leaves the usage out of the answer, as servers such as
	// Ollama and vLLM do for a stream not asked for it.
	NoUsage bool `json:"no_usage,omitempty"`
	// Model overrides the model the answer names (default: the request's).
	Model string `json:"model,omitempty"`
}

// Call is one function call of a Turn.
type Call struct {
	Name string `json:"name"`
	// Arguments is the raw arguments string, sent as is.
	Arguments string `json:"arguments"`
	// CallID overrides the generated "call_…" id.
	CallID string `json:"call_id,omitempty"`
}

// ErrorBody is the "error" object of an OpenAI error response.
type ErrorBody struct {
	Message string `json:"message,omitempty"`
	Type    string `json:"type,omitempty"`
	Code    string `json:"code,omitempty"`
	Param   string `json:"param,omitempty"`
}

// Usage is a turn's token counts. Input includes Cached and CacheWrite;
// Output includes Reasoning.
type Usage struct {
	Input      int64 `json:"input"`
	Cached     int64 `json:"cached"`
	CacheWrite int64 `json:"cache_write,omitempty"`
	Output     int64 `json:"output"`
	Reasoning  int64 `json:"reasoning"`
}

// Duration is a time.Duration written in JSON as a Go duration string
// ("150ms") or a number of milliseconds.
type Duration time.Duration

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string or a number of milliseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("llmtest: delay %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var ms float64
	if err := json.Unmarshal(b, &ms); err != nil {
		return fmt.Errorf("llmtest: delay must be a duration string such as \"150ms\" or milliseconds, got %s", b)
	}
	*d = Duration(ms * float64(time.Millisecond))
	return nil
}

// ParseScript reads a script from JSON: {"turns":[…]} or a bare array of
// turns. Unknown fields are errors, so a misspelt field does not pass
// silently.
func ParseScript(data []byte) (Script, error) {
	data = bytes.TrimSpace(data)
	var s Script
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var err error
	if len(data) > 0 && data[0] == '[' {
		err = dec.Decode(&s.Turns)
	} else {
		err = dec.Decode(&s)
	}
	if err != nil {
		return Script{}, fmt.Errorf("llmtest: parse script: %w", err)
	}
	if dec.More() {
		return Script{}, fmt.Errorf("llmtest: parse script: trailing data after the script")
	}
	return s, nil
}

// LoadScript reads a JSON script file (see ParseScript).
func LoadScript(path string) (Script, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Script{}, fmt.Errorf("llmtest: %w", err)
	}
	s, err := ParseScript(b)
	if err != nil {
		return Script{}, fmt.Errorf("%w (in %s)", err, path)
	}
	return s, nil
}
