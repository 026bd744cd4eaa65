package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/demiurge-dev/demiurge/cluster"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/world"
)

// Watch streams the events of the chat's turn request (1 for the chat's
// first message, 2 for the next, …) as the stream that ran it from its
// start yielded them (Send's): first those the journal holds, from the
// turn's first record, then, while the turn is under way, those that
// follow as they are committed, with the model's text (TextDelta) as it
// streams in this process; the stream ends with the turn's TurnEnd. A
// turn not begun yet is waited for.
//
// It only watches: any number of streams may watch a turn, beside the one
// that runs it (Send's, Follow's, in this process or another), and a
// watcher that stops reading, or whose ctx ends, changes nothing in the
// world (the stream then ends with ctx's error). It stops no turn and
// answers no approval: a call that waits is an ApprovalRequested, and the
// stream waits with the turn.
//
// Its events are functions of the journal: every watcher of a turn, when
// and wherever it starts, gets the same events in the same order, each
// with the Seq of its record, and TextDelta only for the text that
// streams once it has caught up (none for a world a worker runs, and none
// of a round whose Message it has yielded). A server resumes a client's
// stream with it where the client lost it.
func (c *Chat) Watch(ctx context.Context, request uint64) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		w := c.w
		switch {
		case c.id == "":
			yield(nil, errNoChatID)
			return
		case request == 0:
			yield(nil, fmt.Errorf("chat %s: watch turn 0: a chat's turns are numbered from 1", c.id))
			return
		}
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			yield(nil, world.ErrClosed)
			return
		}
		f := newFollower(c.id)
		w.follows[f] = struct{}{}
		w.mu.Unlock()
		defer func() {
			w.mu.Lock()
			delete(w.follows, f)
			w.mu.Unlock()
		}()
		// Every record committed from now on is handed to f; those
		// before are read from the journal, up to its end, and the
		// records f holds up to there are skipped.
		tr := &turnReader{c: c, id: request, callAt: map[string]time.Time{}, asked: map[askKey]bool{}}
		read, err := c.watchPast(ctx, tr, yield)
		if err != nil {
			yield(nil, err)
			return
		}
		if tr.ended || read.gone {
			return
		}
		if evs := c.takenUpEnd(ctx, tr, cmp.Or(tr.chatSeq, read.last)); len(evs) > 0 {
			for _, e := range evs {
				if !yield(e, nil) {
					return
				}
			}
			return
		}
		every := 250 * time.Millisecond
		if w.remote != nil {
			every = cluster.DefaultFollow // the journal is read as it grows
		}
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			for _, it := range f.take() {
				if it.event != nil {
					// Only text: a cassette's notice is not journaled,
					// so not every watcher would see it.
					if d, ok := it.event.(TextDelta); ok && it.request == request && !read.answered[d.Round] {
						if !yield(d, nil) {
							return
						}
					}
					continue
				}
				recs := it.recs
				for len(recs) > 0 && recs[0].Seq <= read.last {
					recs = recs[1:]
				}
				if len(recs) == 0 {
					continue
				}
				read.last = recs[len(recs)-1].Seq
				evs, err := tr.records(recs)
				for _, e := range evs {
					read.note(e)
					if !yield(e, nil) {
						return
					}
				}
				if err != nil {
					yield(nil, err)
					return
				}
				if tr.ended {
					return
				}
			}
			select {
			case <-f.wake:
			case <-f.done:
				yield(nil, world.ErrClosed)
				return
			case <-tick.C:
				if err := w.err(ctx); err != nil {
					yield(nil, err)
					return
				}
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			}
		}
	}
}

// watchRead is how far a watcher has read.
type watchRead struct {
	last     uint64          // the last record read
	answered map[uint64]bool // rounds whose assistant Message was yielded: their text came whole
	gone     bool            // the caller stopped reading
}

// note keeps what a yielded event says of the text still to stream.
func (r *watchRead) note(e Event) {
	if m, ok := e.(Message); ok && m.Role == "assistant" {
		r.answered[m.Round] = true
	}
}

// watchPast yields the events of tr's turn that the journal holds: its
// records from the chat's last state before the turn began to the
// journal's end.
func (c *Chat) watchPast(ctx context.Context, tr *turnReader, yield func(Event, error) bool) (*watchRead, error) {
	w := c.w
	read := &watchRead{answered: map[uint64]bool{}}
	tw, err := c.turnWindow(ctx, tr.id)
	if err != nil {
		return nil, err
	}
	from := uint64(1)
	if tw.before >= 0 {
		st, err := tw.start(ctx)
		if err != nil {
			return nil, err
		}
		tr.prev, tr.start = st, st
		_, tr.shown = st.Since(0)
		from = tw.states[tw.before].seq + 1
	} else {
		tr.start = &demiurge.StateView{}
	}
	// The records are handed on a step at a time (a step's input first):
	// each entry is timed by the stamp of the input whose step wrote it.
	var step []journal.Record
	flush := func() error {
		if len(step) == 0 || tr.ended {
			step = step[:0]
			return nil
		}
		evs, err := tr.records(step)
		step = step[:0]
		for _, e := range evs {
			read.note(e)
			if !yield(e, nil) {
				read.gone = true
				return errWindowDone
			}
		}
		if err != nil {
			return err
		}
		if tr.ended {
			return errWindowDone
		}
		return nil
	}
	err = w.st.Journal().Read(ctx, w.Name(), from, func(r journal.Record) error {
		if (r.Kind == world.KindEvent || r.Kind == world.KindReceipt) && len(step) > 0 {
			if err := flush(); err != nil {
				return err
			}
		}
		step = append(step, r)
		read.last = r.Seq
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil && !errors.Is(err, errWindowDone) {
		return nil, fmt.Errorf("chat %s: read turn %d in the journal: %w", c.id, tr.id, err)
	}
	return read, nil
}

// takenUpEnd returns the end of tr's turn when the world's older chat
// module left it under way (a Chat@2 turn, of a world whose manifest
// moved to Chat@3) and the chat reads as Chat@3 will take it up with its
// next message (State): that stops the turn, and until then nothing goes
// on with it, so the stream ends as the chat reads, at seq (that of the
// last record of the chat's state, which the Import's events of the turn
// take too: see turnReader.records): its calls answered "not run", the
// stop, its TurnEnd. Nil for any other turn.
func (c *Chat) takenUpEnd(ctx context.Context, tr *turnReader, seq uint64) []Event {
	if !c.w.importsOlder {
		return nil
	}
	if _, _, ok := c.w.host.State(c.w.module, c.id); ok {
		return nil // taken up: its records bring the end
	}
	st, ok := c.olderView()
	if !ok || st.LastRequestID < tr.id || st.Turn != nil {
		return nil
	}
	evs := tr.state(ctx, seq, st, time.Time{})
	for i, e := range evs {
		if end, ok := e.(TurnEnd); ok {
			end.Answer = tr.answer
			evs[i] = end
		}
	}
	return evs
}
