package schema

import (
	"sort"
	"strconv"
)

// Def kinds, the values of "$kind".
const (
	KindDefSchema = "defschema"
	KindDefModule = "defmodule"
	KindDefPlan   = "defplan"
	KindDefCap    = "defcap"
	KindDefPolicy = "defpolicy"
	KindDefSecret = "defsecret"
	KindDefEffect = "defeffect"
	KindManifest  = "manifest"
)

// Def is one AIR definition.
type Def interface {
	// DefKind returns the def's "$kind".
	DefKind() string
	// DefName returns the def's name, "ns/Name@1".
	DefName() string
	// Origin returns where the def was read from.
	Origin() Origin
	// node returns the def as an AIR structure, "$kind" included: the
	// value whose canonical CBOR is the def's node.
	node() Value
}

// Origin is where a def was read from: a file and the JSON pointer of the
// def inside it. Built-in defs have File "builtin:<name>".
type Origin struct {
	File    string
	Pointer string
}

// DefSchema names a type.
type DefSchema struct {
	Name string
	Type *Type
	At   Origin
}

// DefModule declares a module. A Go reducer registered under the module's
// name runs it; otherwise its WASM module does, named by WasmHash (see
// ModulesDir: the loader finds the module beside the manifest and records
// its BLAKE3 here).
type DefModule struct {
	Name       string
	ModuleKind string // "reducer" or "pure"
	WasmHash   string
	KeySchema  string // keyed reducers: the schema of the cell key
	Reducer    *ReducerABI
	Pure       *PureABI
	// Limits bound what the module's WASM code may use in a step (a
	// demiurge extension of AIR: the defmodule member "limits"); a zero
	// limit is the host's default.
	Limits ModuleLimits
	At     Origin
}

// ModuleLimits are the limits of a WASM module, written in AIR as
// "limits": {"fuel": N, "memory_pages": N}. They are part of the def, so
// the manifest's hash pins them and a replay runs the module under the
// same ones.
type ModuleLimits struct {
	// Fuel is how many instructions one step may run (see reducer/wasm's
	// fuel): a step that needs more fails.
	Fuel uint64
	// MemoryPages caps the module's linear memory, in 64 KiB pages.
	MemoryPages uint64
}

// Over returns l with the limits that o sets (its non-zero fields).
func (l ModuleLimits) Over(o ModuleLimits) ModuleLimits {
	if o.Fuel != 0 {
		l.Fuel = o.Fuel
	}
	if o.MemoryPages != 0 {
		l.MemoryPages = o.MemoryPages
	}
	return l
}

// Limits on ModuleLimits values.
const (
	// MaxModuleFuel is the most fuel a module may be given.
	MaxModuleFuel = 1 << 62
	// MaxMemoryPages is the most memory a 32-bit WASM module can address:
	// 65536 pages, 4 GiB.
	MaxMemoryPages = 65536
)

// ReducerABI is the interface of a reducer module.
type ReducerABI struct {
	State, Event, Context, Annotations string
	EffectsEmitted                     []string
	CapSlots                           []CapSlot // sorted by slot
}

// CapSlot is a named capability slot of a reducer and its cap type.
type CapSlot struct {
	Slot, CapType string
}

// PureABI is the interface of a pure module.
type PureABI struct {
	Input, Output, Context string
}

// DefPlan is a plan: a DAG of steps interpreted by the plans package.
type DefPlan struct {
	Name           string
	Input, Output  string
	Locals         []Local // sorted by name
	Steps          []*Step
	Edges          []*Edge
	RequiredCaps   []string
	AllowedEffects []string
	Invariants     []*Expr
	At             Origin
}

// Local declares the type of a plan variable.
type Local struct {
	Name, Schema string
}

// Step ops.
const (
	OpEmitEffect   = "emit_effect"
	OpAwaitReceipt = "await_receipt"
	OpAwaitEvent   = "await_event"
	OpRaiseEvent   = "raise_event"
	OpAssign       = "assign"
	OpEnd          = "end"
)

// Step is one step of a plan. Which fields are set depends on Op.
type Step struct {
	ID  string
	Op  string
	Ptr string // JSON pointer of the step in its file

	// emit_effect
	Kind           string
	Params         *ExprOrValue
	Cap            string
	IdempotencyKey *ExprOrValue
	EffectIDAs     string // bind.effect_id_as: the handle name

	// await_receipt (For, As), await_event (Event, Where, As),
	// assign (Expr, As)
	For   *Expr
	Where *Expr
	As    string // bind.as
	Expr  *ExprOrValue

	// await_event, raise_event (Event, Value)
	Event string
	Value *ExprOrValue

	// end
	Result *ExprOrValue
}

// Edge connects two steps; When, if set, guards it.
type Edge struct {
	From, To string
	When     *Expr
	Ptr      string
}

// ExprOrValue is a slot that holds an expression, or a plain JSON literal
// read through the slot's type (sugar). The loader decides which, using
// the slot's type: an object shaped like an expression is an expression,
// unless it is constant, does not fit the slot's type, and the same JSON
// read as sugar does (AgentOS read {"text": "hi"} meant as a record with a
// field "text" as a text constant; demiurge does not).
type ExprOrValue struct {
	// Expr is set when the slot holds an expression.
	Expr *Expr
	// Literal is the normalized value when the slot holds a literal (or a
	// constant expression folded at load time); HasLiteral says so.
	Literal    Value
	HasLiteral bool
	// Type is the slot's type when known at load time.
	Type *Type
	Ptr  string
	raw  *jnode
}

// DefCap declares a capability type and the schema of its grants' params.
type DefCap struct {
	Name     string
	CapType  string
	Schema   *Type
	Enforcer string // module name; empty = allow all
	At       Origin
}

// DefPolicy is an ordered list of rules; the first that matches decides,
// and no match denies.
type DefPolicy struct {
	Name  string
	Rules []PolicyRule
	At    Origin
}

// PolicyRule matches effects on every condition present in When.
type PolicyRule struct {
	When     PolicyMatch
	Decision string // "allow" or "deny"
}

// PolicyMatch holds a rule's conditions; empty fields match anything.
type PolicyMatch struct {
	EffectKind, CapName, CapType, OriginKind, OriginName string
}

// DefSecret binds a secret alias to where its value comes from, such as
// "env:OPENAI_API_KEY". The value itself is never in AIR, the journal or
// a hash.
type DefSecret struct {
	Name           string
	BindingID      string
	ExpectedDigest string
	AllowedCaps    []string
	AllowedPlans   []string
	At             Origin
}

// DefEffect declares an effect kind: its params and receipt schemas, the
// cap type that guards it, and who may emit it.
type DefEffect struct {
	Name          string
	Kind          string
	ParamsSchema  string
	ReceiptSchema string
	CapType       string
	OriginScope   string // "reducer", "plan" or "both"
	Description   string
	At            Origin
}

// Manifest lists the defs of a world and how they are wired.
type Manifest struct {
	AirVersion     string
	Schemas        []NamedRef
	Modules        []NamedRef
	Plans          []NamedRef
	Effects        []NamedRef
	Caps           []NamedRef
	Policies       []NamedRef
	Secrets        []NamedRef
	DefaultPolicy  string
	CapGrants      []*CapGrant
	ModuleBindings []ModuleBinding // sorted by module
	Routes         []Route
	Inboxes        []Inbox
	Triggers       []Trigger
	// MCPServers are the MCP servers whose tools the world offers
	// (a demiurge extension of AIR: the manifest member "mcp_servers").
	MCPServers []MCPServer
	// Models override what the llm adapter knows of models (a demiurge
	// extension of AIR: the manifest member "models"; see ModelSetting).
	Models []ModelSetting
	At     Origin
}

// ModelSetting is one entry of the manifest's "models": options for the
// models whose name Match names (a name, or a family ending in "*"). Its
// options are kept as text, in the order written; the llm adapter says
// which keys it takes and checks their values (see llm.ModelOptions).
type ModelSetting struct {
	Match   string
	Options []ModelOption
	Ptr     string
}

// ModelOption is one option of a ModelSetting: a key and its value as
// text ("true", "1.25", "max_completion_tokens").
type ModelOption struct {
	Key, Value string
	Ptr        string
}

// manifestSections are the lists of a manifest that pin defs, each with
// the kind of def it names and its member name, in the order AIR writes
// them. Parsing, linking, hashing and LoadFromCAS all walk this one table.
var manifestSections = []struct {
	kind, section string
	refs          func(*Manifest) *[]NamedRef
}{
	{KindDefSchema, "schemas", func(m *Manifest) *[]NamedRef { return &m.Schemas }},
	{KindDefModule, "modules", func(m *Manifest) *[]NamedRef { return &m.Modules }},
	{KindDefPlan, "plans", func(m *Manifest) *[]NamedRef { return &m.Plans }},
	{KindDefEffect, "effects", func(m *Manifest) *[]NamedRef { return &m.Effects }},
	{KindDefCap, "caps", func(m *Manifest) *[]NamedRef { return &m.Caps }},
	{KindDefPolicy, "policies", func(m *Manifest) *[]NamedRef { return &m.Policies }},
	{KindDefSecret, "secrets", func(m *Manifest) *[]NamedRef { return &m.Secrets }},
}

// MCPServer declares an MCP server: a command run over stdio, or a
// streamable-HTTP URL. Env and Headers values are text or secret refs
// (sys/TextOrSecretRef@1 values); secrets are resolved when the server
// starts and never journaled.
type MCPServer struct {
	Name    string
	Command string
	Args    []string
	Env     []MCPVar // sorted by name
	URL     string
	Headers []MCPVar // sorted by name
	// Aliases rename the server's tools for the model: tool name → alias.
	Aliases []MCPAlias // sorted by tool
	// Timeout bounds each call, in milliseconds; 0 means the default.
	TimeoutMS uint64
	Ptr       string
}

// MCPVar is a name and a text-or-secret value.
type MCPVar struct {
	Name  string
	Value Value // a canonical sys/TextOrSecretRef@1 value
}

// MCPAlias renames one tool of an MCP server.
type MCPAlias struct {
	Tool, Alias string
}

// MCPServer returns the named MCP server.
func (m *Manifest) MCPServer(name string) (*MCPServer, bool) {
	for i := range m.MCPServers {
		if m.MCPServers[i].Name == name {
			return &m.MCPServers[i], true
		}
	}
	return nil, false
}

// NamedRef names a def in the manifest, with its hash when the author
// wrote one (the loader fills the rest).
type NamedRef struct {
	Name string
	Hash string
	Ptr  string
}

// CapGrant is an instance of a cap with concrete params.
type CapGrant struct {
	Name     string
	Cap      string
	Params   Value // normalized against the cap's schema by Load
	ExpiryNS *uint64
	Ptr      string
	params   *jnode
}

// ModuleBinding binds a module's cap slots to grants.
type ModuleBinding struct {
	Module string
	Slots  []SlotBinding // sorted by slot
	Ptr    string
}

// SlotBinding binds one slot to a grant.
type SlotBinding struct {
	Slot, Grant string
}

// Route sends events of a schema to a reducer; KeyField, for keyed
// reducers, is the dotted path of the cell key in the normalized event.
type Route struct {
	Event, Reducer, KeyField string
	Ptr                      string
}

// Inbox connects an external source to a reducer.
type Inbox struct {
	Source, Reducer string
	Ptr             string
}

// Trigger starts a plan for each event of a schema; CorrelateBy names the
// field that correlates the plan's awaits.
type Trigger struct {
	Event, Plan, CorrelateBy string
	Ptr                      string
}

func (d *DefSchema) DefKind() string { return KindDefSchema }
func (d *DefModule) DefKind() string { return KindDefModule }
func (d *DefPlan) DefKind() string   { return KindDefPlan }
func (d *DefCap) DefKind() string    { return KindDefCap }
func (d *DefPolicy) DefKind() string { return KindDefPolicy }
func (d *DefSecret) DefKind() string { return KindDefSecret }
func (d *DefEffect) DefKind() string { return KindDefEffect }
func (d *Manifest) DefKind() string  { return KindManifest }

func (d *DefSchema) DefName() string { return d.Name }
func (d *DefModule) DefName() string { return d.Name }
func (d *DefPlan) DefName() string   { return d.Name }
func (d *DefCap) DefName() string    { return d.Name }
func (d *DefPolicy) DefName() string { return d.Name }
func (d *DefSecret) DefName() string { return d.Name }
func (d *DefEffect) DefName() string { return d.Name }
func (d *Manifest) DefName() string  { return "manifest" }

func (d *DefSchema) Origin() Origin { return d.At }
func (d *DefModule) Origin() Origin { return d.At }
func (d *DefPlan) Origin() Origin   { return d.At }
func (d *DefCap) Origin() Origin    { return d.At }
func (d *DefPolicy) Origin() Origin { return d.At }
func (d *DefSecret) Origin() Origin { return d.At }
func (d *DefEffect) Origin() Origin { return d.At }
func (d *Manifest) Origin() Origin  { return d.At }

// Step returns the step with the given id.
func (p *DefPlan) Step(id string) (*Step, bool) {
	for _, s := range p.Steps {
		if s.ID == id {
			return s, true
		}
	}
	return nil, false
}

// LocalSchema returns the declared schema of a local variable.
func (p *DefPlan) LocalSchema(name string) (string, bool) {
	i := sort.Search(len(p.Locals), func(i int) bool { return p.Locals[i].Name >= name })
	if i < len(p.Locals) && p.Locals[i].Name == name {
		return p.Locals[i].Schema, true
	}
	return "", false
}

// Grant returns the named cap grant.
func (m *Manifest) Grant(name string) (*CapGrant, bool) {
	for _, g := range m.CapGrants {
		if g.Name == name {
			return g, true
		}
	}
	return nil, false
}

// SlotGrant returns the grant bound to a module's slot.
func (m *Manifest) SlotGrant(module, slot string) (string, bool) {
	for _, b := range m.ModuleBindings {
		if b.Module == module {
			for _, s := range b.Slots {
				if s.Slot == slot {
					return s.Grant, true
				}
			}
		}
	}
	return "", false
}

// ---- nodes: the canonical structure of each def, for hashing ----

// nodeBuilder builds a record value, leaving out empty optional members.
type nodeBuilder struct{ m *Map }

func newNode(kind string) *nodeBuilder { return &nodeBuilder{m: Record("$kind", kind)} }

func (b *nodeBuilder) str(k, v string) *nodeBuilder {
	if v != "" {
		b.m.set(k, v)
	}
	return b
}

func (b *nodeBuilder) val(k string, v Value) *nodeBuilder {
	switch x := v.(type) {
	case nil:
		return b
	case []Value:
		if len(x) == 0 {
			return b
		}
	case *Map:
		if x.Len() == 0 {
			return b
		}
	}
	b.m.set(k, v)
	return b
}

func strs(ss []string) []Value {
	out := make([]Value, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func (d *DefSchema) node() Value {
	return newNode(KindDefSchema).str("name", d.Name).val("type", d.Type.node()).m
}

func (d *DefModule) node() Value {
	abi := &Map{}
	if r := d.Reducer; r != nil {
		slots := &Map{}
		for _, s := range r.CapSlots {
			slots.set(s.Slot, s.CapType)
		}
		rb := &nodeBuilder{m: &Map{}}
		rb.str("state", r.State).str("event", r.Event).str("context", r.Context).str("annotations", r.Annotations).
			val("effects_emitted", strs(r.EffectsEmitted)).val("cap_slots", slots)
		abi.set("reducer", rb.m)
	}
	if p := d.Pure; p != nil {
		pb := &nodeBuilder{m: &Map{}}
		pb.str("input", p.Input).str("output", p.Output).str("context", p.Context)
		abi.set("pure", pb.m)
	}
	limits := &Map{}
	if d.Limits.Fuel > 0 {
		limits.set("fuel", d.Limits.Fuel)
	}
	if d.Limits.MemoryPages > 0 {
		limits.set("memory_pages", d.Limits.MemoryPages)
	}
	return newNode(KindDefModule).str("name", d.Name).str("module_kind", d.ModuleKind).
		str("wasm_hash", d.WasmHash).str("key_schema", d.KeySchema).val("abi", abi).val("limits", limits).m
}

func (e *ExprOrValue) node() Value {
	if e == nil {
		return nil
	}
	if e.Expr != nil {
		return e.Expr.node()
	}
	return Record("literal", e.Literal)
}

func (s *Step) node() Value {
	b := &nodeBuilder{m: Record("id", s.ID, "op", s.Op)}
	b.str("kind", s.Kind).val("params", s.Params.node()).str("cap", s.Cap).
		val("idempotency_key", s.IdempotencyKey.node()).str("event", s.Event).
		val("value", s.Value.node()).val("expr", s.Expr.node()).val("result", s.Result.node())
	if s.For != nil {
		b.val("for", s.For.node())
	}
	if s.Where != nil {
		b.val("where", s.Where.node())
	}
	switch {
	case s.EffectIDAs != "":
		b.val("bind", Record("effect_id_as", s.EffectIDAs))
	case s.As != "":
		b.val("bind", Record("as", s.As))
	}
	return b.m
}

func (d *DefPlan) node() Value {
	locals := &Map{}
	for _, l := range d.Locals {
		locals.set(l.Name, l.Schema)
	}
	steps := make([]Value, len(d.Steps))
	for i, s := range d.Steps {
		steps[i] = s.node()
	}
	edges := make([]Value, len(d.Edges))
	for i, e := range d.Edges {
		eb := &nodeBuilder{m: Record("from", e.From, "to", e.To)}
		if e.When != nil {
			eb.val("when", e.When.node())
		}
		edges[i] = eb.m
	}
	var invs []Value
	for _, x := range d.Invariants {
		invs = append(invs, x.node())
	}
	return newNode(KindDefPlan).str("name", d.Name).str("input", d.Input).str("output", d.Output).
		val("locals", locals).val("steps", steps).val("edges", edges).
		val("required_caps", strs(d.RequiredCaps)).val("allowed_effects", strs(d.AllowedEffects)).
		val("invariants", invs).m
}

func (d *DefCap) node() Value {
	b := newNode(KindDefCap).str("name", d.Name).str("cap_type", d.CapType).val("schema", d.Schema.node())
	if d.Enforcer != "" {
		b.val("enforcer", Record("module", d.Enforcer))
	}
	return b.m
}

func (d *DefPolicy) node() Value {
	rules := make([]Value, len(d.Rules))
	for i, r := range d.Rules {
		w := &nodeBuilder{m: &Map{}}
		w.str("effect_kind", r.When.EffectKind).str("cap_name", r.When.CapName).str("cap_type", r.When.CapType).
			str("origin_kind", r.When.OriginKind).str("origin_name", r.When.OriginName)
		rules[i] = Record("when", w.m, "decision", r.Decision)
	}
	return newNode(KindDefPolicy).str("name", d.Name).val("rules", rules).m
}

func (d *DefSecret) node() Value {
	return newNode(KindDefSecret).str("name", d.Name).str("binding_id", d.BindingID).
		str("expected_digest", d.ExpectedDigest).val("allowed_caps", strs(d.AllowedCaps)).
		val("allowed_plans", strs(d.AllowedPlans)).m
}

func (d *DefEffect) node() Value {
	return newNode(KindDefEffect).str("name", d.Name).str("kind", d.Kind).str("params_schema", d.ParamsSchema).
		str("receipt_schema", d.ReceiptSchema).str("cap_type", d.CapType).str("origin_scope", d.OriginScope).
		str("description", d.Description).m
}

// node of the manifest: hashes are the ones Load resolved (see
// Catalog.ManifestRef), so the manifest's hash pins every def it uses.
func (d *Manifest) nodeWith(hashOf func(kind, name string) string) Value {
	refs := func(kind string, rs []NamedRef) []Value {
		out := make([]Value, len(rs))
		for i, r := range rs {
			out[i] = Record("name", r.Name, "hash", hashOf(kind, r.Name))
		}
		return out
	}
	b := newNode(KindManifest).str("air_version", d.AirVersion)
	for _, s := range manifestSections {
		b.val(s.section, refs(s.kind, *s.refs(d)))
	}
	defaults := &nodeBuilder{m: &Map{}}
	defaults.str("policy", d.DefaultPolicy)
	var grants []Value
	for _, g := range d.CapGrants {
		gb := &nodeBuilder{m: Record("name", g.Name, "cap", g.Cap, "params", g.Params)}
		if g.ExpiryNS != nil {
			gb.val("expiry_ns", *g.ExpiryNS)
		}
		grants = append(grants, gb.m)
	}
	defaults.val("cap_grants", grants)
	b.val("defaults", defaults.m)
	mb := &Map{}
	for _, m := range d.ModuleBindings {
		slots := &Map{}
		for _, s := range m.Slots {
			slots.set(s.Slot, s.Grant)
		}
		mb.set(m.Module, Record("slots", slots))
	}
	b.val("module_bindings", mb)
	var routes, inboxes, triggers []Value
	for _, r := range d.Routes {
		routes = append(routes, (&nodeBuilder{m: Record("event", r.Event, "reducer", r.Reducer)}).str("key_field", r.KeyField).m)
	}
	for _, in := range d.Inboxes {
		inboxes = append(inboxes, Record("source", in.Source, "reducer", in.Reducer))
	}
	routing := (&nodeBuilder{m: &Map{}}).val("events", routes).val("inboxes", inboxes).m
	b.val("routing", routing)
	for _, t := range d.Triggers {
		triggers = append(triggers, (&nodeBuilder{m: Record("event", t.Event, "plan", t.Plan)}).str("correlate_by", t.CorrelateBy).m)
	}
	b.val("triggers", triggers)
	var servers []Value
	for _, sv := range d.MCPServers {
		sb := &nodeBuilder{m: Record("name", sv.Name)}
		sb.str("command", sv.Command).val("args", strs(sv.Args)).str("url", sv.URL)
		vars := func(vs []MCPVar) *Map {
			m := &Map{}
			for _, v := range vs {
				m.set(v.Name, v.Value)
			}
			return m
		}
		sb.val("env", vars(sv.Env)).val("headers", vars(sv.Headers))
		aliases := &Map{}
		for _, a := range sv.Aliases {
			aliases.set(a.Tool, a.Alias)
		}
		sb.val("aliases", aliases)
		if sv.TimeoutMS > 0 {
			sb.val("timeout_ms", sv.TimeoutMS)
		}
		servers = append(servers, sb.m)
	}
	b.val("mcp_servers", servers)
	var models []Value
	for _, ms := range d.Models {
		mb := &nodeBuilder{m: Record("match", ms.Match)}
		for _, o := range ms.Options {
			mb.val(o.Key, o.Value)
		}
		models = append(models, mb.m)
	}
	b.val("models", models)
	return b.m
}

func (d *Manifest) node() Value {
	return d.nodeWith(func(kind, name string) string { return "" })
}

// itoa is strconv.Itoa, short for pointers.
func itoa(i int) string { return strconv.Itoa(i) }
