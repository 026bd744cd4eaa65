package llm

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/cas"
)

// TestParseAnthropicBody: Anthropic's answers, their stop reasons and
// usage, as the receipt has them.
func TestParseAnthropicBody(t *testing.T) {
	msg := func(content, stop, extra string) string {
		return `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-5","content":[` + content + `],"stop_reason":"` + stop + `"` + extra +
			`,"usage":{"input_tokens":10,"cache_creation_input_tokens":20,"cache_read_input_tokens":100,"output_tokens":7,"output_tokens_details":{"thinking_tokens":3}}}`
	}
	thinking := `{"type":"thinking","thinking":"hmm","signature":"EqSIG"}`
	call := `{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}}`
	for _, tc := range []struct {
		name, body       string
		finish, text     string
		calls            int
		kind             ErrorKind
		retryable        bool
		outputHas, extra string
	}{
		{name: "tool use", body: msg(thinking+`,{"type":"text","text":"Calling."},`+call, "tool_use", ""), finish: "tool_calls", text: "Calling.", calls: 1,
			outputHas: `"anthropic":{"type":"thinking","signature":"EqSIG"}`},
		{name: "an answer", body: msg(`{"type":"text","text":"Hello"},{"type":"text","text":" there"}`, "end_turn", ""), finish: "stop", text: "Hello there"},
		{name: "text around a server tool", body: msg(`{"type":"text","text":"Searching."},{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},{"type":"text","text":"Found."}`, "end_turn", ""),
			finish: "stop", text: "Searching.\nFound."},
		{name: "cut by max_tokens", body: msg(call, "max_tokens", ""), finish: "length", calls: 1, outputHas: `"status":"incomplete"`},
		{name: "past the window", body: msg(`{"type":"text","text":"cut"}`, "model_context_window_exceeded", ""), finish: "length", text: "cut"},
		{name: "refusal", body: msg(`{"type":"text","text":"I"}`, "refusal", `,"stop_details":{"type":"refusal","category":"cyber","explanation":"I can't help with that."}`),
			finish: "refusal", text: "I\nI can't help with that."},
		{name: "pause_turn", body: msg(`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"x"}}`, "pause_turn", ""),
			finish: "incomplete: pause_turn", outputHas: `{"type":"anthropic_block","anthropic":{"type":"server_tool_use"`},
		{name: "redacted thinking", body: msg(`{"type":"redacted_thinking","data":"EmwKAhgB"},{"type":"text","text":"ok"}`, "end_turn", ""), finish: "stop", text: "ok",
			outputHas: `{"type":"reasoning","summary":[],"anthropic":{"type":"redacted_thinking","data":"EmwKAhgB"}}`},
		{name: "overloaded", body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, kind: KindServer, retryable: true},
		{name: "not a message", body: `{"type":"message"}`, kind: KindBadResponse},
		{name: "not JSON", body: `<html>`, kind: KindBadResponse},
		{name: "a tool_use without a name", body: msg(`{"type":"tool_use","id":"t"}`, "tool_use", ""), kind: KindBadResponse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parseAnthropicBody([]byte(tc.body))
			if tc.kind != "" {
				var pe *parseError
				if !errors.As(err, &pe) || pe.kind != tc.kind || pe.retryable != tc.retryable {
					t.Fatalf("err %v; want a %s error (retryable %v)", err, tc.kind, tc.retryable)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.finish != tc.finish || r.text != tc.text || len(r.calls) != tc.calls {
				t.Errorf("finish %q text %q calls %d; want %q %q %d", r.finish, r.text, len(r.calls), tc.finish, tc.text, tc.calls)
			}
			if tc.outputHas != "" && !strings.Contains(string(r.output), tc.outputHas) {
				t.Errorf("output %s lacks %s", r.output, tc.outputHas)
			}
			want := TokenUsage{Input: 130, Output: 7, CacheRead: 100, CacheWrite: 20, Reasoning: 3}
			if !r.usageKnown || r.usage != want {
				t.Errorf("usage %+v; want %+v", r.usage, want)
			}
		})
	}
}

// TestParseGeminiBody: Gemini's answers, their finish reasons, safety
// blocks and usage, as the receipt has them.
func TestParseGeminiBody(t *testing.T) {
	resp := func(parts, finish, extra string) string {
		return `{"candidates":[{"content":{"role":"model","parts":[` + parts + `]},"finishReason":"` + finish + `"` + extra + `,"index":0}],` +
			`"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":10,"thoughtsTokenCount":20,"cachedContentTokenCount":40,"toolUsePromptTokenCount":5},` +
			`"modelVersion":"gemini-3.5-flash","responseId":"r1"}`
	}
	for _, tc := range []struct {
		name, body   string
		finish, text string
		calls        []string // call ids
		kind         ErrorKind
		retryable    bool
		outputHas    string
	}{
		{name: "signed text", body: resp(`{"text":"Hi","thoughtSignature":"CqSIG"}`, "STOP", ""), finish: "stop", text: "Hi",
			outputHas: `"gemini":{"thoughtSignature":"CqSIG"}`},
		{name: "thought, calls with and without ids", body: resp(`{"text":"thinking","thought":true},{"functionCall":{"name":"f","args":{"a":1}},"thoughtSignature":"CqA"},{"functionCall":{"id":"fc9","name":"g","args":{}}}`, "STOP", ""),
			finish: "tool_calls", calls: []string{"call_r1_1", "fc9"}, outputHas: `{"type":"reasoning","summary":[{"type":"summary_text","text":"thinking"}],"gemini":{}}`},
		{name: "streamed text pieces, signed last", body: resp(`{"text":"He"},{"text":"llo"},{"text":"","thoughtSignature":"CqZ"}`, "STOP", ""), finish: "stop", text: "Hello",
			outputHas: `"content":[{"type":"output_text","text":"Hello","annotations":[]}],"gemini":{"thoughtSignature":"CqZ"}`},
		{name: "text after a signed piece runs on", body: resp(`{"text":"Hello ","thoughtSignature":"CqZ"},{"text":"world"}`, "STOP", ""), finish: "stop", text: "Hello world"},
		{name: "text after a call is a line apart", body: resp(`{"text":"Calling."},{"functionCall":{"name":"f","args":{}}},{"text":"Called."}`, "STOP", ""),
			finish: "tool_calls", text: "Calling.\nCalled.", calls: []string{"call_r1_1"}},
		{name: "max tokens", body: resp(`{"text":"cut"}`, "MAX_TOKENS", ""), finish: "length", text: "cut"},
		{name: "safety", body: resp(`{"text":"so"}`, "SAFETY", `,"finishMessage":"blocked for safety"`), finish: "content_filter", text: "so\nthe answer was blocked (SAFETY): blocked for safety"},
		{name: "recitation", body: resp(``, "RECITATION", ""), finish: "content_filter", text: "the answer was blocked (RECITATION)"},
		{name: "malformed call", body: resp(``, "MALFORMED_FUNCTION_CALL", `,"finishMessage":"Malformed function call: print(x"`), kind: KindModelFailure, retryable: true},
		{name: "prompt blocked", body: `{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":100,"cachedContentTokenCount":40,"candidatesTokenCount":10,"thoughtsTokenCount":20,"toolUsePromptTokenCount":5}}`,
			finish: "content_filter", text: "the prompt was blocked (PROHIBITED_CONTENT)"},
		{name: "no candidate", body: `{"usageMetadata":{}}`, kind: KindBadResponse},
		{name: "an error chunk", body: `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`, kind: KindServer, retryable: true},
		{name: "a call without a name", body: resp(`{"functionCall":{"args":{}}}`, "STOP", ""), kind: KindBadResponse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parseGeminiBody([]byte(tc.body))
			if tc.kind != "" {
				var pe *parseError
				if !errors.As(err, &pe) || pe.kind != tc.kind || pe.retryable != tc.retryable {
					t.Fatalf("err %v; want a %s error (retryable %v)", err, tc.kind, tc.retryable)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.finish != tc.finish || r.text != tc.text {
				t.Errorf("finish %q text %q; want %q %q", r.finish, r.text, tc.finish, tc.text)
			}
			var ids []string
			for _, c := range r.calls {
				ids = append(ids, c.CallID)
			}
			if strings.Join(ids, ",") != strings.Join(tc.calls, ",") {
				t.Errorf("calls %v; want %v", ids, tc.calls)
			}
			if tc.outputHas != "" && !strings.Contains(string(r.output), tc.outputHas) {
				t.Errorf("output %s lacks %s", r.output, tc.outputHas)
			}
			want := TokenUsage{Input: 105, Output: 30, CacheRead: 40, Reasoning: 20}
			if !r.usageKnown || r.usage != want {
				t.Errorf("usage %+v; want %+v", r.usage, want)
			}
		})
	}
}

// TestNativeErrors: each native API's failures, by class: what is tried
// again (Anthropic's 529 overloaded_error and an overloaded stream, a 429
// with its rate-limit headers; Gemini's 503 and 429 with its RetryInfo),
// what is not (401, 400), and what the error says.
func TestNativeErrors(t *testing.T) {
	ok := llmtest.Turn{Text: "fine"}
	for _, tc := range []struct {
		name, provider string
		stream         bool
		turns          []llmtest.Turn
		attempts       int // 0: the call fails
		kind           ErrorKind
		says           string
	}{
		{name: "anthropic 529", provider: ProviderAnthropic, turns: []llmtest.Turn{{Status: 529}, ok}, attempts: 2},
		{name: "anthropic overloaded stream", provider: ProviderAnthropic, stream: true, turns: []llmtest.Turn{{StreamError: &llmtest.ErrorBody{Type: "overloaded_error"}}, ok}, attempts: 2},
		{name: "anthropic 429", provider: ProviderAnthropic, turns: []llmtest.Turn{{Status: 429, Header: map[string]string{"retry-after": "0"}}, {Status: 429}},
			kind: KindRateLimited, says: "requests-remaining=0"},
		{name: "anthropic 401", provider: ProviderAnthropic, turns: []llmtest.Turn{{Status: 401}}, kind: KindAuth, says: "ANTHROPIC_API_KEY"},
		{name: "anthropic 400", provider: ProviderAnthropic, turns: []llmtest.Turn{{Status: 400, Error: &llmtest.ErrorBody{Message: "messages: bad"}}}, kind: KindBadRequest, says: "(HTTP 400, invalid_request_error): messages: bad"},
		{name: "gemini 503", provider: ProviderGemini, turns: []llmtest.Turn{{Status: 503}, ok}, attempts: 2},
		{name: "gemini 429 retry info", provider: ProviderGemini, turns: []llmtest.Turn{{Status: 429}, ok}, attempts: 2},
		{name: "gemini overloaded stream", provider: ProviderGemini, stream: true, turns: []llmtest.Turn{{StreamError: &llmtest.ErrorBody{}}, ok}, attempts: 2},
		{name: "gemini 400", provider: ProviderGemini, turns: []llmtest.Turn{{Status: 400}}, kind: KindBadRequest, says: "(HTTP 400, INVALID_ARGUMENT)"},
		{name: "gemini 403", provider: ProviderGemini, turns: []llmtest.Turn{{Status: 403}}, kind: KindAuth, says: "GOOGLE_API_KEY or GEMINI_API_KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(llmtest.Script{Turns: tc.turns})
			defer srv.Close()
			g := newTestGenerator(t, srv, func(c *Config) {
				c.Provider, c.BaseURL, c.MaxAttempts = tc.provider, srv.Root, 2
				c.Backoff = func(int) time.Duration { return time.Millisecond }
			})
			st := newStore()
			model := map[string]string{ProviderAnthropic: "claude-sonnet-5", ProviderGemini: "gemini-3.5-flash"}[tc.provider]
			var onDelta func(string)
			if tc.stream {
				onDelta = func(string) {}
			}
			r, err := g.Generate(t.Context(), st, Params{Model: model, MessageRefs: []cas.Ref{st.put(t, "hi")}}, testKey, onDelta)
			if tc.attempts > 0 {
				if err != nil || r.Attempts != uint64(tc.attempts) || r.OutputText != "fine" {
					t.Fatalf("err %v, %d attempts, %q; want %d attempts and the answer", err, r.Attempts, r.OutputText, tc.attempts)
				}
				var failed []FailedAttempt
				if err := cas.GetNode(t.Context(), st, *r.FailedAttemptsRef, &failed); err != nil || len(failed) != tc.attempts-1 {
					t.Fatalf("failed attempts %+v, %v", failed, err)
				}
				return
			}
			var pe *ProviderError
			if !errors.As(err, &pe) || pe.Kind != tc.kind || !strings.Contains(pe.Error(), tc.says) {
				t.Fatalf("err %v; want a %s error saying %q", err, tc.kind, tc.says)
			}
			if strings.Contains(pe.Error(), testKey) {
				t.Errorf("the error holds the key: %v", pe)
			}
		})
	}
}

// TestAnthropicThinkingRules: budgeted thinking is not asked for when the
// API would refuse it — the assistant message the request answers made
// by a model that did not think (another provider's calls), or a tool
// choice that forces a call — and llmtest, which refuses as Anthropic
// does, takes each request.
func TestAnthropicThinkingRules(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Text: "a"}, {Text: "b"}, {Text: "c"}}})
	defer srv.Close()
	g := nativeGenerator(t, srv, ProviderAnthropic)
	st := newStore()
	tools := st.put(t, `[{"type":"function","name":"f","parameters":{"type":"object"}}]`)
	user := st.put(t, "hi")
	// An OpenAI Responses turn: encrypted reasoning (not Anthropic's: not
	// sent) and a call.
	openai := st.put(t, `[{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAA"},{"type":"function_call","call_id":"call_1","name":"f","arguments":"{}"}]`)
	out := st.put(t, `{"type":"function_call_output","call_id":"call_1","output":"done"}`)
	p := Params{Model: "claude-sonnet-4-5", MaxTokens: 20000, ToolsRef: &tools, ReasoningEffort: ptr("high"), MessageRefs: []cas.Ref{user, openai, out}}
	if _, err := g.Generate(t.Context(), st, p, testKey, nil); err != nil {
		t.Fatal(err)
	}
	p.MessageRefs = []cas.Ref{user}
	p.ToolChoice = &ToolChoice{Kind: ToolChoiceRequired}
	if _, err := g.Generate(t.Context(), st, p, testKey, nil); err != nil {
		t.Fatal(err)
	}
	p.ToolChoice = nil
	if _, err := g.Generate(t.Context(), st, p, testKey, nil); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	for i, want := range []bool{false, false, true} {
		var body map[string]json.RawMessage
		_ = json.Unmarshal(reqs[i].Body, &body)
		if got := body["thinking"] != nil; got != want {
			t.Errorf("request %d: thinking sent %v; want %v:\n%s", i, got, want, reqs[i].Body)
		}
	}
	if strings.Contains(string(reqs[0].Body), "gAAAA") {
		t.Errorf("OpenAI's encrypted reasoning went to Anthropic:\n%s", reqs[0].Body)
	}
}

// TestGeminiForeignCalls: function calls another provider made go to
// Gemini 3 with Google's skip signature, which llmtest (as Gemini 3)
// takes; without one it would refuse them.
func TestGeminiForeignCalls(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Text: "ok"}}})
	defer srv.Close()
	g := nativeGenerator(t, srv, ProviderGemini)
	st := newStore()
	calls := st.put(t, `[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Two calls."}]},{"type":"function_call","call_id":"call_1","name":"f","arguments":"{\"x\":1}"},{"type":"function_call","call_id":"call_2","name":"g","arguments":"not json"}]`)
	outs := st.put(t, `[{"type":"function_call_output","call_id":"call_1","output":"1"},{"type":"function_call_output","call_id":"call_2","output":"bad arguments"}]`)
	p := Params{Model: "gemini-3.5-flash", MessageRefs: []cas.Ref{st.put(t, "hi"), calls, outs}}
	if _, err := g.Generate(t.Context(), st, p, testKey, nil); err != nil {
		t.Fatal(err)
	}
	body := string(srv.Requests()[0].Body)
	if strings.Count(body, `"thoughtSignature":"`+geminiSkipSignature+`"`) != 2 {
		t.Errorf("the calls lack the skip signature:\n%s", body)
	}
	if !strings.Contains(body, `{"functionResponse":{"id":"call_2","name":"g","response":{"output":"bad arguments"}}}`) {
		t.Errorf("the output does not name its function:\n%s", body)
	}
	// An output whose call the transcript does not hold is a clear error.
	p.MessageRefs = []cas.Ref{st.put(t, "hi"), outs}
	if _, err := g.Generate(t.Context(), st, p, testKey, nil); !errors.Is(err, ErrInvalidParams) || !strings.Contains(err.Error(), "follows no function_call") {
		t.Errorf("err %v", err)
	}
}

// fuzzParsed checks what a native parser made of body: an error is a
// *parseError; an answer keeps the invariants of every answer, and its
// output reads back to the same items, and is sent back to the provider
// (encoded by its dialect) without an error.
func fuzzParsed(t *testing.T, p parsed, err error, d nativeDialect) {
	t.Helper()
	if err != nil {
		var pe *parseError
		if !errors.As(err, &pe) {
			t.Fatalf("error %v is not a *parseError", err)
		}
		return
	}
	checkParsedInvariants(t, p)
	var again parsed
	if err := parseOutputItems(p.output, &again); err != nil {
		t.Fatalf("converted output does not parse: %v\n%s", err, p.output)
	}
	its, err := parseMessageBlob(cas.Sum(p.output), p.output)
	if err != nil {
		t.Fatalf("the output is not a message blob: %v\n%s", err, p.output)
	}
	ns := &nativeSession{}
	for _, it := range its {
		if _, err := d.encode(ns, it); err != nil {
			t.Fatalf("the output does not go back: %v\n%s", err, p.output)
		}
	}
}

func FuzzParseAnthropicBody(f *testing.F) {
	for _, s := range []string{
		`{"id":"m","type":"message","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"a"},{"type":"tool_use","id":"t1","name":"f","input":{"a":[1,2]}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":2}}`,
		`{"type":"message","content":[{"type":"redacted_thinking","data":"d"},{"type":"server_tool_use","id":"s","name":"web_search","input":{}}],"stop_reason":"pause_turn"}`,
		`{"type":"message","content":[],"stop_reason":"refusal","stop_details":{"explanation":"no"}}`,
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, `{"content":[1]}`, `[`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := parseAnthropicBody(body)
		fuzzParsed(t, p, err, anthropicDialect{})
	})
}

func FuzzParseGeminiBody(f *testing.F) {
	for _, s := range []string{
		`{"candidates":[{"content":{"parts":[{"text":"t","thought":true},{"functionCall":{"name":"f","args":{"a":1}},"thoughtSignature":"Cq"},{"text":"a"},{"text":"","thoughtSignature":"Z"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1},"responseId":"r"}`,
		`{"candidates":[{"content":{"parts":[{"executableCode":{"code":"x"}}]},"finishReason":"SAFETY","finishMessage":"m"}]}`,
		`{"candidates":[{"finishReason":"MALFORMED_FUNCTION_CALL"}]}`, `{"promptFeedback":{"blockReason":"SAFETY"}}`,
		`{"error":{"code":503,"status":"UNAVAILABLE","message":"m"}}`, `{"candidates":[{"content":{"parts":[1]}}]}`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := parseGeminiBody(body)
		fuzzParsed(t, p, err, geminiDialect{})
	})
}

// FuzzNativeStreams folds two events into each native stream: it never
// panics, and an assembled answer parses or fails as a parseError.
func FuzzNativeStreams(f *testing.F) {
	f.Add("message_start", []byte(`{"type":"message_start","message":{"id":"m","content":[],"usage":{"input_tokens":1}}}`),
		[]byte(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}`))
	f.Add("content_block_delta", []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a"}}`),
		[]byte(`{"type":"message_stop"}`))
	f.Add("", []byte(`{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}`), []byte(`{"candidates":[{"content":{"parts":[{"text":"","thoughtSignature":"s"}]},"finishReason":"STOP"}]}`))
	f.Fuzz(func(t *testing.T, event string, a, b []byte) {
		for _, acc := range []streamAccumulator{&anthropicStream{}, &geminiStream{}} {
			if _, err := acc.add(event, a); err != nil {
				continue
			}
			if _, err := acc.add(event, b); err != nil || !acc.done() {
				continue
			}
			body, err := acc.assemble()
			if err != nil {
				continue
			}
			var perr error
			switch acc.(type) {
			case *anthropicStream:
				_, perr = parseAnthropicBody(body)
			default:
				_, perr = parseGeminiBody(body)
			}
			var pe *parseError
			if perr != nil && !errors.As(perr, &pe) {
				t.Fatalf("assembled %s: %v", body, perr)
			}
		}
	})
}
