package serve

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/demiurge-dev/demiurge/agent"
)

// lockedBuffer is a log a server writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// cassetteEnv is a server of examples/demiurge whose model is the strict
// cassette of the demo session, with world main holding a session
// already (a message the recording never had), as after the README's
// quick start.
func cassetteEnv(t *testing.T, newWorlds bool) (*testEnv, *lockedBuffer) {
	t.Helper()
	logs := &lockedBuffer{}
	e := newEnv(t, nil, func(o *Options) {
		o.Agent = []agent.Option{agent.WithModel(agent.Cassette("../testdata/sessions/demo"))}
		o.NewWorlds = newWorlds
		o.Log = slog.New(slog.NewJSONHandler(logs, nil))
	})
	if r, b := e.do("POST", "/v1/worlds/main/chats/first/messages", map[string]string{"text": "hello"}); r.StatusCode != 200 {
		t.Fatalf("the first session: %d %s", r.StatusCode, b)
	}
	return e, logs
}

// responseOf is what a test reads of a response.
type responseOf struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Output []struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Error *struct {
		Code, Message string
	} `json:"error"`
}

func (r responseOf) text() string {
	var b strings.Builder
	for _, o := range r.Output {
		for _, c := range o.Content {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// TestNewWorldsReplayTheCassette: with NewWorlds (serve --llm cassette
// without --world), each conversation an OpenAI client begins goes to a
// world of its own, where the recording plays: the README's SDK example
// after its quick start, and again. Without it, it goes to main, which
// the quick start filled, and fails.
func TestNewWorldsReplayTheCassette(t *testing.T) {
	t.Parallel()
	e, logs := cassetteEnv(t, true)
	const input = "Write a hello note and show it to me."
	worlds := map[string]bool{}
	for i := range 2 {
		r, b := e.do("POST", "/v1/responses", map[string]any{"model": "demiurge", "input": input})
		var resp responseOf
		if err := json.Unmarshal(b, &resp); err != nil || r.StatusCode != 200 || resp.Status != "completed" || !strings.Contains(resp.text(), "I wrote notes/hello.md") {
			t.Fatalf("response %d: %d %s", i+1, r.StatusCode, b)
		}
		ref, err := decodeID("resp_", resp.ID)
		if err != nil {
			t.Fatal(err)
		}
		worlds[ref.World] = true
	}
	if !worlds["main-2"] || !worlds["main-3"] {
		t.Errorf("the conversations went to %v; want main-2 and main-3", worlds)
	}
	if !strings.Contains(logs.String(), `"world":"main-2"`) {
		t.Errorf("the log does not say a conversation went to main-2:\n%s", logs)
	}
	// A request that names its world goes there.
	r, b := e.do("POST", "/v1/responses", map[string]any{"model": "demiurge", "input": input}, "Demiurge-World", "mine")
	var resp responseOf
	_ = json.Unmarshal(b, &resp)
	if ref, _ := decodeID("resp_", resp.ID); r.StatusCode != 200 || ref.World != "mine" || resp.Status != "completed" {
		t.Errorf("Demiurge-World mine: %d %s", r.StatusCode, b)
	}
}

// TestFailedTurnShortError: a turn that fails with a long error (the
// strict cassette's diff of the request against the recording) is told
// to an OpenAI client in a line that says what failed and where the
// whole error is; the server logs that line.
func TestFailedTurnShortError(t *testing.T) {
	t.Parallel()
	e, logs := cassetteEnv(t, false)
	r, b := e.do("POST", "/v1/responses", map[string]any{"model": "demiurge", "input": "Write a hello note and show it to me."})
	var resp responseOf
	if err := json.Unmarshal(b, &resp); err != nil || r.StatusCode != 200 || resp.Status != "failed" || resp.Error == nil {
		t.Fatalf("%d %s", r.StatusCode, b)
	}
	msg := resp.Error.Message
	if strings.Contains(msg, "\n") || len(msg) > maxFault+200 || !strings.Contains(msg, "is not the recorded one") ||
		!strings.Contains(msg, "(the whole error: demiurge trace --world main --chat conv_") {
		t.Errorf("the client is told:\n%s", msg)
	}
	if !strings.Contains(logs.String(), `"msg":"turn failed","world":"main"`) {
		t.Errorf("the log does not say the turn failed:\n%s", logs)
	}
	// Chat Completions says it so too.
	r, b = e.do("POST", "/v1/chat/completions", map[string]any{"model": "demiurge", "messages": []map[string]string{{"role": "user", "content": "Write a hello note and show it to me."}}})
	if r.StatusCode != 502 || bytes.Contains(b, []byte(`\n`)) || !bytes.Contains(b, []byte("the turn failed: llm.generate failed: cassette")) {
		t.Errorf("chat completions: %d %s", r.StatusCode, b)
	}
}

// TestNewWorldsChatCompletions: under NewWorlds a Chat Completions
// conversation begins in a world of its own, and its next message (the
// history sent back) finds it there: the cassette then says it has no
// more answers, not that the conversation is unknown.
func TestNewWorldsChatCompletions(t *testing.T) {
	t.Parallel()
	e, _ := cassetteEnv(t, true)
	const input = "Write a hello note and show it to me."
	first := []map[string]string{{"role": "user", "content": input}}
	r, b := e.do("POST", "/v1/chat/completions", map[string]any{"model": "demiurge", "messages": first})
	var cc struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &cc); err != nil || r.StatusCode != 200 || len(cc.Choices) != 1 || !strings.Contains(cc.Choices[0].Message.Content, "I wrote notes/hello.md") {
		t.Fatalf("the first message: %d %s", r.StatusCode, b)
	}
	next := append(first, map[string]string{"role": "assistant", "content": cc.Choices[0].Message.Content}, map[string]string{"role": "user", "content": "Now add a line."})
	r, b = e.do("POST", "/v1/chat/completions", map[string]any{"model": "demiurge", "messages": next})
	if r.StatusCode != 502 || !bytes.Contains(b, []byte("holds 3 model answers and this is call 4")) {
		t.Errorf("the next message: %d %s", r.StatusCode, b)
	}
}
