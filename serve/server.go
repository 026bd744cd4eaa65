package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/pgstore"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// The defaults of Options.
const (
	DefaultAddr          = "127.0.0.1:8700"
	DefaultMaxBody       = 1 << 20
	DefaultRate          = 20
	DefaultBurst         = 40
	DefaultWriteTimeout  = 30 * time.Second
	DefaultHeaderTimeout = 10 * time.Second
	DefaultReadTimeout   = 30 * time.Second
	DefaultIdleTimeout   = 2 * time.Minute
	DefaultHeartbeat     = 15 * time.Second
	DefaultGrace         = 30 * time.Second
	// DefaultKeep is how long the events of a turn that ended stay in
	// memory for the clients that resume its stream (after that, they
	// are read from the journal).
	DefaultKeep = 2 * time.Minute
	// DefaultWorldIdle is how long a world nobody uses stays open.
	DefaultWorldIdle = 5 * time.Minute
	// DefaultMaxWorlds is how many worlds nobody uses stay open at most.
	DefaultMaxWorlds = 64
)

// Options configure New.
type Options struct {
	// Manifest is the agent's AIR: a directory (examples/demiurge) or a
	// manifest file in one. Required.
	Manifest string
	// Name is the agent's name, the model OpenAI-compatible clients name
	// (default: the base name of the manifest's directory).
	Name string
	// Agent are the options every world opens with: the model, the
	// environment, limits, instructions, tools, a logger. Where the world
	// lives and its name are the server's (Storage or Postgres; the
	// request's world).
	Agent []agent.Option
	// Reducers registers the reducers of the program's own worlds (as
	// agent.WithReducers): the server opens its worlds, and forks them,
	// with them.
	Reducers func(*reducer.Registry)
	// Chat are the options every chat is used with (RequireApproval,
	// ApprovalTimeout, AllowTools, DefaultToolChoice).
	Chat []agent.ChatOption
	// Storage holds the worlds this process runs (a bbolt store, or a
	// memory store for tests). The caller closes it, after the Server.
	// Exactly one of Storage and Postgres is set.
	Storage world.Storage
	// Postgres is a PostgreSQL store whose worlds workers run (demiurge
	// worker): a message goes to the world's inbox and its turn is read
	// from the journal as it grows (agent.WithRemote); many servers may
	// share it. The caller closes it, after the Server.
	Postgres *pgstore.Store
	// World is the world OpenAI-compatible requests reach when they name
	// none (header Demiurge-World); default agent.DefaultWorld.
	World string
	// NewWorlds sends each OpenAI-compatible request that begins a
	// conversation and names no world (no Demiurge-World header) to a
	// world of its own: World while it has no records, else the first of
	// World-2, World-3, … that has none and no request took before. A
	// strict cassette (agent.Cassette) needs it: its recording begins with
	// a new world, and answers a model call only if the request is the
	// recorded one, which in a world with a session already it never is
	// (the transcript, the journal's height differ). demiurge run picks a
	// new world so for the same reason.
	NewWorlds bool
	// Tokens are the bearer tokens requests must carry, each scoped to
	// worlds; nil lets every request in (for a server on loopback only:
	// see Listen).
	Tokens *TokenFile
	// CORSOrigins are the origins (scheme://host[:port]) whose pages may
	// call the API from a browser; "*" is any. None: a request that
	// carries an Origin header is refused.
	CORSOrigins []string
	// MaxBody bounds a request's body (default DefaultMaxBody).
	MaxBody int64
	// Rate and Burst are each token's request rate (per second) and burst
	// (defaults DefaultRate, DefaultBurst); without tokens, each client
	// address's. A negative Rate turns the limit off.
	Rate  float64
	Burst int
	// WriteTimeout bounds each write to a client: one that stops reading
	// is cut off (default DefaultWriteTimeout). HeaderTimeout,
	// ReadTimeout and IdleTimeout bound reading a request's header, the
	// whole request, and an idle connection (defaults DefaultHeaderTimeout,
	// DefaultReadTimeout, DefaultIdleTimeout).
	WriteTimeout, HeaderTimeout, ReadTimeout, IdleTimeout time.Duration
	// Heartbeat is how often a stream that has nothing to send sends a
	// comment, so that proxies keep it open (default DefaultHeartbeat).
	Heartbeat time.Duration
	// Grace is how long Serve, once its context ends, lets the turns under
	// way finish before it hands them over (default DefaultGrace).
	Grace time.Duration
	// Keep is how long a turn's events stay in memory once it ended
	// (default DefaultKeep).
	Keep time.Duration
	// WorldIdle is how long a world stays open once nothing uses it (no
	// request, no turn this process runs or follows): then it closes,
	// and opens again on the next request that names it (default
	// DefaultWorldIdle).
	WorldIdle time.Duration
	// MaxWorlds bounds the worlds that stay open while nothing uses them:
	// beyond it, those unused longest close at once (default
	// DefaultMaxWorlds). Worlds in use are never closed, so the open
	// worlds are at most MaxWorlds plus those in use.
	MaxWorlds int
	// Log receives the access log (a line per request) and what goes
	// wrong; nil discards them. No token, password or message text is
	// logged.
	Log *slog.Logger
}

// Server serves an agent over HTTP: the native JSON + SSE API and the
// OpenAI-compatible endpoints (see the package doc).
type Server struct {
	opts    Options
	name    string
	cat     *schema.Catalog
	reg     *reducer.Registry
	log     *slog.Logger
	metrics *metrics
	limits  *limiter
	handler http.Handler
	conv    *convIndex

	// run is the context the turns run under: it never ends (cancelling a
	// turn's stream stops the turn); closing a world ends its streams.
	run context.Context

	mu      sync.Mutex
	worlds  map[string]*openWorld
	logs    map[turnKey]*turnLog
	turns   sync.WaitGroup // the streams that run turns
	running map[turnKey]bool
	// resumed are the turns this process follows because a process
	// before it left them under way (see resume), by chat: each ended is
	// closed once its follower has the turn's end, and with it the chat
	// is free for its next message.
	resumed map[turnKey]chan struct{}
	// taken are the worlds NewWorlds gave a conversation, guarded by
	// newWorld: two requests that begin at once get two worlds.
	taken    map[string]bool
	newWorld sync.Mutex
	draining bool
	closed   bool
	closing  chan struct{} // closed when the server hands its streams over
	// handover is done when closing is closed (a context, so that a
	// stream waits on it without a goroutine of its own).
	handover context.Context
	handOver context.CancelFunc

	// testWritten, set by benchmarks only, is told, for each event of a
	// turn this process runs that a stream wrote, when it reached the
	// server (its turn's stream yielded it) and when the stream had
	// flushed it to the client's connection; end says it is the TurnEnd.
	testWritten func(key turnKey, at, flushed time.Time, end bool)
	// testStarted, set by benchmarks only, is told when the request that
	// began a turn reached its handler.
	testStarted func(key turnKey, start time.Time)
	// testNoPull, set by benchmarks only, runs every turn's stream in a
	// goroutine of its own from its start, as on PostgreSQL: the design
	// before readers pulled the stream, measured beside it.
	testNoPull bool
}

// turnKey names a turn: its world, chat and request id.
type turnKey struct {
	world, chat string
	request     uint64
}

// openWorld is a world the server opened (or is opening).
type openWorld struct {
	ready chan struct{}
	w     *agent.World
	err   error

	// Under Server.mu: users counts what uses the world now (requests,
	// turns this process runs or follows), used is when the last of them
	// let go, and closing, once set, is closed when the world has closed
	// (it is evicted: see Server.evict).
	users   int
	used    time.Time
	closing chan struct{}
}

// New returns a server of the agent at opts.Manifest. It checks the
// manifest (an agent world: it has the chat module) and opens no world:
// each opens on first use.
func New(ctx context.Context, opts Options) (*Server, error) {
	if opts.Manifest == "" {
		return nil, errors.New("serve: Options.Manifest is empty: give the agent's AIR")
	}
	if (opts.Storage == nil) == (opts.Postgres == nil) {
		return nil, errors.New("serve: set one of Options.Storage and Options.Postgres")
	}
	if opts.World == "" {
		opts.World = agent.DefaultWorld
	}
	if err := journal.ValidateWorld(opts.World); err != nil {
		return nil, fmt.Errorf("serve: Options.World: %w", err)
	}
	for _, o := range opts.CORSOrigins {
		if o != "*" && !validOrigin(o) {
			return nil, fmt.Errorf("serve: CORS origin %q: want scheme://host[:port], such as https://app.example.com, or *", o)
		}
	}
	defaults := []struct {
		d   *time.Duration
		def time.Duration
	}{{&opts.WriteTimeout, DefaultWriteTimeout}, {&opts.HeaderTimeout, DefaultHeaderTimeout}, {&opts.ReadTimeout, DefaultReadTimeout},
		{&opts.IdleTimeout, DefaultIdleTimeout}, {&opts.Heartbeat, DefaultHeartbeat}, {&opts.Grace, DefaultGrace}, {&opts.Keep, DefaultKeep}, {&opts.WorldIdle, DefaultWorldIdle}}
	for _, d := range defaults {
		if *d.d <= 0 {
			*d.d = d.def
		}
	}
	if opts.MaxWorlds <= 0 {
		opts.MaxWorlds = DefaultMaxWorlds
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.Rate == 0 {
		opts.Rate = DefaultRate
	}
	if opts.Burst <= 0 {
		opts.Burst = DefaultBurst
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	var registers []func(*reducer.Registry)
	if opts.Reducers != nil {
		registers = append(registers, opts.Reducers)
	}
	reg := agent.Registry(registers...)
	cat, err := schema.Load(opts.Manifest, &schema.LoadOptions{Reducers: reg.Names()})
	if err != nil {
		var l schema.ErrorList
		if errors.As(err, &l) {
			return nil, fmt.Errorf("%s does not load:\n%v", opts.Manifest, l)
		}
		return nil, err
	}
	if _, ok := demiurge.ModuleIn(func(n string) bool { _, ok := cat.Module(n); return ok }); !ok {
		// Refused now, as run refuses it, not at each message.
		return nil, fmt.Errorf("%s is not an agent world: it has no module %s (see examples/demiurge)", opts.Manifest, demiurge.ModuleName)
	}
	name := opts.Name
	if name == "" {
		name = agentName(opts.Manifest)
	}
	if !validModelName(name) {
		return nil, fmt.Errorf("serve: agent name %q: want 1 to 64 of A-Z a-z 0-9 . _ - (it is the model name clients send)", name)
	}
	s := &Server{opts: opts, name: name, cat: cat, reg: reg, log: opts.Log, run: context.WithoutCancel(ctx),
		worlds: map[string]*openWorld{}, logs: map[turnKey]*turnLog{}, running: map[turnKey]bool{}, resumed: map[turnKey]chan struct{}{}, taken: map[string]bool{}, closing: make(chan struct{})}
	s.handover, s.handOver = context.WithCancel(context.Background())
	s.metrics = newMetrics()
	s.limits = newLimiter(opts.Rate, opts.Burst)
	s.conv = newConvIndex()
	s.handler = s.routes()
	go s.sweep()
	return s, nil
}

// agentName is the name an agent gets from its manifest's path: its
// directory's base name ("demiurge" for examples/demiurge).
func agentName(manifest string) string {
	p := filepath.Clean(manifest)
	if strings.HasSuffix(p, ".air") || strings.HasSuffix(p, ".json") {
		p = filepath.Dir(p)
	}
	return filepath.Base(p)
}

// validModelName reports whether name can be an agent's name.
func validModelName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// Name returns the agent's name: the model OpenAI-compatible clients
// name.
func (s *Server) Name() string { return s.name }

// Handler returns the server's routes, for a test's httptest.Server or a
// program's own http.Server. Serve uses it.
func (s *Server) Handler() http.Handler { return s.handler }

// ErrNotLoopback is returned (wrapped) by Listen for an address off the
// loopback interface when no token file guards the server.
var ErrNotLoopback = errors.New("serve: an address off loopback needs tokens")

// Listen listens on addr (HOST:PORT). Off the loopback interface
// (anything but 127.0.0.0/8, ::1 and localhost) it needs tokens: with
// tokens false it refuses, with an error wrapping ErrNotLoopback.
func Listen(addr string, tokens bool) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("serve: address %q: %v (want HOST:PORT, such as %s)", addr, err, DefaultAddr)
	}
	if !tokens && !isLoopbackHost(host) {
		return nil, fmt.Errorf("%w: %s is not a loopback address: anyone who reaches it could run the agent; give a token file (--token-file, made by demiurge serve token create) or listen on 127.0.0.1", ErrNotLoopback, addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serve: listen on %s: %w", addr, err)
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); !tokens && (!ok || !ta.IP.IsLoopback()) {
		ln.Close()
		return nil, fmt.Errorf("%w: %s listens on %s", ErrNotLoopback, addr, ln.Addr())
	}
	return ln, nil
}

// isLoopbackHost reports whether host names the loopback interface.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Serve serves the API on ln until ctx ends, then shuts down gracefully:
// it stops taking connections and requests, lets the turns under way in
// this process finish for up to Options.Grace (a turn that only waits for
// approval is not waited for: it waits in the world), then ends the
// streams still open (their clients resume them, with Last-Event-ID, from
// the next server) and closes the worlds: what a turn still had running
// runs again when its world reopens, here or in the next process. It
// returns nil after a shutdown ctx asked for.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true) // h2c, with prior knowledge
	srv := &http.Server{
		Handler:           s.handler,
		Protocols:         &protocols,
		ReadHeaderTimeout: s.opts.HeaderTimeout,
		ReadTimeout:       s.opts.ReadTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		s.Close()
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down: finishing the turns under way", "grace", s.opts.Grace.String())
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
	// Stop taking connections; the streams open go on meanwhile.
	shut := make(chan struct{})
	sctx, stopWaiting := context.WithCancel(context.Background())
	defer stopWaiting()
	go func() {
		_ = srv.Shutdown(sctx)
		close(shut)
	}()
	s.waitTurns(s.opts.Grace)
	// Hand over: the streams still open end (their clients resume
	// elsewhere), the worlds close.
	s.Close()
	// A stream handed over writes its last event (shutting_down, and
	// when to come back) before its handler returns: wait for the
	// handlers, each write bounded by WriteTimeout, before cutting the
	// connections, or a client may lose that event to the cut.
	select {
	case <-shut:
	case <-time.After(s.opts.WriteTimeout):
	}
	stopWaiting()
	<-shut
	_ = srv.Close()
	<-done
	return nil
}

// waitTurns waits up to d for the turns this process runs to end, or to
// only wait for approval.
func (s *Server) waitTurns(d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if s.busyTurns() == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := s.busyTurns(); n > 0 {
		s.log.Warn("turns still under way are handed over: they go on when their world opens again", "turns", n)
	}
}

// busyTurns counts the turns of this process that run (not only wait
// for approval).
func (s *Server) busyTurns() int {
	s.mu.Lock()
	keys := make([]turnKey, 0, len(s.running))
	for k := range s.running {
		keys = append(keys, k)
	}
	s.mu.Unlock()
	n := 0
	for _, k := range keys {
		ow := s.opened(k.world)
		if ow == nil {
			continue
		}
		if st, ok := ow.Chat(k.chat).State(); ok && st.Turn != nil && st.Turn.RequestID == k.request && awaitingOnly(st) {
			continue
		}
		n++
	}
	return n
}

// Close ends the streams still open and closes the worlds the server
// opened (the store is the caller's). It is Serve's last step; a program
// that serves Handler on its own server calls it when done.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed, s.draining = true, true
	close(s.closing)
	s.handOver()
	worlds := slices.Collect(maps.Values(s.worlds)) // evict may delete from the map meanwhile
	s.mu.Unlock()
	var errs []error
	for _, ow := range worlds {
		<-ow.ready
		s.mu.Lock()
		evicted := ow.closing
		s.mu.Unlock()
		if evicted != nil {
			<-evicted // the sweep closes it
			continue
		}
		if ow.w != nil {
			errs = append(errs, ow.w.Close())
		}
	}
	s.turns.Wait()
	return errors.Join(errs...)
}

// sweep drops the logs of turns that ended more than Keep ago and have no
// reader, and closes the worlds nothing uses (evict).
func (s *Server) sweep() {
	t := time.NewTicker(max(min(s.opts.Keep, s.opts.WorldIdle)/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-s.closing:
			return
		case <-t.C:
		}
		s.mu.Lock()
		for k, l := range s.logs {
			l.mu.Lock()
			old := l.done && l.readers == 0 && time.Since(l.ended) > s.opts.Keep
			l.mu.Unlock()
			if old {
				delete(s.logs, k)
			}
		}
		s.mu.Unlock()
		s.evict()
	}
}
