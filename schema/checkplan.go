package schema

import (
	"sort"
	"strings"
)

// CorrelationVar is the variable a plan started by a trigger with
// correlate_by (or by a keyed event) sees its correlation id in.
const CorrelationVar = "correlation_id"

// planScope is what the expressions of a plan may refer to.
type planScope struct {
	input     *Type
	vars      map[string]bool
	steps     map[string]bool
	handles   map[string]bool
	eventType *Type // set inside await_event.where
}

func (l *loader) checkPlan(p *DefPlan) {
	e := l.errsFor(p)
	base := p.At.Pointer
	input := l.schema(e, base+"/input", p.Input, "input schema")
	var output *Type
	if p.Output != "" {
		output = l.schema(e, base+"/output", p.Output, "output schema")
	}
	for _, lc := range p.Locals {
		l.schema(e, base+"/locals/"+lc.Name, lc.Schema, "local "+lc.Name+" schema")
	}

	sc := planScope{input: input, vars: map[string]bool{CorrelationVar: true}, steps: map[string]bool{}, handles: map[string]bool{}}
	for _, lc := range p.Locals {
		sc.vars[lc.Name] = true
	}
	bound := map[string]string{} // var → step id that binds it
	for _, s := range p.Steps {
		if sc.steps[s.ID] {
			e.add(s.Ptr+"/id", "step id %q is used twice", s.ID)
		}
		sc.steps[s.ID] = true
		if s.EffectIDAs != "" {
			if prev, dup := bound[s.EffectIDAs]; dup {
				e.add(s.Ptr+"/bind/effect_id_as", "handle %q is already bound by step %q; handles must be unique", s.EffectIDAs, prev)
			}
			bound[s.EffectIDAs] = s.ID
			sc.handles[s.EffectIDAs] = true
			sc.vars[s.EffectIDAs] = true
		}
		if s.As != "" {
			if sc.handles[s.As] {
				e.add(s.Ptr+"/bind/as", "variable %q is already an effect handle", s.As)
			}
			sc.vars[s.As] = true
		}
	}

	// Edges: known steps, no duplicates, no cycles.
	type pair struct{ from, to string }
	seenEdge := map[pair]bool{}
	succ := map[string][]string{}
	indeg := map[string]int{}
	for _, ed := range p.Edges {
		ok := true
		if !sc.steps[ed.From] {
			e.add(ed.Ptr+"/from", "edge from unknown step %q", ed.From)
			ok = false
		}
		if !sc.steps[ed.To] {
			e.add(ed.Ptr+"/to", "edge to unknown step %q", ed.To)
			ok = false
		}
		if ed.From == ed.To && ok {
			e.add(ed.Ptr, "edge from step %q to itself", ed.From)
			ok = false
		}
		if seenEdge[pair{ed.From, ed.To}] {
			e.add(ed.Ptr, "duplicate edge %s -> %s", ed.From, ed.To)
			ok = false
		}
		seenEdge[pair{ed.From, ed.To}] = true
		if ok {
			succ[ed.From] = append(succ[ed.From], ed.To)
			indeg[ed.To]++
		}
		if ed.When != nil {
			l.checkExpr(e, ed.When, sc)
		}
	}
	// Kahn's algorithm, in declaration order.
	var queue []string
	queued := map[string]bool{}
	for _, s := range p.Steps {
		if indeg[s.ID] == 0 && !queued[s.ID] {
			queued[s.ID] = true
			queue = append(queue, s.ID)
		}
	}
	visited := 0
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		visited++
		for _, to := range succ[id] {
			indeg[to]--
			if indeg[to] == 0 {
				queue = append(queue, to)
			}
		}
	}
	if visited < len(sc.steps) {
		var cyc []string
		for _, s := range p.Steps {
			if indeg[s.ID] > 0 && !queued[s.ID] {
				queued[s.ID] = true
				cyc = append(cyc, s.ID)
			}
		}
		e.add(base+"/edges", "the plan graph has a cycle through steps %s; plans must be acyclic", strings.Join(cyc, ", "))
	}

	// Steps.
	var derivedCaps, derivedEffects []string
	for _, s := range p.Steps {
		switch s.Op {
		case OpEmitEffect:
			derivedCaps = append(derivedCaps, s.Cap)
			derivedEffects = append(derivedEffects, s.Kind)
			ef := l.effectKindOf(s.Kind)
			if ef == nil {
				e.add(s.Ptr+"/kind", "effect kind %q is not declared by any defeffect listed in the manifest (or built in)", s.Kind)
			} else if ef.OriginScope == "reducer" {
				e.add(s.Ptr+"/kind", "effect %s may only be emitted by reducers (origin_scope reducer)", s.Kind)
			}
			g, ok := l.c.Manifest.Grant(s.Cap)
			if !ok {
				e.add(s.Ptr+"/cap", "cap grant %q is not defined in the manifest's defaults.cap_grants", s.Cap)
			} else if cd, ok := l.c.caps[g.Cap]; ok && ef != nil && cd.CapType != ef.CapType {
				e.add(s.Ptr+"/cap", "grant %q is a %s cap but effect %s needs %s", s.Cap, cd.CapType, s.Kind, ef.CapType)
			}
			var pt *Type
			if ef != nil && l.resolveName(ef.ParamsSchema) != nil {
				pt = RefType(ef.ParamsSchema)
			}
			l.checkSlot(e, s.Params, pt, sc, "params")
			l.checkSlot(e, s.IdempotencyKey, nil, sc, "idempotency_key")
		case OpAwaitReceipt:
			if s.For == nil {
				break
			}
			if s.For.Kind != ExprRef || s.For.Root != RefVar || !sc.handles[s.For.Name] {
				var hs []string
				for h := range sc.handles {
					hs = append(hs, h)
				}
				sort.Strings(hs)
				e.add(s.For.Ptr, "await_receipt.for must be {\"ref\": \"@var:<handle>\"} naming an emit_effect handle (handles: %s)", listOrNone(hs))
			}
		case OpAwaitEvent:
			et := l.schema(e, s.Ptr+"/event", s.Event, "awaited event")
			if s.Where != nil {
				wsc := sc
				wsc.eventType = et
				if et == nil {
					wsc.eventType = &Type{Kind: KindMap} // unknown: don't check paths
				}
				l.checkExpr(e, s.Where, wsc)
				if l.correlated(p.Name) && !mentions(s.Where, CorrelationVar) {
					e.add(s.Ptr+"/where", "plan %s is started with correlate_by, so await_event.where must compare with @var:%s; otherwise it can catch another instance's event", p.Name, CorrelationVar)
				}
			}
		case OpRaiseEvent:
			et := l.schema(e, s.Ptr+"/event", s.Event, "raised event")
			if et != nil {
				et = RefType(s.Event)
			}
			l.checkSlot(e, s.Value, et, sc, "value")
		case OpAssign:
			var t *Type
			if ls, ok := p.LocalSchema(s.As); ok && l.resolveName(ls) != nil {
				t = RefType(ls)
			}
			l.checkSlot(e, s.Expr, t, sc, "expr")
		case OpEnd:
			switch {
			case p.Output != "" && s.Result == nil:
				e.add(s.Ptr, "plan %s declares output %s, so its end step needs a result", p.Name, p.Output)
			case p.Output == "" && s.Result != nil:
				e.add(s.Ptr+"/result", "plan %s declares no output, so its end step takes no result", p.Name)
			default:
				var t *Type
				if output != nil {
					t = RefType(p.Output)
				}
				l.checkSlot(e, s.Result, t, sc, "result")
			}
		}
	}
	for _, inv := range p.Invariants {
		l.checkExpr(e, inv, sc)
	}
	checkDerived := func(key string, given, derived []string) {
		if given == nil {
			return
		}
		g, d := uniqSorted(given), uniqSorted(derived)
		if strings.Join(g, ",") != strings.Join(d, ",") {
			e.add(base+"/"+key, "%s is %v but the plan's emit_effect steps use %v (it may be omitted: it is derived)", key, g, d)
		}
	}
	checkDerived("required_caps", p.RequiredCaps, derivedCaps)
	checkDerived("allowed_effects", p.AllowedEffects, derivedEffects)
}

func listOrNone(ss []string) string {
	if len(ss) == 0 {
		return "none"
	}
	return strings.Join(ss, ", ")
}

func uniqSorted(ss []string) []string {
	m := map[string]bool{}
	for _, s := range ss {
		m[s] = true
	}
	out := make([]string, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// correlated reports whether a trigger starts the plan with correlate_by.
func (l *loader) correlated(plan string) bool {
	for _, t := range l.c.Manifest.Triggers {
		if t.Plan == plan && t.CorrelateBy != "" {
			return true
		}
	}
	return false
}

func mentions(x *Expr, v string) bool {
	found := false
	x.Walk(func(e *Expr) {
		if e.Kind == ExprRef && e.Root == RefVar && (e.Name == v || strings.HasPrefix(e.Name, v+".")) {
			found = true
		}
	})
	return found
}

func (l *loader) resolveName(name string) *Type {
	if name == "" {
		return nil
	}
	return l.resolveType(RefType(name))
}

// checkSlot decides whether an ExprOrValue slot holds an expression or a
// literal, normalizes literals against the slot's type t (if known) and
// checks expression references.
func (l *loader) checkSlot(e *problems, ev *ExprOrValue, t *Type, sc planScope, what string) {
	if ev == nil {
		return
	}
	ev.Type = t
	n := normalizer{r: l.c, json: true}
	if ev.Expr != nil {
		if !ev.Expr.IsConst() {
			l.checkExpr(e, ev.Expr, sc)
			return
		}
		cv, _ := ev.Expr.ConstValue()
		if t == nil {
			ev.Literal, ev.HasLiteral = cv, true
			return
		}
		v, cerr := (&normalizer{r: l.c}).norm(t, cv, nil, 0)
		if cerr == nil {
			ev.Literal, ev.HasLiteral = v, true
			return
		}
		// It looked like an expression but does not fit; maybe it is sugar.
		if v, err := n.norm(t, jsonInput(ev.raw), nil, 0); err == nil {
			ev.Expr, ev.Literal, ev.HasLiteral = nil, v, true
			return
		}
		e.add(ev.Ptr, "%s does not fit %s: %v", what, t, cerr)
		return
	}
	if t == nil {
		if exprShape(ev.raw) {
			// Shaped like an expression but not a valid one.
			q := newProblems("")
			parseExpr(ev.raw, q)
			for _, p := range *q.list {
				e.add(p.Pointer, "%s: %s", what, p.Msg)
			}
			return
		}
		// No type to read sugar through: take the JSON as it is.
		ev.Literal, ev.HasLiteral = untypedLiteral(ev.raw), true
		return
	}
	v, err := n.norm(t, jsonInput(ev.raw), nil, 0)
	if err != nil {
		if exprShape(ev.raw) {
			q := newProblems("")
			parseExpr(ev.raw, q)
			for _, p := range *q.list {
				e.add(p.Pointer, "%s is neither a valid expression (%s) nor a literal of type %s (%v)", what, p.Msg, t, err)
			}
			return
		}
		hint := ""
		if holdsRef(ev.raw) {
			hint = "; a literal cannot hold expressions: to compute a part of it, write the whole " + what + " as an expression, e.g. {\"record\": {...}}"
		}
		e.add(ev.Ptr, "%s does not fit %s: %v%s", what, t, err, hint)
		return
	}
	ev.Literal, ev.HasLiteral = v, true
}

// holdsRef reports whether JSON holds something shaped like {"ref": "@..."}.
func holdsRef(n *jnode) bool {
	if n == nil {
		return false
	}
	if n.kind == jObject {
		if r := n.get("ref"); r != nil && r.kind == jString && strings.HasPrefix(r.str, "@") {
			return true
		}
		for _, f := range n.obj {
			if holdsRef(f.val) {
				return true
			}
		}
	}
	for _, e := range n.arr {
		if holdsRef(e) {
			return true
		}
	}
	return false
}

// untypedLiteral reads JSON without a type: objects become records, arrays
// lists, integers int or nat, other numbers dec128 text.
func untypedLiteral(n *jnode) Value {
	switch n.kind {
	case jNull:
		return nil
	case jBool:
		return n.b
	case jNumber:
		if v, err := parseInteger(n.num.String()); err == nil {
			return v
		}
		if d, err := canonicalDecimal(n.num.String()); err == nil {
			return d
		}
		return n.num.String()
	case jString:
		return n.str
	case jArray:
		out := make([]Value, len(n.arr))
		for i, e := range n.arr {
			out[i] = untypedLiteral(e)
		}
		return out
	default:
		m := &Map{}
		for _, f := range n.fields() {
			m.set(f.key, untypedLiteral(f.val))
		}
		return m
	}
}

// checkExpr checks every reference inside x.
func (l *loader) checkExpr(e *problems, x *Expr, sc planScope) {
	x.Walk(func(r *Expr) {
		if r.Kind != ExprRef {
			return
		}
		switch r.Root {
		case RefPlanInput:
			if sc.input != nil {
				if err := l.checkPath(sc.input, r.Path); err != nil {
					e.add(r.Ptr, "%s: the plan input %v", r.Text, err)
				}
			}
		case RefVar:
			if _, _, ok := r.Split(func(n string) bool { return sc.vars[n] }); !ok {
				var vs []string
				for v := range sc.vars {
					vs = append(vs, v)
				}
				sort.Strings(vs)
				e.add(r.Ptr, "%s: unknown variable (variables: %s)", r.Text, strings.Join(vs, ", "))
			}
		case RefStep:
			if _, _, ok := r.Split(func(n string) bool { return sc.steps[n] }); !ok {
				e.add(r.Ptr, "%s: unknown step", r.Text)
			}
		case RefEvent:
			if sc.eventType == nil {
				e.add(r.Ptr, "%s: @event may only be used in await_event.where", r.Text)
				return
			}
			if err := l.checkPath(sc.eventType, r.Path); err != nil {
				e.add(r.Ptr, "%s: the event %v", r.Text, err)
			}
		}
	})
}
