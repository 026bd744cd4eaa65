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

// startWindow is how many records before the head beforeTurn reads
// first; each further try reads twice as many.
const startWindow = 256

// errWindowDone ends a read of the journal at the head it began at.
var errWindowDone = errors.New("window read")

// beforeTurn returns the chat's state just before its turn id began (nil
// if the chat did not exist then), read back from the journal: what a
// stream that did not start the turn (Follow after a restart, Decide)
// counts the turn's usage and cost from, so that its TurnEnd has the
// whole turn's, not only what it saw.
//
// The chat's state is cumulative (usage, cost, the last request id), so
// the state before the turn is the last of the chat's state records whose
// last request id is below id. The turn is the chat's latest, near the
// head: the journal is read from the head back, in windows that double,
// until one holds such a record. A window's state records are only
// listed (their payload names the reducer and key); their states, in the
// store, are read by bisection, a few of them however long the turn.
func (c *Chat) beforeTurn(ctx context.Context, id uint64) (*demiurge.StateView, error) {
	w := c.w
	j := w.st.Journal()
	head := w.host.Head()
	type stateAt struct {
		seq uint64
		ref cas.Ref
	}
	read := func(ref cas.Ref) (*demiurge.StateView, error) {
		var st demiurge.StateView
		if err := cas.GetNode(ctx, w.st.CAS(), ref, &st); err != nil {
			return nil, fmt.Errorf("chat %s: read its state: %w", c.id, err)
		}
		return &st, nil
	}
	for n := uint64(startWindow); ; n *= 2 {
		from := uint64(1)
		if head.Seq > n {
			from = head.Seq - n
		}
		var states []stateAt
		err := j.Read(ctx, w.Name(), from, func(r journal.Record) error {
			if r.Seq > head.Seq {
				return errWindowDone
			}
			if r.Kind != world.KindState {
				return nil
			}
			sr, err := world.DecodeState(r)
			if err != nil || sr.Reducer != w.module || sr.Key != c.id || !sr.State.Valid() {
				return nil
			}
			states = append(states, stateAt{r.Seq, sr.State})
			return nil
		})
		if err != nil && !errors.Is(err, errWindowDone) {
			return nil, fmt.Errorf("chat %s: read the journal back to its turn %d: %w", c.id, id, err)
		}
		var ferr error
		i := sort.Search(len(states), func(i int) bool {
			if ferr != nil {
				return true
			}
			st, err := read(states[i].ref)
			if err != nil {
				ferr = err
				return true
			}
			return st.LastRequestID >= id
		})
		if ferr != nil {
			return nil, ferr
		}
		if i > 0 {
			return read(states[i-1].ref)
		}
		if from <= 1 {
			return nil, nil // the chat began with the turn
		}
	}
}
