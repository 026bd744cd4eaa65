package serve

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/world"
)

// conversationTurns are the fake model's answers to a two-message
// conversation whose tool calls run bash in the sandbox: the first
// message writes a file, the second appends to it; each answer quotes
// what the script printed.
func conversationTurns() []llmtest.Turn {
	return []llmtest.Turn{
		{Text: "I'll write it.", Calls: []llmtest.Call{{Name: "bash", Arguments: `{"commands": "echo hello > notes.txt; cat notes.txt"}`, CallID: "call_1"}}},
		{Text: "notes.txt says hello."},
		{Calls: []llmtest.Call{{Name: "bash", Arguments: `{"commands": "echo world >> notes.txt; wc -l < notes.txt"}`, CallID: "call_2"}}},
		{Text: "notes.txt has 2 lines now."},
	}
}

// client is an OpenAI client of the test's server.
func (e *testEnv) client(opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{option.WithBaseURL(e.url + "/v1/"), option.WithAPIKey("unused"),
		option.WithMaxRetries(0)}, opts...)...)
}

// replays checks that world name replays from genesis, byte for byte.
func (e *testEnv) replays(name string) {
	e.t.Helper()
	if _, err := world.Rerun(e.t.Context(), world.RerunOptions{Name: name, Catalog: e.srv.cat, Reducers: e.srv.reg, Storage: e.st, FromGenesis: true}); err != nil {
		e.t.Errorf("world %s does not replay: %v", name, err)
	}
}

// TestOpenAIResponses: openai-go's Responses client holds a two-message
// conversation (previous_response_id), not streamed and streamed; the
// agent's bash calls run in the sandbox and come back as mcp_call items
// with their output; the world replays afterwards.
func TestOpenAIResponses(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		name := "whole"
		if stream {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, conversationTurns())
			cl := e.client()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			ask := func(input, previous string) *responses.Response {
				params := responses.ResponseNewParams{Model: "demiurge", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(input)}}
				if previous != "" {
					params.PreviousResponseID = openai.String(previous)
				}
				if !stream {
					r, err := cl.Responses.New(ctx, params)
					if err != nil {
						t.Fatalf("Responses.New: %v", err)
					}
					return r
				}
				s := cl.Responses.NewStreaming(ctx, params)
				var text strings.Builder
				var done *responses.Response
				var types []string
				for s.Next() {
					ev := s.Current()
					types = append(types, ev.Type)
					switch ev.Type {
					case "response.output_text.delta":
						text.WriteString(ev.Delta)
					case "response.completed":
						r := ev.Response
						done = &r
					}
				}
				if err := s.Err(); err != nil {
					t.Fatalf("stream: %v", err)
				}
				if done == nil {
					t.Fatalf("the stream ended without response.completed: %v", types)
				}
				if !strings.Contains(strings.Join(types, " "), "response.mcp_call.completed") {
					t.Errorf("stream events: %v", types)
				}
				// The deltas add up to the text of the messages.
				if got, want := text.String(), strings.ReplaceAll(done.OutputText(), "\n", ""); strings.ReplaceAll(got, "\n", "") != want {
					t.Errorf("deltas %q; the response's text %q", got, done.OutputText())
				}
				return done
			}
			r1 := ask("Write hello to notes.txt and show it.", "")
			if r1.Status != "completed" || !strings.Contains(r1.OutputText(), "notes.txt says hello.") {
				t.Fatalf("first response: %s %q", r1.Status, r1.OutputText())
			}
			var call responses.ResponseOutputItemMcpCall
			for _, it := range r1.Output {
				if it.Type == "mcp_call" {
					call = it.AsMcpCall()
				}
			}
			if call.Name != "bash" || call.ServerLabel != "demiurge" || !strings.Contains(call.Output, "hello") || call.Status != "completed" {
				t.Errorf("the bash call: %s", call.RawJSON())
			}
			if r1.Usage.InputTokens == 0 {
				t.Errorf("usage: %+v", r1.Usage)
			}
			r2 := ask("Append world.", r1.ID)
			if r2.Status != "completed" || !strings.Contains(r2.OutputText(), "2 lines") {
				t.Fatalf("second response: %s %q", r2.Status, r2.OutputText())
			}
			found := false
			for _, it := range r2.Output {
				if c := it.AsMcpCall(); it.Type == "mcp_call" && strings.HasPrefix(c.Output, "2\n") {
					found = true
				}
			}
			if !found {
				t.Errorf("the second bash call's output is not 2 lines: %s", r2.RawJSON())
			}
			// Both in one chat: the previous response's.
			if r1.JSON.ExtraFields["conversation"].Raw() != r2.JSON.ExtraFields["conversation"].Raw() {
				t.Errorf("conversations %s and %s", r1.JSON.ExtraFields["conversation"].Raw(), r2.JSON.ExtraFields["conversation"].Raw())
			}
			// A response can be fetched again.
			got, err := cl.Responses.Get(ctx, r1.ID, responses.ResponseGetParams{})
			if err != nil || got.OutputText() != r1.OutputText() {
				t.Errorf("Get: %v, %q", err, got.OutputText())
			}
			// Continuing from the first again would branch the chat.
			_, err = cl.Responses.New(ctx, responses.ResponseNewParams{Model: "demiurge", PreviousResponseID: openai.String(r1.ID),
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("again")}})
			if code := apiCode(err); code != "not_latest_response" {
				t.Errorf("continuing from an older response: %v (code %q)", err, code)
			}
			if e.model.Remaining() != 0 {
				t.Errorf("%d model answers unused", e.model.Remaining())
			}
			e.replays("main")
		})
	}
}

// TestOpenAIChat: openai-go's Chat Completions client holds a
// two-message conversation, sending the whole history back each time;
// the server finds its chat from it; streamed and not.
func TestOpenAIChat(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		name := "whole"
		if stream {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, conversationTurns())
			cl := e.client()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			var history []openai.ChatCompletionMessageParamUnion
			ask := func(text string) string {
				history = append(history, openai.UserMessage(text))
				params := openai.ChatCompletionNewParams{Model: "demiurge", Messages: history}
				var answer string
				if !stream {
					r, err := cl.Chat.Completions.New(ctx, params)
					if err != nil {
						t.Fatalf("Chat.Completions.New: %v", err)
					}
					if r.Choices[0].FinishReason != "stop" || r.Usage.PromptTokens == 0 {
						t.Errorf("completion: %+v", r)
					}
					answer = r.Choices[0].Message.Content
				} else {
					params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
					s := cl.Chat.Completions.NewStreaming(ctx, params)
					var acc openai.ChatCompletionAccumulator
					for s.Next() {
						acc.AddChunk(s.Current())
					}
					if err := s.Err(); err != nil {
						t.Fatalf("stream: %v", err)
					}
					if acc.Choices[0].FinishReason != "stop" || acc.Usage.PromptTokens == 0 {
						t.Errorf("accumulated: %+v", acc.ChatCompletion)
					}
					answer = acc.Choices[0].Message.Content
				}
				history = append(history, openai.AssistantMessage(answer))
				return answer
			}
			if a := ask("Write hello to notes.txt and show it."); a != "I'll write it.\n\nnotes.txt says hello." {
				t.Errorf("first answer %q", a)
			}
			if a := ask("Append world."); a != "notes.txt has 2 lines now." {
				t.Errorf("second answer %q", a)
			}
			r, body := e.do("GET", "/v1/worlds/main/chats", nil)
			if r.StatusCode != 200 || strings.Count(string(body), `"chat":`) != 1 || !strings.Contains(string(body), `"turns":2`) {
				t.Errorf("the world's chats: %s", body)
			}
			// A history the chat never had is refused.
			_, err := cl.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "demiurge", Messages: []openai.ChatCompletionMessageParamUnion{
				openai.UserMessage("Write hello to notes.txt and show it."), openai.AssistantMessage("something else"), openai.UserMessage("and?")}})
			if code := apiCode(err); code != "conversation_not_found" {
				t.Errorf("an edited history: %v (code %q)", err, code)
			}
			if e.model.Remaining() != 0 {
				t.Errorf("%d model answers unused", e.model.Remaining())
			}
			e.replays("main")
		})
	}
}

// apiCode is the code of an OpenAI API error.
func apiCode(err error) string {
	var ae *openai.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return ""
}

// TestOpenAIRefusals: what cannot map is refused with OpenAI's error
// shape, naming the field and why.
func TestOpenAIRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, tc := range []struct {
		path string
		body map[string]any
		want string
	}{
		{"/v1/responses", map[string]any{"model": "demiurge", "input": "hi", "tools": []any{map[string]any{"type": "function", "name": "f"}}}, "client-side function tools"},
		{"/v1/responses", map[string]any{"model": "demiurge", "input": "hi", "instructions": "be brief"}, "instructions cannot map"},
		{"/v1/responses", map[string]any{"model": "gpt-4o", "input": "hi"}, "model_not_found"},
		{"/v1/responses", map[string]any{"model": "demiurge", "input": []any{map[string]any{"type": "function_call_output", "call_id": "c", "output": "x"}}}, "client-side function tools"},
		{"/v1/responses", map[string]any{"model": "demiurge", "input": "hi", "frobnicate": 1}, "unrecognized request argument supplied: frobnicate"},
		{"/v1/chat/completions", map[string]any{"model": "demiurge", "messages": []any{map[string]any{"role": "system", "content": "x"}, map[string]any{"role": "user", "content": "hi"}}}, "system message cannot map"},
		{"/v1/chat/completions", map[string]any{"model": "demiurge", "messages": []any{map[string]any{"role": "user", "content": "hi"}}, "tools": []any{}}, "client-side function tools"},
		{"/v1/chat/completions", map[string]any{"model": "demiurge", "messages": []any{map[string]any{"role": "user", "content": "hi"}}, "n": 2}, "a turn has one answer"},
	} {
		r, body := e.do("POST", tc.path, tc.body)
		if r.StatusCode < 400 || !strings.Contains(string(body), tc.want) || !strings.Contains(string(body), `"error":{`) {
			t.Errorf("%s %v: %d %s; want an error saying %q", tc.path, tc.body, r.StatusCode, body, tc.want)
		}
	}
	if e.model.Remaining() != 0 || len(e.model.Requests()) != 0 {
		t.Errorf("a refused request reached the model")
	}
}

// TestOpenAIApproval: a call that waits for approval ends the response
// with an mcp_approval_request item; the client answers it with an
// mcp_approval_response item continuing from that response, streamed and
// not, and the turn goes on: the call runs, the answer comes. A denial
// reaches the model.
func TestOpenAIApproval(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		name := "whole"
		if stream {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, []llmtest.Turn{
				{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "1"}`, CallID: "call_a"}}},
				{Text: "written"},
				{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "b.md", "content": "2"}`, CallID: "call_b"}}},
				{Text: "not written, as you said"},
			}, func(o *Options) { o.Chat = append(o.Chat, requireApproval("workspace_write")) })
			cl := e.client()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			send := func(params responses.ResponseNewParams) *responses.Response {
				t.Helper()
				params.Model = "demiurge"
				if !stream {
					r, err := cl.Responses.New(ctx, params)
					if err != nil {
						t.Fatal(err)
					}
					return r
				}
				s := cl.Responses.NewStreaming(ctx, params)
				var done *responses.Response
				for s.Next() {
					if ev := s.Current(); ev.Type == "response.completed" {
						r := ev.Response
						done = &r
					}
				}
				if err := s.Err(); err != nil || done == nil {
					t.Fatalf("stream: %v, %v", err, done)
				}
				return done
			}
			request := func(r *responses.Response) responses.ResponseOutputItemMcpApprovalRequest {
				t.Helper()
				for _, it := range r.Output {
					if it.Type == "mcp_approval_request" {
						return it.AsMcpApprovalRequest()
					}
				}
				t.Fatalf("no mcp_approval_request: %s", r.RawJSON())
				return responses.ResponseOutputItemMcpApprovalRequest{}
			}
			answer := func(prev *responses.Response, approve bool, reason string) *responses.Response {
				ar := request(prev)
				if ar.Name != "workspace_write" || !strings.Contains(ar.Arguments, `"path":"`) {
					t.Errorf("the request: %s", ar.RawJSON())
				}
				item := &responses.ResponseInputItemMcpApprovalResponseParam{ApprovalRequestID: ar.ID, Approve: approve}
				if reason != "" {
					item.Reason = openai.String(reason)
				}
				return send(responses.ResponseNewParams{PreviousResponseID: openai.String(prev.ID),
					Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{{OfMcpApprovalResponse: item}}}})
			}
			r1 := send(responses.ResponseNewParams{Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("write a.md")}})
			if r1.Status != "completed" {
				t.Fatalf("the waiting response: %s", r1.RawJSON())
			}
			// A new message while the call waits is refused.
			_, err := cl.Responses.New(ctx, responses.ResponseNewParams{Model: "demiurge", PreviousResponseID: openai.String(r1.ID),
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("and?")}})
			if code := apiCode(err); code != "awaiting_approval" {
				t.Errorf("a message while a call waits: %v", err)
			}
			r2 := answer(r1, true, "")
			if r2.OutputText() != "written" || r2.PreviousResponseID != r1.ID {
				t.Errorf("after approving: %s", r2.RawJSON())
			}
			ran := false
			for _, it := range r2.Output {
				if c := it.AsMcpCall(); it.Type == "mcp_call" && c.Name == "workspace_write" && c.Status == "completed" {
					ran = true
				}
			}
			if !ran {
				t.Errorf("the approved call is not in the response: %s", r2.RawJSON())
			}
			r3 := send(responses.ResponseNewParams{PreviousResponseID: openai.String(r2.ID), Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("write b.md")}})
			r4 := answer(r3, false, "not now")
			if r4.OutputText() != "not written, as you said" {
				t.Errorf("after denying: %s", r4.RawJSON())
			}
			var denied bool
			for _, it := range r4.Output {
				if c := it.AsMcpCall(); it.Type == "mcp_call" && c.Status == "failed" && strings.Contains(c.Output, "not now") {
					denied = true
				}
			}
			if !denied {
				t.Errorf("the denied call: %s", r4.RawJSON())
			}
			e.replays("main")
		})
	}
}
