package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cas/chunked"
	"github.com/demiurge-dev/demiurge/effects"
)

const testKey = "sk-test-0123456789abcdef"

// run makes one Generate call against a fresh server playing turns.
func run(t *testing.T, prov string, stream bool, turns []llmtest.Turn, edit func(*Config)) (Receipt, *llmtest.Server, *memStore, []string, error) {
	t.Helper()
	srv := llmtest.NewServer(llmtest.Script{Turns: turns})
	t.Cleanup(srv.Close)
	g := newTestGenerator(t, srv, edit)
	st := newStore()
	tools := st.put(t, `{"tools":[{"type":"function","name":"workspace_read","parameters":{"type":"object"},"strict":false}]}`)
	p := Params{Provider: prov, Model: "gpt-5.2", MessageRefs: []cas.Ref{st.put(t, "Summarise README.md")}, ToolsRef: &tools}
	var deltas []string
	var onDelta func(string)
	if stream {
		onDelta = func(s string) { deltas = append(deltas, s) }
	}
	r, err := g.Generate(t.Context(), st, p, testKey, onDelta)
	return r, srv, st, deltas, err
}

// modes are the four ways of calling: two providers, streaming or not.
var modes = []struct {
	name     string
	provider string
	stream   bool
}{
	{"responses", ProviderResponses, false},
	{"responses-stream", ProviderResponses, true},
	{"chat", ProviderChat, false},
	{"chat-stream", ProviderChat, true},
}

func TestGenerateReceipt(t *testing.T) {
	turn := llmtest.Turn{
		Text: "Reading two files.",
		Calls: []llmtest.Call{
			{Name: "workspace_read", Arguments: `{"path":"README.md"}`},
			{Name: "workspace_read", Arguments: `{"path": "READ`}, // malformed
			{Name: "delete_everything", Arguments: `{}`},          // unknown tool
		},
		Usage: &llmtest.Usage{Input: 1000, Cached: 200, Output: 500, Reasoning: 100},
		Model: "gpt-5.2-2025-12-11",
	}
	prices := []ModelOptions{{Match: "gpt-5.2", Price: &Price{Input: 1_250_000, CachedInput: 125_000, Output: 10_000_000}}}
	wantCalls := []ToolCall{
		{Name: "workspace_read", ArgumentsJSON: `{"path":"README.md"}`},
		{Name: "workspace_read", ArgumentsJSON: `{"path": "READ`},
		{Name: "delete_everything", ArgumentsJSON: `{}`},
	}
	var items [][]byte
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			r, srv, st, deltas, err := run(t, m.provider, m.stream, []llmtest.Turn{turn}, func(c *Config) { c.Models = prices })
			if err != nil {
				t.Fatal(err)
			}
			if r.OutputText != "Reading two files." || r.FinishReason != "tool_calls" || r.Model != "gpt-5.2-2025-12-11" || r.Attempts != 1 {
				t.Errorf("receipt %+v", r)
			}
			if r.TokenUsage != (TokenUsage{Input: 1000, Output: 500, CacheRead: 200, Reasoning: 100}) {
				t.Errorf("usage %+v", r.TokenUsage)
			}
			// 800 uncached × $1.25/M + 200 cached × $0.125/M + 500 × $10/M = $0.006025.
			if r.CostMicroUSD != 6025 || r.CostCents != 1 {
				t.Errorf("cost %d µUSD, %d cents; want 6025 and 1", r.CostMicroUSD, r.CostCents)
			}
			if m.stream && strings.Join(deltas, "") != "Reading two files." {
				t.Errorf("deltas %q", deltas)
			}
			if !m.stream && deltas != nil {
				t.Errorf("deltas without streaming: %q", deltas)
			}
			// Each tool call ref names its LlmToolCall node, in order.
			if len(r.ToolCallRefs) != 3 {
				t.Fatalf("%d tool call refs; want 3", len(r.ToolCallRefs))
			}
			var ids []string
			for i, ref := range r.ToolCallRefs {
				var tc ToolCall
				if err := cas.GetNode(t.Context(), st, ref, &tc); err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(tc.CallID, "call_") || tc.Name != wantCalls[i].Name || tc.ArgumentsJSON != wantCalls[i].ArgumentsJSON {
					t.Errorf("tool call %d: %+v; want %+v", i, tc, wantCalls[i])
				}
				ids = append(ids, tc.CallID)
			}
			// The output items node lists the message and the calls.
			var got []OutputItem
			if err := cas.GetNode(t.Context(), st, *r.OutputItemsRef, &got); err != nil {
				t.Fatal(err)
			}
			want := []OutputItem{{Message: &MessageItem{Role: "assistant", Text: "Reading two files."}}}
			for i, c := range wantCalls {
				c.CallID = ids[i]
				want = append(want, OutputItem{ToolCall: &c})
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("output items %+v", got)
			}
			itemsBlob, _ := st.Get(t.Context(), *r.OutputItemsRef)
			items = append(items, itemsBlob)

			// Evidence: the request is the exact body the server received,
			// without the key, kept as chunks; the response holds the
			// output verbatim.
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests; want 1", len(reqs))
			}
			if got := requestEvidence(t, st, *r.RequestRef); got != string(reqs[0].Body) {
				t.Errorf("request evidence\n got %s\nwant %s", got, reqs[0].Body)
			}
			if got := reqs[0].Header.Get("Authorization"); got != "Bearer "+testKey {
				t.Errorf("Authorization %q", got)
			}
			if reqs[0].Stream != m.stream {
				t.Errorf("request stream=%v; want %v", reqs[0].Stream, m.stream)
			}
			resp := st.get(t, *r.ResponseRef)
			out := st.get(t, r.OutputRef)
			if m.provider == ProviderResponses && !strings.Contains(resp, `"output":`+out+`,`) {
				t.Errorf("output %s\nis not verbatim in the response %s", out, resp)
			}
			if m.stream && strings.Contains(resp, "output_text.delta") {
				t.Errorf("stream events were recorded: %s", resp)
			}
			for _, b := range st.all() {
				if bytes.Contains(b, []byte(testKey)) {
					t.Errorf("the API key is stored in a blob: %s", b)
				}
			}
		})
	}
	for i := 1; i < len(items); i++ {
		if !bytes.Equal(items[i], items[0]) {
			t.Errorf("mode %s: output items differ from mode %s", modes[i].name, modes[0].name)
		}
	}
}

// TestGenerateDeterministic checks that the same call against the same
// script gives the same receipt, byte for byte.
func TestGenerateDeterministic(t *testing.T) {
	turn := llmtest.Turn{Reasoning: "think", Text: "a b c", Calls: []llmtest.Call{{Name: "workspace_read", Arguments: `{}`}}}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			var first []byte
			for range 2 {
				r, _, _, _, err := run(t, m.provider, m.stream, []llmtest.Turn{turn}, nil)
				if err != nil {
					t.Fatal(err)
				}
				b, err := cas.Marshal(r)
				if err != nil {
					t.Fatal(err)
				}
				if first != nil && !bytes.Equal(b, first) {
					t.Errorf("receipts differ")
				}
				first = b
			}
		})
	}
}

func TestGenerateReasoningReplay(t *testing.T) {
	r, srv, st, _, err := run(t, ProviderResponses, false, []llmtest.Turn{
		{Reasoning: "look first", Calls: []llmtest.Call{{Name: "workspace_read", Arguments: `{"path":"a"}`}}},
		{Text: "done"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := st.get(t, r.OutputRef)
	if !strings.Contains(out, `"encrypted_content":"gAAAAA`) {
		t.Fatalf("output has no encrypted reasoning: %s", out)
	}
	// The next turn replays the output blob verbatim, then the tool output.
	var tc ToolCall
	if err := cas.GetNode(t.Context(), st, r.ToolCallRefs[0], &tc); err != nil {
		t.Fatal(err)
	}
	g := newTestGenerator(t, srv, nil)
	result := st.put(t, `{"type":"function_call_output","call_id":"`+tc.CallID+`","output":"hello"}`)
	p := Params{Model: "gpt-5.2", MessageRefs: []cas.Ref{st.put(t, "Summarise README.md"), r.OutputRef, result}}
	r2, err := g.Generate(t.Context(), st, p, testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r2.OutputText != "done" {
		t.Errorf("second turn: %+v", r2)
	}
	body := string(srv.Requests()[1].Body)
	if !strings.Contains(body, strings.TrimSuffix(strings.TrimPrefix(out, "["), "]")) {
		t.Errorf("the second request does not replay the first output verbatim:\n%s", body)
	}
}

func TestGenerateChainedRequest(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Text: "ok"}}})
	defer srv.Close()
	g := newTestGenerator(t, srv, nil)
	st := newStore()
	refs := []cas.Ref{st.put(t, "q"), st.put(t, refOutput), st.put(t, refToolOutput)}
	r, err := g.Generate(t.Context(), st, Params{Model: "m", MessageRefs: refs, PreviousResponseID: ptr("resp_001")}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	req := srv.Requests()[0]
	want := `{"previous_response_id":"resp_001","store":true,"model":"m","input":[` + refToolOutput + `]}` // the transcript last
	if string(req.Body) != want || requestEvidence(t, st, *r.RequestRef) != want {
		t.Errorf("request %s\nwant %s", req.Body, want)
	}
	if h := req.Header.Get("Authorization"); h != "" {
		t.Errorf("an empty key sent Authorization %q", h)
	}
}

func TestGenerateFinishReasons(t *testing.T) {
	tests := []struct {
		turn llmtest.Turn
		want string
	}{
		{llmtest.Turn{Text: "x"}, "stop"},
		{llmtest.Turn{Text: "x", Incomplete: "max_output_tokens"}, "length"},
		{llmtest.Turn{Refusal: "I can't."}, "refusal"},
		{llmtest.Turn{Text: "x", Incomplete: "content_filter"}, "content_filter"},
		{llmtest.Turn{Calls: []llmtest.Call{{Name: "f", Arguments: `{"a":`}}, Incomplete: "max_output_tokens"}, "length"},
	}
	for _, tc := range tests {
		for _, m := range modes {
			r, _, _, _, err := run(t, m.provider, m.stream, []llmtest.Turn{tc.turn}, nil)
			if err != nil {
				t.Fatalf("%s %+v: %v", m.name, tc.turn, err)
			}
			if r.FinishReason != tc.want || r.OutputText != tc.turn.Text+tc.turn.Refusal {
				t.Errorf("%s %+v: finish %q text %q", m.name, tc.turn, r.FinishReason, r.OutputText)
			}
		}
	}
}

// TestGenerateErrors covers every way a provider can fail.
func TestGenerateErrors(t *testing.T) {
	keyEcho := llmtest.ErrorBody{Message: "Incorrect API key provided: " + testKey}
	tests := []struct {
		name     string
		turns    []llmtest.Turn
		modes    []string // "" = all
		kind     ErrorKind
		status   int
		attempts int
		retry    bool
		contains []string
	}{
		{name: "400 with the provider's fields", turns: []llmtest.Turn{{Status: 400, Error: &llmtest.ErrorBody{
			Message: "Invalid value for 'tool_choice'.", Type: "invalid_request_error", Code: "invalid_value", Param: "tool_choice"}}},
			kind: KindBadRequest, status: 400, attempts: 1,
			contains: []string{"bad request (HTTP 400, invalid_request_error, invalid_value, param tool_choice): Invalid value for 'tool_choice'.", "[request req_", "fix what the message names"}},
		{name: "401 echoing the key", turns: []llmtest.Turn{{Status: 401, Error: &keyEcho}}, kind: KindAuth, status: 401, attempts: 1,
			contains: []string{"authentication failed (HTTP 401", "[REDACTED]", "check the API key"}},
		{name: "401, the server asking to retry: final", turns: []llmtest.Turn{{Status: 401, Header: map[string]string{"x-should-retry": "true"}}, {Text: "never"}},
			kind: KindAuth, status: 401, attempts: 1, contains: []string{"authentication failed (HTTP 401", "check the API key"}},
		{name: "403", turns: []llmtest.Turn{{Status: 403, Error: &llmtest.ErrorBody{Message: "Project does not have access to model gpt-5", Code: "model_not_found"}}},
			kind: KindAuth, status: 403, attempts: 1, contains: []string{"authentication failed (HTTP 403", "does not have access"}},
		{name: "404", turns: []llmtest.Turn{{Status: 404}}, kind: KindNotFound, status: 404, attempts: 1,
			contains: []string{"not found (HTTP 404", "model_not_found", "check the model name and the base URL"}},
		{name: "429 three times", turns: []llmtest.Turn{{Status: 429}, {Status: 429}, {Status: 429}}, kind: KindRateLimited, status: 429, attempts: 3, retry: true,
			contains: []string{"rate limited (HTTP 429", "rate_limit_exceeded", "(after 3 attempts)", "rate limit or quota"}},
		{name: "429 of a router, with the upstream's reason", turns: []llmtest.Turn{{Status: 429, Body: `{"error":{"message":"Provider returned error","code":429,"metadata":{"raw":"qwen/qwen3 is temporarily rate-limited upstream","provider_name":"Chutes"}}}`, ContentType: "application/json", Header: map[string]string{"x-should-retry": "false"}}},
			kind: KindRateLimited, status: 429, attempts: 1,
			contains: []string{"rate limited (HTTP 429): Provider returned error (upstream Chutes: qwen/qwen3 is temporarily rate-limited upstream)"}},
		{name: "429 insufficient_quota, not retried", turns: []llmtest.Turn{{Status: 429, Error: &llmtest.ErrorBody{Type: "insufficient_quota", Code: "insufficient_quota",
			Message: "You exceeded your current quota, please check your plan and billing details."}}, {Text: "never"}},
			kind: KindQuota, status: 429, attempts: 1,
			contains: []string{"quota exhausted (HTTP 429, insufficient_quota)", "check your plan and billing", "check its plan and billing (waiting will not help)"}},
		{name: "429 insufficient_quota as the type only, the server asking to retry", turns: []llmtest.Turn{{Status: 429, Error: &llmtest.ErrorBody{Type: "insufficient_quota",
			Message: "You exceeded your current quota."}, Header: map[string]string{"x-should-retry": "true"}}, {Text: "never"}},
			kind: KindQuota, status: 429, attempts: 1, contains: []string{"quota exhausted (HTTP 429, insufficient_quota", "waiting will not help"}},
		{name: "a malformed tool call, retried then reported", turns: []llmtest.Turn{
			{Status: 400, Error: &llmtest.ErrorBody{Type: "invalid_request_error", Code: "tool_use_failed", Message: "Failed to call a function. Please adjust your prompt."}},
			{Status: 400, Error: &llmtest.ErrorBody{Type: "invalid_request_error", Code: "tool_use_failed", Message: "Failed to call a function. Please adjust your prompt."}}},
			kind: KindModelFailure, status: 400, attempts: 2, retry: true,
			contains: []string{"the model wrote a malformed tool call (HTTP 400, invalid_request_error, tool_use_failed)", "(after 2 attempts)"}},
		{name: "500 three times", turns: []llmtest.Turn{{Status: 500}, {Status: 500}, {Status: 500}}, kind: KindServer, status: 500, attempts: 3, retry: true,
			contains: []string{"server error (HTTP 500, server_error): The server had an error"}},
		{name: "503 the server says not to retry", turns: []llmtest.Turn{{Status: 503, Header: map[string]string{"x-should-retry": "false"}}},
			kind: KindServer, status: 503, attempts: 1},
		{name: "429 asking for a long wait", turns: []llmtest.Turn{{Status: 429, Header: map[string]string{"Retry-After": "3600"}}, {Text: "never"}},
			kind: KindRateLimited, status: 429, attempts: 1, retry: true, contains: []string{"the provider asked to wait 1h0m0s"}},
		{name: "502 HTML", turns: []llmtest.Turn{{Status: 502, Body: "<html><h1>502 Bad Gateway</h1></html>"}, {Status: 502, Body: "<html/>"}, {Status: 502, Body: "<html/>"}},
			kind: KindServer, status: 502, attempts: 3, retry: true, contains: []string{"server error (HTTP 502): <html/>"}},
		{name: "200 HTML", turns: []llmtest.Turn{{Body: "<html>login page</html>"}}, kind: KindBadResponse, status: 200, attempts: 1,
			contains: []string{"unparsable response (HTTP 200)", "<html>login page</html>", "check the base URL"}, modes: []string{"responses", "chat"}},
		{name: "200 JSON of the wrong shape", turns: []llmtest.Turn{{Body: `{"hello":"world"}`, ContentType: "application/json"}}, kind: KindBadResponse, status: 200, attempts: 1},
		{name: "body cut off", turns: []llmtest.Turn{{Text: "x", CutOff: true}, {Text: "x", CutOff: true}, {Text: "x", CutOff: true}},
			kind: KindConnection, status: 200, attempts: 3, retry: true, modes: []string{"responses", "chat"}},
		{name: "stream cut off after text", turns: []llmtest.Turn{{Text: "one two three four five six", CutOff: true}, {Text: "never sent"}},
			kind: KindStreamCut, status: 200, attempts: 1, modes: []string{"responses-stream", "chat-stream"},
			contains: []string{"stream cut off"}},
		{name: "stream cut off before any text", turns: []llmtest.Turn{
			{Calls: []llmtest.Call{{Name: "workspace_read", Arguments: `{"path":"a-long-path-in-pieces"}`}}, CutOff: true},
			{Calls: []llmtest.Call{{Name: "workspace_read", Arguments: `{"path":"a-long-path-in-pieces"}`}}, CutOff: true},
			{Calls: []llmtest.Call{{Name: "workspace_read", Arguments: `{"path":"a-long-path-in-pieces"}`}}, CutOff: true}},
			kind: KindStreamCut, status: 200, attempts: 3, retry: true, modes: []string{"responses-stream", "chat-stream"}},
		{name: "response failed", turns: []llmtest.Turn{{Failed: &llmtest.ErrorBody{Code: "invalid_prompt", Message: "prompt flagged"}}},
			kind: KindFailed, status: 200, attempts: 1, contains: []string{"response failed (HTTP 200, invalid_prompt): prompt flagged"}, modes: []string{"responses", "responses-stream"}},
		{name: "stream error event", turns: []llmtest.Turn{{StreamError: &llmtest.ErrorBody{Code: "context_length_exceeded", Message: "too long"}}},
			kind: KindFailed, status: 200, attempts: 1, contains: []string{"too long"}, modes: []string{"responses-stream", "chat-stream"}},
		{name: "timeout", turns: []llmtest.Turn{{Delay: llmtest.Duration(time.Second)}, {Delay: llmtest.Duration(time.Second)}},
			kind: KindTimeout, attempts: 1, contains: []string{"timeout: no complete answer within 50ms"}},
	}
	for _, tc := range tests {
		for _, m := range modes {
			if tc.modes != nil && !contains(tc.modes, m.name) {
				continue
			}
			t.Run(tc.name+"/"+m.name, func(t *testing.T) {
				_, srv, st, _, err := run(t, m.provider, m.stream, tc.turns, func(c *Config) {
					c.Timeout = 50 * time.Millisecond
					if tc.kind != KindTimeout {
						c.Timeout = 10 * time.Second
					}
					c.MaxAttempts = min(len(tc.turns), 3)
				})
				var pe *ProviderError
				if !errors.As(err, &pe) {
					t.Fatalf("got %v; want a *ProviderError", err)
				}
				if pe.Kind != tc.kind || pe.Status != tc.status || pe.Attempts != tc.attempts || pe.Retryable != tc.retry || pe.Provider != m.provider {
					t.Errorf("got kind %s status %d attempts %d retryable %v; want %s %d %d %v\n%v",
						pe.Kind, pe.Status, pe.Attempts, pe.Retryable, tc.kind, tc.status, tc.attempts, tc.retry, err)
				}
				if got := len(srv.Requests()); got != tc.attempts {
					t.Errorf("%d requests; want %d", got, tc.attempts)
				}
				msg := err.Error()
				for _, s := range tc.contains {
					if !strings.Contains(msg, s) {
						t.Errorf("error %q\ndoes not contain %q", msg, s)
					}
				}
				if strings.Contains(msg, testKey) {
					t.Errorf("the API key is in the error: %s", msg)
				}
				// The failing exchange is kept as evidence, without the key.
				if !pe.RequestRef.Valid() {
					t.Error("no request evidence")
				} else if got, want := st.get(t, pe.RequestRef), string(srv.Requests()[tc.attempts-1].Body); got != want {
					t.Errorf("request evidence %s\nwant %s", got, want)
				}
				if tc.status >= 400 && !pe.ResponseRef.Valid() {
					t.Error("no response evidence")
				}
				for _, b := range st.all() {
					if bytes.Contains(b, []byte(testKey)) {
						t.Errorf("the API key is stored in a blob: %s", b)
					}
				}
			})
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestGenerateRetryThenSuccess(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			var waits []int
			r, srv, st, deltas, err := run(t, m.provider, m.stream, []llmtest.Turn{
				{Status: 503}, {Status: 429, Header: map[string]string{"Retry-After": "0"}}, {Text: "finally"},
			}, func(c *Config) {
				c.Backoff = func(n int) time.Duration { waits = append(waits, n); return 0 }
			})
			if err != nil {
				t.Fatal(err)
			}
			if r.Attempts != 3 || r.OutputText != "finally" || len(srv.Requests()) != 3 {
				t.Errorf("receipt %+v after %d requests", r, len(srv.Requests()))
			}
			if !reflect.DeepEqual(waits, []int{1, 2}) {
				t.Errorf("backoff called for attempts %v; want [1 2]", waits)
			}
			// Each failed attempt is recorded, with its evidence.
			if r.FailedAttemptsRef == nil {
				t.Fatal("no failed attempts recorded")
			}
			var failed []FailedAttempt
			if err := cas.GetNode(t.Context(), st, *r.FailedAttemptsRef, &failed); err != nil {
				t.Fatal(err)
			}
			if len(failed) != 2 || failed[0].Attempt != 1 || failed[0].Status != 503 || failed[0].Kind != string(KindServer) ||
				failed[1].Attempt != 2 || failed[1].Status != 429 {
				t.Fatalf("failed attempts %+v", failed)
			}
			for _, f := range failed {
				if f.RequestRef == nil || f.ResponseRef == nil {
					t.Errorf("attempt %d lacks its evidence: %+v", f.Attempt, f)
					continue
				}
				if body, err := st.Get(t.Context(), *f.RequestRef); err != nil || !strings.Contains(string(body), "Summarise README.md") {
					t.Errorf("attempt %d request %q, %v", f.Attempt, body, err)
				}
			}
			if m.stream && strings.Join(deltas, "") != "finally" {
				t.Errorf("deltas %q", deltas)
			}
		})
	}
}

func TestGenerateStreamIgnoredByServer(t *testing.T) {
	for _, prov := range []string{ProviderResponses, ProviderChat} {
		r, srv, st, deltas, err := run(t, prov, true, []llmtest.Turn{{Text: "whole answer", IgnoreStream: true}}, nil)
		if err != nil {
			t.Fatal(prov, err)
		}
		if !srv.Requests()[0].Stream || r.OutputText != "whole answer" || strings.Join(deltas, "") != "whole answer" {
			t.Errorf("%s: receipt %+v deltas %q", prov, r, deltas)
		}
		if !strings.HasPrefix(st.get(t, *r.ResponseRef), `{"id":`) {
			t.Errorf("%s: response evidence is not the JSON body", prov)
		}
	}
}

func TestGenerateConnectionRefused(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{})
	url := srv.URL
	srv.Close()
	g, err := New(Config{BaseURL: url, Backoff: func(int) time.Duration { return 0 }, Logger: quietLogger, MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	st := newStore()
	_, err = g.Generate(t.Context(), st, Params{Model: "m", MessageRefs: []cas.Ref{st.put(t, "hi")}}, testKey, nil)
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Kind != KindUnreachable || pe.Attempts != 2 || !pe.Retryable || pe.Status != 0 {
		t.Fatalf("got %v; want a retryable unreachable error after 2 attempts", err)
	}
	if !strings.Contains(err.Error(), "is the server at "+url+" running") {
		t.Errorf("error %q does not say what to check", err)
	}
}

func TestGenerateCancel(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Text: "late", Delay: llmtest.Duration(10 * time.Second)}}})
	defer srv.Close()
	g := newTestGenerator(t, srv, nil)
	st := newStore()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := g.Generate(ctx, st, Params{Model: "m", MessageRefs: []cas.Ref{st.put(t, "hi")}}, testKey, nil)
	var pe *ProviderError
	if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &pe) {
		t.Fatalf("got %v; want the context's error, not a provider error", err)
	}

	// Cancelling during the backoff wait ends the call too.
	srv2 := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Status: 500}, {Text: "never"}}})
	defer srv2.Close()
	g2 := newTestGenerator(t, srv2, func(c *Config) { c.Backoff = func(int) time.Duration { return time.Hour } })
	ctx2, cancel2 := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel2()
	_, err = g2.Generate(ctx2, st, Params{Model: "m", MessageRefs: []cas.Ref{st.put(t, "hi")}}, testKey, nil)
	if !errors.Is(err, context.DeadlineExceeded) || len(srv2.Requests()) != 1 {
		t.Fatalf("got %v after %d requests; want the context's error after 1", err, len(srv2.Requests()))
	}
}

func TestGenerateInvalidParamsSendNothing(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Text: "x"}}})
	defer srv.Close()
	g := newTestGenerator(t, srv, nil)
	st := newStore()
	for _, p := range []Params{
		{Model: "m"},
		{MessageRefs: []cas.Ref{st.put(t, "hi")}},
		{Model: "m", MessageRefs: []cas.Ref{cas.Sum([]byte("absent"))}},
		{Model: "m", MessageRefs: []cas.Ref{st.put(t, "hi")}, ToolChoice: &ToolChoice{Kind: ToolChoiceTool, Name: "x"}},
	} {
		if _, err := g.Generate(t.Context(), st, p, testKey, nil); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("%+v: got %v; want ErrInvalidParams", p, err)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent for invalid params", n)
	}
}

func TestGenerateStoreFailure(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Text: "x"}}})
	defer srv.Close()
	g := newTestGenerator(t, srv, nil)
	st := newStore()
	msg := st.put(t, "hi")
	st.failPut = errors.New("disk full")
	_, err := g.Generate(t.Context(), st, Params{Model: "m", MessageRefs: []cas.Ref{msg}}, testKey, nil)
	if err == nil || !strings.Contains(err.Error(), "llm: store request:") || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("got %v; want the store's error", err)
	}
}

func TestGenerateRedactsEvidence(t *testing.T) {
	// A server that echoes the key in a successful body: the stored
	// response evidence is redacted, the model's output is kept exact.
	srv := llmtest.NewServerFunc(func(r llmtest.Request) llmtest.Turn {
		return llmtest.Turn{Text: "your key is " + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")}
	})
	defer srv.Close()
	g := newTestGenerator(t, srv, nil)
	st := newStore()
	r, err := g.Generate(t.Context(), st, Params{Model: "m", MessageRefs: []cas.Ref{st.put(t, "hi")}}, testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp := st.get(t, *r.ResponseRef); strings.Contains(resp, testKey) || !strings.Contains(resp, "your key is [REDACTED]") {
		t.Errorf("response evidence not redacted: %s", resp)
	}
	if r.OutputText != "your key is "+testKey {
		t.Errorf("output text %q", r.OutputText)
	}
}

func TestCost(t *testing.T) {
	p := Price{Input: 1_250_000, CachedInput: 125_000, Output: 10_000_000}
	tests := []struct {
		u     TokenUsage
		micro uint64
	}{
		{TokenUsage{}, 0},
		{TokenUsage{Input: 1}, 1},                 // 1.25 → 1
		{TokenUsage{Input: 2}, 3},                 // 2.5 → 3 (half up)
		{TokenUsage{Input: 10, CacheRead: 20}, 1}, // cached capped at prompt: 10 × 0.125 = 1.25
		{TokenUsage{Output: 1_000_000}, 10_000_000},
		{TokenUsage{Input: 1000, CacheRead: 200, Output: 500, Reasoning: 100}, 6025},
	}
	for _, tc := range tests {
		if got := p.CostMicroUSD(tc.u); got != tc.micro {
			t.Errorf("cost of %+v = %d; want %d", tc.u, got, tc.micro)
		}
	}
	huge := Price{Input: 1 << 63, Output: 1 << 63}
	if got := huge.CostMicroUSD(TokenUsage{Input: 1 << 62, Output: 1 << 62}); got != 1<<64-1 {
		t.Errorf("overflow: got %d; want saturation", got)
	}
	for micro, cents := range map[uint64]uint64{0: 0, 4999: 0, 5000: 1, 14999: 1, 15000: 2, 1<<64 - 1: 1844674407370955} {
		if got := CentsFromMicroUSD(micro); got != cents {
			t.Errorf("CentsFromMicroUSD(%d) = %d; want %d", micro, got, cents)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{http.Header{}, 0, false},
		{http.Header{"Retry-After": {"2"}}, 2 * time.Second, true},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond, true},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond, true},
		{http.Header{"Retry-After": {now.Add(time.Minute).Format(http.TimeFormat)}}, time.Minute, true},
		{http.Header{"Retry-After": {"soon"}}, 0, false},
		{http.Header{"Retry-After": {"-1"}}, 0, false},
	}
	for _, tc := range tests {
		got, ok := retryAfter(tc.h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%v) = %v, %v; want %v, %v", tc.h, got, ok, tc.want, tc.ok)
		}
	}
}

func TestDefaultBackoff(t *testing.T) {
	for attempt, bounds := range map[int][2]time.Duration{
		1:  {250 * time.Millisecond, 500 * time.Millisecond},
		2:  {500 * time.Millisecond, time.Second},
		4:  {2 * time.Second, 4 * time.Second},
		20: {15 * time.Second, 30 * time.Second},
	} {
		for range 50 {
			if d := DefaultBackoff(attempt); d < bounds[0] || d > bounds[1] {
				t.Fatalf("DefaultBackoff(%d) = %s; want within %s", attempt, d, bounds)
			}
		}
	}
}

func TestGenerateCBOR(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Text: "hi", Calls: []llmtest.Call{{Name: "f", Arguments: "{}"}}}}})
	defer srv.Close()
	g := newTestGenerator(t, srv, nil)
	st := newStore()
	params, err := cas.Marshal(map[string]any{
		"provider": "openai-responses", "model": "gpt-5.2", "temperature": nil, "max_tokens": uint64(0),
		"message_refs": []any{st.put(t, "hi").String()}, "tools_ref": nil, "tool_choice": nil, "api_key": nil,
		"response_format": nil, "instructions": nil, "previous_response_id": nil, "reasoning_effort": nil,
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := g.GenerateCBOR(t.Context(), st, params, testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cas.CheckCanonical(b); err != nil {
		t.Error(err)
	}
	var r Receipt
	if err := cas.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.OutputText != "hi" || len(r.ToolCallRefs) != 1 || r.Attempts != 1 {
		t.Errorf("receipt %+v", r)
	}
	if _, err := g.GenerateCBOR(t.Context(), st, []byte{0xa1}, testKey, nil); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("bad CBOR: got %v; want ErrInvalidParams", err)
	}
}

// TestGenerateDeltasAreLive proves that text reaches onDelta while the
// answer is still being written: the server holds back its final event
// until the first delta arrives, so a client that only reported text at
// the end would never finish.
func TestGenerateDeltasAreLive(t *testing.T) {
	for _, prov := range []string{ProviderResponses, ProviderChat} {
		hold := make(chan struct{})
		srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Text: "one two three", Hold: hold}}})
		defer srv.Close()
		g := newTestGenerator(t, srv, func(c *Config) { c.Timeout = 10 * time.Second; c.MaxAttempts = 1 })
		st := newStore()
		var deltas []string
		r, err := g.Generate(t.Context(), st, Params{Provider: prov, Model: "m", MessageRefs: []cas.Ref{st.put(t, "hi")}}, testKey, func(s string) {
			if deltas == nil {
				close(hold)
			}
			deltas = append(deltas, s)
		})
		if err != nil {
			t.Fatalf("%s: %v", prov, err)
		}
		if strings.Join(deltas, "|") != "one |two |three" || r.OutputText != "one two three" {
			t.Errorf("%s: deltas %q, text %q", prov, deltas, r.OutputText)
		}
	}
}

// TestGenerateWaitsForDurable: started before its intent is durable (an
// early call), a generation builds its request and sends nothing until
// the intent is durable; if it never is, nothing is sent at all.
func TestGenerateWaitsForDurable(t *testing.T) {
	for _, m := range modes {
		for _, durable := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/durable=%v", m.name, durable), func(t *testing.T) {
				srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Text: "hello"}}})
				t.Cleanup(srv.Close)
				g := newTestGenerator(t, srv, nil)
				st := newStore()
				p := Params{Provider: m.provider, Model: "gpt-5.2", MessageRefs: []cas.Ref{st.put(t, "hi")}}
				var onDelta func(string)
				if m.stream {
					onDelta = func(string) {}
				}
				ctx, committed := effects.EarlyContext(t.Context())
				done := make(chan error, 1)
				go func() {
					_, err := g.Generate(ctx, st, p, testKey, onDelta)
					done <- err
				}()
				time.Sleep(50 * time.Millisecond) // time enough to send, were it allowed
				if n := len(srv.Requests()); n != 0 {
					t.Fatalf("%d requests sent before the intent was durable", n)
				}
				committed(durable)
				err := <-done
				if n := len(srv.Requests()); durable && (err != nil || n != 1) {
					t.Errorf("durable: Generate = %v with %d requests; want nil, 1", err, n)
				} else if !durable && (err == nil || n != 0) {
					t.Errorf("not durable: Generate = %v with %d requests; want an error, 0", err, n)
				}
			})
		}
	}
}

// requestEvidence rebuilds the request body a receipt's request_ref names
// (a chunked blob).
func requestEvidence(t *testing.T, st *memStore, ref cas.Ref) string {
	t.Helper()
	b, err := chunked.Get(t.Context(), st, ref)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
