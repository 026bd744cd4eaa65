package demiurge_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/cas/reflist"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
)

// compactingModel is a fake model for a long turn: it reads big.md (900
// bytes a round) until it has done rounds reads, then answers; asked to
// summarize (a compaction), it answers with a summary that counts the
// reads it was shown.
func compactingModel(rounds int) *llmtest.Server {
	done := 0
	return llmtest.NewServerFunc(func(r llmtest.Request) llmtest.Turn {
		if bytes.Contains(r.Body, []byte("summarizing the earlier part of a conversation")) {
			n := bytes.Count(r.Body, []byte(`"type":"function_call_output"`))
			return llmtest.Turn{Text: fmt.Sprintf("SUMMARY: the user asked for reads; %d reads of big.md were done, each 900 b's.", n)}
		}
		if done >= rounds {
			return llmtest.Turn{Text: "All read."}
		}
		done++
		return llmtest.Turn{Calls: []llmtest.Call{{Name: "workspace_read", Arguments: `{"path":"big.md"}`}}}
	})
}

// TestCompaction: a turn of 60 rounds whose transcript is many times the
// model's window is compacted as it goes; no request is ever larger than
// the window; the summary stands for the compacted part; the session
// replays.
func TestCompaction(t *testing.T) {
	const window = 4000
	srv := compactingModel(60)
	cw := newChatWorldOn(t, srv, fmt.Sprintf(`{"context_window": %d, "max_rounds": 100, "max_repeats": 1000, "output_limit": 2000}`, window))
	cw.say(t, 1, "read big.md 60 times")
	st := cw.state(t)
	if st.Turn != nil {
		t.Fatalf("the turn did not end:\n%s", entries(st))
	}
	compactions, answers := 0, 0
	for _, r := range srv.Requests() {
		if tokens := len(r.Body) / 4; tokens > window {
			t.Errorf("request %d holds about %d tokens, over the window of %d", r.Seq, tokens, window)
		}
		if bytes.Contains(r.Body, []byte("summarizing the earlier part")) {
			compactions++
		} else {
			answers++
		}
	}
	if compactions < 3 || answers != 61 {
		t.Errorf("%d compactions and %d answering calls; want several and 61", compactions, answers)
	}
	// The last request carries the latest summary, not the first reads.
	last := srv.Requests()[len(srv.Requests())-1].Body
	if !bytes.Contains(last, []byte("SUMMARY:")) || bytes.Count(last, []byte(`"type":"function_call_output"`)) > 20 {
		t.Errorf("the last request does not stand on a summary: %d outputs", bytes.Count(last, []byte(`"type":"function_call_output"`)))
	}
	// The transcript keeps everything: the message, 60 outputs of the
	// model and 60 of the tool, and the answer.
	if st.Transcript.Len != 1+60+60+1 || st.Summary == nil || st.From == 0 {
		t.Errorf("transcript of %d items from %d, summary %v", st.Transcript.Len, st.From, st.Summary)
	}
	refs, err := reflist.Slice(t.Context(), cw.st.CAS(), nil, st.Transcript, 0, st.Transcript.Len)
	if err != nil || len(refs) != int(st.Transcript.Len) {
		t.Fatalf("the transcript does not read back: %v", err)
	}
	checkReplay(t, cw)
}

// TestCompactionByHand: the user asks for a compaction between turns.
func TestCompactionByHand(t *testing.T) {
	srv := compactingModel(3)
	cw := newChatWorldOn(t, srv, `{"max_rounds": 10, "max_repeats": 10}`)
	cw.say(t, 1, "read big.md 3 times")
	before := cw.state(t)
	cw.send(t, `{"Compact": {"chat_id": "c1", "request_id": 2}}`)
	st := cw.state(t)
	got := cw.timeline(t)
	if !strings.Contains(got, "compact: compacted transcript items 0 to ") || !strings.Contains(got, "done [stop]: compacted") || st.Summary == nil {
		t.Fatalf("entries:\n%s", got)
	}
	if st.Transcript.Len != before.Transcript.Len || st.From == 0 {
		t.Errorf("transcript %d from %d; want %d kept whole, sent from past 0", st.Transcript.Len, st.From, before.Transcript.Len)
	}
	// Nothing left to compact: said so, no model call.
	n := len(srv.Requests())
	cw.send(t, `{"Compact": {"chat_id": "c1", "request_id": 3}}`)
	if len(srv.Requests()) != n || !strings.Contains(cw.timeline(t), "nothing to compact") {
		t.Errorf("a second compaction: %d calls\n%s", len(srv.Requests())-n, cw.timeline(t))
	}
	checkReplay(t, cw)
}

// TestOverflowFails: with on_overflow "fail", a turn whose next request
// would not fit ends, saying so.
func TestOverflowFails(t *testing.T) {
	srv := compactingModel(60)
	cw := newChatWorldOn(t, srv, `{"context_window": 3000, "on_overflow": "fail", "max_rounds": 100, "max_repeats": 1000, "output_limit": 2000}`)
	cw.say(t, 1, "go")
	got := cw.timeline(t)
	if !strings.Contains(got, "stop: the next request would hold about") || !strings.Contains(got, "(on_overflow: fail)") {
		t.Fatalf("entries:\n%s", got)
	}
	for _, r := range srv.Requests() {
		if bytes.Contains(r.Body, []byte("summarizing")) {
			t.Error("a compaction with on_overflow fail")
		}
	}
	checkReplay(t, cw)
}

// TestStateStaysSmall: however long the turn, the chat's state stays
// about the same size.
func TestStateStaysSmall(t *testing.T) {
	cw := newChatWorldOn(t, compactingModel(120), `{"max_rounds": 200, "max_repeats": 1000, "token_budget": 1000000000}`)
	cw.say(t, 1, "go")
	st := cw.state(t)
	if st.Transcript.Len != 1+2*120+1 || len(st.Entries) > demiurge.EntriesKept+4 {
		t.Errorf("transcript %d, %d entries", st.Transcript.Len, len(st.Entries))
	}
	enc, err := cw.stateBytes(t)
	if err != nil || len(enc) > 8<<10 {
		t.Errorf("the state is %d bytes after 120 rounds (%v)", len(enc), err)
	}
}
