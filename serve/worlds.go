package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/agent/session"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/world"
)

// journalStore is the journal the worlds live in.
func (s *Server) journalStore() journal.Store {
	if s.opts.Postgres != nil {
		return s.opts.Postgres.Journal()
	}
	return s.opts.Storage.Journal()
}

// storage is the store the worlds live in.
func (s *Server) storage() world.Storage {
	if s.opts.Postgres != nil {
		return s.opts.Postgres.Storage()
	}
	return s.opts.Storage
}

// errDraining is the error of a request that would start work while the
// server shuts down.
var errDraining = &apiError{Status: http.StatusServiceUnavailable, Type: typeBusy, Code: "shutting_down",
	Message: "the server is shutting down: send the request to another one, or again once it is back"}

// opened returns world name if the server has it open.
func (s *Server) opened(name string) *agent.World {
	s.mu.Lock()
	ow := s.worlds[name]
	s.mu.Unlock()
	if ow == nil {
		return nil
	}
	select {
	case <-ow.ready:
		return ow.w
	default:
		return nil
	}
}

// world returns world name, open, held (see hold) until ctx ends: a
// request's world stays open while it runs. A world that has no record
// yet is made if create is set, else it is a 404.
func (s *Server) world(ctx context.Context, name string, create bool) (*agent.World, error) {
	if err := journal.ValidateWorld(name); err != nil {
		return nil, invalid("world", "invalid_world", err.Error())
	}
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, errDraining
		}
		ow, ok := s.worlds[name]
		s.mu.Unlock()
		if !ok {
			w, again, err := s.openWorld(ctx, name, create)
			if again {
				continue // another request opened it meanwhile
			}
			return w, err
		}
		select {
		case <-ow.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if ow.err != nil {
			return nil, ow.err
		}
		s.mu.Lock()
		if closing := ow.closing; closing != nil || s.worlds[name] != ow {
			// Evicted: once it has closed, it opens again.
			s.mu.Unlock()
			if closing != nil {
				select {
				case <-closing:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			continue
		}
		s.holdLocked(ctx, ow)
		s.mu.Unlock()
		return ow.w, s.sync(ctx, ow.w)
	}
}

// openWorld opens world name, held until ctx ends; again says another
// request began to open it first (ask world again).
func (s *Server) openWorld(ctx context.Context, name string, create bool) (_ *agent.World, again bool, _ error) {
	head, err := s.journalStore().Head(ctx, name)
	if err != nil {
		return nil, false, fmt.Errorf("world %s: %w", name, err)
	}
	if head.Seq == 0 && !create {
		return nil, false, notFound("world_not_found", fmt.Sprintf("no world %s in the store (POST /v1/worlds makes one, as does a message sent to it)", name))
	}
	if head.Seq > 0 {
		if err := s.checkAgentWorld(ctx, name); err != nil {
			return nil, false, err
		}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, false, errDraining
	}
	if _, ok := s.worlds[name]; ok {
		s.mu.Unlock()
		return nil, true, nil
	}
	ow := &openWorld{ready: make(chan struct{})}
	s.worlds[name] = ow
	s.mu.Unlock()
	ow.w, ow.err = s.open(name)
	s.mu.Lock()
	if ow.err != nil {
		delete(s.worlds, name) // the next request tries again
	} else {
		s.holdLocked(ctx, ow)
	}
	s.mu.Unlock()
	close(ow.ready)
	if ow.err != nil {
		return nil, false, ow.err
	}
	if s.opts.Postgres == nil {
		s.resume(ow.w)
	}
	return ow.w, false, nil
}

// holdLocked counts ctx among the users of ow until it ends (s.mu held).
func (s *Server) holdLocked(ctx context.Context, ow *openWorld) {
	ow.users++
	context.AfterFunc(ctx, func() { s.release(ow) })
}

// hold counts a user of world name (open) until the returned func is
// called: a turn this process runs or follows keeps its world open.
func (s *Server) hold(name string) (release func()) {
	s.mu.Lock()
	ow := s.worlds[name]
	if ow == nil {
		s.mu.Unlock()
		return func() {}
	}
	ow.users++
	s.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { s.release(ow) }) }
}

// release lets go of one user of ow.
func (s *Server) release(ow *openWorld) {
	s.mu.Lock()
	ow.users--
	ow.used = time.Now()
	s.mu.Unlock()
}

// evict closes the open worlds nothing uses (no request, no turn this
// process runs or follows) that were unused longer than WorldIdle, and,
// beyond MaxWorlds of them, those unused longest. Their turn logs and
// conversation index go with them; the next request that names one
// opens it again from the store.
func (s *Server) evict() {
	type idle struct {
		name string
		ow   *openWorld
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	var unused []idle
	for name, ow := range s.worlds {
		select {
		case <-ow.ready:
		default:
			continue // opening
		}
		if ow.err == nil && ow.users == 0 && ow.closing == nil {
			unused = append(unused, idle{name, ow})
		}
	}
	slices.SortFunc(unused, func(a, b idle) int { return a.ow.used.Compare(b.ow.used) })
	var out []idle
	for i, u := range unused {
		if len(unused)-i > s.opts.MaxWorlds || time.Since(u.ow.used) > s.opts.WorldIdle {
			u.ow.closing = make(chan struct{})
			out = append(out, u)
		}
	}
	s.mu.Unlock()
	for _, u := range out {
		if err := u.ow.w.Close(); err != nil {
			s.log.Warn("close an unused world", "world", u.name, "err", err)
		}
		s.conv.forget(u.name)
		s.mu.Lock()
		delete(s.worlds, u.name)
		for k := range s.logs {
			if k.world == u.name && !s.running[k] {
				delete(s.logs, k)
			}
		}
		s.mu.Unlock()
		close(u.ow.closing)
		s.metrics.worldsEvicted.Inc()
		s.log.Info("world closed: unused", "world", u.name)
	}
}

// sync reads what workers journaled in world w since this server last
// looked (on PostgreSQL: another server, or a demiurge run, may have sent
// it messages).
func (s *Server) sync(ctx context.Context, w *agent.World) error {
	if err := w.Sync(ctx); err != nil {
		return fmt.Errorf("world %s: %w", w.Name(), err)
	}
	return nil
}

// open opens world name with the agent.
func (s *Server) open(name string) (*agent.World, error) {
	where := agent.WithStorage(s.opts.Storage)
	if s.opts.Postgres != nil {
		where = agent.WithRemote(s.opts.Postgres)
	}
	opts := append(append([]agent.Option(nil), s.opts.Agent...), where, agent.WithWorld(name))
	if s.opts.Reducers != nil {
		opts = append(opts, agent.WithReducers(s.opts.Reducers))
	}
	// The world outlives the request that opened it.
	w, err := agent.Open(s.run, s.opts.Manifest, opts...)
	if err != nil {
		s.log.Error("open world", "world", name, "err", err)
		return nil, fmt.Errorf("open world %s: %w", name, err)
	}
	s.log.Info("world open", "world", name)
	return w, nil
}

// checkAgentWorld refuses a world whose last manifest is no agent's (a
// counter, say): opening it with the agent's manifest would journal a
// change of manifest it never asked for.
func (s *Server) checkAgentWorld(ctx context.Context, name string) error {
	r := session.NewReader(s.storage().CAS())
	err := s.journalStore().Read(ctx, name, 1, r.Record)
	if err != nil {
		return fmt.Errorf("world %s: %w", name, err)
	}
	if !r.ChatManifest() {
		return conflict("not_an_agent_world", fmt.Sprintf("world %s is not an agent world (its manifest has no %s): this server serves the worlds of %s", name, demiurge.ModuleName, s.name))
	}
	return nil
}

// chats returns the ids of world w's chats.
func (s *Server) chatIDs(ctx context.Context, w *agent.World) ([]string, error) {
	if ww := w.World(); ww != nil {
		var ids []string
		for _, c := range ww.Cells(w.Module()) {
			if id, ok := c.Key.(string); ok {
				ids = append(ids, id)
			}
		}
		return ids, nil
	}
	sum, err := session.Summarize(ctx, s.journalStore(), s.storage().CAS(), w.Name())
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(sum.Chats))
	for _, c := range sum.Chats {
		ids = append(ids, c.Chat)
	}
	return ids, nil
}

// resume follows, in this process, the turns of world w that a process
// left under way (they go on as the world reopens): their approval
// timeouts are kept, and their ends counted.
func (s *Server) resume(w *agent.World) {
	ids, err := s.chatIDs(context.Background(), w)
	if err != nil {
		s.log.Warn("list the chats of a world", "world", w.Name(), "err", err)
		return
	}
	for _, id := range ids {
		c := s.chat(w, id)
		st, ok := c.State()
		if !ok || st.Turn == nil {
			continue
		}
		key := turnKey{w.Name(), id, st.Turn.RequestID}
		s.log.Info("turn resumed", "world", key.world, "chat", key.chat, "turn", key.request)
		ended := make(chan struct{})
		chat := turnKey{world: key.world, chat: key.chat}
		s.mu.Lock()
		s.resumed[chat] = ended
		s.mu.Unlock()
		s.track(key, func() {
			defer func() {
				s.mu.Lock()
				if s.resumed[chat] == ended {
					delete(s.resumed, chat)
				}
				s.mu.Unlock()
				close(ended)
			}()
			for e, err := range c.Follow(s.run) {
				if err != nil {
					return
				}
				s.metrics.observe(e)
				if _, end := e.(agent.TurnEnd); end {
					return // the chat is free
				}
			}
		})
	}
}

// awaitResumed waits, if this process follows a resumed turn of chat id
// of world w that has ended in the journal, until its follower has the
// end (and with it the chat is free), or ctx ends: a client that has the
// turn's end (it follows the turn from the journal) and sends the next
// message at once may be there first, and the message would be refused
// as if the turn were under way. A turn still under way is not waited
// for.
func (s *Server) awaitResumed(ctx context.Context, w *agent.World, id string) {
	s.mu.Lock()
	ended := s.resumed[turnKey{world: w.Name(), chat: id}]
	s.mu.Unlock()
	if ended == nil {
		return
	}
	if st, ok := s.chat(w, id).State(); ok && st.Turn != nil {
		return // under way, or awaiting approval
	}
	select {
	case <-ended:
	case <-ctx.Done():
	}
}

// track runs fn, a stream that runs turn key, counted among the turns of
// this process.
func (s *Server) track(key turnKey, fn func()) {
	release := s.hold(key.world)
	s.mu.Lock()
	s.running[key] = true
	s.turns.Add(1)
	s.mu.Unlock()
	go func() {
		defer func() {
			release()
			s.mu.Lock()
			delete(s.running, key)
			s.mu.Unlock()
			s.turns.Done()
		}()
		fn()
	}()
}

// chat returns chat id of w with the server's chat options; its streams
// await approval (the decisions come by HTTP).
func (s *Server) chat(w *agent.World, id string) *agent.Chat {
	return w.Chat(id, append(append([]agent.ChatOption(nil), s.opts.Chat...), agent.AwaitApproval())...)
}

// awaitingOnly reports whether the turn of the chat whose state is st
// only waits for the user's decisions: calls wait for approval, none runs.
func awaitingOnly(st *demiurge.StateView) bool {
	if st.Turn == nil {
		return false
	}
	waiting, running := 0, 0
	for _, c := range st.Turn.Calls {
		switch c.Status {
		case "approval":
			waiting++
		case "pending":
			running++
		}
	}
	return waiting > 0 && running == 0
}

// Recover opens, in the background, the worlds of the store in which a
// turn was left under way (the process before was killed, or handed them
// over as it shut down), so that they go on at once rather than when a
// request names them. It is for a store this process runs (Storage): on
// PostgreSQL the workers do it. Serve calls it.
func (s *Server) Recover(ctx context.Context) {
	if s.opts.Postgres != nil {
		return
	}
	names, err := s.journalStore().Worlds(ctx)
	if err != nil {
		s.log.Warn("list the worlds to resume their turns", "err", err)
	}
	for _, name := range names {
		if ctx.Err() != nil {
			return
		}
		sum, err := session.Summarize(ctx, s.journalStore(), s.storage().CAS(), name)
		if err != nil {
			continue
		}
		running := false
		for _, c := range sum.Chats {
			running = running || c.Running
		}
		if !running {
			continue
		}
		// Held only while it opens: its turns, resumed, hold it then.
		opening, opened := context.WithCancel(ctx)
		_, err = s.world(opening, name, false)
		opened()
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) {
				s.log.Warn("resume the turns of a world", "world", name, "err", err)
			}
		}
	}
}

// registry is the reducers the worlds run on.
func (s *Server) registry() *reducer.Registry { return s.reg }
