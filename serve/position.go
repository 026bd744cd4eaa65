package serve

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/demiurge-dev/demiurge/agent"
)

// A position is where an event stands in its turn's stream, and its SSE
// id: "SEQ:N", the journal seq of the last journaled event at or before it
// and the count of events since the first of that seq. A turn's journaled
// events come a step at a time, in journal order, each with the seq of
// its record (agent.Chat.Watch), and the text that streams (TextDelta,
// never journaled) comes between two steps, so every stream of one turn
// gives its journaled events the same positions: where a client's stream
// broke off, the journal says what comes next.
//
// A client resumes with the last id it received (Last-Event-ID), or with
// a bare journal seq ("57": everything through seq 57).
type position struct {
	seq uint64
	n   uint64
}

// String is the position as an SSE id.
func (p position) String() string {
	return strconv.FormatUint(p.seq, 10) + ":" + strconv.FormatUint(p.n, 10)
}

// after reports whether p comes after q.
func (p position) after(q position) bool {
	return p.seq > q.seq || p.seq == q.seq && p.n > q.n
}

// parsePosition reads an SSE id or a bare seq; "" is the start (the zero
// position, before every event).
func parsePosition(s string) (position, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return position{}, nil
	}
	seq, n, hasN := strings.Cut(s, ":")
	var p position
	var err error
	if p.seq, err = strconv.ParseUint(seq, 10, 64); err != nil {
		return p, fmt.Errorf("event id %q: want SEQ:N (an id this server sent) or a journal seq", s)
	}
	if !hasN {
		p.n = math.MaxUint64 // every event of seq
		return p, nil
	}
	if p.n, err = strconv.ParseUint(n, 10, 64); err != nil {
		return p, fmt.Errorf("event id %q: want SEQ:N (an id this server sent) or a journal seq", s)
	}
	return p, nil
}

// positioner gives a turn's events their positions, in stream order.
type positioner struct {
	last position
	any  bool
}

// next returns e's position.
func (ps *positioner) next(e agent.Event) position {
	if s := eventSeq(e); s > 0 && (!ps.any || s != ps.last.seq) {
		ps.last = position{seq: s}
	} else {
		ps.last.n++
	}
	ps.any = true
	return ps.last
}

// eventSeq is the journal seq an event carries; 0 for text that streams.
func eventSeq(e agent.Event) uint64 {
	switch e := e.(type) {
	case agent.Message:
		return e.Seq
	case agent.ToolCallStarted:
		return e.Seq
	case agent.ToolCallFinished:
		return e.Seq
	case agent.ModelCall:
		return e.Seq
	case agent.ApprovalRequested:
		return e.Seq
	case agent.ApprovalDecided:
		return e.Seq
	case agent.Notice:
		return e.Seq
	case agent.Compacted:
		return e.Seq
	case agent.GuardStop:
		return e.Seq
	case agent.TurnError:
		return e.Seq
	case agent.TurnEnd:
		return e.Seq
	}
	return 0
}
