package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
)

// toolTurns are a turn of three rounds: text and two tool calls, a bash
// script, the answer.
func toolTurns() []llmtest.Turn {
	return []llmtest.Turn{
		{Text: "Let me look.", Calls: []llmtest.Call{
			{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "1"}`, CallID: "call_w"},
			{Name: "introspect_journal_head", Arguments: `{}`, CallID: "call_h"},
		}},
		{Calls: []llmtest.Call{{Name: "bash", Arguments: `{"commands": "cat a.md; echo more >> a.md"}`, CallID: "call_b"}}},
		{Text: "Done: a.md holds 1."},
	}
}

// TestSendStreams: a message's turn streams as SSE, each event an id
// (its position), its type as event name and run --json's object as
// data, ending with turn_end; the same turn as JSON when not streamed.
func TestSendStreams(t *testing.T) {
	t.Parallel()
	e := newEnv(t, append(toolTurns(), llmtest.Turn{Text: "second answer"}))
	resp := e.stream(t.Context(), "POST", "/v1/worlds/main/chats/c1/messages", map[string]string{"text": "write a.md"})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Demiurge-Turn") != "1" {
		t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
	}
	evs := eventsOf(t, resp)
	got := typesOf(journaled(evs))
	want := "message model_call message tool_call_started tool_call_started tool_call_finished tool_call_finished model_call tool_call_started tool_call_finished model_call message turn_end"
	if got != want {
		t.Errorf("events:\n%s\nwant\n%s", got, want)
	}
	seen := map[string]bool{}
	for _, ev := range evs {
		var obj map[string]any
		if err := json.Unmarshal([]byte(ev.Data), &obj); err != nil || obj["type"] != ev.Event {
			t.Errorf("event %s: data %s (type %v)", ev.Event, ev.Data, obj["type"])
		}
		if ev.ID == "" || seen[ev.ID] {
			t.Errorf("event %s: id %q (empty or repeated)", ev.Event, ev.ID)
		}
		seen[ev.ID] = true
	}
	last := evs[len(evs)-1]
	if !strings.Contains(last.Data, `"outcome":"answer"`) {
		t.Errorf("last event: %s", last.Data)
	}

	// The next turn, as JSON.
	r, body := e.do("POST", "/v1/worlds/main/chats/c1/messages", map[string]string{"text": "again"})
	if r.StatusCode != 200 {
		t.Fatalf("JSON turn: %d %s", r.StatusCode, body)
	}
	var turn struct {
		Turn   uint64            `json:"turn"`
		Events []json.RawMessage `json:"events"`
	}
	if err := json.Unmarshal(body, &turn); err != nil || turn.Turn != 2 || len(turn.Events) == 0 {
		t.Fatalf("JSON turn: %s", body)
	}
	if !strings.Contains(string(turn.Events[len(turn.Events)-1]), `"type":"turn_end"`) {
		t.Errorf("JSON turn ends with %s", turn.Events[len(turn.Events)-1])
	}

	// The chat, as the server sees it.
	r, body = e.do("GET", "/v1/worlds/main/chats/c1", nil)
	if r.StatusCode != 200 || !strings.Contains(string(body), `"turns":2`) || !strings.Contains(string(body), "second answer") {
		t.Errorf("GET chat: %d %s", r.StatusCode, body)
	}
}

// TestResumeExactlyOnce: a client that disconnects mid-turn and resumes
// with Last-Event-ID sees every event once, from the log the server
// keeps and from the journal alike.
func TestResumeExactlyOnce(t *testing.T) {
	t.Parallel()
	for _, fromJournal := range []bool{false, true} {
		name := "log"
		if fromJournal {
			name = "journal"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			turns := toolTurns()
			hold := make(chan struct{})
			turns[1].Hold = hold
			e := newEnv(t, turns)
			ctx, cancel := context.WithCancel(t.Context())
			resp := e.stream(ctx, "POST", "/v1/worlds/main/chats/c/messages", map[string]string{"text": "write a.md"})
			var first []sseEvent
			_ = readSSE(resp.Body, func(ev sseEvent) bool {
				first = append(first, ev)
				return !(ev.Event == "tool_call_finished" && strings.Contains(ev.Data, "call_h"))
			})
			cancel() // the client goes away mid-turn
			resp.Body.Close()
			if fromJournal {
				e.srv.mu.Lock()
				clear(e.srv.logs) // as after a restart, or on another server
				e.srv.mu.Unlock()
			}
			close(hold)
			last := first[len(first)-1].ID
			rest := eventsOf(t, e.stream(t.Context(), "GET", "/v1/worlds/main/chats/c/turns/1/events", nil, "Last-Event-ID", last))
			all := append(first, rest...)
			// The whole turn, read afresh from the journal.
			e.srv.mu.Lock()
			clear(e.srv.logs)
			e.srv.mu.Unlock()
			whole := eventsOf(t, e.stream(t.Context(), "GET", "/v1/worlds/main/chats/c/turns/1/events", nil))
			if g, w := idsOf(journaled(all)), idsOf(journaled(whole)); g != w {
				t.Errorf("events before and after the break:\n%s\nthe turn's:\n%s", g, w)
			}
			if len(rest) == 0 || rest[len(rest)-1].Event != "turn_end" {
				t.Errorf("the resumed stream: %s", typesOf(rest))
			}
			// After the end, nothing: 204, which tells EventSource not to
			// come back.
			r := e.stream(t.Context(), "GET", "/v1/worlds/main/chats/c/turns/1/events", nil, "Last-Event-ID", whole[len(whole)-1].ID)
			r.Body.Close()
			if r.StatusCode != http.StatusNoContent {
				t.Errorf("a stream resumed after the end: %d; want 204", r.StatusCode)
			}
		})
	}
}

// idsOf is the events' ids and names, a line each.
func idsOf(evs []sseEvent) string {
	var s []string
	for _, e := range evs {
		s = append(s, e.ID+" "+e.Event)
	}
	return strings.Join(s, "\n")
}

// TestApprovalOverHTTP: a call that waits for approval streams as
// approval_requested; the stream stays open; a POST of the decision goes
// on with the turn in the same stream.
func TestApprovalOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "1"}`, CallID: "call_a"}}},
		{Text: "written"},
	}, func(o *Options) { o.Chat = append(o.Chat, requireApproval("workspace_write")) })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	resp := e.stream(ctx, "POST", "/v1/worlds/main/chats/c/messages", map[string]string{"text": "write"})
	defer resp.Body.Close()
	var types []string
	_ = readSSE(resp.Body, func(ev sseEvent) bool {
		types = append(types, ev.Event)
		if ev.Event == "approval_requested" {
			r, body := e.do("POST", "/v1/worlds/main/chats/c/messages", map[string]string{"text": "another"})
			if r.StatusCode != http.StatusConflict || !strings.Contains(string(body), "awaiting_approval") {
				t.Errorf("a message while a call waits: %d %s", r.StatusCode, body)
			}
			r, body = e.do("GET", "/v1/worlds/main/chats/c/approvals", nil)
			if r.StatusCode != 200 || !strings.Contains(string(body), "call_a") {
				t.Errorf("pending: %d %s", r.StatusCode, body)
			}
			r, body = e.do("POST", "/v1/worlds/main/chats/c/approvals/call_a", map[string]any{"approve": true})
			if r.StatusCode != 200 {
				t.Errorf("approve: %d %s", r.StatusCode, body)
			}
		}
		return ev.Event != "turn_end"
	})
	if got := strings.Join(types, " "); !strings.Contains(got, "approval_requested approval_decided") || !strings.HasSuffix(got, "turn_end") {
		t.Errorf("events: %s", got)
	}
	r, body := e.do("POST", "/v1/worlds/main/chats/c/approvals/call_a", map[string]any{"approve": true})
	if r.StatusCode != http.StatusConflict {
		t.Errorf("a second decision: %d %s; want 409", r.StatusCode, body)
	}
}

// TestRoutes: the routes not exercised elsewhere, one after another on
// one world: make it, list and read it, make a chat, follow its turn,
// stop a turn, read the trace and the state, fork the world at a turn's
// end, and the operations routes. Their answers are held to the OpenAPI
// file (checked).
func TestRoutes(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	defer close(hold)
	e := newEnv(t, []llmtest.Turn{
		{Text: "first answer"},
		{Text: "never", Hold: hold},
		{Text: "after the fork"},
	})
	expect := func(method, path string, body any, status int, want string) []byte {
		t.Helper()
		r, b := e.do(method, path, body)
		if r.StatusCode != status || !strings.Contains(string(b), want) {
			t.Errorf("%s %s: %d %s; want %d with %q", method, path, r.StatusCode, b, status, want)
		}
		return b
	}
	expect("GET", "/v1/worlds/w1", nil, 404, "world_not_found")
	expect("POST", "/v1/worlds", map[string]string{"world": "w1"}, 201, `"world":"w1"`)
	expect("POST", "/v1/worlds", map[string]string{"world": "w1"}, 200, `"world":"w1"`)
	expect("POST", "/v1/worlds", map[string]string{"world": "no/slash"}, 400, "invalid_world")
	expect("GET", "/v1/worlds", nil, 200, `"world":"w1"`)
	expect("POST", "/v1/worlds/w1/chats", map[string]string{"chat": "c"}, 201, `"chat":"c"`)
	b := expect("POST", "/v1/worlds/w1/chats", nil, 201, `"chat":"chat-`)
	if !strings.Contains(string(b), `"turns":0`) {
		t.Errorf("a new chat: %s", b)
	}
	expect("GET", "/v1/worlds/w1/chats", nil, 200, `"chat":"c"`)
	expect("GET", "/v1/worlds/w1/chats/none", nil, 404, "chat_not_found")
	r := e.stream(t.Context(), "GET", "/v1/worlds/w1/chats/c/events", nil)
	r.Body.Close()
	if r.StatusCode != 204 {
		t.Errorf("following a chat with no turn: %d; want 204", r.StatusCode)
	}
	b = expect("POST", "/v1/worlds/w1/chats/c/messages", map[string]string{"text": "hello"}, 200, `"outcome":"answer"`)
	var turn struct{ Events []map[string]any }
	_ = json.Unmarshal(b, &turn)
	endSeq := uint64(turn.Events[len(turn.Events)-1]["seq"].(float64))
	expect("GET", "/v1/worlds/w1/chats/c/turns/1/events?stream=false", nil, 200, `"outcome":"answer"`)
	expect("GET", "/v1/worlds/w1/chats/c/turns/9/events", nil, 404, "turn_not_found")
	expect("GET", "/v1/worlds/w1/chats/c/turns/1/events?after=x", nil, 400, "invalid_event_id")

	// A turn under way: followed, stopped.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	sent := e.stream(ctx, "POST", "/v1/worlds/w1/chats/c/messages", map[string]string{"text": "wait"})
	defer sent.Body.Close()
	expect("POST", "/v1/worlds/w1/chats/c/messages", map[string]string{"text": "again"}, 409, "turn_under_way")
	follow := e.stream(ctx, "GET", "/v1/worlds/w1/chats/c/events", nil)
	if follow.Header.Get("Demiurge-Turn") != "2" {
		t.Errorf("following the chat: turn %q", follow.Header.Get("Demiurge-Turn"))
	}
	expect("POST", "/v1/worlds/w1/chats/c/stop", map[string]string{"reason": "enough"}, 200, `"turn":2`)
	evs := eventsOf(t, follow)
	if last := evs[len(evs)-1]; last.Event != "turn_end" || !strings.Contains(last.Data, `"outcome":"stopped"`) {
		t.Errorf("the followed turn ends with %v", last)
	}
	expect("POST", "/v1/worlds/w1/chats/c/stop", nil, 200, `"turn":null`)

	expect("GET", "/v1/worlds/w1/trace", nil, 200, `"user":"hello"`)
	expect("GET", "/v1/worlds/w1/trace?chat=none", nil, 200, `"data":[]`)
	expect("GET", "/v1/worlds/w1/state", nil, 200, `"reducer":"demiurge/Chat@2"`)
	expect("GET", "/v1/worlds/w1/chats/c/state", nil, 200, `"key":"c"`)
	expect("GET", "/v1/worlds/w1", nil, 200, `"chats":[`)

	// Fork at the first turn's end, and go on there with another message.
	expect("POST", "/v1/worlds/w1/fork", map[string]any{"world": "w2", "at": endSeq}, 201, `"world":"w2"`)
	expect("POST", "/v1/worlds/w1/fork", map[string]any{"world": "w2", "at": endSeq}, 409, "world_exists")
	expect("POST", "/v1/worlds/w2/chats/c/messages", map[string]string{"text": "and now?"}, 200, "after the fork")
	b = expect("GET", "/v1/worlds/w2/chats/c", nil, 200, `"turns":2`)
	if strings.Contains(string(b), `"text":"wait"`) {
		t.Errorf("the fork holds the turn after its point: %s", b)
	}

	expect("GET", "/v1/models/demiurge", nil, 200, `"id":"demiurge"`)
	expect("GET", "/v1/models/gpt-4o", nil, 404, "model_not_found")
	expect("GET", "/readyz", nil, 200, "ready")
	b = expect("GET", "/metrics", nil, 200, `demiurge_serve_turns_total{outcome="answer"}`)
	if !strings.Contains(string(b), "demiurge_serve_event_lag_seconds_count") || !strings.Contains(string(b), `demiurge_serve_tokens_total{kind="prompt"}`) {
		t.Errorf("metrics:\n%s", b)
	}
	expect("GET", "/v1/nothing", nil, 404, "no_route")
	e.replays("w1")
	e.replays("w2")
}
