package demiurge

import (
	"cmp"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/reducer"
)

// outputItem is a function_call_output item, as the Responses API reads it.
type outputItem struct {
	Type   string `json:"type"`
	CallID string `json:"call_id"`
	Output string `json:"output"`
}

// answer gives a call its output: it writes the output item blob and marks
// the call with a status (ok, error, denied, timeout, not_run).
func (s *step) answer(pc *PendingCall, status, text string) error {
	return s.answerCut(pc, status, text, int(cmp.Or(s.st.Settings.OutputLimit, DefaultOutputLimit)))
}

// answerCut is answer with the output cut at limit bytes.
func (s *step) answerCut(pc *PendingCall, status, text string, limit int) error {
	text = cutUTF8(text, limit)
	b, err := json.Marshal(outputItem{Type: "function_call_output", CallID: pc.CallID, Output: text})
	if err != nil {
		return err
	}
	ref := cas.Sum(b)
	s.out.Blobs = append(s.out.Blobs, b)
	s.st.Tokens += s.itemTokens(len(b)) // it joins the next request
	pc.Status, pc.OutputRef = status, &ref
	t := s.st.Turn
	s.entry(Entry{RequestID: t.RequestID, Round: t.Round, Kind: EntryToolOutput, Text: preview(text), Ref: &ref,
		CallID: strp(pc.CallID), Tool: strp(pc.Tool), Status: strp(status)})
	return nil
}

// cutUTF8 cuts text to at most limit bytes on a UTF-8 boundary, with a note
// of the original size.
func cutUTF8(text string, limit int) string {
	if len(text) <= limit {
		return text
	}
	cut := runeCut(text, limit)
	return text[:cut] + fmt.Sprintf("\n[output cut at %d of %d bytes]", cut, len(text))
}

// signature names a call for the repeat guard: a short hash of the tool
// and its canonical arguments (the chat's state keeps one per call of the
// round, and the turn's latest RecentCalls).
func signature(tool, args string) string {
	sum := cas.Sum([]byte(tool + "\x00" + args)).Digest()
	return hex.EncodeToString(sum[:6]) // 48 bits: a repeat guard's, not a proof's
}

// EntryTextLimit bounds the text a tool_call or tool_output entry keeps:
// the chat's state is written at every step, so it holds the start of long
// arguments and outputs, and the entry's ref names the whole (see
// ToolCallOf and ToolOutputOf).
const EntryTextLimit = 256

// preview is what an entry keeps of text: all of it up to EntryTextLimit,
// else its start and its size.
func preview(text string) string {
	if len(text) <= EntryTextLimit {
		return text
	}
	return clip(text, EntryTextLimit) + fmt.Sprintf(" [%d bytes in all]", len(text))
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:runeCut(s, n)] + "…"
}

// runeCut returns the largest cut of s at most n (n < len(s)) that falls on
// a UTF-8 boundary.
func runeCut(s string, n int) int {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

func (r *Reducer) toolResult(s *step, e ToolResult) error {
	t := s.st.Turn
	if t == nil || t.RequestID != e.RequestID || t.Round != e.Round {
		return s.forwardCommits(e.Response.Commits) // a late result: its commits still count
	}
	var pc *PendingCall
	for i := range t.Calls {
		if t.Calls[i].CallID == e.CallID && t.Calls[i].Status == "pending" {
			pc = &t.Calls[i]
		}
	}
	if pc == nil {
		return s.forwardCommits(e.Response.Commits)
	}
	resp := e.Response
	status, text := "ok", resp.Stdout
	if resp.ExitCode != 0 || resp.Error != nil {
		status = "error"
		var b strings.Builder
		fmt.Fprintf(&b, "error (exit %d", resp.ExitCode)
		if resp.Error != nil {
			fmt.Fprintf(&b, ", %s", *resp.Error)
		}
		b.WriteString(")")
		if resp.Stderr != "" {
			b.WriteString("\n" + resp.Stderr)
		}
		if resp.Stdout != "" {
			b.WriteString("\n" + resp.Stdout)
		}
		text = b.String()
	} else if resp.Stderr != "" {
		// A script that ends well can still say things on stderr (a
		// refusal it caught with ||, a warning): the model reads both.
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += "[stderr]\n" + resp.Stderr
	} else if text == "" {
		text = "(no output)"
	}
	// A tool that cut its own output (StdoutTruncated) has said so in it,
	// with the size it had.
	// A tool that bounds its own output (a file read) is cut at its own
	// limit; the others at the chat's.
	limit := int(cmp.Or(s.st.Settings.OutputLimit, DefaultOutputLimit))
	if sp := r.toolSet(s).byName[pc.Tool]; sp != nil && sp.spec.OutputLimit > 0 {
		limit = sp.spec.OutputLimit
	}
	if err := s.answerCut(pc, status, text, limit); err != nil {
		return err
	}
	if err := s.forwardCommits(resp.Commits); err != nil {
		return err
	}
	return r.maybeNextRound(s)
}

// forwardCommits records the workspace commits a tool made.
func (s *step) forwardCommits(cs []WorkspaceCommit) error {
	for _, c := range cs {
		v, err := reducer.FromGo(c)
		if err != nil {
			return err
		}
		s.out.Events = append(s.out.Events, reducer.Event{Schema: CommitSchema, Value: v, Key: c.Workspace})
	}
	return nil
}
