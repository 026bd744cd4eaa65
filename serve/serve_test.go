package serve

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
)

// TestH2C: Serve speaks HTTP/2 without TLS to a client that knows it
// does (prior knowledge), a turn's stream included, beside HTTP/1.1.
func TestH2C(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []llmtest.Turn{{Text: "over h2c"}, {Text: "over http/1.1"}})
	ln, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	var h2 http.Protocols
	h2.SetUnencryptedHTTP2(true)
	for _, tc := range []struct {
		name   string
		client *http.Client
		major  int
		want   string
	}{
		{"h2c", &http.Client{Transport: &http.Transport{Protocols: &h2}}, 2, "over h2c"},
		{"http/1.1", http.DefaultClient, 1, "over http/1.1"},
	} {
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+ln.Addr().String()+"/v1/worlds/main/chats/c/messages", strings.NewReader(`{"text": "hi"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		resp, err := tc.client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		evs := eventsOf(t, resp)
		if resp.ProtoMajor != tc.major || len(evs) == 0 || evs[len(evs)-1].Event != "turn_end" || !strings.Contains(idsOf(evs), "message") {
			t.Errorf("%s: %s, events %s", tc.name, resp.Proto, typesOf(evs))
		}
		found := false
		for _, ev := range evs {
			found = found || strings.Contains(ev.Data, tc.want)
		}
		if !found {
			t.Errorf("%s: no %q in the stream", tc.name, tc.want)
		}
	}
}
