package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/builtin"
	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/adapters/llm/cassette"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cluster"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	rbuiltin "github.com/demiurge-dev/demiurge/reducer/builtin"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/replay"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/mcp"
	"github.com/demiurge-dev/demiurge/tools/workspace/history"
	"github.com/demiurge-dev/demiurge/world"
)

// World is an agent world, open: its store, its model, its tools and MCP
// servers, and the chats it holds. It is safe for concurrent use. Close
// it when done.
type World struct {
	c      *config
	cat    *schema.Catalog
	st     world.Storage
	store  *store.Store    // the store Open opened (WithDir), closed by Close
	w      *world.World    // the world, run in this process; nil when a worker runs it
	remote *cluster.Remote // the world run by a worker of a PostgreSQL store (WithRemote)
	stream *streamReader   // the remote world's stream: its model's answers as they come
	host   host            // w or remote
	kit    *toolKit
	module string // the chat module: demiurge.ModuleName, or ModuleNameV2 or V1 for older worlds
	event  string // the event schema it takes
	model  *model
	base   map[string]any // the settings every chat has, unless its options change them
	// importsOlder says that a chat of the world's older chat module
	// (Chat@2) goes on under its module (Chat@3): its chat event has the
	// Import (see Chat.importOlder).
	importsOlder bool

	// For Fork: the AIR and the options Open was given.
	manifest string
	opts     []Option

	mu       sync.Mutex
	follows  map[*follower]struct{}
	deltas   map[cas.Ref]deltaTarget    // where a model call's streamed text goes, by intent
	busy     map[string]bool            // chats with a turn under way in this process
	always   map[string]map[string]bool // tools approved for the session, by chat
	timeouts map[string]*time.Timer     // approval timeouts armed in this process, by chat and call
	closed   bool
	closeErr error
}

// host is what a chat needs of its world, in this process or on a worker.
type host interface {
	SendJSON(ctx context.Context, schemaName string, js []byte) (journal.Head, error)
	State(module string, key schema.Value) (schema.Value, cas.Ref, bool)
	Head() journal.Head
}

// deltaTarget is the chat turn a model call streams for.
type deltaTarget struct {
	chat    string
	request uint64 // the turn's request id
	round   uint64
	compact bool // a compaction's summary, not an answer
}

// Open opens the agent world whose AIR is at manifest (a directory, or a
// manifest file in one), creating it in its store if it is new: the
// world's chat module (demiurge/Chat@3, as examples/demiurge declares it)
// is given the model, the built-in tools (introspect, workspace, bash, as
// the manifest grants them), the tools of its MCP servers (started now)
// and the program's own (WithTools).
//
// Everything that is wrong is an error that says what and where, and
// leaves the store as it was: the AIR that does not load, a world
// without a chat module, a model that cannot be reached, a tool whose
// definition is wrong.
func Open(ctx context.Context, manifest string, opts ...Option) (_ *World, err error) {
	c := newConfig(opts)
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	for _, t := range c.tools {
		if ct, ok := t.(interface{ check() error }); ok {
			if err := ct.check(); err != nil {
				return nil, err
			}
		} else if name := t.Info().Name; !toolName().MatchString(name) {
			return nil, fmt.Errorf("tool %q: a tool name is 1 to 64 of A-Z a-z 0-9 _ -, not starting with a digit or -", name)
		}
	}
	for i, t := range c.tools {
		name := t.Info().Name
		for _, u := range c.tools[:i] {
			if u.Info().Name == name {
				return nil, fmt.Errorf("two tools are named %s", name)
			}
		}
	}
	reg := Registry(c.registers...)
	cat, err := schema.Load(manifest, reg.LoadOptions())
	if err != nil {
		var l schema.ErrorList
		if errors.As(err, &l) {
			return nil, fmt.Errorf("%s does not load:\n%v", manifest, l)
		}
		return nil, err
	}
	module, ok := demiurge.ModuleIn(func(n string) bool { _, ok := cat.Module(n); return ok })
	if !ok {
		return nil, fmt.Errorf("%s is not an agent world: it has no module %s (see examples/demiurge)", manifest, demiurge.ModuleName)
	}
	def, _ := cat.Module(module)
	if def.Reducer == nil {
		return nil, fmt.Errorf("%s: module %s is not a reducer", manifest, module)
	}
	overrides, problems := llm.ManifestModels(cat)
	if len(problems) > 0 {
		return nil, fmt.Errorf("the manifest's models: %w", problems)
	}
	m, err := c.model.resolve(overrides, c, c.remote == nil)
	if err != nil {
		return nil, err
	}
	aw := &World{c: c, manifest: manifest, opts: opts, cat: cat, module: module, event: def.Reducer.Event, model: m,
		follows: map[*follower]struct{}{}, deltas: map[cas.Ref]deltaTarget{}, busy: map[string]bool{}, always: map[string]map[string]bool{},
		importsOlder: module == demiurge.ModuleName && hasArm(cat, def.Reducer.Event, "Import")}
	defer func() {
		if err != nil {
			_ = aw.release()
		}
	}()
	switch {
	case c.remote != nil:
		aw.st = c.remote.Storage()
	case c.storage != nil:
		aw.st = c.storage
	case c.dir != "":
		if aw.store, err = store.Open(c.dir, nil); err != nil {
			return nil, err
		}
		if aw.st, err = world.NewBoltStorage(aw.store.CAS(), aw.store.Journal()); err != nil {
			return nil, err
		}
	default:
		aw.st = world.NewMemoryStorage()
	}
	// With a remote world the kit is made for the tools' specs and the
	// system prompt only: the worker runs the tools.
	if aw.kit, err = newToolKit(ctx, c.name, cat, aw.st, c.tools, mcpEnv{getenv: c.getenv, manifest: manifest, log: c.log}); err != nil {
		return nil, err
	}
	if c.remote != nil {
		aw.remote, err = cluster.Attach(ctx, cluster.RemoteOptions{Store: c.remote, Name: c.name, Catalog: cat, Reducers: reg, OnCommit: aw.commit})
		if err != nil {
			return nil, &OpenError{World: c.name, Err: err}
		}
		aw.host = aw.remote
		if aw.base, err = aw.settings(ctx); err != nil {
			return nil, err
		}
		if m.stream {
			var listening <-chan struct{}
			aw.stream, listening = startStreamReader(c.remote, c.name, aw.push, c.log)
			select { // so that the first turn's answer streams
			case <-listening:
			case <-time.After(2 * time.Second):
			case <-ctx.Done():
			}
		}
		return aw, nil
	}
	adapters := builtin.Adapters(&http.Client{})
	for k, v := range aw.kit.adapters {
		adapters[k] = v
	}
	adapters[llm.EffectKind] = m.adapter
	for k, v := range c.adapters {
		adapters[k] = v
	}
	var progress func(*effects.Intent, string)
	if m.stream {
		progress = aw.progress
	}
	aw.w, err = world.Open(ctx, world.Options{
		Name: c.name, Catalog: cat, Reducers: reg, Storage: aw.st, Adapters: adapters, Logger: c.log,
		Now: c.now, Entropy: c.entropy, OnCommit: aw.commit, Abandoned: abandonedCalls(module),
		Dispatch: effects.DispatcherOptions{Getenv: m.secret, Progress: progress, TimeoutFor: aw.kit.timeoutFor},
	})
	if err != nil {
		return nil, &OpenError{World: c.name, Err: err}
	}
	aw.host = aw.w
	aw.kit.ts.Attach(aw.w)
	warn := aw.cassetteWarning
	m.warn.Store(&warn)
	if aw.base, err = aw.settings(ctx); err != nil {
		return nil, err
	}
	return aw, nil
}

// Fork makes a new world, name, from the first at records of w's world
// (see world.Fork: they are replayed and checked as they are copied, and
// a Fork record names where they came from; at must end a step), and
// opens it as Open would, with w's AIR and options followed by opts: give
// it another model (WithModel: a cassette, say), other limits or
// instructions. A TurnEnd's Seq ends a step: fork there to take the world
// as that turn left it and go on with another message. Other events' Seq
// may fall inside their step; the error then names the step ends around
// it. The fork lives in w's store and shares its blobs; close it before
// w. To run it under other AIR, fork with world.Fork and Open
// it with WithStorage(w.Storage()) and WithWorld(name).
//
// A world that workers run (WithRemote) is forked with world.Fork on its
// store.
func (w *World) Fork(ctx context.Context, at uint64, name string, opts ...Option) (*World, error) {
	if w.remote != nil {
		return nil, fmt.Errorf("fork world %s: workers run it; fork it with world.Fork on its store", w.c.name)
	}
	reg := Registry(w.c.registers...)
	if _, err := world.Fork(ctx, world.ForkOptions{From: w.c.name, Name: name, At: at, Reducers: reg, Storage: w.st}); err != nil {
		return nil, err
	}
	all := append(append(slices.Clip(w.opts), WithStorage(w.st), WithWorld(name)), opts...)
	return Open(ctx, w.manifest, all...)
}

// OpenError is the error of a world that does not open (its journal does
// not replay, its store is damaged).
type OpenError struct {
	World string
	Err   error
}

func (e *OpenError) Error() string { return fmt.Sprintf("open world %s: %v", e.World, e.Err) }
func (e *OpenError) Unwrap() error { return e.Err }

// Registry returns the reducers an agent world runs on: the chat reducers
// and the built-in ones, and those the functions register.
func Registry(registers ...func(*reducer.Registry)) *reducer.Registry {
	r := reducer.NewRegistry()
	for _, f := range registers {
		f(r)
	}
	if _, ok := r.Lookup(demiurge.ModuleName); !ok {
		demiurge.Register(r)
	}
	if _, ok := r.Lookup(history.Module); !ok {
		rbuiltin.Register(r)
	}
	return r
}

// Close stops the world: the MCP servers stop, effects still in flight
// are cancelled (they run again when the world reopens), and the store
// Open opened is closed. The journal keeps every record committed before.
func (w *World) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.closeErr
	}
	w.closed = true
	for f := range w.follows {
		f.close()
	}
	for _, t := range w.timeouts {
		t.Stop()
	}
	w.mu.Unlock()
	w.closeErr = w.release()
	return w.closeErr
}

// release closes what Open opened.
func (w *World) release() error {
	var errs []error
	if w.stream != nil {
		w.stream.stop()
	}
	if w.w != nil {
		errs = append(errs, w.w.Close())
	}
	if w.kit != nil {
		errs = append(errs, w.kit.close())
	}
	if w.store != nil {
		errs = append(errs, w.store.Close())
	}
	return errors.Join(errs...)
}

// Name returns the world's name in its store.
func (w *World) Name() string { return w.c.name }

// World returns the running world underneath, for what the door does not
// offer (its cells, sending it events of its own AIR); nil when a worker
// runs it (WithRemote).
func (w *World) World() *world.World { return w.w }

// Head returns the world's journal head, as far as this process knows it.
func (w *World) Head() journal.Head { return w.host.Head() }

// Storage returns the world's store.
func (w *World) Storage() world.Storage { return w.st }

// Export writes the world's session, as far as its journal goes now, as a
// replay bundle in dir, which must not exist or be empty (replay.Export,
// with the world's journal, blobs and AIR). It is how a program records a
// session of its own for its tests: replaytest.CheckGolden replays the
// bundle, and Cassette(dir) answers from its model calls. Export it once
// the turns it should hold have ended. The bundle has no trace.txt yet:
// CheckGolden with update set writes it.
func (w *World) Export(ctx context.Context, dir string) (*replay.Manifest, error) {
	m, err := replay.Export(ctx, w.st.Journal(), w.st.CAS(), w.c.name, w.cat.Sources(), w.cat.ModuleFiles(), dir)
	if err != nil {
		return nil, fmt.Errorf("export world %s to %s: %w", w.c.name, dir, err)
	}
	return m, nil
}

// Tools returns the specs of the tools the model is offered, in order.
func (w *World) Tools() []tools.SpecTool { return slices.Clone(w.kit.specs) }

// MCPServers reports the world's MCP servers: connected or not, their
// tools, and the tools left out (named like another).
func (w *World) MCPServers() []mcp.ServerInfo {
	if w.kit.mcp == nil {
		return nil
	}
	return w.kit.mcp.Servers()
}

// Model returns what demiurge knows of the world's model.
func (w *World) Model() llm.Model { return w.model.known }

// resolveModel is what the world's provider knows of the model name.
func (w *World) resolveModel(name string) llm.Model {
	overrides, _ := llm.ManifestModels(w.cat)
	m, _ := llm.ResolveModel(name, w.model.baseURL, append(overrides, w.c.model.Options...))
	return m
}

// Module returns the world's chat module (demiurge.ModuleName, or
// demiurge.ModuleNameV2 or V1 for a world made with Chat@2 or Chat@1).
func (w *World) Module() string { return w.module }

// settings stores the tools blob and the system prompt and returns the
// settings every chat starts with.
func (w *World) settings(ctx context.Context) (map[string]any, error) {
	blob, err := w.kit.spec().Encode()
	if err != nil {
		return nil, err
	}
	ref, err := w.st.CAS().Put(ctx, blob)
	if err != nil {
		return nil, err
	}
	instructions := w.c.instructions
	if instructions == "" {
		instructions = w.kit.systemPrompt()
	}
	l := w.c.limits
	s := map[string]any{
		"provider": w.model.provider, "model": w.model.name, "max_tokens": or(l.MaxTokens, 4096), "tools_ref": ref.String(),
		"instructions": instructions, "max_rounds": or(l.MaxRounds, demiurge.DefaultMaxRounds),
		"max_repeats": or(l.MaxRepeats, demiurge.DefaultMaxRepeats), "output_limit": or(l.OutputLimit, demiurge.DefaultOutputLimit),
	}
	if w.module != demiurge.ModuleNameV1 {
		// Chat@2 and later name the system prompt by ref: it is not written into
		// every state and request of the chat.
		iref, err := w.st.CAS().Put(ctx, []byte(instructions))
		if err != nil {
			return nil, err
		}
		delete(s, "instructions")
		s["instructions_ref"] = iref.String()
	}
	if w.model.temp != "" {
		s["temperature"] = w.model.temp
	}
	if l.TokenBudget > 0 {
		s["token_budget"] = l.TokenBudget
	}
	if w.module != demiurge.ModuleNameV1 { // Chat@1's settings have none of these
		m := w.model.known
		if m.ContextWindow > 0 {
			s["context_window"] = m.ContextWindow
		}
		if m.CompactAt > 0 {
			s["compact_at"] = m.CompactAt
		}
		if m.OnOverflow != "" {
			s["on_overflow"] = m.OnOverflow
		}
		if hasField(w.cat, "demiurge/Settings@2", "item_bytes") { // a manifest older than it has not
			s["item_bytes"] = uint64(llm.DefaultMaxItemBytes)
		}
		if n := llm.ToolPromptTokens(w.model.provider); n > 0 && hasField(w.cat, "demiurge/Settings@2", "tool_prompt_tokens") {
			s["tool_prompt_tokens"] = n // the chat's requests carry tools (tools_ref)
		}
	}
	return s, nil
}

// hasArm reports whether the variant schema name of cat has an arm.
func hasArm(cat *schema.Catalog, name, arm string) bool {
	t, ok := cat.SchemaType(name)
	return ok && slices.ContainsFunc(t.Fields, func(f schema.Field) bool { return f.Name == arm })
}

// hasField reports whether the record schema name of cat has a field.
func hasField(cat *schema.Catalog, name, field string) bool {
	t, ok := cat.SchemaType(name)
	return ok && slices.ContainsFunc(t.Fields, func(f schema.Field) bool { return f.Name == field })
}

func or(v, def uint64) uint64 {
	if v == 0 {
		return def
	}
	return v
}

// commit hands each step's records to the turns that follow them.
func (w *World) commit(recs []journal.Record) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for f := range w.follows {
		f.push(item{recs: slices.Clone(recs)})
	}
}

// progress hands a model call's streamed text to the turn it is for.
func (w *World) progress(in *effects.Intent, text string) {
	t, ok := w.target(in)
	if !ok || t.compact {
		return
	}
	w.push(t.chat, t.request, TextDelta{Round: t.round, Text: text})
}

// cassetteWarning tells the turn a model call is for, in one line, and
// the log, with the diff, that a loose cassette answered the call though
// its request is not the recorded one.
func (w *World) cassetteWarning(in *effects.Intent, m *cassette.Mismatch) {
	text := m.Warning()
	logMismatch(w.c.log, m)
	if in == nil {
		return
	}
	if t, ok := w.target(in); ok {
		w.push(t.chat, t.request, Notice{Seq: w.Head().Seq, Text: text})
	}
}

// target is the chat turn a model call is for.
func (w *World) target(in *effects.Intent) (deltaTarget, bool) {
	if in.Kind != llm.EffectKind || in.Origin.Kind != "plan" || w.w == nil {
		return deltaTarget{}, false
	}
	w.mu.Lock()
	t, ok := w.deltas[in.Hash]
	w.mu.Unlock()
	if ok {
		return t, true
	}
	if t, ok = targetIn(w.w, in); !ok {
		return t, false
	}
	w.mu.Lock()
	if len(w.deltas) > 256 {
		clear(w.deltas)
	}
	w.deltas[in.Hash] = t
	w.mu.Unlock()
	return t, true
}

// targetIn is the chat turn the model call in streams for, read from the
// plan of w that asked for it: its input is the ChatRequest.
func targetIn(w *world.World, in *effects.Intent) (t deltaTarget, ok bool) {
	if in.Kind != llm.EffectKind || in.Origin.Kind != "plan" || w == nil {
		return deltaTarget{}, false
	}
	// The plan's input as committed, read without the world's lock: the
	// model call streams once its intent is durable, while other chats'
	// batches commit.
	if input, found := w.PlanInput(in.Origin.PlanID); found {
		chat, _ := schema.FieldPath(input, "chat_id").(string)
		round, _ := schema.FieldPath(input, "round").(uint64)
		req, _ := schema.FieldPath(input, "request_id").(uint64)
		purpose, _ := schema.FieldPath(input, "purpose").(string)
		t, ok = deltaTarget{chat: chat, request: req, round: round, compact: purpose == "compact"}, chat != ""
	}
	return t, ok
}

// push hands an event that is not a journal record to the turns that
// follow chat (those of turn request only, if it is not 0).
func (w *World) push(chat string, request uint64, e Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for f := range w.follows {
		if f.chat == chat {
			f.push(item{event: e, request: request})
		}
	}
}

// err checks the world: a world in this process that broke says why; a
// remote world's journal is read for new records (handed to the turns
// that follow them).
func (w *World) err(ctx context.Context) error {
	if w.remote != nil {
		if err := w.remote.Sync(ctx); err != nil && ctx.Err() == nil {
			return err
		}
		return nil
	}
	return w.w.Err()
}
