// Package reducer defines the reducers of a world: deterministic Go
// functions that own all state. A reducer takes its cell's state and one
// event and returns the new state, domain events and micro-effects.
//
// A defmodule in AIR names a reducer registered in a Registry under the
// module's name.
//
// # Determinism
//
// A reducer must be a pure function of its Context, state and event: it
// must not read the clock, randomness, the environment, the network or
// files, nor iterate a Go map in order. The ingress stamp in the Context
// is the only time and randomness it may use. Replay runs reducers again
// and fails on any difference, and reducertest.Deterministic checks a
// reducer in tests.
package reducer

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/schema"
)

// Stamp is the ingress stamp of the input a world is processing, sampled
// once when the input entered the world and journaled with it.
type Stamp struct {
	NowNS         uint64  // wall time at ingress, nanoseconds since the Unix epoch
	LogicalNowNS  uint64  // the world's logical time: monotonic, never behind NowNS of earlier inputs
	JournalHeight uint64  // the journal height before this input
	Entropy       []byte  // random bytes (world.EntropySize of them)
	ManifestHash  cas.Ref // the manifest the world runs
}

// Context is what a reducer sees of the world besides its state and event.
type Context struct {
	Stamp Stamp
	// Module is the reducer's module name.
	Module string
	// Key is the cell key, normalized against the module's key_schema, or
	// nil for a reducer that is not keyed.
	Key schema.Value
	// EventSchema is the schema of the event as the reducer takes it (its
	// ABI event schema).
	EventSchema string
	// CAS reads blobs and nodes; reducers cannot write it directly (they
	// emit blob.put). A read that finds the store damaged (an error
	// wrapping cas.ErrCorrupt) fails the input whatever the reducer makes
	// of it: the world journals nothing of the step and stops, saying its
	// store is damaged.
	CAS cas.Getter
	// Memo is what the reducer returned as Output.Memo from the step that
	// made state, when the world still has it; else nil. See Output.Memo.
	Memo any
}

// Event is a domain event a reducer emits. Value is validated against
// Schema by the world. Key, if set, is the cell key the event carries for
// keyed routing.
type Event struct {
	Schema string
	Value  schema.Value
	Key    schema.Value
}

// Effect is a micro-effect a reducer emits (blob.put, blob.get, timer.set,
// or another effect its module declares in effects_emitted). Its receipt
// comes back to the same cell as a sys/*Result@1 event.
type Effect struct {
	Kind   string
	Params schema.Value
	// CapSlot names the module's cap slot that grants the effect; empty
	// means "default".
	CapSlot string
	// IdempotencyKey distinguishes otherwise identical effects; it may be
	// empty.
	IdempotencyKey []byte
}

// Output is the result of one step.
type Output struct {
	// State is the cell's new state, validated against the module's state
	// schema; nil deletes the cell.
	State   schema.Value
	Events  []Event
	Effects []Effect
	// Blobs are raw blobs the new state or the events refer to (by
	// cas.Sum). The world stores them with the step's records, in the same
	// transaction, so they exist by the time anything reads them. Unlike
	// blob.put, this needs no round trip; the blobs are derived data, and
	// replay re-derives them.
	Blobs [][]byte
	// Memo, if not nil, is the Go value the reducer made State from (or
	// anything it can use in its place): the world keeps it with the cell
	// and hands it back as Context.Memo on the cell's next step, so the
	// reducer need not decode the state it has just encoded. The world
	// hands a memo out once and forgets it, so the reducer may modify it
	// and must not keep it elsewhere. It is only an optimization: the world
	// drops it whenever it likes (a restart, a snapshot restored, a failed
	// step), so a reducer must behave exactly the same with Context.Memo as
	// with the state decoded.
	Memo any
}

// Reducer is a deterministic state machine over one cell.
type Reducer interface {
	// Step returns the cell's new state and what it emits. state is nil
	// for a cell that does not exist yet. An error fails the step: the
	// world journals it and keeps the old state (but see Context.CAS).
	Step(c *Context, state, event schema.Value) (Output, error)
}

// Func is an adapter to allow the use of ordinary functions as reducers.
type Func func(c *Context, state, event schema.Value) (Output, error)

// Step calls f.
func (f Func) Step(c *Context, state, event schema.Value) (Output, error) { return f(c, state, event) }

// Errors of the registry.
var (
	// ErrDuplicate is returned when a name is registered twice.
	ErrDuplicate = errors.New("reducer: already registered")
)

// ErrIrreproducible is returned (wrapped) by a reducer whose step failed
// for a reason that is not a function of its inputs, so that a replay
// might not fail the same way: a WASM module stopped by its wall-clock
// backstop, say, which a faster machine would have let finish. The world
// journals nothing of such an input: it fails the input with the error and
// stops, as it does for a damaged store, and reopening goes on from the
// journal as it was before the input.
var ErrIrreproducible = errors.New("reducer: the step failed in a way a replay might not reproduce")

// Modules makes the reducers of modules that bring their own code: a
// defmodule whose wasm_hash names a WebAssembly module (package
// reducer/wasm implements it).
type Modules interface {
	// Reducer returns the reducer of mod, whose code the store code holds
	// under mod.WasmHash. Code missing from the store is an error wrapping
	// cas.ErrNotFound; any other error says why the module cannot run.
	Reducer(ctx context.Context, mod *schema.DefModule, code cas.Getter) (Reducer, error)
}

// Registry maps module names to reducers. It is safe for concurrent use.
type Registry struct {
	mu           sync.RWMutex
	m            map[string]Reducer
	mods         Modules
	limits       schema.ModuleLimits
	moduleLimits map[string]schema.ModuleLimits
}

// SetLimits sets the limits that AIR loaded with the registry's
// LoadOptions writes into the defmodules of WASM modules (see
// schema.LoadOptions.Limits): all for every module, byName by module name.
func (r *Registry) SetLimits(all schema.ModuleLimits, byName map[string]schema.ModuleLimits) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.limits, r.moduleLimits = all, byName
}

// SetModules makes r run the modules that bring their own code (a
// defmodule with a wasm_hash) with mods, when no Go reducer is registered
// under their name. Nil runs none.
func (r *Registry) SetModules(mods Modules) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mods = mods
}

// Modules returns what SetModules set.
func (r *Registry) Modules() Modules {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.mods
}

// ErrNotRegistered is returned (wrapped) by Resolve for a module that has
// no reducer.
var ErrNotRegistered = errors.New("reducer: not registered")

// Resolve returns the reducer of a defmodule: the Go reducer registered
// under its name, which wins, else the module's own code run by the
// Modules set with SetModules.
func (r *Registry) Resolve(ctx context.Context, mod *schema.DefModule, code cas.Getter) (Reducer, error) {
	r.mu.RLock()
	red, ok := r.m[mod.Name]
	mods := r.mods
	r.mu.RUnlock()
	if ok {
		return red, nil
	}
	if mod.WasmHash == "" {
		return nil, fmt.Errorf("%w: reducer %s is not registered in this binary", ErrNotRegistered, mod.Name)
	}
	if mods == nil {
		return nil, fmt.Errorf("%w: reducer %s is a WASM module and this binary runs none", ErrNotRegistered, mod.Name)
	}
	return mods.Reducer(ctx, mod, code)
}

// LoadOptions returns the options that load AIR for the reducers r runs:
// the Go reducers' names, whether it runs WASM modules, and the limits
// SetLimits set.
func (r *Registry) LoadOptions() *schema.LoadOptions {
	o := &schema.LoadOptions{Reducers: r.Names(), WASM: r.Modules() != nil}
	r.mu.RLock()
	o.Limits, o.ModuleLimits = r.limits, r.moduleLimits
	r.mu.RUnlock()
	return o
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{m: map[string]Reducer{}} }

// Register adds a reducer under a module name ("ns/Name@1").
func (r *Registry) Register(name string, red Reducer) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[name]; dup {
		return fmt.Errorf("%w: %s", ErrDuplicate, name)
	}
	r.m[name] = red
	return nil
}

// MustRegister is Register that panics on a duplicate name; it is for
// program setup.
func (r *Registry) MustRegister(name string, red Reducer) {
	if err := r.Register(name, red); err != nil {
		panic(err)
	}
}

// Lookup returns the reducer registered under name.
func (r *Registry) Lookup(name string) (Reducer, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	red, ok := r.m[name]
	return red, ok
}

// Names returns the registered module names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.m))
	for n := range r.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// FromGo converts a Go value into a schema.Value through its canonical
// CBOR: structs become records keyed by their `cbor` tags (or field names).
// The result is not yet normalized against a type; the world does that.
func FromGo(v any) (schema.Value, error) {
	b, err := cas.Marshal(v)
	if err != nil {
		return nil, err
	}
	return schema.Decode(b)
}

// StateToGo decodes a cell's state into out, a Go value set to the state
// of a cell that does not exist yet: a nil state leaves out as it is. An
// error names the state that does not decode.
func StateToGo(state schema.Value, out any) error {
	if state == nil {
		return nil
	}
	if err := ToGo(state, out); err != nil {
		return fmt.Errorf("decode state %s: %w", schema.String(state), err)
	}
	return nil
}

// ToGo decodes a schema.Value into a Go value through its canonical CBOR.
func ToGo(v schema.Value, out any) error {
	// Unmarshal copies what it keeps: the encoding need not outlive it.
	return schema.WithEncoding(v, func(b []byte) error { return cas.Unmarshal(b, out) })
}

// Variant is the Go form of a variant value: {"$tag": Tag, "$value": Value}.
// For a unit arm, leave Value nil.
type Variant struct {
	Tag   string `cbor:"$tag"`
	Value any    `cbor:"$value,omitempty"`
}
