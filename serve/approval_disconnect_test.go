package serve

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
)

// TestDisconnectWhileAwaitingApproval: a client that goes away while its
// turn waits for approval changes nothing (docs/api.md: only POST …/stop
// stops a turn): the call still waits, a message is refused as awaiting
// approval, nothing is journaled, and a decision from another client
// goes on with the turn to its answer, with no stop in it.
func TestDisconnectWhileAwaitingApproval(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "1"}`, CallID: "call_a"}}},
		{Text: "written"},
	}, func(o *Options) { o.Chat = append(o.Chat, requireApproval("workspace_write")) })
	ctx, cancel := context.WithCancel(t.Context())
	resp := e.stream(ctx, "POST", "/v1/worlds/main/chats/c/messages", map[string]string{"text": "write"})
	_ = readSSE(resp.Body, func(ev sseEvent) bool { return ev.Event != "approval_requested" })
	cancel() // the client goes away while the call waits
	resp.Body.Close()
	e.http.CloseClientConnections()
	head := func() string {
		_, body := e.do("GET", "/v1/worlds/main", nil)
		return string(body)
	}
	before := head()
	time.Sleep(300 * time.Millisecond) // the server has seen the client go (a stop would be journaled by now)
	if after := head(); after != before {
		t.Errorf("the world moved on after the client went away:\n%s\n%s", before, after)
	}
	r, body := e.do("GET", "/v1/worlds/main/chats/c/approvals", nil)
	if r.StatusCode != http.StatusOK || !strings.Contains(string(body), "call_a") {
		t.Fatalf("the call that waited: %d %s", r.StatusCode, body)
	}
	r, body = e.do("POST", "/v1/worlds/main/chats/c/messages", map[string]string{"text": "another"})
	if r.StatusCode != http.StatusConflict || !strings.Contains(string(body), "awaiting_approval") {
		t.Errorf("a message while the call waits: %d %s", r.StatusCode, body)
	}
	if r, body = e.do("POST", "/v1/worlds/main/chats/c/approvals/call_a", map[string]any{"approve": true}); r.StatusCode != http.StatusOK {
		t.Fatalf("approve: %d %s", r.StatusCode, body)
	}
	evs := eventsOf(t, e.stream(t.Context(), "GET", "/v1/worlds/main/chats/c/turns/1/events", nil))
	types := typesOf(evs)
	if len(evs) == 0 || !strings.Contains(evs[len(evs)-1].Data, `"outcome":"answer"`) || strings.Contains(types, "guard_stop") ||
		!strings.Contains(types, "approval_decided") {
		t.Errorf("the turn after the decision: %s", types)
	}
	e.replays("main")
}
