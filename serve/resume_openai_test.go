package serve

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
)

// TestOpenAIResponsesResume: openai-go streams a response, goes away
// mid-text, and resumes it with GET /v1/responses/{id}?stream=true&
// starting_after=N (Responses.GetStreaming): it gets every event after
// N once, numbered on from N, and the two parts are the response's whole
// stream, event for event. Without the turn's log (a restart, another
// server) the text's events come from the journal, numbered otherwise:
// resuming after a message's first event is refused (409
// cannot_resume), before it the stream goes on as sent.
func TestOpenAIResponsesResume(t *testing.T) {
	t.Parallel()
	for _, fromJournal := range []bool{false, true} {
		name := "log"
		if fromJournal {
			name = "journal"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			hold := make(chan struct{})
			e := newEnv(t, []llmtest.Turn{{Text: "one two three four five six seven", Hold: hold}})
			cl := e.client()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			read := func(s interface {
				Next() bool
				Current() responses.ResponseStreamEventUnion
				Err() error
			}, until func(responses.ResponseStreamEventUnion) bool) ([]responses.ResponseStreamEventUnion, error) {
				var evs []responses.ResponseStreamEventUnion
				for s.Next() {
					evs = append(evs, s.Current())
					if until != nil && until(s.Current()) {
						break
					}
				}
				return evs, s.Err()
			}
			sctx, stop := context.WithCancel(ctx)
			deltas := 0
			first, err := read(cl.Responses.NewStreaming(sctx, responses.ResponseNewParams{Model: "demiurge",
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("count")}}), func(ev responses.ResponseStreamEventUnion) bool {
				if ev.Type == "response.output_text.delta" {
					deltas++
				}
				return deltas == 3
			})
			stop() // the client goes away mid-text
			if err != nil || deltas != 3 {
				t.Fatalf("the first stream: %v, %d deltas", err, deltas)
			}
			id := first[0].Response.ID
			n := first[len(first)-1].SequenceNumber
			if fromJournal {
				e.srv.mu.Lock()
				clear(e.srv.logs) // as after a restart, or on another server
				e.srv.mu.Unlock()
			}
			close(hold)
			resume := func(after int64) ([]responses.ResponseStreamEventUnion, error) {
				p := responses.ResponseGetParams{}
				if after >= 0 {
					p.StartingAfter = openai.Int(after)
				}
				return read(cl.Responses.GetStreaming(ctx, id, p), nil)
			}
			rest, err := resume(n)
			if fromJournal {
				if code := apiCode(err); code != "cannot_resume" || len(rest) != 0 {
					t.Errorf("resumed mid-text from the journal: %v (code %q), %d events; want 409 cannot_resume", err, code, len(rest))
				}
				// Resumed before the text: the stream goes on as sent.
				first = first[:2] // response.created, response.in_progress
				if rest, err = resume(1); err != nil {
					t.Fatalf("resumed after response.in_progress: %v", err)
				}
			} else if err != nil {
				t.Fatalf("resumed: %v", err)
			}
			whole, err := resume(-1)
			if err != nil {
				t.Fatalf("the whole stream: %v", err)
			}
			got := append(first, rest...)
			if len(rest) == 0 || rest[0].SequenceNumber != first[len(first)-1].SequenceNumber+1 || rest[len(rest)-1].Type != "response.completed" {
				t.Fatalf("the resumed stream: %s", seqTypes(rest))
			}
			if len(got) != len(whole) {
				t.Fatalf("before and after the break:\n%s\nthe whole stream:\n%s", seqTypes(got), seqTypes(whole))
			}
			var text strings.Builder
			for i := range got {
				if g, w := got[i].RawJSON(), whole[i].RawJSON(); g != w {
					t.Errorf("event %d: %s\nthe whole stream's: %s", i, g, w)
				}
				if got[i].Type == "response.output_text.delta" {
					text.WriteString(got[i].Delta)
				}
			}
			if txt := strings.ReplaceAll(text.String(), " ", ""); txt != "onetwothreefourfivesixseven" {
				t.Errorf("the deltas make %q", text.String())
			}
			// After its last event: an empty stream (from the log; from the
			// journal, numbers past the text are refused as above).
			if after, err := resume(whole[len(whole)-1].SequenceNumber); !fromJournal && (err != nil || len(after) != 0) {
				t.Errorf("resumed after the end: %v, %s", err, seqTypes(after))
			}
			e.replays("main")
		})
	}
}

// seqTypes is the events' sequence numbers and types, a line each.
func seqTypes(evs []responses.ResponseStreamEventUnion) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(strings.TrimSpace(strings.Join([]string{strconv.FormatInt(e.SequenceNumber, 10), e.Type}, " ")))
		b.WriteByte('\n')
	}
	return b.String()
}
