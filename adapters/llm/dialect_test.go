package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/internal/realwire"
)

// dialect is one OpenAI-compatible server's way of carrying a model's
// reasoning in a Chat Completions answer. The answers are written here
// after each provider's documented wire form (the recordings the
// extended corpus holds show the same fields: see
// testdata/realwire/README.md); the server refuses a follow-up as the
// provider does (realwire.Refusal).
type dialect struct {
	name, vendor, server, model string
	// answer is the first answer, with a tool call; stream is the same
	// answer as a stream ("" to skip the streamed run).
	answer, stream string
	// want are the fields the follow-up's assistant message must carry,
	// as JSON; wantCall the fields of its first tool call.
	want, wantCall map[string]string
	// refused says the provider refuses a follow-up without them.
	refused bool
}

// usageJSON is a usage object the answers share.
const usageJSON = `{"prompt_tokens":20,"completion_tokens":12,"total_tokens":32}`

var dialects = []dialect{{
	name: "DeepSeek reasoning_content", vendor: "deepseek", server: "deepseek", model: "deepseek-reasoner",
	answer: `{"id":"d1","object":"chat.completion","model":"deepseek-reasoner","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"",` +
		`"reasoning_content":"I should look.","tool_calls":[{"id":"call_0","type":"function","function":{"name":"f","arguments":"{}"}}]}}],"usage":` + usageJSON + `}`,
	stream: sse(`{"id":"d1","model":"deepseek-reasoner","choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"I should "}}]}`,
		`{"id":"d1","choices":[{"index":0,"delta":{"reasoning_content":"look."}}]}`,
		`{"id":"d1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`,
		`{"id":"d1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":`+usageJSON+`}`),
	want: map[string]string{"reasoning_content": `"I should look."`}, refused: true,
}, {
	name: "Kimi K2.5 reasoning_content", vendor: "moonshot", server: "moonshot", model: "kimi-k2.5",
	answer: `{"id":"k1","object":"chat.completion","model":"kimi-k2.5","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"",` +
		`"reasoning_content":"The user wants f.","tool_calls":[{"id":"f:0","type":"function","function":{"name":"f","arguments":"{}"}}]}}],` +
		`"usage":{"prompt_tokens":20,"completion_tokens":12,"total_tokens":32,"cached_tokens":16}}`,
	stream: sse(`{"id":"k1","model":"kimi-k2.5","choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"The user wants f."}}]}`,
		`{"id":"k1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"f:0","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`,
		`{"id":"k1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls","usage":`+usageJSON+`}]}`),
	want: map[string]string{"reasoning_content": `"The user wants f."`}, refused: true,
}, {
	name: "GLM reasoning_content", vendor: "zai", server: "zai", model: "glm-4.7",
	answer: `{"id":"z1","object":"chat.completion","model":"glm-4.7","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"",` +
		`"reasoning_content":"\nLet me call f.","tool_calls":[{"id":"call_-1","type":"function","index":0,"function":{"name":"f","arguments":"{}"}}]}}],"usage":` + usageJSON + `}`,
	want: map[string]string{"reasoning_content": `"\nLet me call f."`},
}, {
	name: "llama.cpp reasoning_content (no known server)", vendor: "other", model: "gpt-oss-20b",
	answer: `{"id":"l1","object":"chat.completion","model":"gpt-oss-20b","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,` +
		`"reasoning_content":"Need f.","tool_calls":[{"id":"abc","type":"function","function":{"name":"f","arguments":"{}"}}]}}],"usage":` + usageJSON + `}`,
	want: map[string]string{"reasoning_content": `"Need f."`},
}, {
	name: "Ollama reasoning", vendor: "ollama", model: "qwen3:8b",
	answer: `{"id":"o1","object":"chat.completion","model":"qwen3:8b","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"",` +
		`"reasoning":"Call f.","tool_calls":[{"id":"call_x","index":0,"type":"function","function":{"name":"f","arguments":"{}"}}]}}],"usage":` + usageJSON + `}`,
	stream: sse(`{"id":"o1","model":"qwen3:8b","choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":"Call "}}]}`,
		`{"id":"o1","choices":[{"index":0,"delta":{"reasoning":"f."}}]}`,
		`{"id":"o1","choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_x","index":0,"type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`,
		`{"id":"o1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"id":"o1","choices":[],"usage":`+usageJSON+`}`),
	want: map[string]string{"reasoning": `"Call f."`},
}, {
	name: "OpenRouter Gemini 3 reasoning_details", vendor: "openrouter", server: "openrouter", model: "google/gemini-3-pro-preview",
	answer: `{"id":"gen-1","object":"chat.completion","model":"google/gemini-3-pro-preview","provider":"Google AI Studio","choices":[{"index":0,"finish_reason":"tool_calls",` +
		`"message":{"role":"assistant","content":"","reasoning":"**Calling f**","reasoning_details":[{"type":"reasoning.text","text":"**Calling f**","format":"google-gemini-v1","index":0},` +
		`{"type":"reasoning.encrypted","data":"Ctk=","id":"tool_f_abc","format":"google-gemini-v1","index":0}],` +
		`"tool_calls":[{"id":"tool_f_abc","type":"function","index":0,"function":{"name":"f","arguments":"{}"}}]}}],` +
		`"usage":{"prompt_tokens":20,"completion_tokens":12,"total_tokens":32,"cost":0.000164,"completion_tokens_details":{"reasoning_tokens":8}}}`,
	stream: sse(`{"id":"gen-1","model":"google/gemini-3-pro-preview","choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":"**Calling f**",`+
		`"reasoning_details":[{"type":"reasoning.text","text":"**Calling f**","format":"google-gemini-v1","index":0}]}}]}`,
		`{"id":"gen-1","choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning_details":[{"type":"reasoning.encrypted","data":"Ctk=","id":"tool_f_abc","format":"google-gemini-v1","index":0}],`+
			`"tool_calls":[{"id":"tool_f_abc","type":"function","index":0,"function":{"name":"f","arguments":"{}"}}]}}]}`,
		`{"id":"gen-1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"id":"gen-1","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":12,"total_tokens":32,"cost":0.000164}}`),
	want: map[string]string{"reasoning": `"**Calling f**"`, "reasoning_details": `[{"type":"reasoning.text","text":"**Calling f**","format":"google-gemini-v1","index":0},` +
		`{"type":"reasoning.encrypted","data":"Ctk=","id":"tool_f_abc","format":"google-gemini-v1","index":0}]`},
	refused: true,
}, {
	name: "OpenRouter OpenAI encrypted reasoning", vendor: "openrouter", server: "openrouter", model: "openai/gpt-5-mini",
	answer: `{"id":"gen-2","object":"chat.completion","model":"openai/gpt-5-mini","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"",` +
		`"reasoning":"**Plan**","reasoning_details":[{"format":"openai-responses-v1","index":0,"summary":"**Plan**","type":"reasoning.summary"},` +
		`{"data":"gAAAA","format":"openai-responses-v1","id":"rs_1","index":0,"type":"reasoning.encrypted"}],` +
		`"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}}],"usage":` + usageJSON + `}`,
	want: map[string]string{"reasoning": `"**Plan**"`, "reasoning_details": `[{"format":"openai-responses-v1","index":0,"summary":"**Plan**","type":"reasoning.summary"},` +
		`{"data":"gAAAA","format":"openai-responses-v1","id":"rs_1","index":0,"type":"reasoning.encrypted"}]`},
}, {
	name: "Vercel AI gateway Anthropic reasoning_details", vendor: "vercel", server: "vercel", model: "anthropic/claude-sonnet-4.5",
	answer: `{"id":"v1","object":"chat.completion","model":"anthropic/claude-sonnet-4.5","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"",` +
		`"reasoning":"Think.","reasoning_details":[{"type":"reasoning.text","text":"Think.","signature":"EqQB","format":"anthropic-claude-v1","index":0}],` +
		`"tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"f","arguments":"{}"}}]}}],"usage":` + usageJSON + `}`,
	want: map[string]string{"reasoning": `"Think."`, "reasoning_details": `[{"type":"reasoning.text","text":"Think.","signature":"EqQB","format":"anthropic-claude-v1","index":0}]`},
}, {
	name: "Gemini OpenAI-compatible thought signature", vendor: "gemini", server: "gemini", model: "gemini-3-pro-preview",
	answer: `{"id":"gm1","object":"chat.completion","model":"gemini-3-pro-preview","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant",` +
		`"tool_calls":[{"extra_content":{"google":{"thought_signature":"CiQB"}},"function":{"arguments":"{}","name":"f"},"id":"function-call-1","type":"function"}]}}],"usage":` + usageJSON + `}`,
	stream: sse(`{"id":"gm1","model":"gemini-3-pro-preview","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"extra_content":{"google":{"thought_signature":"CiQB"}},` +
		`"function":{"arguments":"{}","name":"f"},"id":"function-call-1","type":"function","index":0}]},"finish_reason":"tool_calls"}],"usage":` + usageJSON + `}`),
	wantCall: map[string]string{"extra_content": `{"google":{"thought_signature":"CiQB"}}`},
	refused:  true,
}, {
	name: "xAI reasoning_content", vendor: "xai", server: "xai", model: "grok-3-mini",
	answer: `{"id":"x1","object":"chat.completion","model":"grok-3-mini","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"",` +
		`"reasoning_content":"Use f.","tool_calls":[{"id":"call_9","type":"function","function":{"name":"f","arguments":"{}"}}]}}],` +
		`"usage":{"prompt_tokens":20,"completion_tokens":2,"total_tokens":32,"completion_tokens_details":{"reasoning_tokens":10},"cost_in_usd_ticks":1000000}}`,
	want: map[string]string{"reasoning_content": `"Use f."`},
}}

// sse frames chat.completion.chunk events as a stream.
func sse(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// TestDialects runs a two-turn session of each dialect against a loopback
// server that refuses what its provider refuses: the follow-up carries
// the reasoning the first answer brought, in the form it arrived, and is
// accepted; told to send no reasoning back (reasoning_echo=none), the
// follow-up of a provider that needs it is refused.
func TestDialects(t *testing.T) {
	for _, d := range dialects {
		for _, stream := range []bool{false, true} {
			if stream && d.stream == "" {
				continue
			}
			name := d.name
			if stream {
				name += " (stream)"
			}
			t.Run(name, func(t *testing.T) {
				sent, err := dialectSession(t, d, stream, nil)
				if err != nil {
					t.Fatalf("the follow-up was refused: %v", err)
				}
				checkFollowUp(t, d, sent)
				if d.refused {
					none := ModelOptions{Match: "*", ReasoningEcho: ptr(EchoNone)}
					if _, err := dialectSession(t, d, stream, []ModelOptions{none}); err == nil {
						t.Errorf("without its reasoning, the follow-up was not refused: the check cannot fail")
					}
				}
			})
		}
	}
}

// dialectSession runs the dialect's two turns and returns the follow-up
// request sent, or the error it got.
func dialectSession(t *testing.T, d dialect, stream bool, overrides []ModelOptions) (map[string]any, error) {
	t.Helper()
	first := realwire.Response{Body: json.RawMessage(d.answer)}
	if stream {
		first = realwire.Response{BodyText: &d.stream}
	}
	final := json.RawMessage(`{"id":"end","object":"chat.completion","model":"` + d.model + `","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"done"}}],"usage":` + usageJSON + `}`)
	srv := realwire.NewServer([]realwire.Response{first, {Body: final}})
	defer srv.Close()
	srv.SetCheck(func(_ int, body []byte) error { return realwire.Refusal(d.vendor, "chat", body) })
	g, err := New(Config{Provider: ProviderChat, BaseURL: srv.URL, Server: d.server, Models: overrides, MaxAttempts: 1,
		Backoff: func(int) time.Duration { return 0 }, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	st := newStore()
	tools := st.put(t, `[{"type":"function","name":"f","parameters":{"type":"object","properties":{}}}]`)
	p := Params{Model: d.model, ToolsRef: &tools, MessageRefs: []cas.Ref{st.put(t, "call f")}}
	var onDelta func(string)
	if stream {
		onDelta = func(string) {}
	}
	r, err := g.Generate(t.Context(), st, p, "", onDelta)
	if err != nil {
		t.Fatalf("first turn: %v", err)
	}
	if len(r.ToolCallRefs) != 1 {
		t.Fatalf("first turn: %d tool calls", len(r.ToolCallRefs))
	}
	var tc ToolCall
	if err := cas.GetNode(t.Context(), st, r.ToolCallRefs[0], &tc); err != nil {
		t.Fatal(err)
	}
	out := st.put(t, fmt.Sprintf(`{"type":"function_call_output","call_id":%q,"output":"42"}`, tc.CallID))
	p.MessageRefs = append(p.MessageRefs, r.OutputRef, out)
	_, err = g.Generate(t.Context(), st, p, "", onDelta)
	reqs := srv.Requests()
	var sent map[string]any
	if len(reqs) == 2 {
		if jerr := json.Unmarshal(reqs[1], &sent); jerr != nil {
			t.Fatal(jerr)
		}
	}
	var pe *ProviderError
	if err != nil && !errors.As(err, &pe) {
		t.Fatalf("follow-up: %v", err)
	}
	return sent, err
}

// checkFollowUp checks the follow-up's assistant message against the
// dialect's fields.
func checkFollowUp(t *testing.T, d dialect, sent map[string]any) {
	t.Helper()
	msgs, _ := sent["messages"].([]any)
	var asst map[string]any
	for _, m := range msgs {
		if mm, _ := m.(map[string]any); mm["role"] == "assistant" {
			asst = mm
		}
	}
	if asst == nil {
		t.Fatalf("the follow-up has no assistant message: %v", sent)
	}
	same := func(what string, got any, want string) {
		var w any
		if err := json.Unmarshal([]byte(want), &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%s: %v; want %s", what, got, want)
		}
	}
	for k, want := range d.want {
		same("assistant "+k, asst[k], want)
	}
	for _, k := range []string{"reasoning_content", "reasoning", "reasoning_details"} {
		if _, ok := d.want[k]; !ok && asst[k] != nil && d.server != "deepseek" {
			t.Errorf("assistant %s sent, which did not arrive: %v", k, asst[k])
		}
	}
	calls, _ := asst["tool_calls"].([]any)
	if len(calls) != 1 {
		t.Fatalf("assistant tool calls: %v", asst["tool_calls"])
	}
	call, _ := calls[0].(map[string]any)
	for k, want := range d.wantCall {
		same("tool call "+k, call[k], want)
	}
	if d.wantCall == nil && call["extra_content"] != nil {
		t.Errorf("tool call extra_content sent, which did not arrive: %v", call["extra_content"])
	}
}

// TestEchoRefused checks that a field a server refuses is never sent
// back, whatever arrived: Groq refuses reasoning_content, so a DeepSeek
// answer's goes back to Groq without it (its reasoning text in the field
// Groq takes, if the family's rule names one, is not added either).
func TestEchoRefused(t *testing.T) {
	d := dialects[0] // DeepSeek's reasoning_content
	d.vendor, d.server, d.model, d.refused = "groq", "groq", "openai/gpt-oss-120b", false
	d.want = nil
	sent, err := dialectSession(t, d, false, nil)
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	checkFollowUp(t, d, sent)
}
