package schema

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/demiurge-dev/demiurge/cas"
)

// LoadFromCAS rebuilds the catalog of a manifest from the store a world
// keeps its definitions in (a world stores every node of its catalog, see
// Catalog.Nodes, when it records a manifest): the manifest node, and the
// def node of every hash it pins. A world whose manifest changed replays
// the records written before the change with the catalog they were written
// under.
//
// The rebuilt catalog must hash to manifest: a node missing from the store,
// or a built-in def that this binary ships changed, is an error that says
// so.
func LoadFromCAS(ctx context.Context, g cas.Getter, manifest cas.Ref, opts *LoadOptions) (*Catalog, error) {
	fail := func(format string, args ...any) (*Catalog, error) {
		return nil, fmt.Errorf("load manifest %s from the store: %s", manifest.Short(), fmt.Sprintf(format, args...))
	}
	// The store's errors are wrapped: a node missing or damaged is the
	// store's fault (cas.ErrNotFound, cas.ErrCorrupt), not the AIR's.
	mb, err := g.Get(ctx, manifest)
	if err != nil {
		return nil, fmt.Errorf("load manifest %s from the store: %w", manifest.Short(), err)
	}
	mv, err := Decode(mb)
	if err != nil {
		return fail("%v", err)
	}
	mm, ok := mv.(*Map)
	if !ok {
		return fail("the node is not a map")
	}
	if k, _ := mm.Get("$kind"); k != KindManifest {
		return fail("the node is a %v, not a manifest", k)
	}
	var buf bytes.Buffer
	buf.WriteByte('[')
	for _, s := range manifestSections {
		section := s.section
		list, _ := mm.Get(section)
		refs, _ := list.([]Value)
		for _, rv := range refs {
			r, _ := rv.(*Map)
			name, _ := r.Get("name")
			h, _ := r.Get("hash")
			hs, _ := h.(string)
			ref, err := cas.ParseRef(hs)
			if err != nil {
				return fail("%s %v: hash %q: %v", section, name, hs, err)
			}
			node, err := g.Get(ctx, ref)
			if err != nil {
				return nil, fmt.Errorf("load manifest %s from the store: %s %v (%s): %w", manifest.Short(), section, name, ref.Short(), err)
			}
			dv, err := Decode(node)
			if err != nil {
				return fail("%s %v (%s): %v", section, name, ref.Short(), err)
			}
			buf.Write(ValueJSON(sourceForm(dv)))
			buf.WriteByte(',')
		}
	}
	buf.Write(ValueJSON(mm))
	buf.WriteByte(']')
	var o LoadOptions
	if opts != nil {
		o = *opts
	}
	o.Limits, o.ModuleLimits = ModuleLimits{}, nil // a stored def's limits are what it recorded
	c, err := LoadSources([]Source{{Name: "cas:" + manifest.String(), Data: buf.Bytes()}}, &o)
	if err != nil {
		return fail("%v", err)
	}
	if got := c.ManifestRef(); got != manifest {
		return fail("the defs read back hash to manifest %s (a built-in def this binary ships may have changed since)", got.Short())
	}
	// The code of the WASM modules, which the world stored with the
	// manifest: the catalog holds it as one loaded from files does. Code
	// the store lacks stays there to be missed by whoever runs the module.
	for _, name := range c.Names(KindDefModule) {
		d := c.modules[name]
		ref, err := cas.ParseRef(d.WasmHash)
		if d.WasmHash == "" || err != nil || ref.Algo() != cas.BLAKE3 {
			continue
		}
		code, err := g.Get(ctx, ref)
		switch {
		case err == nil:
			if c.code == nil {
				c.code = map[cas.Ref][]byte{}
			}
			c.code[ref] = code
		case errors.Is(err, cas.ErrNotFound):
		default:
			return nil, fmt.Errorf("load manifest %s from the store: the code of module %s (%s): %w", manifest.Short(), name, ref.Short(), err)
		}
	}
	return c, nil
}

// stepSlots are the fields of a plan step that hold an expression or a
// literal: a node writes a literal as {"literal": value}, a source writes
// the value alone.
var stepSlots = []string{"params", "idempotency_key", "value", "expr", "result"}

// sourceForm returns a def node as an AIR file writes it: the literals of
// a plan's steps unwrapped. Other nodes are their source form already.
func sourceForm(v Value) Value {
	d, ok := v.(*Map)
	if !ok {
		return v
	}
	if k, _ := d.Get("$kind"); k != KindDefPlan {
		return v
	}
	sv, _ := d.Get("steps")
	steps, _ := sv.([]Value)
	out := make([]Value, len(steps))
	for i, st := range steps {
		out[i] = st
		sm, ok := st.(*Map)
		if !ok {
			continue
		}
		for _, slot := range stepSlots {
			x, _ := sm.Get(slot)
			if lit, ok := x.(*Map); ok && lit.Len() == 1 {
				if inner, ok := lit.Get("literal"); ok {
					sm = sm.With(slot, inner)
				}
			}
		}
		out[i] = sm
	}
	return d.With("steps", out)
}
