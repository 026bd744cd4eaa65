package llm

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/cas"
)

// refResponse is the reference response with one function call (§1.4).
const refResponse = `{"id":"resp_001","object":"response","created_at":1760000000,"status":"completed","model":"gpt-5.2",
 "output":[
   {"type":"reasoning","id":"rs_001","summary":[],"encrypted_content":"gAAAA-opaque"},
   {"type":"function_call","id":"fc_001","call_id":"call_abc123","name":"workspace_read",
    "arguments":"{\"path\":\"README.md\"}","status":"completed"}],
 "parallel_tool_calls":true,"tool_choice":"auto","tools":[],
 "usage":{"input_tokens":120,"input_tokens_details":{"cached_tokens":0},
          "output_tokens":40,"output_tokens_details":{"reasoning_tokens":24},"total_tokens":160}}`

// refChatResponse is the reference chat reply with two calls (§1.8).
const refChatResponse = `{"id":"chatcmpl-1","object":"chat.completion","created":1760000000,"model":"qwen2.5:0.5b",
 "choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,
   "tool_calls":[{"id":"call_1","type":"function","function":{"name":"workspace_read","arguments":"{\"path\":\"README.md\"}"}},
                 {"id":"call_2","type":"function","function":{"name":"bash","arguments":"{\"script\":\"ls\"}"}}]}}],
 "usage":{"prompt_tokens":50,"completion_tokens":20,"total_tokens":70}}`

func TestParseResponsesBody(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		want   parsed // output is checked separately
		output string
		kind   ErrorKind // for an error
		err    string
	}{{
		name: "reference: one call",
		body: refResponse,
		want: parsed{id: "resp_001", model: "gpt-5.2", finish: "tool_calls",
			usage: TokenUsage{Input: 120, Output: 40, Reasoning: 24}, usageKnown: true,
			calls: []ToolCall{{CallID: "call_abc123", Name: "workspace_read", ArgumentsJSON: `{"path":"README.md"}`}},
			items: []OutputItem{{Reasoning: &ReasoningItem{Summary: []string{}}},
				{ToolCall: &ToolCall{CallID: "call_abc123", Name: "workspace_read", ArgumentsJSON: `{"path":"README.md"}`}}}},
		output: `[
   {"type":"reasoning","id":"rs_001","summary":[],"encrypted_content":"gAAAA-opaque"},
   {"type":"function_call","id":"fc_001","call_id":"call_abc123","name":"workspace_read",
    "arguments":"{\"path\":\"README.md\"}","status":"completed"}]`,
	}, {
		name: "text, refusal, summary, cached tokens",
		body: `{"id":"resp_2","model":"m","status":"completed","output":[
			{"type":"reasoning","summary":[{"type":"summary_text","text":"thought"}]},
			{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello"},{"type":"refusal","refusal":", no."}]},
			{"type":"message","content":"raw"}],
			"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":4},"output_tokens":3}}`,
		want: parsed{id: "resp_2", model: "m", finish: "refusal", refused: true, text: "Hello, no.raw",
			usage: TokenUsage{Input: 10, Output: 3, CacheRead: 4}, usageKnown: true,
			items: []OutputItem{{Reasoning: &ReasoningItem{Summary: []string{"thought"}}},
				{Message: &MessageItem{Role: "assistant", Text: "Hello, no."}}, {Message: &MessageItem{Role: "assistant", Text: "raw"}}}},
	}, {
		name: "malformed arguments kept as is; unknown types kept raw",
		body: `{"id":"r","output":[{"type":"function_call","call_id":"c1","name":"nope","arguments":"{\"a\": tru"},
			{"type":"function_call","call_id":"c2","name":"obj","arguments":{"a":1}},
			{"type":"web_search_call","id":"ws_1","status":"completed"}]}`,
		want: parsed{id: "r", finish: "tool_calls",
			calls: []ToolCall{{CallID: "c1", Name: "nope", ArgumentsJSON: `{"a": tru`}, {CallID: "c2", Name: "obj", ArgumentsJSON: `{"a":1}`}},
			items: []OutputItem{{ToolCall: &ToolCall{CallID: "c1", Name: "nope", ArgumentsJSON: `{"a": tru`}},
				{ToolCall: &ToolCall{CallID: "c2", Name: "obj", ArgumentsJSON: `{"a":1}`}},
				{Other: &OtherItem{Type: "web_search_call", JSON: `{"type":"web_search_call","id":"ws_1","status":"completed"}`}}}},
	}, {
		name: "incomplete",
		body: `{"id":"r","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"message","content":[{"type":"output_text","text":"Hal"}]}]}`,
		want: parsed{id: "r", finish: "length", text: "Hal", items: []OutputItem{{Message: &MessageItem{Role: "assistant", Text: "Hal"}}}},
	}, {
		name: "incomplete: content filter",
		body: `{"status":"incomplete","incomplete_details":{"reason":"content_filter"},"output":[]}`,
		want: parsed{finish: "content_filter", items: []OutputItem{}},
	},
		{name: "failed", body: `{"id":"r","status":"failed","error":{"code":"server_error","message":"boom"},"output":[]}`, kind: KindFailed, err: "boom"},
		{name: "cancelled", body: `{"status":"cancelled","output":[]}`, kind: KindFailed, err: "cancelled"},
		{name: "in progress", body: `{"status":"in_progress","output":[]}`, kind: KindBadResponse, err: "not final"},
		{name: "HTML", body: `<html>502 Bad Gateway</html>`, kind: KindBadResponse, err: "not a JSON object: <html>502 Bad Gateway</html>"},
		{name: "empty", body: ``, kind: KindBadResponse, err: "not a JSON object"},
		{name: "array", body: `[]`, kind: KindBadResponse, err: "not a JSON object"},
		{name: "truncated", body: `{"id":"r","output":[`, kind: KindBadResponse, err: "not a Responses API response object"},
		{name: "no output", body: `{"id":"r"}`, kind: KindBadResponse, err: `no "output" array`},
		{name: "output not array", body: `{"output":{}}`, kind: KindBadResponse, err: `no "output" array`},
		{name: "item not object", body: `{"output":[1]}`, kind: KindBadResponse, err: "output[0] is not an object"},
		{name: "call without id", body: `{"output":[{"type":"function_call","name":"f","arguments":"{}"}]}`, kind: KindBadResponse, err: "has no call_id"},
		{name: "call without name", body: `{"output":[{"type":"function_call","call_id":"c"}]}`, kind: KindBadResponse, err: "has no name"},
		{name: "bad content", body: `{"output":[{"type":"message","content":5}]}`, kind: KindBadResponse, err: "neither text nor a list"},
		{name: "negative usage", body: `{"output":[],"usage":{"input_tokens":-1}}`, kind: KindBadResponse, err: "not a Responses API response object"},
		{name: "id not a string", body: `{"id":5,"output":[]}`, kind: KindBadResponse, err: "not a Responses API response object"},
		{name: "invalid UTF-8 in a raw item", body: "{\"output\":[{\"type\":\"x\",\"k\":\"\xff\"}]}", kind: KindBadResponse, err: "not valid UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseResponsesBody([]byte(tc.body))
			checkParsed(t, got, err, tc.want, tc.output, tc.kind, tc.err)
		})
	}
}

// checkParsed compares a parse result with the expectation of a table case.
func checkParsed(t *testing.T, got parsed, err error, want parsed, output string, kind ErrorKind, errSubstr string) {
	t.Helper()
	if errSubstr != "" {
		var pe *parseError
		if !errors.As(err, &pe) || pe.kind != kind || !strings.Contains(pe.msg, errSubstr) {
			t.Fatalf("got error %v; want a %s parse error containing %q", err, kind, errSubstr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if output != "" && string(got.output) != output {
		t.Errorf("output\n got %s\nwant %s", got.output, output)
	}
	if !json.Valid(got.output) {
		t.Errorf("output is not JSON: %s", got.output)
	}
	got.output = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parsed\n got %+v\nwant %+v", got, want)
	}
}

func TestParseChatBody(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		want   parsed
		output string
		kind   ErrorKind
		err    string
	}{{
		name: "reference: two calls",
		body: refChatResponse,
		want: parsed{id: "chatcmpl-1", model: "qwen2.5:0.5b", finish: "tool_calls", usage: TokenUsage{Input: 50, Output: 20}, usageKnown: true,
			calls: []ToolCall{{CallID: "call_1", Name: "workspace_read", ArgumentsJSON: `{"path":"README.md"}`}, {CallID: "call_2", Name: "bash", ArgumentsJSON: `{"script":"ls"}`}},
			items: []OutputItem{{ToolCall: &ToolCall{CallID: "call_1", Name: "workspace_read", ArgumentsJSON: `{"path":"README.md"}`}},
				{ToolCall: &ToolCall{CallID: "call_2", Name: "bash", ArgumentsJSON: `{"script":"ls"}`}}}},
		output: `[{"type":"function_call","call_id":"call_1","name":"workspace_read","arguments":"{\"path\":\"README.md\"}","status":"completed"},` +
			`{"type":"function_call","call_id":"call_2","name":"bash","arguments":"{\"script\":\"ls\"}","status":"completed"}]`,
	}, {
		name: "text and refusal, usage details",
		body: `{"id":"c","model":"m","choices":[{"finish_reason":"stop","message":{"role":"assistant","content":"<ok> & fine","refusal":"no"}}],
			"usage":{"prompt_tokens":9,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":2},"completion_tokens_details":{"reasoning_tokens":1}}}`,
		want: parsed{id: "c", model: "m", finish: "refusal", refused: true, text: "<ok> & fineno", usage: TokenUsage{Input: 9, Output: 5, CacheRead: 2, Reasoning: 1}, usageKnown: true,
			items: []OutputItem{{Message: &MessageItem{Role: "assistant", Text: "<ok> & fineno"}}}},
		output: `[{"type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"<ok> & fine","annotations":[]},{"type":"refusal","refusal":"no"}]}]`,
	}, {
		name: "calls without ids, finish stop",
		body: `{"id":"chat.1","choices":[{"finish_reason":"stop","message":{"content":"","tool_calls":[{"function":{"name":"f","arguments":"{"}},{"function":{"name":"g","arguments":{"x":1}}}]}}]}`,
		want: parsed{id: "chat.1", finish: "tool_calls",
			calls: []ToolCall{{CallID: "call_chat1_0", Name: "f", ArgumentsJSON: "{"}, {CallID: "call_chat1_1", Name: "g", ArgumentsJSON: `{"x":1}`}},
			items: []OutputItem{{ToolCall: &ToolCall{CallID: "call_chat1_0", Name: "f", ArgumentsJSON: "{"}}, {ToolCall: &ToolCall{CallID: "call_chat1_1", Name: "g", ArgumentsJSON: `{"x":1}`}}}},
	}, {
		name:   "length",
		body:   `{"choices":[{"finish_reason":"length","message":{"content":[{"type":"text","text":"par"}]}}]}`,
		want:   parsed{finish: "length", text: "par", items: []OutputItem{{Message: &MessageItem{Role: "assistant", Text: "par"}}}},
		output: `[{"type":"message","role":"assistant","status":"incomplete","content":[{"type":"output_text","text":"par","annotations":[]}]}]`,
	}, {
		name: "a tool call cut by the token limit",
		body: `{"id":"c","choices":[{"finish_reason":"length","message":{"content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"path\": \"RE"}}]}}]}`,
		want: parsed{id: "c", finish: "length",
			calls: []ToolCall{{CallID: "call_1", Name: "f", ArgumentsJSON: `{"path": "RE`}},
			items: []OutputItem{{ToolCall: &ToolCall{CallID: "call_1", Name: "f", ArgumentsJSON: `{"path": "RE`}}}},
		output: `[{"type":"function_call","call_id":"call_1","name":"f","arguments":"{\"path\": \"RE","status":"incomplete"}]`,
	}, {
		name: "reasoning_content (DeepSeek)",
		body: `{"id":"d","choices":[{"finish_reason":"stop","message":{"content":"4","reasoning_content":"2+2 is 4."}}],"usage":{"prompt_tokens":5,"completion_tokens":7}}`,
		want: parsed{id: "d", finish: "stop", text: "4", usage: TokenUsage{Input: 5, Output: 7}, usageKnown: true,
			items: []OutputItem{{Reasoning: &ReasoningItem{Summary: []string{}, Text: ptr("2+2 is 4.")}}, {Message: &MessageItem{Role: "assistant", Text: "4"}}}},
		output: `[{"type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"2+2 is 4.","annotations":null}],"chat_fields":{"reasoning_content":"2+2 is 4."}},{"type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"4","annotations":[]}]}]`,
	}, {
		// OpenRouter: reasoning text and the provider's reasoning
		// details (an encrypted item), kept as they arrived; its own cost.
		name: "reasoning and reasoning_details (OpenRouter)",
		body: `{"id":"gen-1","model":"google/gemini-3-pro-preview","choices":[{"finish_reason":"tool_calls","message":{"content":null,` +
			`"reasoning":"Look it up.","reasoning_details":[{"type":"reasoning.text","text":"Look it up.","format":"google-gemini-v1","index":0},` +
			`{"type":"reasoning.encrypted","data":"c2ln","id":"tool_f_1","format":"google-gemini-v1","index":0}],` +
			`"tool_calls":[{"id":"tool_f_1","type":"function","function":{"name":"f","arguments":"{}"}}]}}],` +
			`"usage":{"prompt_tokens":10,"completion_tokens":30,"total_tokens":40,"completion_tokens_details":{"reasoning_tokens":20},"cost":0.000123}}`,
		want: parsed{id: "gen-1", model: "google/gemini-3-pro-preview", finish: "tool_calls", usage: TokenUsage{Input: 10, Output: 30, Reasoning: 20}, usageKnown: true,
			cost: 123, costField: "usage.cost", costKnown: true,
			calls: []ToolCall{{CallID: "tool_f_1", Name: "f", ArgumentsJSON: "{}"}},
			items: []OutputItem{{Reasoning: &ReasoningItem{Summary: []string{}, Text: ptr("Look it up.")}}, {ToolCall: &ToolCall{CallID: "tool_f_1", Name: "f", ArgumentsJSON: "{}"}}}},
		output: `[{"type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"Look it up.","annotations":null}],"chat_fields":{"reasoning":"Look it up.","reasoning_details":[{"type":"reasoning.text","text":"Look it up.","format":"google-gemini-v1","index":0},{"type":"reasoning.encrypted","data":"c2ln","id":"tool_f_1","format":"google-gemini-v1","index":0}]}},` +
			`{"type":"function_call","call_id":"tool_f_1","name":"f","arguments":"{}","status":"completed"}]`,
	}, {
		// Gemini's OpenAI-compatible endpoint: the thought signature
		// rides on the tool call, and goes back with it.
		name: "extra_content (Gemini)",
		body: `{"id":"g","choices":[{"finish_reason":"tool_calls","message":{"role":"assistant","tool_calls":[{"id":"c1","type":"function",` +
			`"function":{"name":"f","arguments":"{}"},"extra_content":{"google":{"thought_signature":"c2ln"}}}]}}]}`,
		want: parsed{id: "g", finish: "tool_calls", calls: []ToolCall{{CallID: "c1", Name: "f", ArgumentsJSON: "{}"}},
			items: []OutputItem{{ToolCall: &ToolCall{CallID: "c1", Name: "f", ArgumentsJSON: "{}"}}}},
		output: `[{"type":"function_call","call_id":"c1","name":"f","arguments":"{}","status":"completed","extra_content":{"google":{"thought_signature":"c2ln"}}}]`,
	}, {
		// xAI: reasoning tokens counted outside completion_tokens (the
		// total says so), and its cost in ticks of 10^-10 USD.
		name: "reasoning outside completion_tokens, cost in ticks (xAI)",
		body: `{"id":"x","model":"grok-4","choices":[{"finish_reason":"stop","message":{"content":"hi"}}],` +
			`"usage":{"prompt_tokens":700,"completion_tokens":10,"total_tokens":840,"prompt_tokens_details":{"cached_tokens":600},` +
			`"completion_tokens_details":{"reasoning_tokens":130},"cost_in_usd_ticks":52500000}}`,
		want: parsed{id: "x", model: "grok-4", finish: "stop", text: "hi", usage: TokenUsage{Input: 700, Output: 140, CacheRead: 600, Reasoning: 130}, usageKnown: true,
			cost: 5250, costField: "usage.cost_in_usd_ticks", costKnown: true,
			items: []OutputItem{{Message: &MessageItem{Role: "assistant", Text: "hi"}}}},
		output: `[{"type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"hi","annotations":[]}]}]`,
	}, {
		// DeepSeek: cache hits as prompt_cache_hit_tokens.
		name: "prompt_cache_hit_tokens (DeepSeek)",
		body: `{"id":"d2","choices":[{"finish_reason":"stop","message":{"content":"ok"}}],"usage":{"prompt_tokens":100,"completion_tokens":2,"total_tokens":102,"prompt_cache_hit_tokens":64,"prompt_cache_miss_tokens":36}}`,
		want: parsed{id: "d2", finish: "stop", text: "ok", usage: TokenUsage{Input: 100, Output: 2, CacheRead: 64}, usageKnown: true,
			items: []OutputItem{{Message: &MessageItem{Role: "assistant", Text: "ok"}}}},
		output: `[{"type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"ok","annotations":[]}]}]`,
	}, {
		name:   "empty message",
		body:   `{"choices":[{"message":{}}]}`,
		want:   parsed{finish: "stop", items: []OutputItem{}},
		output: `[]`,
	},
		{name: "error with status 200", body: `{"error":{"message":"model is loading","code":503}}`, kind: KindFailed, err: "model is loading"},
		{name: "no choices", body: `{"id":"c"}`, kind: KindBadResponse, err: `no "choices"`},
		{name: "empty choices", body: `{"choices":[]}`, kind: KindBadResponse, err: "no choice with a message"},
		{name: "choice without message", body: `{"choices":[{"delta":{}}]}`, kind: KindBadResponse, err: "no choice with a message"},
		{name: "call without name", body: `{"choices":[{"message":{"tool_calls":[{"id":"c","function":{}}]}}]}`, kind: KindBadResponse, err: "has no function name"},
		{name: "HTML", body: `<!doctype html>`, kind: KindBadResponse, err: "not a JSON object"},
		{name: "wrong types", body: `{"choices":"x"}`, kind: KindBadResponse, err: "not a chat.completion object"},
		{name: "invalid UTF-8", body: "{\"choices\":[{\"message\":{\"content\":\"\xff\"}}]}", kind: KindBadResponse, err: "not valid UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseChatBody([]byte(tc.body))
			checkParsed(t, got, err, tc.want, tc.output, tc.kind, tc.err)
		})
	}
}

func TestChatStreamAssembly(t *testing.T) {
	chunks := []string{
		`{"id":"chatcmpl-9","model":"m","created":7,"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`,
		`{"id":"chatcmpl-9","choices":[{"index":0,"delta":{"content":"Hi "}}]}`,
		`{"id":"chatcmpl-9","choices":[{"index":1,"delta":{"content":"other choice"}}]}`,
		`{"id":"chatcmpl-9","choices":[{"index":0,"delta":{"content":"there"}}]}`,
		`{"id":"chatcmpl-9","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"g","arguments":""}}]}}]}`,
		`{"id":"chatcmpl-9","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","function":{"name":"f","arguments":"{\"x\""}}]}}]}`,
		`{"id":"chatcmpl-9","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}},{"index":1,"function":{"arguments":"{}"}}]}}]}`,
		`{"id":"chatcmpl-9","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"id":"chatcmpl-9","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}`,
	}
	var s chatStream
	var deltas []string
	for i, c := range chunks {
		d, err := s.add([]byte(c))
		if err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		if d != "" {
			deltas = append(deltas, d)
		}
	}
	if !s.done() {
		t.Fatal("stream not done after a finish_reason")
	}
	if strings.Join(deltas, "|") != "Hi |there" {
		t.Errorf("deltas %q", deltas)
	}
	body, err := s.assemble()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"chatcmpl-9","object":"chat.completion","created":7,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi there",` +
		`"tool_calls":[{"id":"call_a","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}},{"id":"call_b","type":"function","function":{"name":"g","arguments":"{}"}}]},` +
		`"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`
	if string(body) != want {
		t.Errorf("assembled\n got %s\nwant %s", body, want)
	}
	if _, err := parseChatBody(body); err != nil {
		t.Errorf("assembled body does not parse: %v", err)
	}
	if _, err := new(chatStream).add([]byte(`{"choices":"x"}`)); err == nil {
		t.Error("a malformed chunk was accepted")
	}
}

func TestErrorFields(t *testing.T) {
	tests := []struct {
		body                  string
		typ, msg, code, param string
	}{
		{`{"error":{"message":"Bad key","type":"invalid_request_error","code":"invalid_api_key","param":null}}`, "invalid_request_error", "Bad key", "invalid_api_key", ""},
		{`{"error":{"message":"x","code":400,"param":"model"}}`, "", "x", "400", "model"},
		{`{"error":"model 'llama9' not found"}`, "", "model 'llama9' not found", "", ""},
		{`{"object":"error","message":"vLLM says no","type":"BadRequestError","code":400}`, "BadRequestError", "vLLM says no", "400", ""},
		{`{"detail":"Not Found"}`, "", "Not Found", "", ""},
		{`<html>`, "", "", "", ""},
		{`{"error":{"message":{"nested":true}}}`, "", "", "", ""},
	}
	for _, tc := range tests {
		typ, msg, code, param := errorFields([]byte(tc.body))
		if typ != tc.typ || msg != tc.msg || code != tc.code || param != tc.param {
			t.Errorf("%s: got %q %q %q %q; want %q %q %q %q", tc.body, typ, msg, code, param, tc.typ, tc.msg, tc.code, tc.param)
		}
	}
}

func TestClipText(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"a\n\n\tb\x00c", 10, "a b c"},
		{"héllo wörld", 5, "héllo…"},
		{"\xff\xfe", 10, "\uFFFD"},
	}
	for _, tc := range tests {
		if got := clipText(tc.in, tc.max); got != tc.want {
			t.Errorf("clipText(%q, %d) = %q; want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

// The fuzz targets feed arbitrary bytes to every parser of provider output
// and of blobs: they must return an error or a result, never panic, and a
// result must be self-consistent.

func FuzzParseResponsesBody(f *testing.F) {
	for _, s := range []string{refResponse, `{"output":[]}`, `{"status":"failed","error":{"code":"x","message":"y"}}`,
		`{"output":[{"type":"message","content":[{"type":"output_text","text":"t"}]}]}`, `<html>`, ``, `{"output":[1]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := parseResponsesBody(body)
		if err != nil {
			var pe *parseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *parseError", err)
			}
			return
		}
		checkParsedInvariants(t, p)
	})
}

func FuzzParseChatBody(f *testing.F) {
	for _, s := range []string{refChatResponse, `{"choices":[{"message":{}}]}`, `{"error":"x"}`,
		`{"choices":[{"message":{"content":"a","tool_calls":[{"function":{"name":"f","arguments":"{"}}]}}]}`, `[`,
		`{"choices":[{"finish_reason":"length","message":{"reasoning_content":"r","refusal":"no","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{\"a"}}]}}],"usage":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := parseChatBody(body)
		if err != nil {
			var pe *parseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *parseError", err)
			}
			return
		}
		checkParsedInvariants(t, p)
		// The converted output must read back to the same items.
		var again parsed
		if err := parseOutputItems(p.output, &again); err != nil {
			t.Fatalf("converted output does not parse: %v\n%s", err, p.output)
		}
		if !reflect.DeepEqual(again.items, p.items) || again.text != p.text {
			t.Fatalf("converted output reads back differently")
		}
	})
}

func FuzzChatStream(f *testing.F) {
	f.Add([]byte(`{"id":"c","choices":[{"index":0,"delta":{"content":"a"}}]}`), []byte(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`))
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":3,"function":{"name":"f","arguments":"{"}}]}}]}`), []byte(`{"choices":[{"finish_reason":"tool_calls"}]}`))
	// Magistral's parts, DeepSeek's reasoning_content, Groq's x_groq usage.
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"hm"}]},{"type":"text","text":"a"}]}}]}`),
		[]byte(`{"choices":[{"index":0,"delta":{"reasoning_content":"r"},"finish_reason":"length"}],"x_groq":{"usage":{"prompt_tokens":1}}}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var s chatStream
		if _, err := s.add(a); err != nil {
			return
		}
		if _, err := s.add(b); err != nil {
			return
		}
		body, err := s.assemble()
		if err != nil {
			t.Fatalf("assemble: %v", err)
		}
		if !json.Valid(body) {
			t.Fatalf("assembled body is not JSON: %s", body)
		}
		if p, err := parseChatBody(body); err == nil {
			checkParsedInvariants(t, p)
		}
	})
}

func FuzzParseMessageBlob(f *testing.F) {
	for _, s := range []string{"hi", refOutput, refToolOutput, `{"role":"user","content":"x"}`, `[1]`, `{"content":1}`, "\xff", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		items, err := parseMessageBlob(cas0, b)
		if err != nil {
			return
		}
		for _, it := range items {
			if !json.Valid(it.raw) || it.kind() == "" {
				t.Fatalf("item %q is not a classified JSON item", it.raw)
			}
		}
		// Whatever parses must also convert to chat or fail cleanly.
		_, _ = chatMessages(items, "", nil)
	})
}

func FuzzParseTools(f *testing.F) {
	for _, s := range []string{refTools, `[{"type":"function","function":{"name":"f"}}]`, `{"tools":[{"type":"web_search"}]}`, `[{"type":"function","name":"f","parameters":{"a":1}}]`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tools, err := parseTools(b)
		if err != nil {
			return
		}
		for _, tl := range tools {
			if tl.typ == "" || (tl.typ == "function" && tl.name == "") {
				t.Fatalf("tool %q accepted without type or name", tl.raw)
			}
			if tl.typ == "function" {
				_, _ = decodeFunctionTool(tl.raw)
			}
		}
	})
}

// checkParsedInvariants checks what every successful parse guarantees.
func checkParsedInvariants(t *testing.T, p parsed) {
	t.Helper()
	if !json.Valid(p.output) {
		t.Fatalf("output is not JSON: %q", p.output)
	}
	n := 0
	for _, it := range p.items {
		if it.ToolCall != nil {
			if n >= len(p.calls) || *it.ToolCall != p.calls[n] {
				t.Fatalf("tool call items and calls disagree")
			}
			n++
		}
	}
	if n != len(p.calls) {
		t.Fatalf("%d tool call items, %d calls", n, len(p.calls))
	}
	// Everything a receipt stores as a node must encode.
	if _, err := cas.Marshal(p.items); err != nil {
		t.Fatalf("output items do not encode: %v", err)
	}
	for _, c := range p.calls {
		if _, err := cas.Marshal(c); err != nil {
			t.Fatalf("tool call does not encode: %v", err)
		}
	}
	if p.finish == "" || (len(p.calls) > 0 && p.finish == "stop") {
		t.Fatalf("finish %q with %d calls", p.finish, len(p.calls))
	}
}

// FuzzGenerateBody sends arbitrary bytes as the body of a 200 answer,
// plain or as an event stream, through the whole Generate path: the result
// is a receipt or a *ProviderError, never a panic or a hang. Each input is
// an HTTP round trip, so run it with a bounded minimization:
//
//	go test ./adapters/llm -run '^$' -fuzz FuzzGenerateBody -fuzztime 60s -fuzzminimizetime 100x
func FuzzGenerateBody(f *testing.F) {
	f.Add([]byte(refResponse), false, false)
	f.Add([]byte(refChatResponse), true, false)
	f.Add([]byte("event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":"+strings.ReplaceAll(refResponse, "\n", " ")+"}\n\n"), false, true)
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"), true, true)
	f.Add([]byte("data: {\"error\":{\"message\":\"x\"}}\n\n"), true, true)
	f.Add([]byte("event: error\ndata: {\"type\":\"error\",\"code\":\"c\",\"message\":\"m\"}\n\n"), false, true)
	var body struct {
		sync.Mutex
		b      []byte
		stream bool
	}
	srv := llmtest.NewServerFunc(func(llmtest.Request) llmtest.Turn {
		body.Lock()
		defer body.Unlock()
		ct := "application/json"
		if body.stream {
			ct = "text/event-stream"
		}
		return llmtest.Turn{Body: string(body.b), ContentType: ct}
	})
	defer srv.Close()
	g := newTestGenerator(f, srv, func(c *Config) { c.MaxAttempts = 1 })
	st := newStore()
	msg := st.put(f, "hi")
	f.Fuzz(func(t *testing.T, b []byte, chat, stream bool) {
		if len(b) == 0 {
			return // an empty Body makes llmtest render a normal answer
		}
		body.Lock()
		body.b, body.stream = b, stream
		body.Unlock()
		p := Params{Provider: ProviderResponses, Model: "m", MessageRefs: []cas.Ref{msg}}
		if chat {
			p.Provider = ProviderChat
		}
		var onDelta func(string)
		if stream {
			onDelta = func(string) {}
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		r, err := g.Generate(ctx, st, p, testKey, onDelta)
		if ctx.Err() != nil {
			t.Fatalf("Generate hung on %q (chat %v, stream %v): %v", b, chat, stream, err)
		}
		if err != nil {
			var pe *ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *ProviderError", err)
			}
			return
		}
		if r.OutputItemsRef == nil || r.ResponseRef == nil || r.Attempts != 1 {
			t.Fatalf("incomplete receipt %+v", r)
		}
	})
}

func TestMemberLast(t *testing.T) {
	for _, tc := range []struct{ in, key, want string }{
		{`{"a":1,"input":[1,2],"b":{"c":"}"}}`, "input", `{"a":1,"b":{"c":"}"},"input":[1,2]}`},
		{`{"input":"x"}`, "input", `{"input":"x"}`},
		{`{"a":1,"input":2}`, "input", `{"a":1,"input":2}`},
		{` { "a" : 1 , "messages" : [ {"é\"":null} ] , "z":true}`, "messages", `{"a" : 1,"z":true,"messages" : [ {"é\"":null} ]}`}, // members as they were written
	} {
		got, ok := memberLast([]byte(tc.in), tc.key)
		if !ok || string(got) != tc.want {
			t.Errorf("memberLast(%s) = %s, %v; want %s", tc.in, got, ok, tc.want)
		}
	}
	for _, in := range []string{`{"a":1}`, `[1]`, `{"a":`, ``} {
		if _, ok := memberLast([]byte(in), "input"); ok {
			t.Errorf("memberLast(%s): ok", in)
		}
	}
}

func FuzzMemberLast(f *testing.F) {
	f.Add([]byte(`{"a":1,"input":[1,2],"b":{}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		out, ok := memberLast(in, "input")
		if !ok {
			return
		}
		var a, b any
		if json.Unmarshal(in, &a) != nil {
			return // a body the SDK would never write; nothing to keep
		}
		if err := json.Unmarshal(out, &b); err != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("memberLast(%s) = %s, not the same object (%v)", in, out, err)
		}
	})
}

// TestKindOf: the kind of every ProviderError is read back from its
// message, as a failed receipt records it; other messages have none.
func TestKindOf(t *testing.T) {
	for k := range kindLabel {
		for _, e := range []*ProviderError{
			{Provider: ProviderResponses, Kind: k},
			{Provider: ProviderChat, Kind: k, Status: 503, Message: "try later", RequestID: "req_1"},
		} {
			if got, ok := KindOf(e.Error()); !ok || got != k {
				t.Errorf("KindOf(%q) = %q, %v; want %q", e.Error(), got, ok, k)
			}
		}
	}
	for _, msg := range []string{"", "llm: ", "llm.generate: decode sys/LlmGenerateParams@1: bad", "llm: openai-chat: something else", "llm: openai-chat: timeouts"} {
		if got, ok := KindOf(msg); ok {
			t.Errorf("KindOf(%q) = %q; want none", msg, got)
		}
	}
}
