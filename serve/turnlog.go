package serve

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/demiurge-dev/demiurge/agent"
)

// A logged event is one event of a turn with its position and its JSON
// (agent.MarshalEvent, the line `run --json` prints), marshaled once for
// every stream that sends it.
type logged struct {
	pos  position
	ev   agent.Event
	data []byte
	at   time.Time // when the stream that runs the turn yielded it (zero from the journal)
}

// turnLog is the events of a turn a stream of this process runs (the
// Send of the message that began it), kept in memory for the streams that
// send it to clients: the one that posted the message, and those that
// resume or follow it meanwhile. A client's stream that breaks changes
// nothing in the turn; it resumes from here, text included, while the
// log is kept, and from the journal (agent.Chat.Watch) after.
type turnLog struct {
	world, chat string
	request     uint64
	began       time.Time // when the stream that runs the turn was asked for it

	mu      sync.Mutex
	events  []logged
	ps      positioner
	done    bool
	err     error         // what ended the stream that ran the turn, if not its TurnEnd
	changed chan struct{} // closed (and replaced) when an event is appended or the log ends
	ended   time.Time     // when done was set
	readers int
}

func newTurnLog(world, chat string, request uint64) *turnLog {
	return &turnLog{world: world, chat: chat, request: request, changed: make(chan struct{})}
}

// add appends e.
func (l *turnLog) add(e agent.Event) {
	data, err := agent.MarshalEvent(e)
	if err != nil {
		return // the events are plain structs: it does not happen
	}
	at := time.Now()
	l.mu.Lock()
	l.events = append(l.events, logged{pos: l.ps.next(e), ev: e, data: data, at: at})
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// finish ends the log, with err if the turn's stream ended without its
// TurnEnd (the world closed, the store failed).
func (l *turnLog) finish(err error) {
	l.mu.Lock()
	if !l.done {
		l.done, l.err, l.ended = true, err, time.Now()
		close(l.changed)
		l.changed = make(chan struct{})
	}
	l.mu.Unlock()
}

// read returns the events after p, whether the log has ended, a channel
// closed when there is more, and what ended the log if not its TurnEnd.
func (l *turnLog) read(p position) ([]logged, bool, <-chan struct{}, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := sort.Search(len(l.events), func(i int) bool { return l.events[i].pos.after(p) })
	return l.events[i:len(l.events):len(l.events)], l.done, l.changed, l.err
}

// stream calls send with the events after p as they come, and batchEnd
// after each batch of them that came together, until the log ends (it
// returns the log's error, nil after a TurnEnd), send fails, or ctx ends.
func (l *turnLog) stream(ctx context.Context, p position, send func(logged) error, batchEnd func() error) error {
	l.mu.Lock()
	l.readers++
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.readers--
		l.mu.Unlock()
	}()
	for {
		evs, done, more, err := l.read(p)
		for _, e := range evs {
			if err := send(e); err != nil {
				return err
			}
			p = e.pos
		}
		if len(evs) > 0 && batchEnd != nil {
			if err := batchEnd(); err != nil {
				return err
			}
		}
		if done {
			return err
		}
		select {
		case <-more:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
