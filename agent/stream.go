package agent

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/pgstore"
	"github.com/demiurge-dev/demiurge/world"
)

// A world that a worker runs (WithRemote) streams its model's answers to
// the clients that follow it, as a world in this process does: the worker
// publishes the text each model call streams on the world's stream
// (pgstore.Store.PublishStream, over NOTIFY), and the client's World
// listens to it and hands it to its turns as TextDelta events. Nothing of
// it is journaled; the journal has each answer whole once its call ends.
// A client that was not listening when a call began (it attached in the
// middle), or that lost some of it (its connection broke), shows none of
// the rest of that call's text as it streams: the turn shows the answer,
// or the rest of it, when the journal has it (see turnReader.streamed).

// streamChunk is one payload of a world's stream: text a model call
// streamed, with the turn it is for. Seq counts the chunks of one call
// from 0, so that a client sees what it missed.
type streamChunk struct {
	Chat    string `json:"c"`
	Request uint64 `json:"r"`
	Round   uint64 `json:"n"`
	Intent  string `json:"i"`
	Seq     uint64 `json:"s"`
	Text    string `json:"t"`
}

// streamPiece bounds the text of one chunk: escaped as JSON (at most six
// bytes a byte) it stays under NOTIFY's limit.
const streamPiece = 1200

// streamEvery is how long a publisher gathers text before it sends it: a
// NOTIFY a token would cost the database more than it shows.
const streamEvery = 30 * time.Millisecond

// streamPublisher publishes what the model calls of one world stream, on
// the worker that runs it.
type streamPublisher struct {
	st    *pgstore.Store
	world string
	log   *slog.Logger

	mu      sync.Mutex
	w       *world.World // set once the world is open
	calls   map[cas.Ref]*streamedCall
	waiting []cas.Ref // calls with text to send, in order
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

// streamedCall is the text of one model call not sent yet, and how many
// chunks of it were.
type streamedCall struct {
	target deltaTarget
	text   []byte
	seq    uint64
	seen   time.Time
}

func newStreamPublisher(st *pgstore.Store, name string, log *slog.Logger) *streamPublisher {
	p := &streamPublisher{st: st, world: name, log: log, calls: map[cas.Ref]*streamedCall{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p
}

// attach gives the publisher the world, whose plans say which turn a call
// is for.
func (p *streamPublisher) attach(w *world.World) {
	p.mu.Lock()
	p.w = w
	p.mu.Unlock()
}

// progress takes text a model call streamed (the dispatcher's Progress).
func (p *streamPublisher) progress(in *effects.Intent, text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.calls[in.Hash]
	if c == nil {
		t, ok := targetIn(p.w, in)
		if !ok || t.compact {
			return
		}
		c = &streamedCall{target: t}
		p.calls[in.Hash] = c
	}
	if len(c.text) == 0 {
		p.waiting = append(p.waiting, in.Hash)
	}
	c.text = append(c.text, text...)
	c.seen = time.Now()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// run sends what the calls streamed, every streamEvery at most, until
// close.
func (p *streamPublisher) run() {
	defer close(p.done)
	for {
		select {
		case <-p.stop:
			p.flush()
			return
		case <-p.kick:
		}
		select {
		case <-p.stop:
		case <-time.After(streamEvery):
		}
		p.flush()
	}
}

// flush sends the text gathered, a call's chunks in order.
func (p *streamPublisher) flush() {
	p.mu.Lock()
	type send struct {
		hash cas.Ref
		c    streamChunk
	}
	var out []send
	for _, h := range p.waiting {
		c := p.calls[h]
		for text := c.text; len(text) > 0; {
			n := min(len(text), streamPiece)
			for n < len(text) && n > 0 && !utf8.RuneStart(text[n]) {
				n--
			}
			out = append(out, send{h, streamChunk{Chat: c.target.chat, Request: c.target.request, Round: c.target.round,
				Intent: h.String(), Seq: c.seq, Text: string(text[:n])}})
			c.seq++
			text = text[n:]
		}
		c.text = c.text[:0]
	}
	p.waiting = p.waiting[:0]
	for h, c := range p.calls { // calls that ended long ago
		if time.Since(c.seen) > 10*time.Minute {
			delete(p.calls, h)
		}
	}
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range out {
		b, err := json.Marshal(s.c)
		if err == nil {
			err = p.st.PublishStream(ctx, p.world, string(b))
		}
		if err != nil {
			// The clients show the whole answer when the journal has it.
			p.log.Debug("stream", "world", p.world, "intent", s.hash.Short(), "err", err)
		}
	}
}

// close sends what is left and stops.
func (p *streamPublisher) close() {
	close(p.stop)
	<-p.done
}

// streamReader follows a world's stream on a client, handing each chunk's
// text to the turns that follow its chat while its call's chunks come in
// order from the first.
type streamReader struct {
	st    *pgstore.Store
	world string
	push  func(chat string, request uint64, e Event)
	log   *slog.Logger

	calls  map[string]*readCall // by intent
	cancel context.CancelFunc
	done   chan struct{}
}

// readCall is how far a call's chunks were read.
type readCall struct {
	next   uint64 // the chunk expected
	broken bool   // a chunk was missed: the rest of its text shows from the journal
	seen   time.Time
}

// startStreamReader listens to world's stream until stop is called; ready
// is closed once it listens (or gave up trying for now).
func startStreamReader(st *pgstore.Store, name string, push func(string, uint64, Event), log *slog.Logger) (r *streamReader, ready <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	r = &streamReader{st: st, world: name, push: push, log: log, calls: map[string]*readCall{}, cancel: cancel, done: make(chan struct{})}
	listening := make(chan struct{})
	go r.run(ctx, listening)
	return r, listening
}

func (r *streamReader) run(ctx context.Context, listening chan struct{}) {
	defer close(r.done)
	var once sync.Once
	ready := func() { once.Do(func() { close(listening) }) }
	defer ready()
	for ctx.Err() == nil {
		l, err := r.st.ListenStream(ctx, r.world)
		if err != nil {
			r.log.Debug("listen to the stream", "world", r.world, "err", err)
			ready()
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		ready()
		for {
			payload, err := l.Wait(ctx)
			if err != nil {
				break
			}
			r.take(payload)
		}
		_ = l.Close()
		// What was published meanwhile is missed: the calls under way
		// show the rest of their text from the journal.
		for _, c := range r.calls {
			c.broken = true
		}
	}
}

// take hands one chunk's text on, if its call's chunks came in order.
func (r *streamReader) take(payload string) {
	var c streamChunk
	if json.Unmarshal([]byte(payload), &c) != nil || c.Chat == "" {
		return
	}
	rc := r.calls[c.Intent]
	if rc == nil {
		if len(r.calls) > 1024 {
			for k, old := range r.calls {
				if time.Since(old.seen) > 10*time.Minute {
					delete(r.calls, k)
				}
			}
		}
		rc = &readCall{broken: c.Seq != 0} // begun before this client listened
		r.calls[c.Intent] = rc
	}
	rc.seen = time.Now()
	if rc.broken || c.Seq != rc.next {
		rc.broken = true
		return
	}
	rc.next++
	r.push(c.Chat, c.Request, TextDelta{Round: c.Round, Text: c.Text})
}

func (r *streamReader) stop() {
	r.cancel()
	<-r.done
}
