package serve

import (
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/cluster"
	"github.com/demiurge-dev/demiurge/internal/pgtest"
	"github.com/demiurge-dev/demiurge/pgstore"
	"github.com/demiurge-dev/demiurge/world"
)

func TestMain(m *testing.M) {
	if url := os.Getenv(benchClientEnv); url != "" {
		os.Exit(benchClient(url, os.Stdin, os.Stdout)) // the benchmark's client process
	}
	os.Exit(pgtest.Main(m))
}

// TestPostgresServers: two servers share a PostgreSQL store whose world a
// worker runs (neither server runs it): a message sent through one goes
// to the world's inbox and its turn streams from the journal; the client,
// cut off, resumes its stream on the other server with Last-Event-ID and
// sees every event once; an OpenAI client continues the conversation on
// the other server from the first's response; the world replays.
func TestPostgresServers(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	pg, err := pgstore.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	hold := make(chan struct{})
	turns := append(toolTurns(), conversationTurns()...)
	turns[1].Hold = hold // the turn's second round waits until the client has left
	model := llmtest.NewServer(llmtest.Script{Turns: turns})
	t.Cleanup(model.Close)
	agentOpts := []agent.Option{envOf("OPENAI_API_KEY", "sk-test", "OPENAI_BASE_URL", model.URL), agent.WithModel(agent.Model{Name: "gpt-test"})}

	wk, err := cluster.New(cluster.Options{Store: pg, Reducers: agent.Registry(), Open: agent.ClusterOpen(agentOpts...), ID: "w1", Lease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopWorker := context.WithCancel(context.Background())
	workerDone := make(chan error, 1)
	go func() { workerDone <- wk.Run(wctx) }()
	t.Cleanup(func() {
		stopWorker()
		if err := <-workerDone; err != nil {
			t.Errorf("worker: %v", err)
		}
	})

	servers := make([]*testEnv, 2)
	for i := range servers {
		srv, err := New(t.Context(), Options{Manifest: manifest, Agent: agentOpts, Postgres: pg})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(checked(t, srv.Handler()))
		t.Cleanup(func() {
			hs.CloseClientConnections()
			hs.Close()
			srv.Close()
		})
		servers[i] = &testEnv{t: t, model: model, srv: srv, http: hs, url: hs.URL, st: pg.Storage()}
	}
	a, b := servers[0], servers[1]

	sctx, leave := context.WithCancel(ctx)
	resp := a.stream(sctx, "POST", "/v1/worlds/main/chats/c/messages", map[string]string{"text": "write a.md"})
	if resp.StatusCode != 200 {
		t.Fatalf("send through A: %d", resp.StatusCode)
	}
	var first []sseEvent
	_ = readSSE(resp.Body, func(ev sseEvent) bool {
		first = append(first, ev)
		return ev.Event != "tool_call_finished"
	})
	leave()
	resp.Body.Close()
	close(hold)
	rest := eventsOf(t, b.stream(ctx, "GET", "/v1/worlds/main/chats/c/turns/1/events", nil, "Last-Event-ID", first[len(first)-1].ID))
	whole := eventsOf(t, b.stream(ctx, "GET", "/v1/worlds/main/chats/c/turns/1/events", nil))
	if g, w := idsOf(journaled(append(first, rest...))), idsOf(journaled(whole)); g != w {
		t.Errorf("across the two servers:\n%s\nthe turn:\n%s", g, w)
	}
	if len(rest) == 0 || !strings.Contains(rest[len(rest)-1].Data, `"outcome":"answer"`) {
		t.Fatalf("the rest of the turn, from B: %s", typesOf(rest))
	}

	// An OpenAI conversation begun on A, continued on B.
	client := func(e *testEnv) openai.Client {
		return openai.NewClient(option.WithBaseURL(e.url+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	}
	ca, cb := client(a), client(b)
	r1, err := ca.Responses.New(ctx, responses.ResponseNewParams{Model: "demiurge", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Write hello to notes.txt and show it.")}})
	if err != nil || r1.Status != "completed" || !strings.Contains(r1.OutputText(), "says hello") {
		t.Fatalf("the first response, from A: %v %+v", err, r1)
	}
	r2, err := cb.Responses.New(ctx, responses.ResponseNewParams{Model: "demiurge", PreviousResponseID: openai.String(r1.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Append world.")}})
	if err != nil || r2.Status != "completed" || !strings.Contains(r2.OutputText(), "2 lines") {
		t.Fatalf("the second response, from B: %v %+v", err, r2)
	}
	if n := len(wk.Worlds()); n != 1 {
		t.Errorf("the worker holds %d worlds; want 1", n)
	}
	if _, err := world.Rerun(ctx, world.RerunOptions{Name: "main", Catalog: a.srv.cat, Reducers: a.srv.reg, Storage: pg.Storage(), FromGenesis: true}); err != nil {
		t.Errorf("the world does not replay: %v", err)
	}
}
