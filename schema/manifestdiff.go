package schema

import (
	"context"
	"fmt"
	"sort"

	"github.com/demiurge-dev/demiurge/cas"
)

// ManifestDiff is what differs between two manifests A and B: the defs
// whose hashes differ, and the manifest's own fields (routing, triggers,
// defaults, module bindings, …) when they do.
type ManifestDiff struct {
	A, B cas.Ref
	// Defs are the defs A and B pin with different hashes (or one pins
	// and the other does not), by section in AIR's order (schemas,
	// modules, plans, effects, caps, policies, secrets), then by name.
	Defs []DefChange
	// RestA and RestB are the manifests' nodes without their def lists,
	// decoded; both nil when those are equal.
	RestA, RestB Value
}

// DefChange is a def two manifests pin with different hashes.
type DefChange struct {
	// Kind is the def's kind (KindDefPlan, …), Name its name.
	Kind, Name string
	// A and B are its hash in each manifest, the zero Ref where a
	// manifest does not pin it.
	A, B cas.Ref
	// ValueA and ValueB are its nodes, decoded (as LoadFromCAS reads a
	// def back: a plan step's literals in their source form); nil where
	// a manifest does not pin it or, with Err set, where the node could
	// not be read.
	ValueA, ValueB Value
	Err            error
}

// DiffManifests compares the manifests a and b, reading their nodes and
// the nodes of the defs whose hashes differ from g. A manifest node g
// cannot give, or that is not a manifest, is an error; a def node g
// cannot give is noted in its DefChange.
func DiffManifests(ctx context.Context, g cas.Getter, a, b cas.Ref) (*ManifestDiff, error) {
	d := &ManifestDiff{A: a, B: b}
	ma, err := manifestNode(ctx, g, a)
	if err != nil {
		return nil, err
	}
	mb, err := manifestNode(ctx, g, b)
	if err != nil {
		return nil, err
	}
	restA, restB := ma, mb
	for _, s := range manifestSections {
		pa, pb := pins(ma, s.section), pins(mb, s.section)
		names := make([]string, 0, len(pa)+len(pb))
		for n := range pa {
			names = append(names, n)
		}
		for n := range pb {
			if _, ok := pa[n]; !ok {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			ra, rb := pa[n], pb[n]
			if ra == rb {
				continue
			}
			c := DefChange{Kind: s.kind, Name: n, A: ra, B: rb}
			c.ValueA, c.Err = defNode(ctx, g, ra)
			if vb, err := defNode(ctx, g, rb); err != nil && c.Err == nil {
				c.Err = err
			} else {
				c.ValueB = vb
			}
			d.Defs = append(d.Defs, c)
		}
		restA, restB = restA.Without(s.section), restB.Without(s.section)
	}
	if !Equal(restA, restB) {
		d.RestA, d.RestB = restA, restB
	}
	return d, nil
}

// manifestNode reads and decodes the manifest node ref.
func manifestNode(ctx context.Context, g cas.Getter, ref cas.Ref) (*Map, error) {
	b, err := g.Get(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", ref.Short(), err)
	}
	v, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", ref.Short(), err)
	}
	m, ok := v.(*Map)
	if !ok {
		return nil, fmt.Errorf("manifest %s: the node is not a manifest", ref.Short())
	}
	if k, _ := m.Get("$kind"); k != KindManifest {
		return nil, fmt.Errorf("manifest %s: the node is not a manifest", ref.Short())
	}
	return m, nil
}

// pins returns the defs a manifest's section pins, by name.
func pins(m *Map, section string) map[string]cas.Ref {
	out := map[string]cas.Ref{}
	list, _ := m.Get(section)
	refs, _ := list.([]Value)
	for _, rv := range refs {
		r, _ := rv.(*Map)
		if r == nil {
			continue
		}
		name, _ := r.Get("name")
		h, _ := r.Get("hash")
		n, _ := name.(string)
		hs, _ := h.(string)
		ref, _ := cas.ParseRef(hs)
		out[n] = ref
	}
	return out
}

// defNode reads and decodes a def node; nil for the zero ref.
func defNode(ctx context.Context, g cas.Getter, ref cas.Ref) (Value, error) {
	if !ref.Valid() {
		return nil, nil
	}
	b, err := g.Get(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("def %s: %w", ref.Short(), err)
	}
	v, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("def %s: %w", ref.Short(), err)
	}
	return sourceForm(v), nil
}
