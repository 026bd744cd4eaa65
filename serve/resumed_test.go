package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/world"
)

// TestNextMessageAfterResumedTurn: a turn left under way by a server
// that stopped goes on when the next server opens its world, and a
// client that follows it there and sends its next message as soon as it
// has the turn's end gets that message taken, never 409 turn_under_way
// (the server's own follower of the resumed turn, which holds the chat,
// may see the end after the client).
func TestNextMessageAfterResumedTurn(t *testing.T) {
	t.Parallel()
	const rounds = 5
	var turns []llmtest.Turn
	holds := make([]chan struct{}, rounds)
	for i := range holds {
		holds[i] = make(chan struct{})
		turns = append(turns,
			llmtest.Turn{Text: "never sent: the server stops first", Hold: holds[i]},
			llmtest.Turn{Text: "the resumed answer"},
			llmtest.Turn{Text: "the next answer"})
	}
	model := llmtest.NewServer(llmtest.Script{Turns: turns})
	t.Cleanup(model.Close)
	s, err := store.Open(filepath.Join(t.TempDir(), "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	st, err := world.NewBoltStorage(s.CAS(), s.Journal())
	if err != nil {
		t.Fatal(err)
	}
	serve := func() (*Server, *testEnv) {
		srv, err := New(t.Context(), Options{Manifest: manifest, Storage: st, Keep: time.Minute,
			Agent: []agent.Option{envOf("OPENAI_API_KEY", "sk-test", "OPENAI_BASE_URL", model.URL), agent.WithModel(agent.Model{Name: "gpt-test"})}})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(checked(t, srv.Handler()))
		t.Cleanup(hs.Close)
		return srv, &testEnv{t: t, model: model, srv: srv, http: hs, url: hs.URL, st: st}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	turn := 1
	for i := range rounds {
		srv, e := serve()
		path := "/v1/worlds/main/chats/c"
		resp := e.stream(ctx, "POST", path+"/messages", map[string]string{"text": "go"})
		_ = readSSE(resp.Body, func(ev sseEvent) bool { return ev.Event != "model_call_started" && ev.Event != "message" })
		for len(model.Requests()) < 3*i+1 { // its model call is held
			time.Sleep(5 * time.Millisecond)
		}
		resp.Body.Close()
		e.http.CloseClientConnections()
		srv.Close() // the turn is handed over
		close(holds[i])

		srv, e = serve()
		var evs []sseEvent
		_ = readSSE(e.stream(ctx, "GET", path+"/turns/"+itoa(turn)+"/events", nil).Body, func(ev sseEvent) bool {
			evs = append(evs, ev)
			return ev.Event != "turn_end"
		})
		if len(evs) == 0 || !strings.Contains(evs[len(evs)-1].Data, `"outcome":"answer"`) {
			t.Fatalf("round %d: the resumed turn: %s", i, typesOf(evs))
		}
		r, body := e.do("POST", path+"/messages", map[string]string{"text": "next"})
		if r.StatusCode != http.StatusOK || !strings.Contains(string(body), "the next answer") {
			t.Fatalf("round %d: the next message, at once after the resumed turn's end: %d %s", i, r.StatusCode, body)
		}
		turn += 2
		srv.Close()
	}
	e := &testEnv{t: t, st: st, srv: func() *Server { srv, _ := serve(); return srv }()}
	e.replays("main")
}
