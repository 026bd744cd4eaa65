package agent_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/agent"
)

// TestOversizedMessage: a message over MaxMessageBytes is refused before
// anything is journaled, saying the limit, and the chat goes on. A chat
// that holds such a message already (sent by an older demiurge, which
// counted it whole: every later turn, and /compact, stopped past the
// model's window though 64 KiB of it is sent) becomes usable again with
// the next message, without a record of it rewritten: the settings it
// brings (item_bytes) make the chat count what is sent of each item.
func TestOversizedMessage(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Text: "hello to you"}, {Text: "SUMMARY: hello", Delay: llmtest.Duration(200 * time.Millisecond)}, {Text: "back again"}, {Text: "ok"}}})
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	open := func(manifest string) *agent.World {
		t.Helper()
		w, err := agent.Open(t.Context(), manifest, env("OPENAI_API_KEY", "sk-test", "OPENAI_BASE_URL", srv.URL),
			agent.WithModel(agent.Model{Name: "gpt-4o"}), agent.WithDir(dir))
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	big := strings.Repeat("a big paste ", 150_000) // 1.8 MB: some 450k tokens counted whole, past gpt-4o's 128k

	// The manifest as it was before item_bytes: the chat counts messages whole.
	old := filepath.Join(t.TempDir(), "demiurge")
	if err := os.CopyFS(old, os.DirFS(manifest)); err != nil {
		t.Fatal(err)
	}
	schemas := filepath.Join(old, "schemas.air.json")
	b, err := os.ReadFile(schemas)
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), `"approval_timeout_ms": {"option": {"nat": {}}},
    "item_bytes": {"option": {"nat": {}}}`, `"approval_timeout_ms": {"option": {"nat": {}}}`, 1))
	if err := os.WriteFile(schemas, b, 0o600); err != nil {
		t.Fatal(err)
	}
	w := open(old)
	c := w.Chat("c")
	if _, end := collect(t, c.Send(t.Context(), "hello")); end.Outcome != agent.OutcomeAnswer {
		t.Fatalf("first turn: %+v", end)
	}
	// As an older demiurge sent it: straight to the world, unchecked.
	st, _ := c.State()
	msg, _ := json.Marshal(map[string]string{"role": "user", "content": big})
	ref, err := w.Storage().CAS().Put(t.Context(), msg)
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := json.Marshal(map[string]any{"User": map[string]any{"chat_id": "c", "request_id": st.LastRequestID + 1, "text": big, "message_ref": ref.String()}})
	if _, err := w.World().SendJSON(t.Context(), "demiurge/ChatEvent@3", ev); err != nil {
		t.Fatal(err)
	}
	// The older demiurge ran that message's turn to its end (it tries to
	// compact, and stops past the window): wait for it. A message sent
	// while it runs would stop it instead, its summary (late here, as a
	// loaded model's may be) discarded and asked for again.
	collect(t, c.Follow(t.Context()))
	if st, _ := c.State(); st.Turn != nil {
		t.Fatalf("the big message's turn %d did not end", st.Turn.RequestID)
	}
	lines, end := collect(t, c.Send(t.Context(), "hello?"))
	if end.Outcome != agent.OutcomeStopped {
		t.Fatalf("a turn after the big message, before the fix: %+v; want it stopped (the chat is stuck)", end)
	}
	// The stop says how to go on: the manifest needs item_bytes.
	if all := strings.Join(lines, "\n"); !strings.Contains(all, `more than the model's window`) ||
		!strings.Contains(all, `its manifest `+old+` predates item_bytes`) ||
		!strings.Contains(all, `add \"item_bytes\": {\"option\": {\"nat\": {}}} to the fields of demiurge/Settings@2`) {
		t.Errorf("the stop of a stuck chat does not say how to go on:\n%s", all)
	}
	w.Close()

	// Today's manifest: the next message makes the chat count what is sent.
	w = open(manifest)
	defer w.Close()
	c = w.Chat("c")
	lines, end = collect(t, c.Send(t.Context(), "are you there?"))
	if end.Outcome != agent.OutcomeAnswer {
		t.Fatalf("the next message after the fix: %+v; want an answer\n%s", end, strings.Join(lines, "\n"))
	}

	// A message over the limit is refused, naming it; nothing is journaled.
	head := w.Head()
	var sendErr error
	for _, err := range c.Send(t.Context(), big) {
		if err != nil {
			sendErr = err
		}
	}
	if !errors.Is(sendErr, agent.ErrMessageTooLarge) || !strings.Contains(sendErr.Error(), "at most 64 KiB (65536 bytes) of one message") {
		t.Errorf("a %d-byte message: %v; want ErrMessageTooLarge saying the limit", len(big), sendErr)
	}
	if w.Head() != head {
		t.Errorf("the refused message moved the journal from %v to %v", head, w.Head())
	}
	if lines, end := collect(t, c.Send(t.Context(), "a short one")); end.Outcome != agent.OutcomeAnswer {
		t.Errorf("the turn after a refused message: %+v\n%s", end, strings.Join(lines, "\n"))
	}
}
