package serve

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
)

// TestChatCompletionsSameHistory: two Chat Completions conversations with
// the same history (two users who said the same and got the same answer,
// as a deterministic model gives) go on each in a chat of its own: the
// second user's next message does not land in the chat the first user's
// went on in, so neither sees the other's messages; a history that every
// chat has moved past is refused, not continued in a chat that holds
// another conversation's turns.
func TestChatCompletionsSameHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []llmtest.Turn{{Text: "Hello!"}, {Text: "Hello!"}, {Text: "one"}, {Text: "two"}})
	cl := e.client()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ask := func(msgs ...string) (string, error) {
		var history []openai.ChatCompletionMessageParamUnion
		for i, m := range msgs {
			if i%2 == 0 {
				history = append(history, openai.UserMessage(m))
			} else {
				history = append(history, openai.AssistantMessage(m))
			}
		}
		r, err := cl.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "demiurge", Messages: history})
		if err != nil {
			return "", err
		}
		return r.Choices[0].Message.Content, nil
	}
	for _, user := range []string{"first", "second"} {
		if a, err := ask("hi"); err != nil || a != "Hello!" {
			t.Fatalf("the %s user's hi: %q, %v", user, a, err)
		}
	}
	if a, err := ask("hi", "Hello!", "the first user's secret"); err != nil || a != "one" {
		t.Fatalf("the first user goes on: %q, %v", a, err)
	}
	if a, err := ask("hi", "Hello!", "the second user's question"); err != nil || a != "two" {
		t.Fatalf("the second user goes on: %q, %v", a, err)
	}
	reqs := e.model.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	if last := string(reqs[3].Body); strings.Contains(last, "the first user's secret") || !strings.Contains(last, "the second user's question") {
		t.Errorf("the second user's model request: carries the first user's message %v, its own %v", strings.Contains(last, "the first user's secret"), strings.Contains(last, "the second user's question"))
	}
	r, body := e.do("GET", "/v1/worlds/main/chats", nil)
	if r.StatusCode != 200 || strings.Count(string(body), `"chat":`) != 2 || strings.Count(string(body), `"turns":2`) != 2 {
		t.Errorf("the world's chats (want two of two turns each): %s", body)
	}
	// Both chats have moved past [hi, Hello!]: a third user with it has no
	// chat to go on in.
	if _, err := ask("hi", "Hello!", "a third user"); apiCode(err) != "conversation_diverged" {
		t.Errorf("a history every chat moved past: %v (code %q)", err, apiCode(err))
	}
	if e.model.Remaining() != 0 {
		t.Errorf("%d model answers unused", e.model.Remaining())
	}
	e.replays("main")
}
