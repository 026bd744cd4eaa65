package demiurge

import (
	"cmp"
	"encoding/json"
	"fmt"

	"github.com/demiurge-dev/demiurge/cas"
)

// How the chat keeps its requests under the model's window.
//
// The state estimates the next request's prompt in tokens (State.Tokens):
// after each model call, the provider's count of the call (its prompt and
// its output, which the next request carries); then about a token for
// every 4 bytes of each item appended. Before sending a request, if the
// estimate is past CompactAt percent of the window, the chat compacts: a
// model call of its own (a ChatRequest of purpose "compact", journaled
// like any other) is sent the summary so far and the oldest part of the
// transcript — everything before the latest rounds that fit in KeepShare
// percent of the window — and asked for a summary; the summary then
// stands for that part in every later request (State.Summary, State.From),
// while the transcript keeps every item. A round is never split: the kept
// part begins where a round began (State.Marks), so a call and its output
// stay together.

// CompactInstructions is the system prompt of a compaction call.
const CompactInstructions = `You are summarizing the earlier part of a conversation between a user and an AI agent that uses tools, so that the agent can go on without it. Write a summary that keeps everything the agent needs: the user's requests and constraints, decisions taken, facts learned from tool results (paths, names, numbers, errors), what was done and what is left. Be complete but terse; use short paragraphs or lists. Do not call tools.`

// compactAsk is the message that ends a compaction call's transcript.
const compactAsk = `Summarize the conversation above, as the instructions say. Reply with the summary only.`

// summaryIntro begins the message that stands for the compacted part.
const summaryIntro = "[The earlier part of this conversation was compacted to save room in the context window. This is its summary, written by the model.]\n\n"

// userItem is a user message item, as the Responses API reads it.
type userItem struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// mark remembers where the round about to be requested begins.
func (s *step) mark() {
	m := RoundMark{Index: s.st.Transcript.Len, Tokens: s.st.Tokens}
	if n := len(s.st.Marks); n > 0 && s.st.Marks[n-1].Index == m.Index {
		s.st.Marks[n-1] = m
		return
	}
	s.st.Marks = append(s.st.Marks, m)
	if len(s.st.Marks) > Marks {
		s.st.Marks = append([]RoundMark{}, s.st.Marks[len(s.st.Marks)-Marks:]...)
	}
}

// fitWindow checks the next request against the window. It reports
// whether the request may be sent now; if not, it has either emitted a
// compaction call or ended the turn.
func (r *Reducer) fitWindow(s *step) (bool, error) {
	set := s.st.Settings
	if set.ContextWindow == nil || *set.ContextWindow == 0 {
		return true, nil
	}
	window := *set.ContextWindow
	limit := window * cmp.Or(deref64(set.CompactAt), DefaultCompactAt) / 100
	if s.st.Tokens <= limit {
		return true, nil
	}
	if deref(set.OnOverflow) == "fail" {
		return false, s.stopTurn(fmt.Sprintf("the next request would hold about %d tokens, past %d%% of the model's window of %d (on_overflow: fail)",
			s.st.Tokens, cmp.Or(deref64(set.CompactAt), DefaultCompactAt), window))
	}
	cut, ok := s.cutPoint(window * KeepShare / 100)
	if !ok {
		if s.st.Tokens <= window {
			return true, nil // nothing to compact, and it still fits
		}
		return false, s.stopTurn(fmt.Sprintf("the next request would hold about %d tokens, more than the model's window of %d, and the latest round alone is too large to compact", s.st.Tokens, window))
	}
	return false, s.compact(cut)
}

func deref64(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// cutPoint returns where a compaction cuts the transcript: the start of
// the oldest of the latest rounds that fit in keep tokens (at least the
// latest round is kept), if that is past what was compacted before.
func (s *step) cutPoint(keep uint64) (uint64, bool) {
	marks := s.st.Marks
	if len(marks) == 0 {
		return 0, false
	}
	cut := marks[len(marks)-1].Index
	for i := len(marks) - 2; i >= 0; i-- {
		if s.st.Tokens-min(s.st.Tokens, marks[i].Tokens) > keep {
			break
		}
		cut = marks[i].Index
	}
	return cut, cut > s.st.From
}

// compact emits the compaction call that summarizes the summary so far
// and the transcript up to cut.
func (s *step) compact(cut uint64) error {
	ask, err := json.Marshal(userItem{Role: "user", Content: compactAsk})
	if err != nil {
		return err
	}
	s.out.Blobs = append(s.out.Blobs, ask)
	t := s.st.Turn
	t.Compacting = &cut
	req := s.baseRequest(PurposeCompact)
	instructions := CompactInstructions
	req.Instructions, req.InstructionsRef = &instructions, nil
	req.Transcript = s.view()
	req.Transcript.To = &cut
	req.Transcript.Suffix = []cas.Ref{cas.Sum(ask)}
	if req.ToolsRef != nil {
		req.ToolChoice = &ToolChoice{Tag: "None"} // the tools only explain the calls in the transcript
	}
	return s.emitRequest(req)
}

// compacted takes a compaction call's answer: its summary stands for the
// transcript up to the cut from now on.
func (r *Reducer) compacted(s *step, rc LlmReceipt) error {
	t := s.st.Turn
	cut := *t.Compacting
	t.Compacting = nil
	if rc.OutputText == "" || replyCut(rc.FinishReason) {
		s.entry(Entry{RequestID: t.RequestID, Round: t.Round, Kind: EntryError,
			Text: fmt.Sprintf("the compaction failed: the model's summary was %s", cmp.Or(map[bool]string{true: "empty"}[rc.OutputText == ""], "cut off ("+rc.FinishReason+")"))})
		return s.stopTurn("the transcript could not be compacted")
	}
	item, err := json.Marshal(userItem{Role: "user", Content: summaryIntro + rc.OutputText})
	if err != nil {
		return err
	}
	ref := cas.Sum(item)
	s.out.Blobs = append(s.out.Blobs, item)
	// The estimate, and the marks kept, are rebased: what stood before
	// the cut is now the overhead and the summary.
	at := uint64(0) // the estimate up to the cut
	for _, m := range s.st.Marks {
		if m.Index == cut {
			at = m.Tokens
		}
	}
	before := s.st.Tokens
	base := s.st.OverheadTokens + tokensOf(len(item))
	rebase := func(tok uint64) uint64 { return base + tok - min(tok, at) }
	s.st.Tokens = rebase(before)
	var marks []RoundMark
	for _, m := range s.st.Marks {
		if m.Index >= cut {
			marks = append(marks, RoundMark{Index: m.Index, Tokens: rebase(m.Tokens)})
		}
	}
	s.st.Marks = marks
	from := s.st.From
	s.st.From, s.st.Summary = cut, &ref
	s.entry(Entry{RequestID: t.RequestID, Round: t.Round, Kind: EntryCompact, Ref: &ref,
		Text: fmt.Sprintf("compacted transcript items %d to %d (about %d tokens) into a summary of about %d tokens", from, cut, at-min(at, s.st.OverheadTokens), tokensOf(len(item)))})
	if t.Kind == TurnCompact {
		s.entry(Entry{RequestID: t.RequestID, Round: t.Round, Kind: EntryDone, Text: "compacted", Status: strp("stop")})
		s.st.Turn = nil
		return nil
	}
	return r.request(s)
}

// compactRequested starts a compaction the user asked for: the transcript
// is compacted up to the latest round (or, with a window, up to the latest
// rounds that fit in KeepShare of it).
func (r *Reducer) compactRequested(s *step, e CompactRequest) error {
	if s.st.Settings == nil {
		return fmt.Errorf("chat %s has no settings: send Created first", s.chat)
	}
	if e.RequestID <= s.st.LastRequestID {
		return nil
	}
	s.newTurn(e.RequestID, fmt.Sprintf("a compaction (request %d) was asked for before the turn ended", e.RequestID))
	s.st.Turn = &Turn{RequestID: e.RequestID, Kind: TurnCompact}
	keep := uint64(0)
	if w := s.st.Settings.ContextWindow; w != nil {
		keep = *w * KeepShare / 100
	}
	cut, ok := s.cutPoint(keep)
	if !ok {
		s.entry(Entry{RequestID: e.RequestID, Kind: EntryDone, Text: "nothing to compact: the transcript holds only the latest round", Status: strp("stop")})
		s.st.Turn = nil
		return nil
	}
	return s.compact(cut)
}
