package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cas/chunked"
)

// TestPauseTurnContinued: an answer Anthropic pauses (stop_reason
// pause_turn, in its web search) goes back as it came, as the request's
// last message, and the model's continuation completes the one call: the
// receipt is the whole answer, its usage the segments' sum, its evidence
// the last request and the segments made one message. llmtest refuses a
// continuation whose request does not end with the paused content.
func TestPauseTurnContinued(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := "json"
		if stream {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) {
			srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
				{Reasoning: "I should search.", Text: "Searching the web.", WebSearch: "go 1.26 release date", Incomplete: "pause_turn",
					Usage: &llmtest.Usage{Input: 100, Output: 20}},
				{Text: "Go 1.26 came out in February.", Continues: true, Usage: &llmtest.Usage{Input: 150, Output: 10}},
			}})
			defer srv.Close()
			g := nativeGenerator(t, srv, ProviderAnthropic)
			st := newStore()
			p := Params{Model: "claude-sonnet-5", MaxTokens: 20000, ReasoningEffort: ptr("high"),
				MessageRefs: []cas.Ref{st.put(t, "When did Go 1.26 come out?")}}
			var deltas strings.Builder
			var onDelta func(string)
			if stream {
				onDelta = func(s string) { deltas.WriteString(s) }
			}
			r, err := g.Generate(t.Context(), st, p, testKey, onDelta)
			if err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests; want 2 (the answer, its continuation)", len(reqs))
			}
			if r.FinishReason != "stop" {
				t.Errorf("finish %q; want stop", r.FinishReason)
			}
			if r.OutputText != "Searching the web.\nGo 1.26 came out in February." {
				t.Errorf("output text %q", r.OutputText)
			}
			if stream && deltas.String() != r.OutputText {
				t.Errorf("streamed %q; want the answer's text %q", deltas.String(), r.OutputText)
			}
			// The context it ended with (the last request's 150 in), all
			// it wrote (30 out); priced at both requests' tokens.
			if r.TokenUsage.Input != 150 || r.TokenUsage.Output != 30 || r.Attempts != 2 {
				t.Errorf("usage %+v, attempts %d; want 150 in (the last request's), 30 out (both), 2 attempts", r.TokenUsage, r.Attempts)
			}
			m, _ := g.modelOf(ProviderAnthropic, "claude-sonnet-5")
			if want := m.Price.CostMicroUSD(TokenUsage{Input: 250, Output: 30}); !r.CostKnown || r.CostMicroUSD != want {
				t.Errorf("cost %d (known %v); want %d, both requests' tokens", r.CostMicroUSD, r.CostKnown, want)
			}
			out := st.get(t, r.OutputRef)
			for _, want := range []string{`"type":"reasoning"`, `"server_tool_use"`, `"web_search_tool_result"`, "Go 1.26 came out"} {
				if !strings.Contains(out, want) {
					t.Errorf("the output lacks %s:\n%s", want, out)
				}
			}
			// The continuation ends with the paused content, thinking
			// signed as it came.
			var body struct {
				Messages []struct {
					Role    string            `json:"role"`
					Content []json.RawMessage `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(reqs[1].Body, &body); err != nil {
				t.Fatal(err)
			}
			last := body.Messages[len(body.Messages)-1]
			if last.Role != "assistant" || len(last.Content) != 4 || !bytes.Contains(last.Content[0], []byte(`"type":"thinking"`)) {
				t.Errorf("the continuation's last message: %s %s", last.Role, last.Content)
			}
			got, err := chunked.Get(t.Context(), st, *r.RequestRef)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, reqs[1].Body) {
				t.Errorf("the request evidence is not the last request sent")
			}
			whole, err := parseAnthropicBody([]byte(st.get(t, *r.ResponseRef)))
			if err != nil {
				t.Fatal(err)
			}
			if string(whole.output) != out {
				t.Errorf("the response evidence does not parse to the output:\n%s\n%s", whole.output, out)
			}
		})
	}
}

// TestPauseTurnBounded: an answer still paused after
// MaxPauseContinuations continuations ends the call, cut, with all it
// said; a continuation the server refuses leaves the answer as it was
// paused, the failure among the receipt's failed attempts.
func TestPauseTurnBounded(t *testing.T) {
	turns := []llmtest.Turn{{Text: "Searching.", WebSearch: "q", Incomplete: "pause_turn"}}
	for range MaxPauseContinuations {
		turns = append(turns, llmtest.Turn{Text: "Still searching.", WebSearch: "q", Incomplete: "pause_turn", Continues: true})
	}
	srv := llmtest.NewServer(llmtest.Script{Turns: turns})
	defer srv.Close()
	g := nativeGenerator(t, srv, ProviderAnthropic)
	st := newStore()
	p := Params{Model: "claude-sonnet-5", MaxTokens: 2000, MessageRefs: []cas.Ref{st.put(t, "Search.")}}
	r, err := g.Generate(t.Context(), st, p, testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Requests()); n != 1+MaxPauseContinuations {
		t.Errorf("%d requests; want %d", n, 1+MaxPauseContinuations)
	}
	if r.FinishReason != "incomplete: pause_turn" || !FinishCut(r.FinishReason) {
		t.Errorf("finish %q; want incomplete: pause_turn", r.FinishReason)
	}
	if strings.Count(r.OutputText, "Still searching.") != MaxPauseContinuations {
		t.Errorf("output text %q", r.OutputText)
	}

	// The continuation refused (not the paused content: the script's
	// second turn does not continue the first's).
	srv2 := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Text: "Searching.", Incomplete: "pause_turn"},
		{Status: 400, Error: &llmtest.ErrorBody{Message: "no more"}},
	}})
	defer srv2.Close()
	g2 := nativeGenerator(t, srv2, ProviderAnthropic)
	r2, err := g2.Generate(t.Context(), st, p, testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r2.FinishReason != "incomplete: pause_turn" || r2.OutputText != "Searching." || r2.FailedAttemptsRef == nil {
		t.Fatalf("finish %q text %q failed %v; want the paused answer, its continuation's failure kept", r2.FinishReason, r2.OutputText, r2.FailedAttemptsRef)
	}
	var failed []FailedAttempt
	if err := cas.GetNode(t.Context(), st, *r2.FailedAttemptsRef, &failed); err != nil {
		t.Fatal(err)
	}
	if len(failed) != 1 || !strings.Contains(failed[0].Message, "continuing the paused answer: no more") || failed[0].Status != 400 {
		t.Errorf("failed attempts %+v", failed)
	}
}

// TestHeadOpen: the start of a native request, and of its messages, as
// both dialects write them.
func TestHeadOpen(t *testing.T) {
	for _, c := range []struct {
		head   any
		member string
		want   string
	}{
		{geminiHead{}, "contents", `{"contents":[`},
		{anthropicHead{Model: "claude-x", MaxTokens: 5}, "messages", `{"model":"claude-x","max_tokens":5,"messages":[`},
		{geminiHead{SystemInstruction: &gSystem{Parts: []gText{{Text: "a<b"}}}}, "contents", `{"systemInstruction":{"parts":[{"text":"a<b"}]},"contents":[`},
	} {
		got, err := headOpen(c.head, c.member)
		if err != nil || string(got) != c.want {
			t.Errorf("headOpen(%+v) = %s, %v; want %s", c.head, got, err, c.want)
		}
	}
	if _, err := headOpen([]int{1}, "contents"); err == nil {
		t.Error("headOpen of a list: no error")
	}
	if got := string(anthropicDialect{}.groupOpen("user", false)) + string(geminiDialect{}.groupOpen("model", true)); got != `,{"role":"user","content":[{"role":"model","parts":[` {
		t.Errorf("groupOpen: %s", got)
	}
}

// TestPauseTurnCancelled: a call abandoned while it continues a paused
// answer is abandoned, as one abandoned before its first answer is.
func TestPauseTurnCancelled(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Text: "Searching.", WebSearch: "q", Incomplete: "pause_turn"},
		{Text: "never", Continues: true, Delay: llmtest.Duration(time.Minute)},
	}})
	defer srv.Close()
	g := nativeGenerator(t, srv, ProviderAnthropic)
	st := newStore()
	p := Params{Model: "claude-sonnet-5", MaxTokens: 2000, MessageRefs: []cas.Ref{st.put(t, "Search.")}}
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for srv.Served() < 2 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	_, err := g.Generate(ctx, st, p, testKey, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v; want the call abandoned (context canceled)", err)
	}
}

// TestStreamedTextIsTheAnswers: the text a native stream delivers is the
// answer's text, a line apart where the answer's messages are (after a
// call, reasoning or a server tool), run on where they are pieces of one.
func TestStreamedTextIsTheAnswers(t *testing.T) {
	g := &geminiStream{}
	var got strings.Builder
	for _, chunk := range []string{
		`{"candidates":[{"content":{"parts":[{"text":"Call","thoughtSignature":"CqA"}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"text":"ing."},{"functionCall":{"name":"f","args":{}}}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"text":"Called."}]},"finishReason":"STOP"}],"responseId":"r"}`,
	} {
		d, err := g.add("", []byte(chunk))
		if err != nil {
			t.Fatal(err)
		}
		got.WriteString(d)
	}
	body, err := g.assemble()
	if err != nil {
		t.Fatal(err)
	}
	res, err := parseGeminiBody(body)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != res.text || res.text != "Calling.\nCalled." {
		t.Errorf("gemini: streamed %q, answer %q; want both %q", got.String(), res.text, "Calling.\nCalled.")
	}

	a := &anthropicStream{}
	got.Reset()
	for _, ev := range []string{
		`{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"claude-sonnet-5","content":[]}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Searching."}}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Found"}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":" it."}}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`,
		`{"type":"message_stop"}`,
	} {
		d, err := a.add("", []byte(ev))
		if err != nil {
			t.Fatal(err)
		}
		got.WriteString(d)
	}
	if body, err = a.assemble(); err != nil {
		t.Fatal(err)
	}
	if res, err = parseAnthropicBody(body); err != nil {
		t.Fatal(err)
	}
	if got.String() != res.text || res.text != "Searching.\nFound it." {
		t.Errorf("anthropic: streamed %q, answer %q; want both %q", got.String(), res.text, "Searching.\nFound it.")
	}
}

// TestPauseTurnThenTools: a continued answer that ends calling a tool is
// one round like any other: the next request (the whole answer, then the
// tool's output) is taken, thinking and all.
func TestPauseTurnThenTools(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
			{Reasoning: "Search first.", Text: "Searching.", WebSearch: "q", Incomplete: "pause_turn"},
			{Text: "Now the file.", Continues: true, Calls: []llmtest.Call{{Name: "workspace_read", Arguments: `{"path":"a.go"}`}}},
			{Reasoning: "Done.", Text: "a.go is empty."},
		}})
		g := nativeGenerator(t, srv, ProviderAnthropic)
		st := newStore()
		tools := st.put(t, `[{"type":"function","name":"workspace_read","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}]`)
		p := Params{Model: "claude-sonnet-4-5", MaxTokens: 20000, ToolsRef: &tools, ReasoningEffort: ptr("high"),
			MessageRefs: []cas.Ref{st.put(t, "Search, then read a.go.")}}
		rs, err := chatLoop(t, g, st, p, stream)
		srv.Close()
		if err != nil {
			t.Fatalf("stream %v: %v", stream, err)
		}
		if len(rs) != 2 || rs[0].FinishReason != "tool_calls" || rs[1].OutputText != "a.go is empty." {
			t.Errorf("stream %v: %d rounds, %+v", stream, len(rs), rs)
		}
	}
}
