package serve

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
)

// openWorlds returns the names of the worlds the server has open, sorted.
func (s *Server) openWorlds() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for name, ow := range s.worlds {
		if ow.closing == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// waitWorlds waits until the server has exactly the worlds want open.
func waitWorlds(t *testing.T, s *Server, want ...string) {
	t.Helper()
	var got []string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got = s.openWorlds(); slices.Equal(got, want) {
			return
		}
	}
	t.Fatalf("open worlds: %v; want %v", got, want)
}

// TestEvictIdleWorlds: a world nothing uses closes once idle for
// WorldIdle, and opens again, from the store, on the next request; a
// world whose turn waits for approval stays open until the turn ends.
func TestEvictIdleWorlds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "1"}`, CallID: "call_a"}}},
		{Text: "two"},
		{Text: "three"},
		{Text: "written"},
		{Text: "two again"},
	}, func(o *Options) {
		o.Chat = append(o.Chat, requireApproval("workspace_write"))
		o.WorldIdle = 50 * time.Millisecond
	})
	expect := func(method, path string, body any, status int, want string) {
		t.Helper()
		r, b := e.do(method, path, body)
		if r.StatusCode != status || !strings.Contains(string(b), want) {
			t.Fatalf("%s %s: %d %s; want %d with %q", method, path, r.StatusCode, b, status, want)
		}
	}
	expect("POST", "/v1/worlds/w1/chats/c/messages", map[string]string{"text": "write"}, 200, `"approval_requested"`)
	expect("POST", "/v1/worlds/w2/chats/c/messages", map[string]string{"text": "hello"}, 200, `"two"`)
	expect("POST", "/v1/worlds/w3/chats/c/messages", map[string]string{"text": "hello"}, 200, `"three"`)
	waitWorlds(t, e.srv, "w1") // w1's turn waits for a decision: it stays
	expect("POST", "/v1/worlds/w1/chats/c/approvals/call_a", map[string]any{"approve": true}, 200, "")
	waitWorlds(t, e.srv) // its turn ended: nothing uses it
	// Reopened from the store: the chat goes on where it was.
	expect("POST", "/v1/worlds/w2/chats/c/messages", map[string]string{"text": "again"}, 200, `"two again"`)
	expect("GET", "/v1/worlds/w2/chats/c", nil, 200, `"turns":2`)
	expect("GET", "/v1/worlds/w1/chats/c/turns/1/events?stream=false", nil, 200, `"written"`)
	_, b := e.do("GET", "/metrics", nil)
	var evicted int
	for line := range strings.Lines(string(b)) {
		if n, ok := strings.CutPrefix(line, "demiurge_serve_worlds_evicted_total "); ok {
			evicted, _ = strconv.Atoi(strings.TrimSpace(n))
		}
	}
	if evicted < 3 { // w2, w3, then w1 (and again those reopened since)
		t.Errorf("demiurge_serve_worlds_evicted_total %d; want 3 or more", evicted)
	}
}

// TestEvictBeyondMaxWorlds: beyond MaxWorlds of them, the worlds unused
// longest close at once, however recently used.
func TestEvictBeyondMaxWorlds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []llmtest.Turn{{Text: "one"}, {Text: "two"}, {Text: "three"}}, func(o *Options) {
		o.WorldIdle = time.Hour
		o.MaxWorlds = 1
		o.Keep = 40 * time.Millisecond
	})
	for _, w := range []string{"w1", "w2", "w3"} {
		r, b := e.do("POST", "/v1/worlds/"+w+"/chats/c/messages", map[string]string{"text": "hello"})
		if r.StatusCode != 200 {
			t.Fatalf("%s: %d %s", w, r.StatusCode, b)
		}
	}
	waitWorlds(t, e.srv, "w3")
}
