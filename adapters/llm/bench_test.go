package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/cas"
)

// benchTurn is one tool call, the common shape of an agent round.
var benchTurn = llmtest.Turn{Calls: []llmtest.Call{{Name: "introspect_manifest", Arguments: `{"consistency":"head"}`}}}

// benchParams stores a short transcript and a one-tool spec.
func benchParams(b *testing.B, st *memStore, provider string) Params {
	tools := st.put(b, `{"tools":[{"type":"function","name":"introspect_manifest","description":"Read the world's manifest",`+
		`"parameters":{"type":"object","properties":{"consistency":{"type":"string"}},"required":["consistency"],"additionalProperties":false},"strict":true}]}`)
	return Params{Provider: provider, Model: "gpt-5.2", MaxTokens: 1024, ToolsRef: &tools,
		ToolChoice:   &ToolChoice{Kind: ToolChoiceAuto},
		Instructions: ptr("You are the world's agent."),
		MessageRefs:  []cas.Ref{st.put(b, "What does the manifest define?")}}
}

// BenchmarkGenerate is one llm.generate against llmtest on loopback with
// no delay: loading blobs, building the request, the HTTP round trip, the
// fake server's rendering, parsing, and storing the receipt's blobs and
// nodes in a map store. Compare with BenchmarkBaselineHTTP, the same
// round trip with raw net/http, to get the adapter's own overhead.
func BenchmarkGenerate(b *testing.B) {
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			srv := llmtest.NewServerFunc(func(llmtest.Request) llmtest.Turn { return benchTurn })
			defer srv.Close()
			g := newTestGenerator(b, srv, nil)
			st := newStore()
			p := benchParams(b, st, m.provider)
			var onDelta func(string)
			if m.stream {
				onDelta = func(string) {}
			}
			b.ReportAllocs()
			for b.Loop() {
				r, err := g.Generate(b.Context(), st, p, testKey, onDelta)
				if err != nil || len(r.ToolCallRefs) != 1 {
					b.Fatal(r, err)
				}
			}
		})
	}
}

// BenchmarkBaselineHTTP posts the request body Generate sends to the same
// server with a plain net/http client and reads the answer: the floor
// Generate cannot go below.
func BenchmarkBaselineHTTP(b *testing.B) {
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			srv := llmtest.NewServerFunc(func(llmtest.Request) llmtest.Turn { return benchTurn })
			defer srv.Close()
			g := newTestGenerator(b, srv, nil)
			st := newStore()
			var onDelta func(string)
			if m.stream {
				onDelta = func(string) {}
			}
			r, err := g.Generate(b.Context(), st, benchParams(b, st, m.provider), testKey, onDelta)
			if err != nil {
				b.Fatal(err)
			}
			body := []byte(st.get(b, *r.RequestRef))
			url := srv.URL + "/responses"
			if m.provider == ProviderChat {
				url = srv.URL + "/chat/completions"
			}
			client := &http.Client{}
			b.ReportAllocs()
			for b.Loop() {
				req, err := http.NewRequestWithContext(b.Context(), http.MethodPost, url, bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+testKey)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, resp.Body); err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	}
}

// roundServer answers every request of api with one tool call, at once,
// reading the request body to its end and doing nothing else with it: a
// stand-in for the provider whose own time does not grow with the
// request, so that the adapter's time is what grows. Each answer's call
// has its own id.
func roundServer(api string) *httptest.Server {
	var n atomic.Int64
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		k := n.Add(1)
		id := fmt.Sprintf("call_%06d", k)
		var body string
		switch api {
		case "responses":
			body = `{"id":"resp_` + id + `","object":"response","status":"completed","model":"gpt-5.2","output":[` +
				`{"type":"reasoning","id":"rs_` + id + `","summary":[],"encrypted_content":"gAAAAB` + strings.Repeat("x", 400) + `"},` +
				`{"type":"function_call","id":"fc_` + id + `","call_id":"` + id + `","name":"introspect_manifest","arguments":"{\"consistency\":\"head\"}","status":"completed"}],` +
				`"usage":{"input_tokens":1000,"input_tokens_details":{"cached_tokens":900},"output_tokens":50,"output_tokens_details":{"reasoning_tokens":30}}}`
		case "chat":
			body = `{"id":"chatcmpl-` + id + `","object":"chat.completion","model":"gpt-5.2","choices":[{"index":0,"message":{"role":"assistant","content":null,` +
				`"tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"introspect_manifest","arguments":"{\"consistency\":\"head\"}"}}]},"finish_reason":"tool_calls"}],` +
				`"usage":{"prompt_tokens":1000,"completion_tokens":50}}`
		case "anthropic":
			body = `{"id":"msg_` + id + `","type":"message","role":"assistant","model":"claude-sonnet-5","content":[` +
				`{"type":"thinking","thinking":"The manifest, again.","signature":"Eq` + strings.Repeat("x", 400) + `"},` +
				`{"type":"tool_use","id":"toolu_` + id + `","name":"introspect_manifest","input":{"consistency":"head"}}],` +
				`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":90,"cache_read_input_tokens":900,"output_tokens":50}}`
		case "gemini":
			body = `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"id":"` + id + `","name":"introspect_manifest","args":{"consistency":"head"}},` +
				`"thoughtSignature":"Cq` + strings.Repeat("x", 400) + `"}]},"finishReason":"STOP","index":0}],` +
				`"usageMetadata":{"promptTokenCount":1000,"candidatesTokenCount":20,"thoughtsTokenCount":30,"cachedContentTokenCount":900},"modelVersion":"gemini-3.5-flash","responseId":"` + id + `"}`
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}))
}

// timedTransport counts the time a client spends in the HTTP exchange:
// from sending the request to the response's headers, and reading its
// body. The rest of a Generate call is the adapter's own time.
type timedTransport struct {
	base http.RoundTripper
	in   time.Duration
}

func (t *timedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.base.RoundTrip(r)
	t.in += time.Since(start)
	if resp != nil {
		resp.Body = &timedBody{ReadCloser: resp.Body, t: t}
	}
	return resp, err
}

type timedBody struct {
	io.ReadCloser
	t *timedTransport
}

func (b *timedBody) Read(p []byte) (int, error) {
	start := time.Now()
	n, err := b.ReadCloser.Read(p)
	b.t.in += time.Since(start)
	return n, err
}

// sessionModes are the providers of BenchmarkLongSession, each with its
// server's API and a model of its own.
var sessionModes = []struct{ provider, api, model string }{
	{ProviderResponses, "responses", "gpt-5.2"},
	{ProviderChat, "chat", "gpt-5.2"},
	{ProviderAnthropic, "anthropic", "claude-sonnet-5"},
	{ProviderGemini, "gemini", "gemini-3.5-flash"},
}

// BenchmarkLongSession plays agent turns of tool rounds through Generate,
// each round's request the whole transcript so far (the user's message,
// then per round the model's output and a tool output of about 1 KB),
// against a server that answers at once with one call and reads the
// request without looking at it (roundServer). It reports the adapter's
// own time a round — Generate's time less the time in the HTTP exchange
// (timedTransport) — early, at 3 to 12 rounds (the median of five turns of
// 12 rounds), and late, at 1,000 (the median of rounds 951 to 1,000 of a
// turn of 1,000), and their ratio: the target is a ratio of at most 1.5, a
// round costing its new items whatever the session's length. Medians,
// because a round the machine's load (or a GC) slowed does not move them.
// The store is cas.Memory, which the evidence of native requests builds on
// (chunked.Writer.PutParts).
func BenchmarkLongSession(b *testing.B) {
	output := strings.Repeat(`{"name":"demiurge/ChatEvent@2","hash":"blake3:0123456789abcdef"},`, 16)
	median := func(ds []time.Duration) float64 {
		ds = slices.Clone(ds)
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Nanoseconds()) / 1e3
	}
	for _, m := range sessionModes {
		b.Run(m.api, func(b *testing.B) {
			srv := roundServer(m.api)
			defer srv.Close()
			tt := &timedTransport{base: http.DefaultTransport}
			g, err := New(Config{Provider: m.provider, BaseURL: map[bool]string{true: srv.URL, false: srv.URL + "/v1"}[isNative(m.provider)],
				HTTPClient: &http.Client{Transport: tt}, Backoff: func(int) time.Duration { return 0 }, Logger: quietLogger})
			if err != nil {
				b.Fatal(err)
			}
			st := cas.NewMemory()
			put := func(s string) cas.Ref {
				r, err := st.Put(b.Context(), []byte(s))
				if err != nil {
					b.Fatal(err)
				}
				return r
			}
			tools := put(`{"tools":[{"type":"function","name":"introspect_manifest","description":"Read the world's manifest",` +
				`"parameters":{"type":"object","properties":{"consistency":{"type":"string"}},"required":["consistency"],"additionalProperties":false},"strict":true}]}`)
			// turn plays a turn of n rounds, its user message the k-th, and
			// returns the adapter's own time of each round.
			turn := func(k, n int) []time.Duration {
				p := Params{Model: m.model, MaxTokens: 1024, ToolsRef: &tools, ToolChoice: &ToolChoice{Kind: ToolChoiceAuto},
					Instructions: ptr("You are the world's agent."), MessageRefs: []cas.Ref{put(fmt.Sprintf("What does the manifest define? (%d)", k))}}
				own := make([]time.Duration, n)
				for i := range n {
					tt.in = 0
					start := time.Now()
					r, err := g.Generate(b.Context(), st, p, testKey, nil)
					own[i] = time.Since(start) - tt.in
					if err != nil || len(r.ToolCallRefs) != 1 {
						b.Fatalf("round %d: %v", i, err)
					}
					var tc ToolCall
					if err := cas.GetNode(b.Context(), st, r.ToolCallRefs[0], &tc); err != nil {
						b.Fatal(err)
					}
					result, _ := json.Marshal(map[string]string{"type": "function_call_output", "call_id": tc.CallID,
						"output": fmt.Sprintf(`{"round":%d,"schemas":[%s]}`, i, output)})
					p.MessageRefs = append(p.MessageRefs, r.OutputRef, put(string(result)))
				}
				return own
			}
			var early, late float64
			b.ReportAllocs()
			k := 0
			for b.Loop() {
				var short []time.Duration
				for range 5 {
					k++
					short = append(short, turn(k, 12)[2:]...)
				}
				k++
				long := turn(k, 1000)
				early, late = median(short), median(long[950:])
			}
			b.ReportMetric(early, "early-µs/round")
			b.ReportMetric(late, "late-µs/round")
			b.ReportMetric(late/early, "late/early")
		})
	}
}
