package plans

import (
	"fmt"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/schema"
)

// Program is a defplan prepared for running: steps indexed, edges grouped
// by their target, in declaration order.
type Program struct {
	Def *schema.DefPlan
	// Ref is the hash of the def node, which pins the plan an instance
	// runs across manifest changes.
	Ref   cas.Ref
	index map[string]int
	preds [][]edgeIn // per step, its incoming edges in declaration order
}

type edgeIn struct {
	from int
	when *schema.Expr
}

// Compile prepares the named plan of a loaded catalog. The catalog has
// validated it, so errors here mean the catalog is not the one the plan
// was loaded with.
func Compile(cat *schema.Catalog, name string) (*Program, error) {
	d, ok := cat.Plan(name)
	if !ok {
		return nil, fmt.Errorf("plans: no plan %s in the manifest", name)
	}
	ref, _ := cat.DefRef(schema.KindDefPlan, name)
	p := &Program{Def: d, Ref: ref, index: map[string]int{}, preds: make([][]edgeIn, len(d.Steps))}
	for i, s := range d.Steps {
		p.index[s.ID] = i
	}
	for _, e := range d.Edges {
		from, ok1 := p.index[e.From]
		to, ok2 := p.index[e.To]
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("plans: plan %s: edge %s -> %s names an unknown step", name, e.From, e.To)
		}
		p.preds[to] = append(p.preds[to], edgeIn{from: from, when: e.When})
	}
	return p, nil
}

// Programs caches the compiled plans of one catalog.
type Programs struct {
	cat *schema.Catalog
	m   map[string]*Program
}

// NewPrograms compiles plans of cat on demand.
func NewPrograms(cat *schema.Catalog) *Programs {
	return &Programs{cat: cat, m: map[string]*Program{}}
}

// Get returns the compiled plan.
func (ps *Programs) Get(name string) (*Program, error) {
	if p, ok := ps.m[name]; ok {
		return p, nil
	}
	p, err := Compile(ps.cat, name)
	if err != nil {
		return nil, err
	}
	ps.m[name] = p
	return p, nil
}
