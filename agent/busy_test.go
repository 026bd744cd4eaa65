package agent_test

import (
	"errors"
	"iter"
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/agent"
)

// TestNextMessageAfterTurnEnd: a caller that has the turn's TurnEnd can
// send the chat its next message at once, though it has not let the
// turn's stream return: a server that pulls the stream (iter.Pull2) or
// hands its events to another goroutine tells its client the turn ended
// as soon as it has the TurnEnd, and the client's next message came back
// ErrBusy (serve's 409 turn_under_way) while the stream had yet to free
// the chat.
func TestNextMessageAfterTurnEnd(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Text: "one"}, {Text: "two"}}})
	t.Cleanup(srv.Close)
	w, err := agent.Open(t.Context(), manifest, env("OPENAI_API_KEY", "sk-test", "OPENAI_BASE_URL", srv.URL),
		agent.WithModel(agent.Model{Name: "gpt-4o"}))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c := w.Chat("c")
	next, stop := iter.Pull2(c.Send(t.Context(), "first"))
	defer stop()
	for {
		e, err, ok := next()
		if err != nil || !ok {
			t.Fatalf("the first turn's stream ended before its TurnEnd: %v", err)
		}
		if end, isEnd := e.(agent.TurnEnd); isEnd {
			if end.Outcome != agent.OutcomeAnswer {
				t.Fatalf("first turn: %+v", end)
			}
			break
		}
	}
	var sendErr error
	var end agent.TurnEnd
	for e, err := range c.Send(t.Context(), "second") {
		if err != nil {
			sendErr = err
		}
		if e, ok := e.(agent.TurnEnd); ok {
			end = e
		}
	}
	if errors.Is(sendErr, agent.ErrBusy) || sendErr != nil {
		t.Fatalf("the message after the first turn's TurnEnd: %v", sendErr)
	}
	if end.Outcome != agent.OutcomeAnswer || end.RequestID != 2 {
		t.Errorf("second turn: %+v", end)
	}
	if _, err, ok := next(); ok || err != nil {
		t.Errorf("the first turn's stream after its TurnEnd: %v, %v; want its end", err, ok)
	}
}

// TestBreakAtTurnEnd: a caller that stops reading at the TurnEnd (it
// breaks out of its loop there) stops nothing: the turn has ended, and
// no Stop is journaled after it.
func TestBreakAtTurnEnd(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Text: "one"}}})
	t.Cleanup(srv.Close)
	w, err := agent.Open(t.Context(), manifest, env("OPENAI_API_KEY", "sk-test", "OPENAI_BASE_URL", srv.URL),
		agent.WithModel(agent.Model{Name: "gpt-4o"}))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var end agent.TurnEnd
	for e, err := range w.Chat("c").Send(t.Context(), "first") {
		if err != nil {
			t.Fatal(err)
		}
		if e, ok := e.(agent.TurnEnd); ok {
			end = e
			break
		}
	}
	if end.Outcome != agent.OutcomeAnswer {
		t.Fatalf("the turn: %+v", end)
	}
	if head := w.Head().Seq; head != end.Seq {
		t.Errorf("the journal went on to seq %d after the TurnEnd (seq %d): a stop of the ended turn", head, end.Seq)
	}
}
