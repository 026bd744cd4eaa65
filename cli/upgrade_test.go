package cli

import (
	"context"
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/internal/store"
)

// TestPendingCallsChat2: approve lists the call a chat of Chat@2 waits
// on while its world runs Chat@2, and none once the world's manifest
// moved to Chat@3, which stops that turn as it takes the chat up (the
// world's agent reads it so: agent.Chat.Pending), before and after the
// chat's next message.
func TestPendingCallsChat2(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "hi"}`, CallID: "call_w"}}},
	}})
	defer srv.Close()
	dir := t.TempDir()
	lookup := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL}
	open := func(manifest string) *agent.World {
		t.Helper()
		w, err := agent.Open(t.Context(), manifest, agent.WithDir(dir), agent.WithModel(agent.Model{Name: "gpt-test"}),
			agent.WithEnv(func(k string) (string, bool) { v, ok := lookup[k]; return v, ok }),
			agent.WithApprover(func(context.Context, agent.ApprovalRequested) (agent.Decision, bool) { return agent.Decision{}, false }))
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	pending := func(world string) []pendingCall {
		t.Helper()
		s, err := store.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		calls, err := pendingCalls(t.Context(), s.Journal(), s.CAS(), world, "main")
		if err != nil {
			t.Fatal(err)
		}
		return calls
	}
	w := open("../testdata/air/chat2")
	for _, err := range w.Chat("main", agent.RequireApproval("workspace_write")).Send(t.Context(), "Write a.md.") {
		if err != nil {
			t.Fatal(err)
		}
	}
	name := w.Name()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if calls := pending(name); len(calls) != 1 || calls[0].id != "call_w" {
		t.Fatalf("the calls that wait under Chat@2: %+v", calls)
	}
	w = open("../examples/demiurge") // journals the manifest of Chat@3
	if p := w.Chat("main").Pending(t.Context()); len(p) != 0 {
		t.Errorf("the agent under Chat@3 has calls waiting: %+v", p)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if calls := pending(name); len(calls) != 0 {
		t.Errorf("the calls that wait once the world runs Chat@3: %+v", calls)
	}
}
