package llm

import (
	"bytes"
	"io"
	"net/http"
	"testing"

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
