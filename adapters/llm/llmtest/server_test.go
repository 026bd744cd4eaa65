package llmtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
)

func client(srv *llmtest.Server) openai.Client {
	return openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-llmtest"), option.WithMaxRetries(0))
}

func userInput(text string) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model: "gpt-5.2",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser),
		}},
		Include: []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
	}
}

var toolTurn = llmtest.Turn{
	Reasoning: "Need the file.",
	Text:      "Let me look.",
	Calls: []llmtest.Call{
		{Name: "workspace_read", Arguments: `{"path":"README.md"}`},
		{Name: "bash", Arguments: `{"script": "ls`}, // malformed on purpose
	},
}

// TestSDKReadsResponses checks that the official SDK understands the
// server's Responses answers, JSON and streamed.
func TestSDKReadsResponses(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{toolTurn, toolTurn}})
	defer srv.Close()
	c := client(srv)

	resp, err := c.Responses.New(t.Context(), userInput("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != "Let me look." || !strings.HasPrefix(resp.ID, "resp_") || resp.Model != "gpt-5.2" {
		t.Errorf("response %s", resp.RawJSON())
	}
	var calls []responses.ResponseFunctionToolCall
	for _, it := range resp.Output {
		switch v := it.AsAny().(type) {
		case responses.ResponseFunctionToolCall:
			calls = append(calls, v)
		case responses.ResponseReasoningItem:
			if !strings.HasPrefix(v.EncryptedContent, "gAAAAA") || v.Summary[0].Text != "Need the file." {
				t.Errorf("reasoning %s", v.RawJSON())
			}
		}
	}
	if len(calls) != 2 || calls[1].Arguments != `{"script": "ls` || !strings.HasPrefix(calls[0].CallID, "call_") || !strings.HasPrefix(calls[0].ID, "fc_") {
		t.Errorf("calls %+v", calls)
	}
	if resp.Usage.InputTokens == 0 || resp.Usage.OutputTokens <= resp.Usage.OutputTokensDetails.ReasoningTokens {
		t.Errorf("usage %s", resp.Usage.RawJSON())
	}

	stream := c.Responses.NewStreaming(t.Context(), userInput("hi"))
	var text strings.Builder
	var final responses.Response
	seq := int64(-1)
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber != seq+1 {
			t.Errorf("sequence number %d after %d", ev.SequenceNumber, seq)
		}
		seq = ev.SequenceNumber
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed":
			final = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != "Let me look." || final.OutputText() != "Let me look." || len(final.Output) != 4 {
		t.Errorf("streamed text %q, final %s", text.String(), final.RawJSON())
	}
	// Ids derive from the turn number, so two turns never share one.
	if final.ID == resp.ID {
		t.Error("two turns share a response id")
	}
	if got := srv.Served(); got != 2 || srv.Remaining() != 0 {
		t.Errorf("served %d, remaining %d", got, srv.Remaining())
	}
}

func TestSDKReadsChat(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{toolTurn, toolTurn}})
	defer srv.Close()
	c := client(srv)
	params := openai.ChatCompletionNewParams{Model: "qwen", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}

	comp, err := c.Chat.Completions.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	msg := comp.Choices[0].Message
	if msg.Content != "Let me look." || len(msg.ToolCalls) != 2 || msg.ToolCalls[1].Function.Arguments != `{"script": "ls` || comp.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("completion %s", comp.RawJSON())
	}

	params.StreamOptions.IncludeUsage = openai.Bool(true)
	stream := c.Chat.Completions.NewStreaming(t.Context(), params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	got := acc.Choices[0].Message
	if got.Content != "Let me look." || len(got.ToolCalls) != 2 || got.ToolCalls[0].Function.Arguments != `{"path":"README.md"}` ||
		!strings.HasPrefix(got.ToolCalls[0].ID, "call_") || acc.Usage.TotalTokens == 0 {
		t.Errorf("accumulated %+v usage %+v", got, acc.Usage)
	}
}

func TestErrorTurns(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Status: 429, Header: map[string]string{"Retry-After": "7"}},
		{Status: 400, Error: &llmtest.ErrorBody{Message: "bad tool_choice", Param: "tool_choice", Code: "invalid_value"}},
		{Body: "<html>oops</html>", Status: 502},
	}})
	defer srv.Close()
	c := client(srv)
	var resp *http.Response
	_, err := c.Responses.New(t.Context(), userInput("hi"), option.WithResponseInto(&resp))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "rate_limit_exceeded" || resp.Header.Get("Retry-After") != "7" {
		t.Errorf("429 turn: %v", err)
	}
	_, err = c.Responses.New(t.Context(), userInput("hi"))
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Message != "bad tool_choice" || apiErr.Param != "tool_choice" || apiErr.Type != "invalid_request_error" {
		t.Errorf("400 turn: %v", err)
	}
	status, body := post(t, srv.URL+"/responses", `{"model":"m","input":"x"}`)
	if status != 502 || body != "<html>oops</html>" {
		t.Errorf("raw body turn: %d %q", status, body)
	}
	// The script is used up.
	status, body = post(t, srv.URL+"/responses", `{"model":"m","input":"x"}`)
	if status != 400 || !strings.Contains(body, "llmtest_script_exhausted") {
		t.Errorf("exhausted script: %d %s", status, body)
	}
}

func TestBadRequests(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Text: "x"}}})
	defer srv.Close()
	tests := []struct {
		path, body string
		status     int
		want       string
	}{
		{"/embeddings", `{"model":"m"}`, 404, "Invalid URL"},
		{"/responses", `{"model":`, 400, "could not parse the JSON body"},
		{"/chat/completions", `{"messages":[]}`, 400, "Missing required parameter: 'model'"},
	}
	for _, tc := range tests {
		status, body := post(t, srv.URL+tc.path, tc.body)
		if status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s: %d %s", tc.path, tc.body, status, body)
		}
	}
	if srv.Served() != 0 {
		t.Error("a bad request used up a turn")
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || reqs[1].Seq != 1 || string(reqs[1].Body) != `{"model":` || reqs[0].API != "" || reqs[2].API != llmtest.APIChat {
		t.Errorf("requests %+v", reqs)
	}
}

func TestRequestsCaptured(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Text: "a"}, {Text: "b"}}})
	defer srv.Close()
	body := `{"model":"m",  "input":[{"role":"user","content":"hi"}],"stream":false}`
	post(t, srv.URL+"/responses", body)
	post(t, srv.URL+"/chat/completions", `{"model":"n","messages":[],"stream":true}`)
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if string(r.Body) != body || r.API != llmtest.APIResponses || r.Model != "m" || r.Stream || r.Method != "POST" || r.Path != "/v1/responses" {
		t.Errorf("request %+v", r)
	}
	if in := r.JSON()["input"].([]any)[0].(map[string]any); in["content"] != "hi" {
		t.Errorf("decoded input %v", r.JSON()["input"])
	}
	if !reqs[1].Stream || reqs[1].API != llmtest.APIChat || reqs[1].Seq != 1 {
		t.Errorf("second request %+v", reqs[1])
	}
}

func TestDeterministicAnswers(t *testing.T) {
	script := llmtest.Script{Turns: []llmtest.Turn{toolTurn}}
	var first []string
	for range 2 {
		var got []string
		for _, path := range []string{"/responses", "/chat/completions"} {
			for _, stream := range []string{"false", "true"} {
				srv := llmtest.NewServer(script)
				_, body := post(t, srv.URL+path, `{"model":"m","input":"x","messages":[],"stream":`+stream+`,"stream_options":{"include_usage":true}}`)
				srv.Close()
				got = append(got, body)
			}
		}
		if first != nil && strings.Join(got, "\x00") != strings.Join(first, "\x00") {
			t.Error("the same script answered differently")
		}
		first = got
	}
	if !strings.Contains(first[1], "event: response.completed\ndata: {") || !strings.HasSuffix(first[3], "data: [DONE]\n\n") {
		t.Errorf("stream framing:\n%s\n%s", first[1], first[3])
	}
}

func TestCallbackServer(t *testing.T) {
	srv := llmtest.NewServerFunc(func(r llmtest.Request) llmtest.Turn {
		return llmtest.Turn{Text: "you asked " + r.Model, Model: "served-by-callback"}
	})
	defer srv.Close()
	c := client(srv)
	resp, err := c.Responses.New(t.Context(), userInput("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != "you asked gpt-5.2" || resp.Model != "served-by-callback" {
		t.Errorf("response %s", resp.RawJSON())
	}
	if srv.Served() != 1 || srv.Remaining() != 0 {
		t.Errorf("served %d", srv.Served())
	}
}

func TestCutOffAndDelay(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Text: "partial answer", CutOff: true},
		{Text: "partial answer", CutOff: true},
		{Text: "slow", Delay: llmtest.Duration(5 * time.Second)},
	}})
	defer srv.Close()
	_, err := postErr(t.Context(), srv.URL+"/responses", `{"model":"m","input":"x"}`)
	if err == nil {
		t.Error("a cut-off JSON body read without error")
	}
	body, err := postErr(t.Context(), srv.URL+"/responses", `{"model":"m","input":"x","stream":true}`)
	if err == nil || strings.Contains(body, "response.completed") || !strings.Contains(body, "response.created") {
		t.Errorf("cut-off stream: err %v, body %s", err, body)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := postErr(ctx, srv.URL+"/responses", `{"model":"m","input":"x"}`); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("delayed turn: %v", err)
	}
}

func TestParseScript(t *testing.T) {
	s, err := llmtest.ParseScript([]byte(`{"turns":[{"text":"a","delay":"150ms","event_delay":"2ms"},{"calls":[{"name":"f","arguments":"{"}],"delay":20},{"status":500}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Turns) != 3 || time.Duration(s.Turns[0].Delay) != 150*time.Millisecond || time.Duration(s.Turns[0].EventDelay) != 2*time.Millisecond || time.Duration(s.Turns[1].Delay) != 20*time.Millisecond ||
		s.Turns[1].Calls[0].Arguments != "{" || s.Turns[2].Status != 500 {
		t.Errorf("script %+v", s)
	}
	s, err = llmtest.ParseScript([]byte(` [{"text":"a"}] `))
	if err != nil || len(s.Turns) != 1 {
		t.Errorf("bare array: %+v %v", s, err)
	}
	for _, bad := range []string{`{"turns":[{"txt":"a"}]}`, `{"turns":[{"delay":"soon"}]}`, `{"turns":[{"delay":true}]}`, `{"turns":[]} {}`, `[`} {
		if _, err := llmtest.ParseScript([]byte(bad)); err == nil {
			t.Errorf("ParseScript(%s) succeeded", bad)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "script.json")
	if err := os.WriteFile(path, []byte(`{"turns":[{"status":42}], "extra":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := llmtest.LoadScript(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("LoadScript: %v; want an error naming the file", err)
	}
	if _, err := llmtest.LoadScript(filepath.Join(dir, "absent.json")); err == nil {
		t.Error("LoadScript of a missing file succeeded")
	}
	b, err := llmtest.Duration(1500 * time.Millisecond).MarshalJSON()
	if err != nil || string(b) != `"1.5s"` {
		t.Errorf("Duration JSON %s %v", b, err)
	}
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func postErr(ctx context.Context, url, body string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, err = io.Copy(&buf, resp.Body)
	return buf.String(), err
}

// TestPromptCacheSkipsFailures: Anthropic's prompt cache as llmtest plays
// it: the first request that runs writes its marked prefix, the same
// request again reads it; a request answered with an error (529) neither
// reads nor writes, so the retry after it still writes.
func TestPromptCacheSkipsFailures(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Status: 529}, {Text: "a"}, {Text: "b"}}})
	defer srv.Close()
	body := `{"model":"claude-sonnet-5","max_tokens":64,"system":[{"type":"text","text":"` + strings.Repeat("You are terse. ", 40) + `","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}]}`
	type usage struct {
		Read  int64 `json:"cache_read_input_tokens"`
		Write int64 `json:"cache_creation_input_tokens"`
	}
	var want []usage
	for i := range 3 {
		status, resp := post(t, srv.Root+"/v1/messages", body)
		if i == 0 {
			if status != 529 {
				t.Fatalf("request 1: HTTP %d, want 529: %s", status, resp)
			}
			continue
		}
		var m struct{ Usage usage }
		if err := json.Unmarshal([]byte(resp), &m); status != 200 || err != nil {
			t.Fatalf("request %d: HTTP %d %v: %s", i+1, status, err, resp)
		}
		want = append(want, m.Usage)
	}
	if w := want[0]; w.Read != 0 || w.Write == 0 {
		t.Errorf("the first request that ran (after a 529) read %d, wrote %d; want a write and no read", w.Read, w.Write)
	}
	if r := want[1]; r.Read != want[0].Write || r.Write != 0 {
		t.Errorf("the same request again read %d, wrote %d; want it to read the %d written", r.Read, r.Write, want[0].Write)
	}
}

// TestGeminiUsageCounts: the usage llmtest gives a Gemini answer is one
// the API could give: the cached tokens are part of the prompt's, and a
// blocked prompt generated nothing.
func TestGeminiUsageCounts(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Text: "a"}, {Text: "b"}, {Blocked: "SAFETY"}}})
	defer srv.Close()
	// The cache counts the parts as it keeps them, '<' escaped: more bytes
	// than the request's.
	body := `{"systemInstruction":{"parts":[{"text":"` + strings.Repeat("a<b ", 200) + `"}]},"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	for i := range 3 {
		status, resp := post(t, srv.Root+"/v1beta/models/gemini-3.5-flash:generateContent", body)
		var r struct {
			UsageMetadata struct {
				Prompt     int64 `json:"promptTokenCount"`
				Cached     int64 `json:"cachedContentTokenCount"`
				Candidates int64 `json:"candidatesTokenCount"`
				Thoughts   int64 `json:"thoughtsTokenCount"`
			} `json:"usageMetadata"`
		}
		if err := json.Unmarshal([]byte(resp), &r); status != 200 || err != nil {
			t.Fatalf("request %d: HTTP %d %v: %s", i+1, status, err, resp)
		}
		u := r.UsageMetadata
		if u.Cached > u.Prompt || (i > 0 && u.Cached == 0) {
			t.Errorf("request %d: %d prompt tokens, %d of them cached; want the cached part of the prompt, and some", i+1, u.Prompt, u.Cached)
		}
		if i == 2 && (u.Candidates != 0 || u.Thoughts != 0) {
			t.Errorf("a blocked prompt: %d candidate and %d thought tokens; want none", u.Candidates, u.Thoughts)
		}
	}
}
