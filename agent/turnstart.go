package agent

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/world"
)

// startWindow is how many records before the head turnWindow reads
// first; each further try reads twice as many.
const startWindow = 256

// errWindowDone ends a read of the journal at the head it began at.
var errWindowDone = errors.New("window read")

// turnWindow is the chat's state records of the journal's latest part,
// from before its turn id began: what a stream that did not start the
// turn (Follow after a restart, Decide) reads of the turn's past.
type turnWindow struct {
	c       *Chat
	states  []stateAt  // the chat's state records, in journal order
	results []resultAt // the chat's Result events (its model calls' receipts), in journal order
	before  int        // the last state before the turn, or -1: the chat began with it
}

// stateAt is one state record of the chat: its seq and the state's ref.
type stateAt struct {
	seq uint64
	ref cas.Ref
}

// read returns the chat state at ref.
func (tw *turnWindow) read(ctx context.Context, ref cas.Ref) (*demiurge.StateView, error) {
	var st demiurge.StateView
	if err := cas.GetNode(ctx, tw.c.w.st.CAS(), ref, &st); err != nil {
		return nil, fmt.Errorf("chat %s: read its state: %w", tw.c.id, err)
	}
	return &st, nil
}

// search returns the first of states[lo:] for which f holds, f being
// false, then true; len(states) if it holds for none.
func (tw *turnWindow) search(ctx context.Context, lo int, f func(*demiurge.StateView) bool) (int, error) {
	var ferr error
	i := sort.Search(len(tw.states)-lo, func(i int) bool {
		if ferr != nil {
			return true
		}
		st, err := tw.read(ctx, tw.states[lo+i].ref)
		if err != nil {
			ferr = err
			return true
		}
		return f(st)
	})
	return lo + i, ferr
}

// start returns the chat's state just before the turn began (nil if the
// chat did not exist then): a TurnEnd's usage and cost are counted from
// it, so that they are the whole turn's, not only what the stream saw.
func (tw *turnWindow) start(ctx context.Context) (*demiurge.StateView, error) {
	if tw.before < 0 {
		return nil, nil
	}
	return tw.read(ctx, tw.states[tw.before].ref)
}

// askedAt returns the seq of the step that made call of turn id wait for
// approval, if it waits still; 0 if the window does not say.
func (tw *turnWindow) askedAt(ctx context.Context, id uint64, call string) uint64 {
	i, err := tw.search(ctx, tw.before+1, func(st *demiurge.StateView) bool {
		if st.Turn == nil || st.Turn.RequestID != id {
			return false
		}
		for _, pc := range st.Turn.Calls {
			if pc.CallID == call {
				return pc.Status == "approval"
			}
		}
		return false
	})
	if err != nil || i >= len(tw.states) {
		return 0
	}
	return tw.states[i].seq
}

// turnWindow reads the journal back to the start of the chat's turn id.
//
// The chat's state is cumulative (usage, cost, the last request id), so
// the state before the turn is the last of the chat's state records whose
// last request id is below id. The turn is the chat's latest, near the
// head: the journal is read from the head back, in windows that double,
// until one holds such a record. A window's state records are only
// listed (their payload names the reducer and key); their states, in the
// store, are read by bisection, a few of them however long the turn.
func (c *Chat) turnWindow(ctx context.Context, id uint64) (*turnWindow, error) {
	w := c.w
	j := w.st.Journal()
	head := w.host.Head()
	for n := uint64(startWindow); ; n *= 2 {
		from := uint64(1)
		if head.Seq > n {
			from = head.Seq - n
		}
		tw := &turnWindow{c: c}
		err := j.Read(ctx, w.Name(), from, func(r journal.Record) error {
			if r.Seq > head.Seq {
				return errWindowDone
			}
			if info, ok := c.resultOf(r); ok {
				tw.results = append(tw.results, resultAt{r.Seq, info})
				return nil
			}
			if r.Kind != world.KindState {
				return nil
			}
			sr, err := world.DecodeState(r)
			if err != nil || !w.chatModule(sr.Reducer) || sr.Key != c.id || !sr.State.Valid() {
				return nil
			}
			tw.states = append(tw.states, stateAt{r.Seq, sr.State})
			return nil
		})
		if err != nil && !errors.Is(err, errWindowDone) {
			return nil, fmt.Errorf("chat %s: read the journal back to its turn %d: %w", c.id, id, err)
		}
		i, err := tw.search(ctx, 0, func(st *demiurge.StateView) bool { return st.LastRequestID >= id })
		if err != nil {
			return nil, err
		}
		tw.before = i - 1
		if i > 0 || from <= 1 {
			return tw, nil // i == 0: the chat began with the turn
		}
	}
}
