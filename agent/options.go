package agent

import (
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/pgstore"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/world"
)

// An Option configures Open.
type Option func(*config)

// config is what the options set.
type config struct {
	dir          string
	storage      world.Storage
	remote       *pgstore.Store
	name         string
	model        Model
	tools        []tools.Tool
	limits       Limits
	instructions string
	getenv       func(string) (string, bool)
	log          *slog.Logger
	registers    []func(*reducer.Registry)
	adapters     map[string]effects.Adapter
	now          func() time.Time
	entropy      io.Reader
	approver     Approver
	errs         []error
}

// DefaultWorld is the name of the world Open opens when none is given.
const DefaultWorld = "main"

func newConfig(opts []Option) *config {
	c := &config{name: DefaultWorld, getenv: os.LookupEnv, adapters: map[string]effects.Adapter{}}
	for _, o := range opts {
		o(c)
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c
}

// WithDir keeps the world in the store in directory dir (one bbolt file,
// demiurge.db, created if need be). One World at a time holds a store:
// Open of a store another World or process holds (a demiurge run) fails
// after a second, saying so; open the store's other worlds with WithWorld
// through one World's Storage (WithStorage), or close it first. Without
// WithDir or WithStorage, the world lives in memory and is gone when it
// closes.
func WithDir(dir string) Option { return func(c *config) { c.dir = dir } }

// WithStorage keeps the world in st (a PostgreSQL store, a memory store
// shared with a test). The caller closes st, after the World.
func WithStorage(st world.Storage) Option { return func(c *config) { c.storage = st } }

// WithRemote reaches a world of the PostgreSQL store st that workers run
// (demiurge worker, cluster.Worker): a message goes to the world's inbox,
// the worker that holds its lease runs the turn (the model, the tools, the
// MCP servers are the worker's), and the turn's events are read from its
// journal as it grows. The model's answers stream from the worker as they
// come (TextDelta, over the store's NOTIFY; see pgstore.Store.PublishStream),
// unless the model is NoStream; World.World is nil. The caller closes st,
// after the World.
func WithRemote(st *pgstore.Store) Option { return func(c *config) { c.remote = st } }

// WithWorld names the world in its store (default DefaultWorld): one
// store holds many worlds.
func WithWorld(name string) Option { return func(c *config) { c.name = name } }

// WithModel says which model answers (default: the zero Model).
func WithModel(m Model) Option { return func(c *config) { c.model = m } }

// WithTools adds tools of the embedding program to the agent: each is a
// tool the model can call by itself and a command of its bash scripts,
// validated against its input schema and journaled like the built-in
// ones. They run as custom.call effects (sys/custom.call@1, cap
// sys/custom@1), which the world's manifest must route (examples/demiurge
// does). See Func and FromDef for making one from a Go function.
func WithTools(ts ...tools.Tool) Option {
	return func(c *config) { c.tools = append(c.tools, ts...) }
}

// Limits bound what a chat does; a zero field takes its default.
type Limits struct {
	// MaxTokens bounds the output tokens of each model call (default
	// 4096).
	MaxTokens uint64
	// MaxRounds bounds the model calls of one turn (default
	// demiurge.DefaultMaxRounds).
	MaxRounds uint64
	// MaxRepeats bounds how many times one turn may make the same tool
	// call (default demiurge.DefaultMaxRepeats).
	MaxRepeats uint64
	// TokenBudget bounds the tokens of one turn (0: no budget).
	TokenBudget uint64
	// OutputLimit bounds the bytes of a tool's output the model reads
	// (default demiurge.DefaultOutputLimit).
	OutputLimit uint64
}

// WithLimits sets the chats' limits.
func WithLimits(l Limits) Option { return func(c *config) { c.limits = l } }

// WithInstructions sets the system prompt (default: one built from the
// tools).
func WithInstructions(text string) Option { return func(c *config) { c.instructions = text } }

// WithEnv is where the world reads its environment: the model's key and
// base URL, secrets bound to env:VAR, the variables MCP servers inherit
// (default os.LookupEnv).
func WithEnv(lookup func(string) (string, bool)) Option {
	return func(c *config) {
		if lookup != nil {
			c.getenv = lookup
		}
	}
}

// WithLogger sends the world's logs to log (default: nowhere).
func WithLogger(log *slog.Logger) Option { return func(c *config) { c.log = log } }

// WithReducers registers more reducers, for worlds whose AIR names
// modules of the program's own (the chat and workspace reducers are
// always registered).
func WithReducers(register func(*reducer.Registry)) Option {
	return func(c *config) { c.registers = append(c.registers, register) }
}

// WithAdapter runs effects of kind with a (for a world whose AIR emits
// effects of the program's own). The built-in adapters (blob, timer,
// http) and the agent's (llm.generate, the tools) are there already.
func WithAdapter(kind string, a effects.Adapter) Option {
	return func(c *config) { c.adapters[kind] = a }
}

// WithApprover answers the calls that wait for the user's approval (see
// RequireApproval) as they come: a terminal's y/n prompt, a web page, a
// rule of the program. Without one, a turn with a waiting call ends its
// stream with OutcomeAwaitingApproval (unless the chat awaits approval:
// AwaitApproval), and Chat.Decide answers later.
func WithApprover(a Approver) Option { return func(c *config) { c.approver = a } }

// WithClock sets the world's ingress clock and the entropy its inputs
// are stamped with (defaults: the wall clock, crypto/rand): a test that
// runs a session twice with the same clock and entropy gets the same
// journal.
func WithClock(now func() time.Time, entropy io.Reader) Option {
	return func(c *config) { c.now, c.entropy = now, entropy }
}
