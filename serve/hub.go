package serve

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"sync"
	"time"

	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
)

// send sends text to chat id of w and returns the log of the turn it
// begins, once the turn has begun (its first event is in the log). The
// turn runs in this process until it ends, whatever becomes of the
// request that sent it.
func (s *Server) send(ctx context.Context, w *agent.World, id, text string, opts ...agent.SendOption) (*turnLog, error) {
	c := s.chat(w, id)
	return s.begin(ctx, w, id, func(run context.Context) iter.Seq2[agent.Event, error] { return c.Send(run, text, opts...) })
}

// begin starts the turn stream starts and returns its log once the
// turn's first event is in it. On a store of its own the server pulls
// that event here, in the request's goroutine, and leaves the rest to the
// log's readers (see driver): the request that sent the message streams
// its turn with no goroutine between the agent and the client. On
// PostgreSQL (a worker runs the turn, which may be slow to take it) a
// goroutine of its own runs the turn's stream, and the request waits for
// its first event no longer than ctx.
func (s *Server) begin(ctx context.Context, w *agent.World, id string, stream func(context.Context) iter.Seq2[agent.Event, error]) (*turnLog, error) {
	s.awaitResumed(ctx, w, id)
	s.mu.Lock()
	if s.draining {
		s.mu.Unlock()
		return nil, errDraining
	}
	s.turns.Add(1)
	s.mu.Unlock()
	release := s.hold(w.Name()) // the world stays open while its turn runs here
	c := s.chat(w, id)
	began := time.Now()
	if s.opts.Postgres != nil || s.testNoPull {
		return s.beginGoroutine(ctx, w, c, began, stream, release)
	}
	// The driver's wait, set by the reader that pulls, flushes what it
	// wrote once the stream has no event left in hand (agent.WithWaitHook).
	d := &driver{}
	next, stop := iter.Pull2(stream(agent.WithWaitHook(s.run, func() {
		if d.wait != nil {
			d.wait()
		}
	})))
	e, err, ok := next()
	at := time.Now()
	if err != nil || !ok {
		stop()
		release()
		s.turns.Done()
		if err == nil {
			err = errors.New("the turn's stream ended before it began")
		}
		return nil, sendError(id, err)
	}
	key := turnKey{w.Name(), id, requestOf(c, e)}
	l := newTurnLog(key.world, key.chat, key.request)
	l.began = began
	l.inAgent = at.Sub(began)
	d.next, d.stop, d.observe, d.finished = next, stop, s.metrics.observe, func(err error) { s.turnFinished(key, err); release() }
	l.drv = d
	s.mu.Lock()
	s.logs[key] = l
	s.running[key] = true
	s.mu.Unlock()
	l.add(e, at)
	s.metrics.turnStarted()
	return l, nil
}

// turnFinished forgets a turn this process ran, whose stream ended (with
// err if it ended before the turn did: the world closed, the store
// failed).
func (s *Server) turnFinished(key turnKey, err error) {
	if err != nil {
		s.log.Warn("turn stream", "world", key.world, "chat", key.chat, "turn", key.request, "err", err)
	}
	s.untrack(key)
	s.turns.Done()
}

// beginGoroutine is begin with a goroutine of its own that ranges over
// the turn's stream into the log.
func (s *Server) beginGoroutine(ctx context.Context, w *agent.World, c *agent.Chat, began time.Time, stream func(context.Context) iter.Seq2[agent.Event, error], release func()) (*turnLog, error) {
	id := c.ID()
	started := make(chan *turnLog, 1)
	failed := make(chan error, 1)
	go func() {
		defer s.turns.Done()
		defer release()
		var l *turnLog
		var key turnKey
		for e, err := range stream(s.run) {
			if err != nil {
				if l == nil {
					failed <- err
					return
				}
				s.log.Warn("turn stream", "world", w.Name(), "chat", id, "turn", key.request, "err", err)
				l.finish(err)
				s.untrack(key)
				return
			}
			if l == nil {
				key = turnKey{w.Name(), id, requestOf(c, e)}
				l = newTurnLog(key.world, key.chat, key.request)
				l.began = began
				s.mu.Lock()
				s.logs[key] = l
				s.running[key] = true
				s.mu.Unlock()
				l.add(e, time.Now())
				s.metrics.turnStarted()
				started <- l
				continue
			}
			l.add(e, time.Now())
			s.metrics.observe(e)
		}
		if l == nil {
			failed <- errors.New("the turn's stream ended before it began")
			return
		}
		l.finish(nil)
		s.untrack(key)
	}()
	select {
	case l := <-started:
		return l, nil
	case err := <-failed:
		return nil, sendError(id, err)
	case <-ctx.Done():
		// The turn goes on: the request only stops waiting for it.
		return nil, ctx.Err()
	}
}

// untrack forgets that this process runs turn key.
func (s *Server) untrack(key turnKey) {
	s.mu.Lock()
	delete(s.running, key)
	s.mu.Unlock()
}

// sendError is the API's error for a message not taken.
func sendError(chat string, err error) error {
	switch {
	case errors.Is(err, agent.ErrBusy):
		return &apiError{Status: http.StatusConflict, Type: typeConflict, Code: "turn_under_way", err: errTurnUnderWay,
			Message: fmt.Sprintf("chat %s has a turn under way: wait for its end (follow it at its events), or stop it", chat)}
	case errors.Is(err, agent.ErrRequestTaken):
		return conflict("request_taken", err.Error())
	}
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	return invalid("", "message_not_sent", err.Error())
}

// errTurnUnderWay is what a 409 turn_under_way wraps.
var errTurnUnderWay = errors.New("turn under way")

// requestOf is the turn (request id) whose first event e is.
func requestOf(c *agent.Chat, e agent.Event) uint64 {
	st, ok := c.State()
	if !ok {
		return 1
	}
	if m, ok := e.(agent.Message); ok && m.Role == "user" && m.Ref != nil {
		for _, en := range st.Entries {
			if en.Kind == demiurge.EntryUser && en.Ref != nil && *en.Ref == *m.Ref {
				return en.RequestID
			}
		}
	}
	if st.Turn != nil {
		return st.Turn.RequestID
	}
	return st.LastRequestID
}

// turnLogOf returns the log this process keeps of turn key, if any.
func (s *Server) turnLogOf(key turnKey) *turnLog {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs[key]
}

// events calls send with the events of turn key after p as they come,
// and batchEnd (if not nil) after each batch of them that came together,
// until the turn ends (nil), send fails, ctx ends, or the server hands its
// streams over. They come from the log of a turn this process runs (with
// drive, pulled from the turn's stream by this goroutine when nobody else
// does: turnLog.stream), else from the journal as it grows
// (agent.Chat.Watch).
func (s *Server) events(ctx context.Context, w *agent.World, key turnKey, p position, send func(logged) error, batchEnd func() error, drive bool) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(s.handover, func() { cancel(errHandedOver) })
	defer stop()
	if l := s.turnLogOf(key); l != nil {
		err := l.stream(ctx, p, send, batchEnd, drive)
		return s.handedOver(err)
	}
	var ps positioner
	for e, err := range s.chat(w, key.chat).Watch(ctx, key.request) {
		if err != nil {
			return s.handedOver(err)
		}
		pos := ps.next(e)
		if !pos.after(p) {
			continue
		}
		data, err := agent.MarshalEvent(e)
		if err != nil {
			return err
		}
		if err := send(logged{pos: pos, ev: e, data: data}); err != nil {
			return err
		}
		if batchEnd != nil {
			if err := batchEnd(); err != nil {
				return err
			}
		}
	}
	return nil
}

// errHandedOver ends the streams of a server that shuts down.
var errHandedOver = errors.New("the server is shutting down: resume the stream (Last-Event-ID) on the next one")

// handedOver says so if err is the end of a stream the server handed
// over. It asks the server, not the stream's context: the handover also
// closes the worlds, and a stream that pulls its turn's next event (it
// waits on the agent, not on its context) ends with the world's "closed"
// as soon as that happens, which may be before the stream's context,
// cancelled by a goroutine of its own (context.AfterFunc), says why.
func (s *Server) handedOver(err error) error {
	if err != nil && s.handover.Err() != nil {
		return errHandedOver
	}
	return err
}

// checkTurn refuses a turn the chat does not have: a 404 naming its last.
func checkTurn(c *agent.Chat, request uint64) error {
	st, ok := c.State()
	if !ok {
		return notFound("chat_not_found", fmt.Sprintf("no chat %s in the world", c.ID()))
	}
	if request == 0 || request > st.LastRequestID {
		return notFound("turn_not_found", fmt.Sprintf("chat %s has no turn %d (its turns are 1 to %d)", c.ID(), request, st.LastRequestID))
	}
	return nil
}

// waitEvents is how long a collecting request waits between two checks
// of whether the turn only waits for approval.
const waitEvents = 200 * time.Millisecond

// errStop, returned by a follow callback, ends the follow without error.
var errStop = errors.New("stop")

// follow calls on with the events of turn key after p as they come (and
// flush, if not nil, once those that came together are handled), until
// the turn ends (follow returns nil), on returns an error (follow returns
// it, nil for errStop), ctx ends, or the turn only waits for the user's
// decisions on calls whose ApprovalRequested have all come: then it calls
// awaiting (if not nil) and returns what awaiting returns.
//
// It reads the events in the caller's goroutine (Server.events, pulling
// the turn's stream itself when nobody else does), as the native stream
// does: no goroutine between the agent and the client. Once a call asks
// for approval, a goroutine checks every waitEvents whether the turn now
// only waits for decisions (the other calls of its round may still run
// when the ask comes), and ends the wait for events if so.
func (s *Server) follow(ctx context.Context, w *agent.World, key turnKey, p position, on func(logged) error, awaiting, flush func() error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	c := s.chat(w, key.chat)
	var mu sync.Mutex
	asked := map[string]bool{} // the calls whose ApprovalRequested came (under mu: the checker reads it)
	waits := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if len(asked) == 0 {
			return false
		}
		st, ok := c.State()
		if !ok || st.Turn == nil || st.Turn.RequestID != key.request || !awaitingOnly(st) {
			return false
		}
		for _, pc := range st.Turn.Calls {
			if pc.Status == "approval" && !asked[pc.CallID] {
				return false // its ApprovalRequested is still to come
			}
		}
		return true
	}
	checking := false
	check := func() {
		if checking {
			return
		}
		checking = true
		go func() {
			t := time.NewTicker(waitEvents)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					if waits() {
						cancel(errAwaiting)
						return
					}
				}
			}
		}()
	}
	var written writtenEvents // what on wrote since the last flush
	flushed := func() error {
		if flush == nil {
			return nil
		}
		return s.flushed(key, &written, flush)
	}
	err := s.events(ctx, w, key, p, func(e logged) error {
		ar, ask := e.ev.(agent.ApprovalRequested)
		if ask {
			mu.Lock()
			asked[ar.CallID] = true
			mu.Unlock()
		}
		if err := on(e); err != nil {
			return err
		}
		if flush != nil {
			written.note(e)
		}
		if _, ok := e.ev.(agent.TurnEnd); ok {
			return errTurnEnded
		}
		if ask {
			if waits() {
				return errAwaiting
			}
			check()
		}
		return nil
	}, flushed, true)
	switch {
	case errors.Is(err, errTurnEnded):
		return flushed() // the turn's end goes out now, not when the caller closes
	case errors.Is(err, errStop):
		return nil
	case errors.Is(err, errAwaiting) || err != nil && errors.Is(context.Cause(ctx), errAwaiting):
		if awaiting != nil {
			return awaiting()
		}
		return nil
	}
	return err
}

// errTurnEnded and errAwaiting end the events follow reads: the turn
// ended; it only waits for the user's decisions.
var (
	errTurnEnded = errors.New("the turn ended")
	errAwaiting  = errors.New("the turn waits for decisions")
)

// collect gathers the events of turn key after p until the turn ends, or
// only waits for approval (then its last event is a TurnEnd of outcome
// awaiting_approval, made here, as `run --json` ends such a turn).
func (s *Server) collect(ctx context.Context, w *agent.World, key turnKey, p position) ([]logged, error) {
	var out []logged
	err := s.follow(ctx, w, key, p, func(e logged) error {
		out = append(out, e)
		return nil
	}, func() error {
		out = append(out, awaitingEnd(key, out))
		return nil
	}, nil)
	return out, err
}

// awaitingEnd is the end of a collected turn that waits for approval:
// what the turn used so far is in its model calls' events.
func awaitingEnd(key turnKey, out []logged) logged {
	end := agent.TurnEnd{RequestID: key.request, Outcome: agent.OutcomeAwaitingApproval}
	for _, e := range out {
		if mc, ok := e.ev.(agent.ModelCall); ok {
			end.Usage.Prompt += mc.Usage.Prompt
			end.Usage.Completion += mc.Usage.Completion
			end.Usage.Cached += mc.Usage.Cached
			end.Usage.CacheWrite += mc.Usage.CacheWrite
			end.Usage.Reasoning += mc.Usage.Reasoning
			end.CostMicroUSD += mc.CostMicroUSD
			if mc.UsageUnknown {
				end.UsageUnknown++
			}
			if mc.CostUnknown {
				end.CostUnknown++
			}
		}
		if s := eventSeq(e.ev); s > end.Seq {
			end.Seq = s
		}
	}
	data, _ := agent.MarshalEvent(end)
	return logged{ev: end, data: data}
}

// writtenEvents are the events a stream wrote since its last flush that
// reached the server while the stream was open: once flushed, each one's
// lag (the lag metric's, and the benchmarks' hook's) is observed.
type writtenEvents []logged

// note keeps e if it reached the server while the stream was open (an
// event read from the journal afterwards has no time of arrival).
func (w *writtenEvents) note(e logged) {
	if !e.at.IsZero() {
		*w = append(*w, e)
	}
}

// flushed flushes the stream of turn key, observes the lag of the events
// written has kept, and forgets them.
func (s *Server) flushed(key turnKey, written *writtenEvents, flush func() error) error {
	err := flush()
	now := time.Now()
	for _, e := range *written {
		s.metrics.lag.Observe(now.Sub(e.at).Seconds())
		if s.testWritten != nil {
			_, end := e.ev.(agent.TurnEnd)
			s.testWritten(key, e.at, now, end)
		}
	}
	*written = (*written)[:0]
	return err
}
