package introspect

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/schema"
)

// The manifest's def sections and the def kind each lists, in the order
// the tools print them.
var sections = []struct{ section, kind string }{
	{"schemas", schema.KindDefSchema},
	{"modules", schema.KindDefModule},
	{"plans", schema.KindDefPlan},
	{"effects", schema.KindDefEffect},
	{"caps", schema.KindDefCap},
	{"policies", schema.KindDefPolicy},
	{"secrets", schema.KindDefSecret},
}

// sectionOf returns the manifest section that lists defs of kind.
func sectionOf(kind string) string {
	for _, s := range sections {
		if s.kind == kind {
			return s.section
		}
	}
	return ""
}

// namedRef is a def the manifest lists.
type namedRef struct {
	Name string `json:"name"`
	Hash string `json:"hash"`
}

// manifestDefs is a manifest node, decoded, with the defs it lists. The
// tools read every def through it, so that a past manifest (exact:<h>)
// shows the defs of its time.
type manifestDefs struct {
	r      *reader
	ref    cas.Ref
	bytes  []byte      // the manifest node's canonical CBOR
	node   *schema.Map // the manifest node, decoded
	listed map[string][]namedRef
	meta   ReadMeta
}

// manifestAt loads the manifest the world ran at a consistency.
func (r *reader) manifestAt(ctx context.Context, c Consistency) (*manifestDefs, error) {
	m, err := r.metaAt(ctx, c)
	if err != nil {
		return nil, err
	}
	b, err := r.node(ctx, m.Manifest)
	if err != nil {
		return nil, err
	}
	v, err := schema.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("introspect: decode manifest %s: %w", m.Manifest, err)
	}
	node, ok := v.(*schema.Map)
	if !ok {
		return nil, fmt.Errorf("introspect: manifest %s is not a record", m.Manifest)
	}
	d := &manifestDefs{r: r, ref: m.Manifest, bytes: b, node: node, listed: map[string][]namedRef{}, meta: m}
	for _, s := range sections {
		l, _ := schema.FieldPath(node, s.section).([]schema.Value)
		for _, e := range l {
			name, _ := schema.FieldPath(e, "name").(string)
			hash, _ := schema.FieldPath(e, "hash").(string)
			d.listed[s.kind] = append(d.listed[s.kind], namedRef{Name: name, Hash: hash})
		}
	}
	return d, nil
}

// field returns a member of a record value, or nil.

// lookup returns the hash of a def: one the manifest lists, else a
// built-in (built-ins are always available).
func (d *manifestDefs) lookup(kind, name string) (cas.Ref, bool) {
	for _, n := range d.listed[kind] {
		if n.Name == name {
			ref, err := cas.ParseRef(n.Hash)
			return ref, err == nil
		}
	}
	if isBuiltin(kind, name) {
		return d.r.v.Catalog().DefRef(kind, name)
	}
	return cas.Ref{}, false
}

// names returns the names of the defs of kind the manifest lists, sorted.
func (d *manifestDefs) names(kind string) []string {
	out := make([]string, 0, len(d.listed[kind]))
	for _, n := range d.listed[kind] {
		out = append(out, n.Name)
	}
	sort.Strings(out)
	return out
}

// def loads and decodes a def node by kind and name. A name the manifest
// does not have is an ErrNotFound listing the defs of that kind it has.
func (d *manifestDefs) def(ctx context.Context, kind, name string) (*schema.Map, cas.Ref, error) {
	ref, ok := d.lookup(kind, name)
	if !ok {
		return nil, cas.Ref{}, fmt.Errorf("%w: unknown %s %q; the manifest's %s are: %s", ErrNotFound, kind, clip(name), sectionOf(kind), listNames(d.names(kind), name))
	}
	b, err := d.r.node(ctx, ref)
	if err != nil {
		return nil, cas.Ref{}, err
	}
	v, err := schema.Decode(b)
	if err != nil {
		return nil, cas.Ref{}, fmt.Errorf("introspect: decode %s %s: %w", kind, name, err)
	}
	m, ok := v.(*schema.Map)
	if !ok {
		return nil, cas.Ref{}, fmt.Errorf("introspect: %s %s is not a record", kind, name)
	}
	return m, ref, nil
}

// kindsOf returns the kinds under which a name is a def (listed or
// built-in), in section order.
func (d *manifestDefs) kindsOf(name string) []string {
	var out []string
	for _, s := range sections {
		if _, ok := d.lookup(s.kind, name); ok {
			out = append(out, s.kind)
		}
	}
	return out
}

// schemaType returns the AIR JSON type of a schema and its hash.
func (d *manifestDefs) schemaType(ctx context.Context, name string) (json.RawMessage, cas.Ref, error) {
	node, ref, err := d.def(ctx, schema.KindDefSchema, name)
	if err != nil {
		return nil, cas.Ref{}, err
	}
	return json.RawMessage(schema.ValueJSON(schema.FieldPath(node, "type"))), ref, nil
}

// typeRefs returns the schema names a type node refers to, in order of
// first appearance.
func typeRefs(t schema.Value, seen map[string]bool, out []string) []string {
	switch x := t.(type) {
	case *schema.Map:
		for _, e := range x.Entries() {
			if e.Key == "ref" {
				if s, ok := e.Value.(string); ok {
					if !seen[s] {
						seen[s] = true
						out = append(out, s)
					}
					continue
				}
			}
			out = typeRefs(e.Value, seen, out)
		}
	case []schema.Value:
		for _, e := range x {
			out = typeRefs(e, seen, out)
		}
	}
	return out
}

// refArms returns the schemas that are ref arms of a variant schema.
func (d *manifestDefs) refArms(ctx context.Context, variant string) []string {
	node, _, err := d.def(ctx, schema.KindDefSchema, variant)
	if err != nil {
		return nil
	}
	arms, ok := schema.FieldPath(schema.FieldPath(node, "type"), "variant").(*schema.Map)
	if !ok {
		return nil
	}
	var out []string
	for _, e := range arms.Entries() {
		if s, ok := schema.FieldPath(e.Value, "ref").(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// route is a routing.events entry.
type route struct {
	Event    string  `json:"event"`
	Reducer  string  `json:"reducer"`
	KeyField *string `json:"key_field"`
}

// routes returns the manifest's event routes.
func (d *manifestDefs) routes() []route {
	l, _ := schema.FieldPath(schema.FieldPath(d.node, "routing"), "events").([]schema.Value)
	out := make([]route, 0, len(l))
	for _, e := range l {
		rt := route{}
		rt.Event, _ = schema.FieldPath(e, "event").(string)
		rt.Reducer, _ = schema.FieldPath(e, "reducer").(string)
		if kf, ok := schema.FieldPath(e, "key_field").(string); ok {
			rt.KeyField = &kf
		}
		out = append(out, rt)
	}
	return out
}

// trigger is a triggers entry.
type trigger struct {
	Event       string  `json:"event"`
	Plan        string  `json:"plan"`
	CorrelateBy *string `json:"correlate_by"`
}

// triggers returns the manifest's triggers.
func (d *manifestDefs) triggers() []trigger {
	l, _ := schema.FieldPath(d.node, "triggers").([]schema.Value)
	out := make([]trigger, 0, len(l))
	for _, e := range l {
		t := trigger{}
		t.Event, _ = schema.FieldPath(e, "event").(string)
		t.Plan, _ = schema.FieldPath(e, "plan").(string)
		if c, ok := schema.FieldPath(e, "correlate_by").(string); ok {
			t.CorrelateBy = &c
		}
		out = append(out, t)
	}
	return out
}

// routedTo reports whether events of schema ev reach reducer: a route
// names ev, or names a variant that has ev as a ref arm (the world wraps
// it). It returns the route that does.
func (d *manifestDefs) routedTo(ctx context.Context, ev, reducer string) (route, bool) {
	for _, rt := range d.routes() {
		if rt.Reducer != reducer {
			continue
		}
		if rt.Event == ev {
			return rt, true
		}
		for _, arm := range d.refArms(ctx, rt.Event) {
			if arm == ev {
				return rt, true
			}
		}
	}
	return route{}, false
}

// raises returns the events a plan raises (raise_event steps), in step
// order, without repeats.
func (d *manifestDefs) raises(ctx context.Context, plan string) []string {
	node, _, err := d.def(ctx, schema.KindDefPlan, plan)
	if err != nil {
		return nil
	}
	steps, _ := schema.FieldPath(node, "steps").([]schema.Value)
	seen := map[string]bool{}
	var out []string
	for _, s := range steps {
		if op, _ := schema.FieldPath(s, "op").(string); op != schema.OpRaiseEvent {
			continue
		}
		if ev, ok := schema.FieldPath(s, "event").(string); ok && !seen[ev] {
			seen[ev] = true
			out = append(out, ev)
		}
	}
	return out
}
