package serve

import (
	"context"
	"errors"
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

	// drv is the turn's stream, pulled one event at a time (nil once it
	// ended, or for a turn a goroutine ranges over from its start).
	drv *driver
	// driving: a reader pulls the next event now; background: a goroutine
	// of its own pulls the rest (readers no longer do).
	driving, background bool
	// inAgent is the time spent inside the stream's next, pulling events:
	// the agent's own (the benchmark subtracts it from a turn's).
	inAgent time.Duration
}

// A driver is a turn's stream (agent.Chat.Send's), pulled (iter.Pull2):
// a reader of the log that wants the next event pulls it itself, in its
// own goroutine, so that an event goes from the agent to the client's
// socket with no hand-off between goroutines, as it goes to a caller of
// the agent in-process. When no reader pulls (the client went away, the
// turn waits for approval, nobody reads it yet), a goroutine pulls the
// rest: the turn runs to its end whatever becomes of its readers.
type driver struct {
	next     func() (agent.Event, error, bool)
	stop     func()
	observe  func(agent.Event) // counts what an event says (metrics)
	finished func(error)       // the turn's stream ended (with err if not after its TurnEnd): forget it runs
	// wait, set by the reader that pulls while it pulls, runs when the
	// stream has yielded every event it holds and waits for the next
	// (agent.WithWaitHook): the reader flushes what it wrote then.
	wait func()
}

func newTurnLog(world, chat string, request uint64) *turnLog {
	return &turnLog{world: world, chat: chat, request: request, changed: make(chan struct{})}
}

// add appends e, which the turn's stream yielded at at.
func (l *turnLog) add(e agent.Event, at time.Time) {
	data, err := agent.MarshalEvent(e)
	if err != nil {
		return // the events are plain structs: it does not happen
	}
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
// With drive set, it pulls the turn's next event itself when nobody else
// does (see driver): a reader that may wait as long as the turn's next
// step takes, whatever ctx says; without, it only reads what the others
// pull.
func (l *turnLog) stream(ctx context.Context, p position, send func(logged) error, batchEnd func() error, drive bool) error {
	l.mu.Lock()
	l.readers++
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.readers--
		l.mu.Unlock()
		// A reader that pulled events leaves the turn to a goroutine if
		// nobody pulls now (a reader that waits for more is woken by it).
		l.handOff()
	}()
	// Events sent and not yet ended by batchEnd (flushed). A reader that
	// pulls the turn's next event itself leaves them pending while the
	// stream has more in hand, and ends the batch when the stream is about
	// to wait (driver.wait) or when the reader itself waits: the events
	// that came together go out in one write, none waits for another.
	pending := false
	var waitErr error
	endBatch := func() error {
		if !pending || batchEnd == nil {
			pending = false
			return nil
		}
		pending = false
		return batchEnd()
	}
	wait := func() {
		if err := endBatch(); err != nil && waitErr == nil {
			waitErr = err
		}
	}
	for {
		evs, done, more, err := l.read(p)
		for _, e := range evs {
			if err := send(e); err != nil {
				return err
			}
			p = e.pos
		}
		if len(evs) > 0 {
			pending = true
		}
		if done {
			if ferr := endBatch(); ferr != nil {
				return ferr
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			_ = endBatch()
			return err
		}
		if drive && l.claim(false) {
			l.pull(wait)
			if waitErr != nil {
				return waitErr
			}
			continue
		}
		if err := endBatch(); err != nil {
			return err
		}
		select {
		case <-more:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// claim takes the turn's stream, to pull its next event, if nobody pulls
// it now and (for a reader, not the goroutine) no goroutine pulls the
// rest.
func (l *turnLog) claim(background bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.drv == nil || l.driving || l.done || l.background && !background {
		return false
	}
	l.driving = true
	return true
}

// pull pulls the turn's next event into the log (it waits as long as the
// turn's next step takes), and lets go of the stream. After a TurnEnd it
// lets the stream end before the log has it all; after an
// ApprovalRequested it hands the stream to a goroutine: the turn now
// waits for a person, for as long as it takes.
func (l *turnLog) pull(wait func()) {
	d := l.drv
	start := time.Now()
	d.wait = wait
	e, err, ok := d.next()
	d.wait = nil
	at := time.Now()
	if ok && err == nil {
		if _, end := e.(agent.TurnEnd); end {
			// The stream returns after its TurnEnd (nothing follows it);
			// the agent freed the chat for the next message before it.
			d.next()
			d.stop()
			ok = false
		}
	}
	took := time.Since(start)
	switch {
	case err != nil:
		d.stop()
		l.mu.Lock()
		l.inAgent += took
		l.drv, l.driving = nil, false
		l.mu.Unlock()
		l.finish(err)
		d.finished(err)
		return
	case e == nil && !ok:
		l.mu.Lock()
		l.inAgent += took
		l.drv, l.driving = nil, false
		l.mu.Unlock()
		err := errors.New("the turn's stream ended before its end")
		l.finish(err)
		d.finished(err)
		return
	}
	d.observe(e)
	l.mu.Lock()
	l.inAgent += took
	l.driving = false
	if !ok { // its TurnEnd: the stream has ended
		l.drv = nil
	}
	l.mu.Unlock()
	l.add(e, at)
	if !ok {
		l.finish(nil)
		d.finished(nil)
		return
	}
	if _, asked := e.(agent.ApprovalRequested); asked {
		l.runBackground()
	}
}

// handOff hands the turn's stream to a goroutine if nobody pulls it.
func (l *turnLog) handOff() {
	l.mu.Lock()
	idle := l.drv != nil && !l.driving && !l.done && !l.background
	l.mu.Unlock()
	if idle {
		l.runBackground()
	}
}

// runBackground starts the goroutine that pulls the rest of the turn's
// stream (once).
func (l *turnLog) runBackground() {
	l.mu.Lock()
	if l.background || l.drv == nil || l.done {
		l.mu.Unlock()
		return
	}
	l.background = true
	l.mu.Unlock()
	go func() {
		for {
			l.mu.Lock()
			done, more := l.done || l.drv == nil, l.changed
			l.mu.Unlock()
			if done {
				return
			}
			if l.claim(true) {
				l.pull(nil)
				continue
			}
			<-more // a reader pulls an event now: wait for it
		}
	}()
}
