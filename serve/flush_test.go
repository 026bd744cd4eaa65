package serve

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
)

// TestStreamFlushesBeforeWaiting: the request that sends a message pulls
// its turn's events and leaves them in its buffer while the turn has more
// in hand; once the turn waits (here for the model's stream, held before
// its last event), what was written reaches the client. The text deltas
// arrive while the model still holds its answer, not with the turn's end.
func TestStreamFlushesBeforeWaiting(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	var released atomic.Bool
	// No heartbeat (its comment flushes the buffer) within the test.
	e := newEnv(t, []llmtest.Turn{{Text: "alpha beta gamma", Hold: hold}}, func(o *Options) { o.Heartbeat = time.Minute })
	timer := time.AfterFunc(10*time.Second, func() { released.Store(true); close(hold) })
	defer timer.Stop()
	resp := e.stream(t.Context(), "POST", "/v1/worlds/main/chats/c/messages", map[string]string{"text": "hi"})
	defer resp.Body.Close()
	var text strings.Builder
	var evs []sseEvent
	_ = readSSE(resp.Body, func(ev sseEvent) bool {
		evs = append(evs, ev)
		if ev.Event == "text_delta" {
			text.WriteString(ev.Data)
			if strings.Contains(text.String(), "gamma") {
				if released.Load() {
					t.Errorf("the text deltas arrived only once the model was released, after 10 s: they waited in the server's buffer")
				} else if timer.Stop() {
					close(hold)
				}
			}
		}
		return ev.Event != "turn_end"
	})
	if got := evs[len(evs)-1].Event; got != "turn_end" {
		t.Fatalf("the stream ended at %q, not turn_end: %s", got, typesOf(evs))
	}
}

// TestDeltaEventAsMap: a Responses text delta encoded without a map is
// the bytes json.Marshal makes of the map (HTML characters, line
// separators, invalid UTF-8, control characters included).
func TestDeltaEventAsMap(t *testing.T) {
	t.Parallel()
	for i, text := range []string{"", "hello", "a <b> & \"c\"\n\t\\", "\u2028\u2029é🙂", "bad \xff\xfe utf8", "\x00\x1f"} {
		want, err := json.Marshal(map[string]any{"type": "response.output_text.delta", "item_id": "msg_1_2_3<&>", "output_index": i,
			"content_index": 0, "delta": text, "logprobs": []any{}, "sequence_number": 40 + i})
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendDeltaEvent([]byte("junk"), "msg_1_2_3<&>", i, text, 40+i)
		if err != nil {
			t.Fatal(err)
		}
		if string(got[4:]) != string(want) {
			t.Errorf("%q:\n got %s\nwant %s", text, got[4:], want)
		}
	}
}
