package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cas/chunked"
)

// nativeModes are the ways of calling the native providers, with a model
// of each that reasons.
var nativeModes = []struct {
	name, provider, model string
	stream                bool
}{
	{"anthropic", ProviderAnthropic, "claude-sonnet-4-5", false},
	{"anthropic-stream", ProviderAnthropic, "claude-sonnet-4-5", true},
	{"anthropic-adaptive", ProviderAnthropic, "claude-sonnet-5", true},
	{"gemini", ProviderGemini, "gemini-3.5-flash", false},
	{"gemini-stream", ProviderGemini, "gemini-3.5-flash", true},
}

// nativeGenerator returns a Generator for provider aimed at srv.
func nativeGenerator(t testing.TB, srv *llmtest.Server, provider string) *Generator {
	return newTestGenerator(t, srv, func(c *Config) { c.Provider, c.BaseURL = provider, srv.Root })
}

// chatLoop plays a chat against srv: the user's message, then each
// answer's output and one tool output per call, until an answer calls no
// tool. It returns the receipts.
func chatLoop(t *testing.T, g *Generator, st *memStore, p Params, stream bool) ([]Receipt, error) {
	t.Helper()
	var out []Receipt
	for round := 0; round < 10; round++ {
		var onDelta func(string)
		if stream {
			onDelta = func(string) {}
		}
		r, err := g.Generate(t.Context(), st, p, testKey, onDelta)
		if err != nil {
			return out, err
		}
		out = append(out, r)
		if len(r.ToolCallRefs) == 0 {
			return out, nil
		}
		p.MessageRefs = append(p.MessageRefs, r.OutputRef)
		for _, ref := range r.ToolCallRefs {
			var tc ToolCall
			if err := cas.GetNode(t.Context(), st, ref, &tc); err != nil {
				t.Fatal(err)
			}
			item, _ := json.Marshal(map[string]string{"type": "function_call_output", "call_id": tc.CallID, "output": "contents of " + tc.ArgumentsJSON})
			p.MessageRefs = append(p.MessageRefs, st.put(t, string(item)))
		}
	}
	t.Fatal("the chat did not end")
	return nil, nil
}

// TestNativeToolRounds plays three rounds with reasoning and tool calls
// (two in parallel in the second) against each native API as llmtest
// plays it, which refuses a follow-up whose thinking or thought
// signatures are missing or altered: every follow-up is taken, the
// reasoning comes back in the receipts, the usage counts the prompt
// cache's reads after the first round (Anthropic), the cost is known, and
// each request's evidence is its exact bytes.
func TestNativeToolRounds(t *testing.T) {
	for _, m := range nativeModes {
		t.Run(m.name, func(t *testing.T) {
			srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
				{Reasoning: "I should read the README first.", Calls: []llmtest.Call{{Name: "workspace_read", Arguments: `{"path":"README.md"}`}}},
				{Reasoning: "Two more files, at once.", Text: "Reading both.", Calls: []llmtest.Call{
					{Name: "workspace_read", Arguments: `{"path":"a.go"}`}, {Name: "workspace_read", Arguments: `{"path":"b.go"}`}}},
				{Reasoning: "Enough.", Text: "The README says hello; a.go and b.go are empty."},
			}})
			defer srv.Close()
			g := nativeGenerator(t, srv, m.provider)
			st := newStore()
			tools := st.put(t, `{"tools":[{"type":"function","name":"workspace_read","description":"Read a file","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},"strict":true}]}`)
			p := Params{Model: m.model, MaxTokens: 20000, ToolsRef: &tools, ToolChoice: &ToolChoice{Kind: ToolChoiceAuto},
				Instructions: ptr("You are the world's agent."), ReasoningEffort: ptr("high"),
				MessageRefs: []cas.Ref{st.put(t, "Summarise the README and the Go files.")}}
			rs, err := chatLoop(t, g, st, p, m.stream)
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 3 {
				t.Fatalf("%d rounds; want 3", len(rs))
			}
			last := rs[2]
			if last.OutputText != "The README says hello; a.go and b.go are empty." || last.FinishReason != "stop" {
				t.Errorf("last answer %q, %s", last.OutputText, last.FinishReason)
			}
			if rs[0].FinishReason != "tool_calls" || len(rs[1].ToolCallRefs) != 2 {
				t.Errorf("rounds: %s, %d calls", rs[0].FinishReason, len(rs[1].ToolCallRefs))
			}
			for i, r := range rs {
				var items []OutputItem
				if err := cas.GetNode(t.Context(), st, *r.OutputItemsRef, &items); err != nil {
					t.Fatal(err)
				}
				if items[0].Reasoning == nil {
					t.Errorf("round %d: the first output item is not the reasoning: %+v", i, items[0])
				}
				if !r.UsageKnown || !r.CostKnown || r.CostSource.Kind != CostFromPrice {
					t.Errorf("round %d: usage %v cost %v (%+v)", i, r.UsageKnown, r.CostKnown, r.CostSource)
				}
				if r.ProviderName != m.provider {
					t.Errorf("round %d: provider name %q", i, r.ProviderName)
				}
			}
			reqs := srv.Requests()
			if m.provider == ProviderAnthropic {
				if u := rs[2].TokenUsage; u.CacheRead == 0 || u.CacheWrite == 0 || u.Input <= u.CacheRead+u.CacheWrite {
					t.Errorf("the last round's usage %+v: want cache reads and writes within the input", u)
				}
				if n := bytes.Count(reqs[2].Body, []byte(`"cache_control"`)); n != 4 {
					t.Errorf("%d cache markers in the last request; want 4 (tools, system, two in the messages)", n)
				}
				if !bytes.Contains(reqs[1].Body, []byte(`"type":"thinking","thinking":"I should read the README first.","signature":"Eq`)) {
					t.Errorf("the thinking block did not go back:\n%s", reqs[1].Body)
				}
			}
			// The evidence of each request is the request sent.
			for i, r := range rs {
				got, err := chunked.Get(t.Context(), st, *r.RequestRef)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, reqs[i].Body) {
					t.Errorf("round %d: the evidence differs from the request sent:\n%s\n%s", i, got, reqs[i].Body)
				}
			}
		})
	}
}

// TestNativeSignatureRefused alters the signature the model gave before
// the follow-up: the server refuses it as the provider would, and the
// error says so (HTTP 400, not retried).
func TestNativeSignatureRefused(t *testing.T) {
	for _, m := range nativeModes {
		if m.stream {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
				{Reasoning: "Read it.", Calls: []llmtest.Call{{Name: "workspace_read", Arguments: `{"path":"README.md"}`}}},
				{Text: "never sent"},
			}})
			defer srv.Close()
			g := nativeGenerator(t, srv, m.provider)
			st := newStore()
			tools := st.put(t, `[{"type":"function","name":"workspace_read","parameters":{"type":"object"}}]`)
			p := Params{Model: m.model, MaxTokens: 20000, ToolsRef: &tools, ReasoningEffort: ptr("high"), MessageRefs: []cas.Ref{st.put(t, "Read the README.")}}
			r, err := g.Generate(t.Context(), st, p, testKey, nil)
			if err != nil {
				t.Fatal(err)
			}
			out := st.get(t, r.OutputRef)
			sig := map[string]string{ProviderAnthropic: `"signature":"Eq`, ProviderGemini: `"thoughtSignature":"Cq`}[m.provider]
			if !strings.Contains(out, sig) {
				t.Fatalf("the output keeps no signature:\n%s", out)
			}
			altered := strings.Replace(out, sig, sig+"x", 1)
			var tc ToolCall
			_ = cas.GetNode(t.Context(), st, r.ToolCallRefs[0], &tc)
			p.MessageRefs = append(p.MessageRefs, st.put(t, altered),
				st.put(t, `{"type":"function_call_output","call_id":"`+tc.CallID+`","output":"hello"}`))
			_, err = g.Generate(t.Context(), st, p, testKey, nil)
			var pe *ProviderError
			if !errors.As(err, &pe) || pe.Kind != KindBadRequest || pe.Status != 400 || pe.Retryable {
				t.Fatalf("err %v; want a bad request", err)
			}
			want := map[string]string{ProviderAnthropic: "Invalid `signature` in `thinking` block", ProviderGemini: "Corrupted thought signature"}[m.provider]
			if !strings.Contains(pe.Message, want) {
				t.Errorf("message %q; want %q", pe.Message, want)
			}
		})
	}
}

// TestNativeEvidence: the evidence of every request is the request sent,
// byte for byte, while the requests are spliced from parts kept across
// calls: two chats that begin alike, played in turns, calls that fail and
// are tried again, a call that fails for good, and a key that appears in
// a tool's output (stored as [REDACTED]).
func TestNativeEvidence(t *testing.T) {
	for _, m := range nativeModes {
		if m.stream {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			var turns []llmtest.Turn
			for i := range 12 {
				switch i % 4 {
				case 1:
					turns = append(turns, llmtest.Turn{Status: 503}) // tried again
				case 3:
					turns = append(turns, llmtest.Turn{Status: 400}) // not tried again
				}
				turns = append(turns, llmtest.Turn{Reasoning: fmt.Sprintf("Round %d.", i), Calls: []llmtest.Call{{Name: "workspace_read", Arguments: fmt.Sprintf(`{"path":"%d.md"}`, i)}}})
			}
			srv := llmtest.NewServer(llmtest.Script{Turns: turns})
			defer srv.Close()
			g := newTestGenerator(t, srv, func(c *Config) { c.Provider, c.BaseURL, c.MaxAttempts = m.provider, srv.Root, 2 })
			st := newStore()
			hi := st.put(t, "Read the files, one a round.")
			chats := []Params{{Model: m.model, MaxTokens: 20000, ReasoningEffort: ptr("high"), MessageRefs: []cas.Ref{hi}},
				{Model: m.model, MaxTokens: 20000, ReasoningEffort: ptr("high"), MessageRefs: []cas.Ref{hi}}}
			for round := range 12 {
				p := &chats[round%2]
				before := len(srv.Requests())
				r, err := g.Generate(t.Context(), st, *p, testKey, nil)
				if err != nil {
					var pe *ProviderError
					if !errors.As(err, &pe) || pe.Status != 400 {
						t.Fatalf("round %d: %v", round, err)
					}
					continue
				}
				sent := srv.Requests()[len(srv.Requests())-1].Body
				if len(srv.Requests()) == before {
					t.Fatalf("round %d sent nothing", round)
				}
				got, err := chunked.Get(t.Context(), st, *r.RequestRef)
				if err != nil {
					t.Fatal(err)
				}
				want := bytes.ReplaceAll(sent, []byte(testKey), []byte(redacted))
				if !bytes.Equal(got, want) {
					t.Fatalf("round %d: the evidence differs from the request sent:\n%s\n%s", round, got, want)
				}
				var tc ToolCall
				if err := cas.GetNode(t.Context(), st, r.ToolCallRefs[0], &tc); err != nil {
					t.Fatal(err)
				}
				// A tool output that holds the key (as a careless tool's might).
				out, _ := json.Marshal(map[string]string{"type": "function_call_output", "call_id": tc.CallID, "output": "token=" + testKey})
				p.MessageRefs = append(p.MessageRefs, r.OutputRef, st.put(t, string(out)))
			}
			for _, b := range st.all() {
				if bytes.Contains(b, []byte(testKey)) && !bytes.Contains(b, []byte(`"token=`+testKey)) {
					t.Errorf("a stored blob holds the key:\n%.300s", b)
				}
			}
		})
	}
}
