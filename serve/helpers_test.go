package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
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

const manifest = "../examples/demiurge"

// testEnv is a server under test: the fake model behind it, the server,
// and its address.
type testEnv struct {
	t     *testing.T
	model *llmtest.Server
	srv   *Server
	http  *httptest.Server
	url   string
	st    world.Storage
}

// envOf returns an agent.WithEnv of the variables given.
func envOf(kv ...string) agent.Option {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return agent.WithEnv(func(k string) (string, bool) { v, ok := m[k]; return v, ok })
}

// newEnv starts a server of examples/demiurge against a fake model
// answering turns, on a bbolt store in a temporary directory.
func newEnv(t *testing.T, turns []llmtest.Turn, edit ...func(*Options)) *testEnv {
	t.Helper()
	model := llmtest.NewServer(llmtest.Script{Turns: turns})
	t.Cleanup(model.Close)
	return newEnvModel(t, model, edit...)
}

// newEnvModel is newEnv with a model of the test's own.
func newEnvModel(t *testing.T, model *llmtest.Server, edit ...func(*Options)) *testEnv {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	s, err := store.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := world.NewBoltStorage(s.CAS(), s.Journal())
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{
		Manifest: manifest,
		Agent: []agent.Option{envOf("OPENAI_API_KEY", "sk-test", "OPENAI_BASE_URL", model.URL),
			agent.WithModel(agent.Model{Name: "gpt-test"})},
		Storage: st,
		Keep:    time.Minute,
	}
	for _, e := range edit {
		e(&opts)
	}
	srv, err := New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(checked(t, srv.Handler()))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		srv.Close()
		s.Close()
	})
	return &testEnv{t: t, model: model, srv: srv, http: hs, url: hs.URL, st: st}
}

// do sends a request and returns the response, its body read.
func (e *testEnv) do(method, path string, body any, header ...string) (*http.Response, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp, b
}

// sseEvent is one event of a stream, as a client reads it.
type sseEvent struct {
	ID, Event, Data string
}

// readSSE reads events from r, calling fn with each until it returns
// false or the stream ends.
func readSSE(r io.Reader, fn func(sseEvent) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4<<10), 16<<20) // grown as lines need: the benchmarks' clients read thousands of streams
	var ev sseEvent
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) > 0 || ev.Event != "" {
				ev.Data = strings.Join(data, "\n")
				if !fn(ev) {
					return nil
				}
			}
			ev, data = sseEvent{}, nil
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			ev.ID = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			ev.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		}
	}
	return sc.Err()
}

// stream opens an event stream and returns its response (the caller
// reads and closes the body).
func (e *testEnv) stream(ctx context.Context, method, path string, body any, header ...string) *http.Response {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(ctx, method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// eventsOf reads a whole stream's events.
func eventsOf(t *testing.T, resp *http.Response) []sseEvent {
	t.Helper()
	defer resp.Body.Close()
	var evs []sseEvent
	if err := readSSE(resp.Body, func(e sseEvent) bool { evs = append(evs, e); return true }); err != nil {
		t.Fatal(err)
	}
	return evs
}

// journaled drops the text deltas (not journaled) of evs.
func journaled(evs []sseEvent) []sseEvent {
	var out []sseEvent
	for _, e := range evs {
		if e.Event != "text_delta" {
			out = append(out, e)
		}
	}
	return out
}

// typesOf is evs's event names, space-separated.
func typesOf(evs []sseEvent) string {
	var s []string
	for _, e := range evs {
		s = append(s, e.Event)
	}
	return strings.Join(s, " ")
}

// requireApproval is agent.RequireApproval.
func requireApproval(tools ...string) agent.ChatOption { return agent.RequireApproval(tools...) }
