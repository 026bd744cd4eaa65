package serve

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/agent"
)

// TestServeChat2World: a world made with Chat@2 (the AIR the agent had
// then, testdata/air/chat2), served by a server of Chat@3, lists its chat
// and reads it, its turns and usage as Chat@2 left them, before anyone
// sends it a message (which takes it up under Chat@3): the turn that
// waited for approval stopped, no call waiting.
func TestServeChat2World(t *testing.T) {
	t.Parallel()
	model := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Text: "Hello from Chat@2.", Usage: &llmtest.Usage{Input: 1000, Output: 10}},
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "hi"}`, CallID: "call_w"}},
			Usage: &llmtest.Usage{Input: 1100, Output: 20}},
	}})
	t.Cleanup(model.Close)
	var turn1 []string
	e := newEnvModel(t, model, func(o *Options) {
		w, err := agent.Open(t.Context(), "../testdata/air/chat2", append(o.Agent, agent.WithStorage(o.Storage), agent.WithWorld("main"),
			agent.WithApprover(func(context.Context, agent.ApprovalRequested) (agent.Decision, bool) { return agent.Decision{}, false }))...)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		c := w.Chat("main", agent.RequireApproval("workspace_write"))
		for i, text := range []string{"Say hello.", "Write a.md."} {
			for ev, err := range c.Send(t.Context(), text) {
				if err != nil {
					t.Fatalf("Chat@2 turn %d: %v", i+1, err)
				}
				if _, delta := ev.(agent.TextDelta); i == 0 && !delta {
					b, _ := agent.MarshalEvent(ev)
					turn1 = append(turn1, string(b))
				}
			}
		}
	})

	r, body := e.do("GET", "/v1/worlds/main/chats", nil)
	var chats struct {
		Data []struct {
			Chat    string `json:"chat"`
			Turns   uint64 `json:"turns"`
			Running bool   `json:"running"`
			Usage   struct {
				Input  uint64 `json:"input_tokens"`
				Output uint64 `json:"output_tokens"`
			} `json:"usage"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &chats); err != nil || r.StatusCode != 200 || len(chats.Data) != 1 {
		t.Fatalf("GET chats: %d %s", r.StatusCode, body)
	}
	if c := chats.Data[0]; c.Chat != "main" || c.Turns != 2 || c.Running || c.Usage.Input != 2100 || c.Usage.Output != 30 {
		t.Errorf("GET chats: %s", body)
	}

	r, body = e.do("GET", "/v1/worlds/main/chats/main", nil)
	var chat chatJSON
	if err := json.Unmarshal(body, &chat); err != nil || r.StatusCode != 200 {
		t.Fatalf("GET chat: %d %s", r.StatusCode, body)
	}
	if chat.Turns != 2 || chat.Turn != nil || len(chat.Awaiting) != 0 || chat.Usage.Prompt != 2100 || chat.Usage.Completion != 30 || chat.Model != "gpt-test" ||
		len(chat.Messages) == 0 || chat.Messages[0].Text != "Write a.md." {
		t.Errorf("GET chat: %s", body)
	}
	r, body = e.do("GET", "/v1/worlds/main/chats/main/approvals", nil)
	if r.StatusCode != 200 || !strings.Contains(string(body), `"data":[]`) {
		t.Errorf("GET approvals: %d %s", r.StatusCode, body)
	}

	// Its first turn, as the stream that ran it under Chat@2 yielded it.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a turn not begun is waited for
	defer cancel()
	evs := journaled(eventsOf(t, e.stream(ctx, "GET", "/v1/worlds/main/chats/main/turns/1/events", nil)))
	var got []string
	for _, ev := range evs {
		got = append(got, ev.Data)
	}
	if g, w := strings.Join(got, "\n"), strings.Join(turn1, "\n"); g != w {
		t.Errorf("the events of turn 1:\n%s\nwant (Send's under Chat@2):\n%s", g, w)
	}
	// The chat's latest turn, which waited for approval, ends stopped, as
	// the chat reads: no call of it waits.
	resp := e.stream(ctx, "GET", "/v1/worlds/main/chats/main/events", nil)
	if n := resp.Header.Get("Demiurge-Turn"); n != "2" {
		t.Errorf("GET events: turn %q; want 2", n)
	}
	evs = journaled(eventsOf(t, resp))
	if got := typesOf(evs); !strings.HasSuffix(got, "approval_requested tool_call_finished guard_stop turn_end") ||
		!strings.Contains(evs[len(evs)-1].Data, `"outcome":"stopped"`) {
		t.Errorf("GET events of turn 2: %s", got)
	}
}
