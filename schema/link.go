package schema

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/demiurge-dev/demiurge/cas"
)

// loader links parsed defs into a Catalog and validates them.
type loader struct {
	opts      *LoadOptions
	errs      *problems
	builtin   *builtinSet
	files     []string
	defined   map[defKey]Def // user defs
	manifests []*Manifest
	c         *Catalog
	// unread is set when a file is not JSON: its defs are unknown.
	unread    bool
	code      map[cas.Ref][]byte // WASM modules found beside the manifest (resolveCode)
	codeFiles map[string]string  // their files under the module dir, by module name
}

func (l *loader) parseSource(s Source, errs *problems) {
	defs, read := parseFile(s, errs)
	l.unread = l.unread || !read
	for _, d := range defs {
		if m, ok := d.(*Manifest); ok {
			l.manifests = append(l.manifests, m)
			continue
		}
		k := defKey{d.DefKind(), d.DefName()}
		at := d.Origin()
		if b, ok := l.builtin.defs[k]; ok {
			if !Equal(b.node(), d.node()) {
				errs.add(at.Pointer, "%s %s conflicts with the built-in def of that name (the sys/ namespace is reserved; copy it under your own namespace to change it)", k.kind, k.name)
			}
			continue
		}
		if strings.HasPrefix(k.name, "sys/") {
			errs.add(at.Pointer, "%s %s: the sys/ namespace is reserved for built-in defs", k.kind, k.name)
			continue
		}
		if prev, dup := l.defined[k]; dup {
			errs.add(at.Pointer, "%s %s is defined twice (also in %s at %s)", k.kind, k.name, prev.Origin().File, displayPtr(prev.Origin().Pointer))
			continue
		}
		l.defined[k] = d
	}
}

// noManifest reports that no file holds a manifest, of the folder the
// files are in: it has no manifest.air.json, and what it holds instead
// (each file's defs by kind), for the user to see whether it is the
// wrong folder or the manifest is missing.
func (l *loader) noManifest() {
	if len(l.files) == 0 {
		l.errs.forFile("").add("", "%v", errNoManifest)
		return
	}
	dir := filepath.Dir(l.files[0])
	kinds := map[string]map[string]int{} // file → kind → defs
	for _, d := range l.defined {
		f := d.Origin().File
		if kinds[f] == nil {
			kinds[f] = map[string]int{}
		}
		kinds[f][d.DefKind()]++
	}
	const maxListed = 8
	var listed []string
	for i, f := range l.files {
		if i == maxListed {
			listed = append(listed, fmt.Sprintf("and %d more", len(l.files)-maxListed))
			break
		}
		var ks []string
		for k, n := range kinds[f] {
			ks = append(ks, fmt.Sprintf("%d %s", n, k))
		}
		sort.Strings(ks)
		what := "no defs"
		if len(ks) > 0 {
			what = strings.Join(ks, ", ")
		}
		rel, err := filepath.Rel(dir, f)
		if err != nil {
			rel = f
		}
		listed = append(listed, fmt.Sprintf("%s (%s)", rel, what))
	}
	none := fmt.Sprintf("none of its %d AIR files holds a", len(l.files))
	if len(l.files) == 1 {
		none = "its one AIR file holds no"
	}
	l.errs.forFile(dir).add("", "no manifest: the folder has no manifest.air.json (nor manifest.air), and %s def with \"$kind\": \"manifest\": %s; validate the folder of a world's AIR, or add its manifest", none, strings.Join(listed, ", "))
}

func (l *loader) link() *Catalog {
	c := &Catalog{
		Files:   l.files,
		schemas: map[string]*DefSchema{}, modules: map[string]*DefModule{}, plans: map[string]*DefPlan{},
		caps: map[string]*DefCap{}, policies: map[string]*DefPolicy{}, secrets: map[string]*DefSecret{},
		effects: map[string]*DefEffect{}, byKind: map[string]*DefEffect{},
		refs: map[defKey]cas.Ref{}, nodes: map[cas.Ref][]byte{},
	}
	l.c = c
	switch len(l.manifests) {
	case 0:
		if l.errs.hasErrors() {
			return c // a file that did not parse may have held it
		}
		l.noManifest()
		return c
	case 1:
	default:
		for _, m := range l.manifests[1:] {
			l.errs.forFile(m.At.File).add(m.At.Pointer, "a second manifest (the first is in %s); a world has exactly one", l.manifests[0].At.File)
		}
	}
	m := l.manifests[0]
	c.Manifest = m
	me := l.errs.forFile(m.At.File)

	// Built-ins are always available.
	for k, d := range l.builtin.defs {
		l.activate(k, d)
	}
	// The manifest lists the active user defs.
	listed := map[defKey]bool{}
	for _, s := range manifestSections {
		seen := map[string]bool{}
		for _, r := range *s.refs(m) {
			k := defKey{s.kind, r.Name}
			if seen[r.Name] {
				me.add(r.Ptr, "%s is listed twice in %s", r.Name, s.section)
				continue
			}
			seen[r.Name] = true
			listed[k] = true
			if _, ok := l.builtin.defs[k]; ok {
				continue
			}
			d, ok := l.defined[k]
			if !ok {
				me.add(r.Ptr, "%s %s is listed in the manifest's %s but not defined in any AIR file%s", s.kind, r.Name, s.section, l.otherKind(r.Name, s.kind))
				continue
			}
			l.activate(k, d)
		}
	}
	for _, k := range sortedKeys(l.defined) {
		if !listed[k] {
			d := l.defined[k]
			l.errs.forFile(d.Origin().File).warn(d.Origin().Pointer, "%s %s is defined but not listed in the manifest; it is ignored", k.kind, k.name)
		}
	}
	l.checkSchemas()
	for _, k := range sortedKeys(l.defined) {
		if !listed[k] {
			continue
		}
		switch d := l.defined[k].(type) {
		case *DefModule:
			l.checkModule(d)
		case *DefEffect:
			l.checkEffect(d)
		case *DefCap:
			l.checkCap(d)
		case *DefSecret:
			l.checkSecret(d)
		case *DefPolicy:
			l.checkPolicy(d)
		}
	}
	l.checkManifest(m)
	for _, k := range sortedKeys(l.defined) {
		if p, ok := l.defined[k].(*DefPlan); ok && listed[k] {
			l.checkPlan(p)
		}
	}
	if l.errs.hasErrors() {
		return c
	}
	l.hashAll(m)
	return c
}

func sortedKeys(m map[defKey]Def) []defKey {
	ks := make([]defKey, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].kind != ks[j].kind {
			return ks[i].kind < ks[j].kind
		}
		return ks[i].name < ks[j].name
	})
	return ks
}

// otherKind explains a name that exists as a def of another kind.
func (l *loader) otherKind(name, kind string) string {
	// In the manifest's order of kinds, so the message is the same on
	// every run when a name is defined under several other kinds.
	for _, s := range manifestSections {
		if _, ok := l.defined[defKey{s.kind, name}]; ok && s.kind != kind {
			return fmt.Sprintf(" (it is defined as a %s)", s.kind)
		}
	}
	return ""
}

func (l *loader) activate(k defKey, d Def) {
	c := l.c
	switch d := d.(type) {
	case *DefSchema:
		c.schemas[k.name] = d
	case *DefModule:
		c.modules[k.name] = d
	case *DefPlan:
		c.plans[k.name] = d
	case *DefCap:
		c.caps[k.name] = d
	case *DefPolicy:
		c.policies[k.name] = d
	case *DefSecret:
		c.secrets[k.name] = d
	case *DefEffect:
		c.effects[k.name] = d
	}
}

func (l *loader) errsFor(d Def) *problems { return l.errs.forFile(d.Origin().File) }

// schema checks that a schema name resolves, reporting at ptr.
func (l *loader) schema(e *problems, ptr, name, what string) *Type {
	if name == "" {
		return nil
	}
	if d, ok := l.c.schemas[name]; ok {
		return d.Type
	}
	if d, ok := l.defined[defKey{KindDefSchema, name}]; ok {
		e.add(ptr, "%s %s is defined in %s but not listed in the manifest's schemas", what, name, d.Origin().File)
		return nil
	}
	e.add(ptr, "%s %s is not a known schema%s", what, name, l.otherKind(name, KindDefSchema))
	return nil
}

// checkSchemas checks every type reference and rejects recursive types.
func (l *loader) checkSchemas() {
	for _, name := range l.c.Names(KindDefSchema) {
		d := l.c.schemas[name]
		if strings.HasPrefix(name, "sys/") {
			continue
		}
		e := l.errsFor(d)
		walkType(d.Type, func(t *Type) {
			if t.Kind == KindRef {
				l.schema(e, d.At.Pointer+"/type", t.Ref, "type reference")
			}
		})
	}
	// Cycle detection over ref edges, in name order.
	state := map[string]int{} // 0 new, 1 visiting, 2 done
	var visit func(name string, stack []string)
	visit = func(name string, stack []string) {
		d, ok := l.c.schemas[name]
		if !ok || state[name] == 2 {
			return
		}
		if state[name] == 1 {
			i := 0
			for i < len(stack) && stack[i] != name {
				i++
			}
			cycle := append(append([]string(nil), stack[i:]...), name)
			l.errsFor(d).add(d.At.Pointer, "schema %s is recursive (%s); AIR types cannot refer to themselves", name, strings.Join(cycle, " -> "))
			return
		}
		state[name] = 1
		walkType(d.Type, func(t *Type) {
			if t.Kind == KindRef {
				visit(t.Ref, append(stack, name))
			}
		})
		state[name] = 2
	}
	for _, name := range l.c.Names(KindDefSchema) {
		visit(name, nil)
	}
}

func walkType(t *Type, fn func(*Type)) {
	if t == nil {
		return
	}
	fn(t)
	for _, f := range t.Fields {
		walkType(f.Type, fn)
	}
	walkType(t.Elem, fn)
	walkType(t.Key, fn)
	walkType(t.Value, fn)
}

// resolveType follows refs; nil if something does not resolve.
func (l *loader) resolveType(t *Type) *Type {
	for i := 0; t != nil && t.Kind == KindRef && i < 64; i++ {
		d, ok := l.c.schemas[t.Ref]
		if !ok {
			return nil
		}
		t = d.Type
	}
	return t
}

// checkPath reports whether a dotted path exists in values of type t. It
// returns an error only when the path certainly does not exist.
func (l *loader) checkPath(t *Type, path []string) error {
	for i, seg := range path {
		t = l.resolveType(t)
		for t != nil && t.Kind == KindOption {
			t = l.resolveType(t.Elem)
		}
		if t == nil {
			return nil
		}
		switch t.Kind {
		case KindRecord:
			ft, ok := t.FieldType(seg)
			if !ok {
				where := ""
				if i > 0 {
					where = " at " + strings.Join(path[:i], ".")
				}
				return fmt.Errorf("has no field %q%s (fields: %s)", seg, where, strings.Join(t.FieldNames(), ", "))
			}
			t = ft
		case KindVariant:
			switch seg {
			case TagKey:
				t = Primitive(KindText)
			case ValueKey:
				// The rest must exist in at least one arm.
				rest := path[i+1:]
				if len(rest) == 0 {
					return nil
				}
				for _, f := range t.Fields {
					if l.checkPath(f.Type, rest) == nil {
						return nil
					}
				}
				return fmt.Errorf("has no variant arm with %s", strings.Join(rest, "."))
			default:
				return fmt.Errorf("is a variant at %q, which has only $tag and $value", seg)
			}
		case KindMap, KindList:
			return nil // keys and indexes are only known at run time
		default:
			return fmt.Errorf("has no field %q: %s is a %s", seg, strings.Join(path[:i], "."), t.Kind)
		}
	}
	return nil
}

func (l *loader) checkModule(d *DefModule) {
	e := l.errsFor(d)
	p := d.At.Pointer
	l.schema(e, p+"/key_schema", d.KeySchema, "key_schema")
	if r := d.Reducer; r != nil {
		l.schema(e, p+"/abi/reducer/state", r.State, "state schema")
		l.schema(e, p+"/abi/reducer/event", r.Event, "event schema")
		l.schema(e, p+"/abi/reducer/context", r.Context, "context schema")
		l.schema(e, p+"/abi/reducer/annotations", r.Annotations, "annotations schema")
		for i, k := range r.EffectsEmitted {
			ef := l.effectKindOf(k)
			if ef == nil {
				e.add(p+"/abi/reducer/effects_emitted/"+itoa(i), "effect kind %q is not declared by any defeffect", k)
				continue
			}
			if ef.OriginScope == "plan" {
				e.add(p+"/abi/reducer/effects_emitted/"+itoa(i), "effect %s may only be emitted by plans (origin_scope plan)", k)
			}
		}
		for _, s := range r.CapSlots {
			if !l.capTypeKnown(s.CapType) {
				e.add(p+"/abi/reducer/cap_slots/"+s.Slot, "cap type %q of slot %q is not the cap_type of any defcap", s.CapType, s.Slot)
			}
		}
		goReducer := slices.Contains(l.opts.Reducers, d.Name)
		if goReducer && !strings.HasPrefix(d.Name, "sys/") {
			// The Go reducer runs, but a module beside the manifest is
			// still recorded, so the manifest's hash is the same in a
			// binary that runs the module: its problems are warnings.
			tmp := newProblems(e.file)
			l.resolveCode(tmp, d)
			for _, p := range *tmp.list {
				e.warn(p.Pointer, "%s (the Go reducer registered under this name runs instead)", p.Msg)
			}
		}
		if !goReducer && !strings.HasPrefix(d.Name, "sys/") {
			hasCode := false
			if l.opts.WASM || l.opts.Reducers == nil {
				hasCode = l.resolveCode(e, d)
			}
			if hasCode {
				d.Limits = d.Limits.Over(l.opts.Limits).Over(l.opts.ModuleLimits[d.Name])
			}
			if l.opts.Reducers != nil && !hasCode && !e.hasErrorsAt(p) {
				reg := append([]string(nil), l.opts.Reducers...)
				sort.Strings(reg)
				list := strings.Join(reg, ", ")
				if list == "" {
					list = "none"
				}
				if l.opts.WASM {
					e.add(p+"/name", "reducer module %s has no WASM module and no Go reducer is registered under its name (registered: %s): put its module beside the manifest as %s/%s-HEX.wasm (HEX: the SHA-256 of its bytes), or register a Go reducer under this name", d.Name, list, ModulesDir, d.Name)
				} else {
					e.add(p+"/name", "reducer module %s is not registered in this binary (registered: %s); register a Go reducer under this name", d.Name, list)
				}
			}
		}
	}
	if pu := d.Pure; pu != nil {
		l.schema(e, p+"/abi/pure/input", pu.Input, "input schema")
		l.schema(e, p+"/abi/pure/output", pu.Output, "output schema")
		l.schema(e, p+"/abi/pure/context", pu.Context, "context schema")
		if !strings.HasPrefix(d.Name, "sys/") {
			e.add(p+"/module_kind", "pure module %s cannot run: demiurge runs only built-in pure modules (cap enforcers); use a Go reducer", d.Name)
		}
	}
}

// effectKindOf finds an active effect def by kind.
func (l *loader) effectKindOf(kind string) *DefEffect {
	if d, ok := l.c.byKind[kind]; ok {
		return d
	}
	for _, n := range l.c.Names(KindDefEffect) {
		if d := l.c.effects[n]; d.Kind == kind {
			return d
		}
	}
	return nil
}

func (l *loader) capTypeKnown(ct string) bool {
	for _, d := range l.c.caps {
		if d.CapType == ct {
			return true
		}
	}
	return false
}

func (l *loader) checkEffect(d *DefEffect) {
	e := l.errsFor(d)
	p := d.At.Pointer
	l.schema(e, p+"/params_schema", d.ParamsSchema, "params_schema")
	l.schema(e, p+"/receipt_schema", d.ReceiptSchema, "receipt_schema")
	if d.CapType != "" && !l.capTypeKnown(d.CapType) {
		e.add(p+"/cap_type", "cap type %q is not the cap_type of any defcap", d.CapType)
	}
}

func (l *loader) checkCap(d *DefCap) {
	e := l.errsFor(d)
	walkType(d.Schema, func(t *Type) {
		if t.Kind == KindRef {
			l.schema(e, d.At.Pointer+"/schema", t.Ref, "type reference")
		}
	})
	if d.Enforcer != "" {
		if _, ok := l.c.modules[d.Enforcer]; !ok {
			e.add(d.At.Pointer+"/enforcer/module", "enforcer module %s is not a known module", d.Enforcer)
		}
	}
}

func (l *loader) checkSecret(d *DefSecret) {
	e := l.errsFor(d)
	if !strings.HasPrefix(d.BindingID, "env:") || len(d.BindingID) == len("env:") {
		e.warn(d.At.Pointer+"/binding_id", "binding_id %q cannot be resolved: demiurge resolves secrets bound to env:VARIABLE only", d.BindingID)
	}
	if d.ExpectedDigest != "" {
		if _, err := cas.ParseRef(d.ExpectedDigest); err != nil {
			e.add(d.At.Pointer+"/expected_digest", "%v", err)
		}
	}
	for i, p := range d.AllowedPlans {
		if _, ok := l.c.plans[p]; !ok {
			if _, ok := l.defined[defKey{KindDefPlan, p}]; !ok {
				e.add(d.At.Pointer+"/allowed_plans/"+itoa(i), "plan %s is not defined", p)
			}
		}
	}
}

func (l *loader) checkPolicy(d *DefPolicy) {
	e := l.errsFor(d)
	for i, r := range d.Rules {
		p := d.At.Pointer + "/rules/" + itoa(i) + "/when"
		if k := r.When.EffectKind; k != "" && l.effectKindOf(k) == nil {
			e.warn(p+"/effect_kind", "effect kind %q is not declared by any defeffect; this rule never matches", k)
		}
		if ct := r.When.CapType; ct != "" && !l.capTypeKnown(ct) {
			e.warn(p+"/cap_type", "cap type %q is not the cap_type of any defcap; this rule never matches", ct)
		}
		if n := r.When.OriginName; n != "" {
			_, isPlan := l.defined[defKey{KindDefPlan, n}]
			_, isMod := l.c.modules[n]
			if !isPlan && !isMod {
				e.warn(p+"/origin_name", "%s is neither a plan nor a module; this rule never matches", n)
			}
		}
	}
	// A rule after a catch-all can never match.
	for i, r := range d.Rules {
		if r.When == (PolicyMatch{}) && i < len(d.Rules)-1 {
			e.warn(d.At.Pointer+"/rules/"+itoa(i+1), "rules after the catch-all rule %d never match", i)
			break
		}
	}
}

func (l *loader) checkManifest(m *Manifest) {
	e := l.errs.forFile(m.At.File)
	if m.DefaultPolicy != "" {
		if _, ok := l.c.policies[m.DefaultPolicy]; !ok {
			e.add("/defaults/policy", "policy %s is not listed in the manifest's policies", m.DefaultPolicy)
		}
	}
	// Effect kinds must be unique among the effects the manifest lists.
	// A built-in effect it does not list serves its kind when no listed
	// one does; of two such versions of one kind (sys/llm.generate@1 and
	// @2), the first by name, so a manifest written before @2 existed
	// keeps the @1 it was written for.
	listed := map[string]bool{}
	for _, r := range m.Effects {
		listed[r.Name] = true
	}
	for _, n := range l.c.Names(KindDefEffect) {
		d := l.c.effects[n]
		if !listed[n] {
			continue
		}
		if prev, dup := l.c.byKind[d.Kind]; dup {
			l.errsFor(d).add(d.At.Pointer+"/kind", "effect kind %q is declared by both %s and %s", d.Kind, prev.Name, d.Name)
			continue
		}
		l.c.byKind[d.Kind] = d
	}
	for _, n := range l.c.Names(KindDefEffect) {
		d := l.c.effects[n]
		if _, taken := l.c.byKind[d.Kind]; !taken && !listed[n] {
			l.c.byKind[d.Kind] = d
		}
	}
	grants := map[string]*CapGrant{}
	for _, g := range m.CapGrants {
		if _, dup := grants[g.Name]; dup {
			e.add(g.Ptr+"/name", "grant %q is defined twice", g.Name)
			continue
		}
		grants[g.Name] = g
		cd, ok := l.c.caps[g.Cap]
		if !ok {
			e.add(g.Ptr+"/cap", "cap %s is not listed in the manifest's caps (nor built in)", g.Cap)
			continue
		}
		if g.params == nil || cd.Schema == nil {
			continue
		}
		n := normalizer{r: l.c, json: true}
		v, err := n.norm(cd.Schema, jsonInput(g.params), nil, 0)
		if err != nil {
			e.add(g.Ptr+"/params", "params of grant %q do not fit cap %s: %v", g.Name, g.Cap, err)
			continue
		}
		g.Params = v
	}
	for _, b := range m.ModuleBindings {
		mod, ok := l.c.modules[b.Module]
		if !ok {
			e.add(b.Ptr, "module %s is not listed in the manifest's modules", b.Module)
			continue
		}
		for _, s := range b.Slots {
			var slotType string
			if mod.Reducer != nil {
				for _, cs := range mod.Reducer.CapSlots {
					if cs.Slot == s.Slot {
						slotType = cs.CapType
					}
				}
			}
			if slotType == "" {
				e.add(b.Ptr+"/slots/"+s.Slot, "module %s has no cap slot %q", b.Module, s.Slot)
				continue
			}
			g, ok := grants[s.Grant]
			if !ok {
				e.add(b.Ptr+"/slots/"+s.Slot, "grant %q is not defined in defaults.cap_grants", s.Grant)
				continue
			}
			if cd, ok := l.c.caps[g.Cap]; ok && cd.CapType != slotType {
				e.add(b.Ptr+"/slots/"+s.Slot, "grant %q is a %s cap but slot %q wants %s", s.Grant, cd.CapType, s.Slot, slotType)
			}
		}
	}
	// Reducers' effect slots without explicit bindings need a unique grant
	// of the slot's cap type (AgentOS's "default" slot rule).
	for _, name := range l.c.Names(KindDefModule) {
		mod := l.c.modules[name]
		if mod.Reducer == nil || strings.HasPrefix(name, "sys/") {
			continue
		}
		for _, cs := range mod.Reducer.CapSlots {
			if _, ok := m.SlotGrant(name, cs.Slot); ok {
				continue
			}
			var matches []string
			for _, g := range m.CapGrants {
				if cd, ok := l.c.caps[g.Cap]; ok && cd.CapType == cs.CapType {
					matches = append(matches, g.Name)
				}
			}
			if len(matches) != 1 {
				l.errsFor(mod).add(mod.At.Pointer+"/abi/reducer/cap_slots/"+cs.Slot,
					"slot %q of %s has no binding in module_bindings and %d grants of cap type %s (want exactly one, or bind the slot)", cs.Slot, name, len(matches), cs.CapType)
			}
		}
	}
	for _, r := range m.Routes {
		ev := l.schema(e, r.Ptr+"/event", r.Event, "routed event")
		mod, ok := l.c.modules[r.Reducer]
		if !ok {
			e.add(r.Ptr+"/reducer", "reducer %s is not listed in the manifest's modules", r.Reducer)
			continue
		}
		if mod.Reducer == nil {
			e.add(r.Ptr+"/reducer", "module %s is not a reducer", r.Reducer)
			continue
		}
		if ev != nil && r.Event != mod.Reducer.Event && !l.isRefArm(mod.Reducer.Event, r.Event) {
			e.add(r.Ptr+"/event", "reducer %s takes %s; %s is neither that schema nor a ref arm of it", r.Reducer, mod.Reducer.Event, r.Event)
		}
		switch {
		case mod.KeySchema != "" && r.KeyField == "" && !IsReceiptEvent(r.Event):
			// A receipt event carries the key of the cell that emitted the
			// effect, which it goes back to.
			e.add(r.Ptr, "reducer %s is keyed (key_schema %s): the route needs a key_field (only the receipt events of micro-effects, which go back to the cell that emitted the effect, need none)", r.Reducer, mod.KeySchema)
		case mod.KeySchema == "" && r.KeyField != "":
			e.add(r.Ptr+"/key_field", "reducer %s is not keyed (no key_schema), so key_field %q has no use", r.Reducer, r.KeyField)
		case r.KeyField != "" && ev != nil:
			if err := l.checkPath(ev, strings.Split(r.KeyField, ".")); err != nil {
				e.add(r.Ptr+"/key_field", "key_field %q: %s %v", r.KeyField, r.Event, err)
			}
		}
	}
	for _, in := range m.Inboxes {
		if mod, ok := l.c.modules[in.Reducer]; !ok || mod.Reducer == nil {
			e.add(in.Ptr+"/reducer", "inbox reducer %s is not a listed reducer module", in.Reducer)
		}
	}
	for _, t := range m.Triggers {
		ev := l.schema(e, t.Ptr+"/event", t.Event, "trigger event")
		p, ok := l.defined[defKey{KindDefPlan, t.Plan}]
		if _, active := l.c.plans[t.Plan]; !ok || !active {
			e.add(t.Ptr+"/plan", "plan %s is not listed in the manifest's plans", t.Plan)
			continue
		}
		plan := p.(*DefPlan)
		if plan.Input != t.Event {
			e.add(t.Ptr+"/event", "trigger event %s does not match the input %s of plan %s", t.Event, plan.Input, t.Plan)
		}
		if t.CorrelateBy != "" && ev != nil {
			if err := l.checkPath(ev, strings.Split(t.CorrelateBy, ".")); err != nil {
				e.add(t.Ptr+"/correlate_by", "correlate_by %q: %s %v", t.CorrelateBy, t.Event, err)
			}
		}
	}
	for _, sv := range m.MCPServers {
		for _, vs := range [][]MCPVar{sv.Env, sv.Headers} {
			for _, v := range vs {
				vm, _ := v.Value.(*Map)
				tag, val, _ := vm.VariantTag()
				if tag != "secret" {
					continue
				}
				rm, _ := val.(*Map)
				a, _ := rm.Get("alias")
				ver, _ := rm.Get("version")
				name := fmt.Sprintf("%v@%v", a, ver)
				if _, ok := l.c.secrets[name]; !ok {
					e.add(sv.Ptr, "MCP server %q uses secret %s for %s, which is not a defsecret listed in the manifest's secrets", sv.Name, name, v.Name)
				}
			}
		}
	}
	if m.DefaultPolicy == "" && l.usesEffects() {
		e.warn("/defaults", "no policy is configured (defaults.policy): every effect this world emits will be denied; add a defpolicy and name it in defaults.policy")
	}
}

func (l *loader) usesEffects() bool {
	for _, d := range l.c.plans {
		for _, s := range d.Steps {
			if s.Op == OpEmitEffect {
				return true
			}
		}
	}
	for n, d := range l.c.modules {
		if !strings.HasPrefix(n, "sys/") && d.Reducer != nil && len(d.Reducer.EffectsEmitted) > 0 {
			return true
		}
	}
	return false
}

// isRefArm reports whether schema arm is a ref arm of the variant schema v.
func (l *loader) isRefArm(v, arm string) bool {
	t := l.resolveType(RefType(v))
	if t == nil || t.Kind != KindVariant {
		return false
	}
	for _, f := range t.Fields {
		if f.Type.Kind == KindRef && f.Type.Ref == arm {
			return true
		}
	}
	return false
}

// hashAll computes the node hash of every active def and the manifest.
func (l *loader) hashAll(m *Manifest) {
	c := l.c
	add := func(kind, name string, d Def) {
		b, err := Encode(d.node())
		if err != nil {
			l.errsFor(d).add(d.Origin().Pointer, "cannot encode %s %s: %v", kind, name, err)
			return
		}
		r := cas.Sum(b)
		c.refs[defKey{kind, name}] = r
		c.nodes[r] = b
	}
	for _, kind := range []string{KindDefSchema, KindDefModule, KindDefPlan, KindDefCap, KindDefPolicy, KindDefSecret, KindDefEffect} {
		for _, name := range c.Names(kind) {
			var d Def
			switch kind {
			case KindDefSchema:
				d = c.schemas[name]
			case KindDefModule:
				d = c.modules[name]
			case KindDefPlan:
				d = c.plans[name]
			case KindDefCap:
				d = c.caps[name]
			case KindDefPolicy:
				d = c.policies[name]
			case KindDefSecret:
				d = c.secrets[name]
			case KindDefEffect:
				d = c.effects[name]
			}
			add(kind, name, d)
		}
	}
	me := l.errs.forFile(m.At.File)
	check := func(kind string, rs []NamedRef) {
		for _, r := range rs {
			if r.Hash == "" {
				continue
			}
			want, err := cas.ParseRef(r.Hash)
			if err != nil {
				me.add(r.Ptr+"/hash", "%v", err)
				continue
			}
			if want.Algo() != cas.BLAKE3 {
				continue // an AgentOS sha256 id: opaque, never recomputed
			}
			if got := c.refs[defKey{kind, r.Name}]; got != want {
				me.add(r.Ptr+"/hash", "hash of %s %s is %s, not %s (the def changed; update or remove the hash)", kind, r.Name, got, want)
			}
		}
	}
	for _, s := range manifestSections {
		check(s.kind, *s.refs(m))
	}
	node := m.nodeWith(func(kind, name string) string {
		if r, ok := c.refs[defKey{kind, name}]; ok {
			return r.String()
		}
		return ""
	})
	b, err := Encode(node)
	if err != nil {
		me.add("", "cannot encode the manifest: %v", err)
		return
	}
	c.manifestRef = cas.Sum(b)
	c.nodes[c.manifestRef] = b
}
