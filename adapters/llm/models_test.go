package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cas/reflist"
)

// TestRules checks demiurge's rules: each has a dated public source, says
// nothing a family cannot mean, and a named model among them has every
// fact the catalog may lack.
func TestRules(t *testing.T) {
	dated := regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	seen := map[string]bool{}
	for _, r := range Rules {
		t.Run(r.Match, func(t *testing.T) {
			if seen[r.Match] {
				t.Errorf("%s is in the rules twice", r.Match)
			}
			seen[r.Match] = true
			if !strings.Contains(r.Source, "https://") || !dated.MatchString(r.AsOf) {
				t.Errorf("source %q as of %q: want a public https page and the day it was read", r.Source, r.AsOf)
			}
			if r.Reasoning != nil && !*r.Reasoning && r.EncryptedReasoning != nil && *r.EncryptedReasoning {
				t.Errorf("encrypted reasoning for models that do not reason")
			}
			if strings.Contains(r.Match, "*") {
				if r.Price != nil {
					t.Errorf("pattern %s has a price: a family names models of different prices", r.Match)
				}
				return
			}
			m, known := resolveModel(r.Match, "", nil)
			if !known || m.ChatTokenLimit == "" || m.ContextWindow == 0 || m.MaxOutputTokens == 0 || m.MaxOutputTokens > m.ContextWindow {
				t.Errorf("%+v", m)
			}
			if p := m.Price; p == nil || p.Input == 0 || p.Output == 0 || p.CachedInput == 0 || p.CachedInput > p.Input || p.Output < p.Input {
				t.Errorf("price %+v", m.Price)
			}
		})
	}
}

// TestCatalogPrices checks that the models the issue names are priced,
// with their windows and whether they reason, and where each fact comes
// from.
func TestCatalogPrices(t *testing.T) {
	for _, tc := range []struct {
		name, base string
		reasoning  bool
		from       string // the source of the price
		price      Price  // zero: only check that there is one
	}{
		{"gpt-5.2", "", true, CatalogName + " (openai)", Price{Input: 1_750_000, CachedInput: 175_000, CacheWrite: 175_000, Output: 14_000_000}},
		{"gpt-5.4", "", true, CatalogName + " (openai)", Price{Input: 2_500_000, CachedInput: 250_000, Output: 15_000_000}},
		{"gpt-5.5", "", true, CatalogName + " (openai)", Price{}},
		{"gpt-5.1", "", true, CatalogName + " (openai)", Price{}},
		{"gpt-4o-2024-08-06", "", false, CatalogName + " (openai)", Price{Input: 2_500_000, CachedInput: 1_250_000, Output: 10_000_000}},
		{"gpt-5.2-chat-latest", "", false, "demiurge's rules (gpt-5.2-chat-latest)", Price{Input: 1_750_000, CachedInput: 175_000, Output: 14_000_000}},
		{"gpt-5-chat-latest", "", false, "demiurge's rules (gpt-5-chat-latest)", Price{}},
		{"o1", "", true, "demiurge's rules (o1)", Price{}},
		{"claude-sonnet-4-5", "", true, CatalogName + " (anthropic)", Price{Input: 3_000_000, CachedInput: 300_000, CacheWrite: 3_750_000, Output: 15_000_000}},
		{"claude-sonnet-4-5-20250929", "", true, CatalogName + " (anthropic)", Price{}},
		{"claude-opus-4-5", "", true, CatalogName + " (anthropic)", Price{}},
		{"gemini-2.5-pro", "", true, CatalogName + " (gemini)", Price{Input: 1_250_000, CachedInput: 125_000, Output: 10_000_000}},
		{"gemini-3-pro-preview", "", true, CatalogName + " (gemini)", Price{}},
		{"deepseek-v4-flash", "", true, CatalogName + " (deepseek)", Price{}},
		{"deepseek-v4-pro", "", true, CatalogName + " (deepseek)", Price{}},
		{"grok-4.5", "", true, CatalogName + " (xai)", Price{}},
		{"grok-4.20", "", false, CatalogName + " (xai)", Price{}},
		{"kimi-k2.5", "", true, CatalogName + " (moonshot)", Price{Input: 600_000, CachedInput: 100_000, Output: 3_000_000}},
		{"glm-4.6", "", true, CatalogName + " (zai)", Price{}},
		{"glm-5", "", true, CatalogName + " (zai)", Price{}},
		// At OpenRouter, OpenRouter's own price of the model.
		{"anthropic/claude-sonnet-4.5", "https://openrouter.ai/api/v1", true, CatalogName + " (openrouter)", Price{}},
		{"openai/gpt-5.2", "https://openrouter.ai/api/v1", true, CatalogName + " (openrouter)", Price{}},
	} {
		m, known := resolveModel(tc.name, tc.base, nil)
		if !known || m.Price == nil || m.Facts.Price != tc.from || m.Reasoning != tc.reasoning || m.ContextWindow == 0 {
			t.Errorf("%s at %q: price %+v from %q, reasoning %v, window %d; want a price from %q, reasoning %v",
				tc.name, tc.base, m.Price, m.Facts.Price, m.Reasoning, m.ContextWindow, tc.from, tc.reasoning)
			continue
		}
		if tc.price != (Price{}) && *m.Price != tc.price {
			t.Errorf("%s: price %+v; want %+v", tc.name, *m.Price, tc.price)
		}
		if m.Price.CachedInput > m.Price.Input {
			t.Errorf("%s: a cache read dearer than the input: %+v", tc.name, *m.Price)
		}
	}
}

// TestModelsOfDocsAreKnown checks that every model named in the examples
// and docs is known to the catalog or the rules.
func TestModelsOfDocsAreKnown(t *testing.T) {
	files := []string{"../../README.md"}
	for _, g := range []string{"../../docs/*.md", "../../examples/*/*.md", "../../examples/*/*.go", "../../examples/*/*.json", "../../cli/*.go", "../../cmd/demiurge/*.go"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	name := regexp.MustCompile(`\b(gpt-[0-9][0-9a-z.\-]*|o[1-9](-mini)?|deepseek-[a-z0-9\-]+)\b`)
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range name.FindAllString(string(b), -1) {
			m = strings.TrimRight(m, ".-")
			n++
			if _, ok := resolveModel(m, "", nil); !ok {
				t.Errorf("%s names model %s, which neither the catalog nor the rules know", f, m)
			}
		}
	}
	if n == 0 {
		t.Fatal("no model named in the docs: the test reads the wrong files")
	}
}

func TestModelFor(t *testing.T) {
	tests := []struct {
		name, base string
		want       func(Model) bool
		known      bool
	}{
		{"gpt-4o", "", func(m Model) bool { return !m.Reasoning && !m.EncryptedReasoning && m.Temperature && m.Price != nil }, true},
		{"gpt-4o-2024-08-06", "", func(m Model) bool { return m.Price != nil && m.Price.Input == 2_500_000 }, true},
		{"gpt-4o-mini-2024-07-18", "", func(m Model) bool { return m.Price.Input == 150_000 }, true},
		{"gpt-5-mini", "", func(m Model) bool {
			return m.Reasoning && m.ChatTokenLimit == MaxCompletionTokens && !m.Temperature && m.EncryptedReasoning
		}, true},
		{"gpt-5-mini-2025-08-07", "", func(m Model) bool { return m.Price.Output == 2_000_000 }, true},
		{"gpt-5.9-preview", "", func(m Model) bool { return m.Reasoning && m.Price == nil }, true},
		// The non-reasoning chat models of the gpt-5 line.
		{"gpt-5.2-chat-latest", "", func(m Model) bool {
			return !m.Reasoning && !m.EncryptedReasoning && !m.ReasoningEffort && m.Temperature && m.Price != nil
		}, true},
		{"gpt-5.3-chat-latest", "", func(m Model) bool { return !m.Reasoning && !m.EncryptedReasoning && m.Price == nil }, true},
		{"o3-pro", "", func(m Model) bool { return m.Reasoning && m.Price == nil }, true},
		{"deepseek-reasoner", "", func(m Model) bool { return m.ReasoningEcho == "reasoning_content" && m.ChatTokenLimit == MaxTokens }, true},
		{"deepseek-v4-flash", "", func(m Model) bool {
			return m.ReasoningEcho == "reasoning_content" && m.ChatTokenLimit == MaxTokens && m.Reasoning && m.Price != nil
		}, true},
		{"kimi-k2.5", "", func(m Model) bool { return m.ReasoningEcho == "reasoning_content" && !m.Temperature && m.Price != nil }, true},
		{"grok-4.20", "", func(m Model) bool { return !m.ReasoningEffort && m.Price != nil }, true},
		{"qwen3:8b", "http://127.0.0.1:11434/v1", func(m Model) bool {
			return m.ChatTokenLimit == MaxTokens && !m.EncryptedReasoning && m.ReasoningEcho == "" && m.Price == nil && m.Temperature
		}, false},
		{"my-finetune", "https://api.openai.com/v1", func(m Model) bool { return m.ChatTokenLimit == MaxCompletionTokens }, false},
		{"my-deployment", "https://res.openai.azure.com", func(m Model) bool { return m.ChatTokenLimit == MaxCompletionTokens }, false},
	}
	for _, tc := range tests {
		m, known := resolveModel(tc.name, tc.base, nil)
		if !tc.want(m) || known != tc.known || m.Name != tc.name {
			t.Errorf("%s at %q: %+v known %v", tc.name, tc.base, m, known)
		}
	}
}

func TestModelOptions(t *testing.T) {
	var o ModelOptions
	o.Match = "qwen3*"
	for _, kv := range []string{"reasoning=true", "chat_token_limit=max_completion_tokens", "temperature=false",
		"reasoning_echo=reasoning_content", "context_window=32_768", "max_output_tokens=8192", "price_input=0.5", "price_output=1.5"} {
		if err := o.ParseModelOption(kv); err != nil {
			t.Fatalf("%s: %v", kv, err)
		}
	}
	m, known := resolveModel("qwen3:8b", "http://localhost:8000/v1", []ModelOptions{o})
	if !known || !m.Reasoning || m.ChatTokenLimit != MaxCompletionTokens || m.Temperature || m.ReasoningEcho != "reasoning_content" ||
		m.ContextWindow != 32768 || m.MaxOutputTokens != 8192 || *m.Price != (Price{Input: 500_000, Output: 1_500_000}) {
		t.Errorf("override: %+v", m)
	}
	// An override of a known model changes only what it names.
	f := false
	m, _ = resolveModel("gpt-4o", "", []ModelOptions{{Match: "gpt-4o", Temperature: &f}})
	if m.Temperature || m.Price == nil || m.ContextWindow != 128_000 {
		t.Errorf("gpt-4o override: %+v", m)
	}
	for _, bad := range []string{"reasoning", "reasoning=maybe", "chat_token_limit=max_output", "context_window=lots",
		"price_input=-1", "colour=blue", "reasoning_echo=Bad Field"} {
		if err := new(ModelOptions).ParseModelOption(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// requestFor builds the request Generate sends for model through the fake
// server, and returns it decoded.
func requestFor(t *testing.T, provider, model string, stream bool, p Params, transcript []string, edit func(*Config)) map[string]any {
	t.Helper()
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Text: "ok"}}})
	t.Cleanup(srv.Close)
	g := newTestGenerator(t, srv, edit)
	st := newStore()
	p.Provider, p.Model = provider, model
	for _, m := range transcript {
		p.MessageRefs = append(p.MessageRefs, st.put(t, m))
	}
	tools := st.put(t, `[{"type":"function","name":"f","parameters":{"type":"object"},"strict":false}]`)
	p.ToolsRef = &tools
	var onDelta func(string)
	if stream {
		onDelta = func(string) {}
	}
	if _, err := g.Generate(t.Context(), st, p, "", onDelta); err != nil {
		t.Fatal(err)
	}
	return srv.Requests()[0].JSON()
}

// TestRequestFollowsTheModel checks the fields the providers refuse when
// they do not fit the model.
func TestRequestFollowsTheModel(t *testing.T) {
	temp, effort := "0.2", "low"
	p := Params{MaxTokens: 4096, Temperature: &temp, ReasoningEffort: &effort}
	reasoning := `[{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"ok"}]`
	chatReasoning := `[{"type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"think"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"calling"}]},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"ok"}]`
	has := func(m map[string]any, k string) bool { _, ok := m[k]; return ok }
	inputTypes := func(m map[string]any) []string {
		var out []string
		for _, it := range m["input"].([]any) {
			typ, _ := it.(map[string]any)["type"].(string)
			out = append(out, typ)
		}
		return out
	}

	// Responses, a model that does not reason: no include, no reasoning,
	// no reasoning items; the temperature is sent.
	r := requestFor(t, ProviderResponses, "gpt-4o", false, p, []string{"hi", reasoning}, nil)
	if has(r, "include") || has(r, "reasoning") || r["temperature"] != 0.2 || r["max_output_tokens"] != 4096.0 {
		t.Errorf("gpt-4o on Responses: %v", r)
	}
	if got := inputTypes(r); slices.Contains(got, "reasoning") {
		t.Errorf("gpt-4o got reasoning items: %v", got)
	}
	// A reasoning model: include, reasoning effort, its reasoning items
	// back; no temperature.
	r = requestFor(t, ProviderResponses, "gpt-5-mini", false, p, []string{"hi", reasoning}, nil)
	if inc, _ := r["include"].([]any); len(inc) != 1 || inc[0] != "reasoning.encrypted_content" || has(r, "temperature") ||
		r["reasoning"].(map[string]any)["effort"] != "low" {
		t.Errorf("gpt-5-mini on Responses: %v", r)
	}
	if got := inputTypes(r); !slices.Equal(got, []string{"", "reasoning", "function_call", "function_call_output"}) {
		t.Errorf("gpt-5-mini input %v", got)
	}
	// A Chat provider's reasoning has no encrypted content: not sent to
	// Responses.
	r = requestFor(t, ProviderResponses, "gpt-5-mini", false, p, []string{"hi", chatReasoning}, nil)
	if got := inputTypes(r); slices.Contains(got, "reasoning") {
		t.Errorf("reasoning without encrypted content was sent: %v", got)
	}
	// A model's output limit caps max_tokens.
	big := p
	big.MaxTokens = 100_000
	r = requestFor(t, ProviderResponses, "gpt-4o", false, big, []string{"hi"}, nil)
	if r["max_output_tokens"] != 16384.0 {
		t.Errorf("gpt-4o max_output_tokens %v; want its limit 16384", r["max_output_tokens"])
	}

	// Chat, a reasoning model: max_completion_tokens, no temperature.
	for _, stream := range []bool{false, true} {
		r = requestFor(t, ProviderChat, "gpt-5-mini", stream, p, []string{"hi"}, nil)
		if has(r, "max_tokens") || r["max_completion_tokens"] != 4096.0 || has(r, "temperature") || r["reasoning_effort"] != "low" {
			t.Errorf("gpt-5-mini on Chat (stream %v): %v", stream, r)
		}
		if so, _ := r["stream_options"].(map[string]any); stream && so["include_usage"] != true {
			t.Errorf("a stream that does not ask for usage: %v", r)
		}
	}
	// Chat, a local model: max_tokens, the temperature and the effort as
	// given; reasoning is not sent back.
	r = requestFor(t, ProviderChat, "qwen3:8b", false, p, []string{"hi", chatReasoning}, nil)
	if has(r, "max_completion_tokens") || r["max_tokens"] != 4096.0 || r["temperature"] != 0.2 {
		t.Errorf("qwen3 on Chat: %v", r)
	}
	for _, msg := range r["messages"].([]any) {
		if has(msg.(map[string]any), "reasoning_content") {
			t.Errorf("reasoning sent back to a model that does not take it: %v", msg)
		}
	}
	// DeepSeek: max_tokens, no reasoning_effort, and the reasoning text
	// back on every assistant message ("" where there was none).
	r = requestFor(t, ProviderChat, "deepseek-reasoner", false, p, []string{"hi", chatReasoning,
		`{"type":"function_call","call_id":"c2","name":"f","arguments":"{}"}`, `{"type":"function_call_output","call_id":"c2","output":"ok"}`}, nil)
	if r["max_tokens"] != 4096.0 || has(r, "reasoning_effort") || has(r, "temperature") {
		t.Errorf("deepseek-reasoner: %v", r)
	}
	var echoes []any
	for _, msg := range r["messages"].([]any) {
		m := msg.(map[string]any)
		if m["role"] == "assistant" {
			echoes = append(echoes, m["reasoning_content"])
		}
	}
	if !slices.Equal(echoes, []any{"think", ""}) {
		t.Errorf("deepseek reasoning_content of the assistant messages: %q; want [think, \"\"]", echoes)
	}
}

func TestAzure(t *testing.T) {
	tests := []struct {
		name             string
		cfg              func(base string) Config
		provider         string
		wantPath, wantQ  string
		wantModel        string
		wantHeader, want string
	}{
		{"v1, chat", func(b string) Config { return Config{Azure: &AzureConfig{Endpoint: b}} }, ProviderChat,
			"/openai/v1/chat/completions", "", "gpt-4o", "Api-Key", "k3y-azure-123"},
		{"v1, responses", func(b string) Config { return Config{Azure: &AzureConfig{Endpoint: b + "/openai/v1"}} }, ProviderResponses,
			"/openai/v1/responses", "", "gpt-4o", "Api-Key", "k3y-azure-123"},
		{"dated, chat, deployment from the URL", func(b string) Config {
			return Config{Azure: &AzureConfig{Endpoint: b + "/openai/deployments/prod-4o", APIVersion: "2024-10-21"}}
		}, ProviderChat, "/openai/deployments/prod-4o/chat/completions", "api-version=2024-10-21", "prod-4o", "Api-Key", "k3y-azure-123"},
		{"dated, responses", func(b string) Config {
			return Config{Azure: &AzureConfig{Endpoint: b, APIVersion: "2025-03-01-preview", Deployment: "dep"}}
		}, ProviderResponses, "/openai/responses", "api-version=2025-03-01-preview", "dep", "Api-Key", "k3y-azure-123"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServerFunc(func(llmtest.Request) llmtest.Turn { return llmtest.Turn{Text: "ok"} })
			t.Cleanup(srv.Close)
			u, _ := url.Parse(srv.URL)
			cfg := tc.cfg(u.Scheme + "://" + u.Host)
			cfg.Provider, cfg.Logger = tc.provider, quietLogger
			g, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			st := newStore()
			_, err = g.Generate(t.Context(), st, Params{Model: "gpt-4o", MessageRefs: []cas.Ref{st.put(t, "hi")}}, "k3y-azure-123", nil)
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests (%v)", len(reqs), err)
			}
			req := reqs[0]
			if req.Path != tc.wantPath || req.Header.Get(tc.wantHeader) != tc.want || req.Header.Get("Authorization") != "" {
				t.Errorf("request %s %v; want path %s and %s: %s only", req.Path, req.Header, tc.wantPath, tc.wantHeader, tc.want)
			}
			var body map[string]any
			_ = json.Unmarshal(req.Body, &body)
			if body["model"] != tc.wantModel {
				t.Errorf("model %v; want %s", body["model"], tc.wantModel)
			}
			if tc.wantQ != "" && !strings.Contains(req.Query, tc.wantQ) {
				t.Errorf("query %q; want %s", req.Query, tc.wantQ)
			}
		})
	}
	if _, err := resolveAzure(&AzureConfig{Endpoint: "https://x.openai.azure.com/somewhere/else"}, "", func(string) string { return "" }); err == nil {
		t.Error("an Azure URL of no known shape: no error")
	}
	az, err := resolveAzure(nil, "", func(k string) string {
		return map[string]string{"AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com/", "OPENAI_API_VERSION": "2024-10-21"}[k]
	})
	if err != nil || az.Endpoint != "https://r.openai.azure.com" || az.APIVersion != "2024-10-21" {
		t.Errorf("from the environment: %+v, %v", az, err)
	}
}

// TestTranscriptParam: a transcript named as a reflist (what Chat@2
// sends) reads as Prefix ++ Refs[From:To] ++ Suffix, after MessageRefs.
func TestTranscriptParam(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Text: "ok"}}})
	t.Cleanup(srv.Close)
	g := newTestGenerator(t, srv, nil)
	st := newStore()
	var list reflist.List
	for i := range 40 {
		l, nodes, err := list.Append(st.put(t, fmt.Sprintf(`{"role":"user","content":"m%d"}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range nodes {
			st.put(t, string(b))
		}
		list = l
	}
	to := uint64(30)
	p := Params{Model: "gpt-4o", MessageRefs: []cas.Ref{st.put(t, "first")},
		Transcript: &Transcript{Refs: list, From: 20, To: &to,
			Prefix: []cas.Ref{st.put(t, `{"role":"user","content":"summary"}`)}, Suffix: []cas.Ref{st.put(t, "last")}}}
	if _, err := g.Generate(t.Context(), st, p, "", nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range srv.Requests()[0].JSON()["input"].([]any) {
		got = append(got, it.(map[string]any)["content"].(string))
	}
	want := []string{"first", "summary"}
	for i := 20; i < 30; i++ {
		want = append(want, fmt.Sprintf("m%d", i))
	}
	want = append(want, "last")
	if !slices.Equal(got, want) {
		t.Errorf("sent %q\nwant %q", got, want)
	}
	// A chunk missing from the store is an invalid transcript.
	p.Transcript.Refs.Head = &cas0
	if _, err := g.Generate(t.Context(), st, p, "", nil); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("a missing chunk: %v", err)
	}
}

// TestOversizedItemsAreSentCut: an item past MaxItemBytes (a 5 MiB
// argument the model wrote) is sent cut with a note, in every later
// request; the store keeps it whole.
func TestOversizedItemsAreSentCut(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Text: "ok"}}})
	t.Cleanup(srv.Close)
	g := newTestGenerator(t, srv, nil)
	st := newStore()
	huge := strings.Repeat("x", 5<<20)
	call := fmt.Sprintf(`[{"type":"function_call","call_id":"c1","name":"workspace_write","arguments":"{\"content\":\"%s\"}"}]`, huge)
	out := `{"type":"function_call_output","call_id":"c1","output":"error: too large"}`
	p := Params{Model: "gpt-4o", MessageRefs: []cas.Ref{st.put(t, "write it"), st.put(t, call), st.put(t, out)}}
	if _, err := g.Generate(t.Context(), st, p, "", nil); err != nil {
		t.Fatal(err)
	}
	body := srv.Requests()[0].Body
	if len(body) > DefaultMaxItemBytes+4096 {
		t.Fatalf("the request is %d bytes", len(body))
	}
	if !strings.Contains(string(body), "cut for sending: ") || !strings.Contains(string(body), `"call_id":"c1"`) {
		t.Errorf("no note of the cut, or the call lost its id: %.300s", body)
	}
	if len(st.get(t, p.MessageRefs[1])) != len(call) {
		t.Error("the stored item changed")
	}
}
