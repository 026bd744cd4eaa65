// Package worldview is a live world as the tools read it: an
// introspect.View of a *world.World, and the workspace versions the
// workspace tools build on (WorkspaceHeads). (Tools never import world;
// this package joins the two.)
package worldview

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools/introspect"
	"github.com/demiurge-dev/demiurge/world"
)

// View is the introspect.View of a *world.World. A world's adapters are
// built before world.Open returns the world they read, so a View is made
// from what is known before (name, catalog, storage) and attached to the
// world once it is open:
//
//	view := worldview.New(name, cat, st)
//	adapters := introspect.Adapters(view, nil) // plus toolcall.New(introspect.Tools(view, nil)...)
//	w, err := world.Open(ctx, world.Options{Name: name, Catalog: cat, Storage: st, Adapters: adapters, ...})
//	view.Attach(w)
//
// Head, State and Cells called before Attach wait for it (intents that
// Open dispatches again may run before Open returns), until their ctx is
// done. A View is safe for concurrent use.
type View struct {
	name  string
	cat   *schema.Catalog
	store world.Storage

	once  sync.Once
	ready chan struct{}
	w     *world.World
}

var _ introspect.View = (*View)(nil)

// New returns a view of the world name, which runs cat on st, to be
// attached to the world once it is open.
func New(name string, cat *schema.Catalog, st world.Storage) *View {
	return &View{name: name, cat: cat, store: st, ready: make(chan struct{})}
}

// Of returns the view of an open world.
func Of(w *world.World) *View {
	v := New(w.Name(), w.Catalog(), w.Storage())
	v.Attach(w)
	return v
}

// Attach connects the view to its open world. Only the first call has an
// effect.
func (v *View) Attach(w *world.World) {
	v.once.Do(func() {
		v.w = w
		close(v.ready)
	})
}

// Name returns the world's name.
func (v *View) Name() string { return v.name }

// Catalog returns the manifest the world runs.
func (v *View) Catalog() *schema.Catalog { return v.cat }

// Journal returns the world's journal. Inside a step of the world (an
// inline effect's ctx, see world.World.InStep) it also holds the step's
// records, which commit with the effect's receipt.
func (v *View) Journal() journal.Reader { return viewJournal{v} }

// CAS returns the world's blob store. Inside a step of the world it also
// holds the step's blobs.
func (v *View) CAS() cas.Getter { return viewCAS{v} }

// stepping returns the world if ctx is the context of an effect running
// inside one of its steps.
func (v *View) stepping(ctx context.Context) *world.World {
	w := world.Stepping(ctx)
	if w == nil {
		return nil
	}
	select {
	case <-v.ready:
		if w == v.w {
			return w
		}
		return nil
	default:
		// Not attached yet: the world running the effect is the view's if
		// it is the same world of the same storage.
		if w.Name() == v.name && w.Storage() == v.store {
			return w
		}
		return nil
	}
}

type viewJournal struct{ v *View }

func (j viewJournal) Read(ctx context.Context, world string, from uint64, fn func(journal.Record) error) error {
	if w := j.v.stepping(ctx); w != nil {
		return w.StepJournal().Read(ctx, world, from, fn)
	}
	return j.v.store.Journal().Read(ctx, world, from, fn)
}

func (j viewJournal) Head(ctx context.Context, world string) (journal.Head, error) {
	if w := j.v.stepping(ctx); w != nil {
		return w.StepJournal().Head(ctx, world)
	}
	return j.v.store.Journal().Head(ctx, world)
}

type viewCAS struct{ v *View }

func (c viewCAS) Get(ctx context.Context, r cas.Ref) ([]byte, error) {
	if w := c.v.stepping(ctx); w != nil {
		return w.StepCAS().Get(ctx, r)
	}
	return c.v.store.CAS().Get(ctx, r)
}

// errNotAttached is returned when a view is read before Attach and the
// caller's ctx ends first.
var errNotAttached = errors.New("worldview: the world is not open yet")

func (v *View) world(ctx context.Context) (*world.World, error) {
	select {
	case <-v.ready:
		return v.w, nil
	default:
	}
	if w := v.stepping(ctx); w != nil {
		return w, nil // the world runs an effect before Attach
	}
	select {
	case <-v.ready:
		return v.w, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", errNotAttached, context.Cause(ctx))
	}
}

// read calls fn with the machine and returns the head fn's reads belong
// to: the world's head and machine, read under one lock.
func (v *View) read(ctx context.Context, fn func(m *world.Machine)) (introspect.Head, error) {
	w, err := v.world(ctx)
	if err != nil {
		return introspect.Head{}, err
	}
	if err := ctx.Err(); err != nil {
		return introspect.Head{}, err
	}
	var h introspect.Head
	if sw := v.stepping(ctx); sw != nil {
		// Inside a step the world's lock is the step's: read the machine
		// as the step left it, at the head its records will have.
		_, err := sw.InStep(ctx, func(m *world.Machine, head journal.Head) {
			fn(m)
			h = introspect.Head{Height: head.Seq, Hash: head.Hash, Manifest: m.Manifest()}
		})
		return h, err
	}
	var height uint64
	var jh journal.Head
	w.ViewAt(func(m *world.Machine, head journal.Head) {
		height, jh = m.Height(), head
		if height == jh.Seq {
			fn(m)
			h = introspect.Head{Height: height, Hash: jh.Hash, Manifest: m.Manifest()}
		}
	})
	if height == jh.Seq {
		return h, nil
	}
	// The machine is ahead of the journal: inputs were applied that did
	// not commit.
	if err := w.Err(); err != nil {
		return introspect.Head{}, fmt.Errorf("worldview: world %s is broken: %w", v.name, err)
	}
	return introspect.Head{}, fmt.Errorf("worldview: world %s: its machine is at height %d, ahead of its journal at %d", v.name, height, jh.Seq)
}

// Head returns the journal head and the manifest the world runs.
func (v *View) Head(ctx context.Context) (introspect.Head, error) {
	return v.read(ctx, func(*world.Machine) {})
}

// State returns a cell's current state and the head it was read at.
func (v *View) State(ctx context.Context, module string, key schema.Value) (introspect.Cell, bool, introspect.Head, error) {
	var c introspect.Cell
	var ok bool
	h, err := v.read(ctx, func(m *world.Machine) {
		var st schema.Value
		var ref cas.Ref
		st, ref, ok = m.State(module, key)
		c = introspect.Cell{Key: key, State: st, Ref: ref}
	})
	if err != nil {
		return introspect.Cell{}, false, introspect.Head{}, err
	}
	return c, ok, h, nil
}

// Cells returns a reducer's current cells and the head they were read at.
func (v *View) Cells(ctx context.Context, module string) ([]introspect.Cell, introspect.Head, error) {
	var cells []introspect.Cell
	h, err := v.read(ctx, func(m *world.Machine) {
		cs := m.Cells(module)
		cells = make([]introspect.Cell, len(cs))
		for i, c := range cs {
			cells[i] = introspect.Cell{Key: c.Key, State: c.State, Ref: c.Ref}
		}
	})
	if err != nil {
		return nil, introspect.Head{}, err
	}
	return cells, h, nil
}
