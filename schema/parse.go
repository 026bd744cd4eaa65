package schema

import (
	"sort"
	"strconv"
	"strings"
)

// parseDef parses one def object. It returns nil if the def is unusable;
// problems are added to errs either way.
func parseDef(n *jnode, file string, errs *problems) Def {
	if n.kind != jObject {
		errs.add(n.ptr, "a def must be an object with \"$kind\", got %s", n.kind)
		return nil
	}
	kn := n.get("$kind")
	if kn == nil || kn.kind != jString {
		errs.add(n.ptr, "def has no \"$kind\" (want defschema, defmodule, defplan, defcap, defpolicy, defsecret, defeffect or manifest)")
		return nil
	}
	at := Origin{File: file, Pointer: n.ptr}
	switch kn.str {
	case KindDefSchema:
		return parseDefSchema(n, at, errs)
	case KindDefModule:
		return parseDefModule(n, at, errs)
	case KindDefPlan:
		return parseDefPlan(n, at, errs)
	case KindDefCap:
		return parseDefCap(n, at, errs)
	case KindDefPolicy:
		return parseDefPolicy(n, at, errs)
	case KindDefSecret:
		return parseDefSecret(n, at, errs)
	case KindDefEffect:
		return parseDefEffect(n, at, errs)
	case KindManifest:
		return parseManifest(n, at, errs)
	}
	errs.add(kn.ptr, "unknown $kind %q (want defschema, defmodule, defplan, defcap, defpolicy, defsecret, defeffect or manifest)", kn.str)
	return nil
}

func parseDefSchema(n *jnode, at Origin, errs *problems) Def {
	r := newObjReader(n, errs, "defschema")
	r.node("$kind", true)
	d := &DefSchema{Name: r.name("name", true), At: at}
	if tn := r.node("type", true); tn != nil {
		d.Type = parseType(tn, errs)
	}
	r.done()
	if d.Name == "" || d.Type == nil {
		return nil
	}
	return d
}

func parseDefModule(n *jnode, at Origin, errs *problems) Def {
	r := newObjReader(n, errs, "defmodule")
	r.node("$kind", true)
	d := &DefModule{Name: r.name("name", true), ModuleKind: r.str("module_kind", true), WasmHash: r.str("wasm_hash", false),
		KeySchema: r.name("key_schema", false), At: at}
	if d.ModuleKind != "" && d.ModuleKind != "reducer" && d.ModuleKind != "pure" {
		errs.add(n.get("module_kind").ptr, "module_kind %q is not reducer or pure", d.ModuleKind)
	}
	if abin := r.node("abi", true); abin != nil {
		ar := newObjReader(abin, errs, "module abi")
		if ar != nil {
			if rn := ar.node("reducer", false); rn != nil {
				rr := newObjReader(rn, errs, "reducer abi")
				if rr != nil {
					abi := &ReducerABI{State: rr.name("state", true), Event: rr.name("event", true),
						Context: rr.name("context", false), Annotations: rr.name("annotations", false)}
					var ptrs []string
					abi.EffectsEmitted, ptrs = rr.strList("effects_emitted", false)
					for i, k := range abi.EffectsEmitted {
						if err := checkDotted("effect kind", k); err != nil {
							errs.add(ptrs[i], "%v", err)
						}
					}
					if sn := rr.node("cap_slots", false); sn != nil {
						if sn.kind != jObject {
							errs.add(sn.ptr, "cap_slots must map slot names to cap types")
						} else {
							for _, f := range sn.fields() {
								if f.val.kind != jString {
									errs.add(f.val.ptr, "cap slot %q must name a cap type", f.key)
									continue
								}
								if err := checkIdent("cap slot", f.key); err != nil {
									errs.add(f.val.ptr, "%v", err)
								}
								abi.CapSlots = append(abi.CapSlots, CapSlot{Slot: f.key, CapType: f.val.str})
							}
							sort.Slice(abi.CapSlots, func(i, j int) bool { return abi.CapSlots[i].Slot < abi.CapSlots[j].Slot })
						}
					}
					rr.done()
					d.Reducer = abi
				}
			}
			if pn := ar.node("pure", false); pn != nil {
				pr := newObjReader(pn, errs, "pure abi")
				if pr != nil {
					d.Pure = &PureABI{Input: pr.name("input", true), Output: pr.name("output", true), Context: pr.name("context", false)}
					pr.done()
				}
			}
			ar.done()
		}
		switch {
		case d.ModuleKind == "reducer" && d.Reducer == nil:
			errs.add(abin.ptr, "a reducer module needs abi.reducer {state, event}")
		case d.ModuleKind == "pure" && d.Pure == nil:
			errs.add(abin.ptr, "a pure module needs abi.pure {input, output}")
		}
	}
	if ln := r.node("limits", false); ln != nil {
		d.Limits = parseModuleLimits(ln, errs)
	}
	r.done()
	if d.Name == "" {
		return nil
	}
	return d
}

// parseModuleLimits parses a defmodule's limits: {"fuel"?: nat,
// "memory_pages"?: nat}, each at least 1.
func parseModuleLimits(n *jnode, errs *problems) ModuleLimits {
	var l ModuleLimits
	r := newObjReader(n, errs, "module limits")
	if r == nil {
		return l
	}
	nat := func(key string, most uint64, what string) uint64 {
		vn := r.node(key, false)
		if vn == nil {
			return 0
		}
		v, err := (&normalizer{json: true}).integer(KindNat, jsonInput(vn), nil)
		if err != nil || v.(uint64) == 0 || v.(uint64) > most {
			errs.add(vn.ptr, "limits.%s must be a whole number from 1 to %d (%s)", key, most, what)
			return 0
		}
		return v.(uint64)
	}
	l.Fuel = nat("fuel", MaxModuleFuel, "the instructions one step may run")
	l.MemoryPages = nat("memory_pages", MaxMemoryPages, "the module's memory cap, in 64 KiB pages")
	r.done()
	return l
}

func parseDefPlan(n *jnode, at Origin, errs *problems) Def {
	r := newObjReader(n, errs, "defplan")
	r.node("$kind", true)
	d := &DefPlan{Name: r.name("name", true), Input: r.name("input", true), Output: r.name("output", false), At: at}
	if ln := r.node("locals", false); ln != nil {
		if ln.kind != jObject {
			errs.add(ln.ptr, "locals must map variable names to schema names")
		} else {
			for _, f := range ln.fields() {
				if err := checkIdent("local", f.key); err != nil {
					errs.add(f.val.ptr, "%v", err)
				}
				if f.val.kind != jString {
					errs.add(f.val.ptr, "local %q must name a schema", f.key)
					continue
				}
				if err := checkName(f.val.str); err != nil {
					errs.add(f.val.ptr, "%v", err)
				}
				d.Locals = append(d.Locals, Local{Name: f.key, Schema: f.val.str})
			}
			sort.Slice(d.Locals, func(i, j int) bool { return d.Locals[i].Name < d.Locals[j].Name })
		}
	}
	if sn := r.node("steps", true); sn != nil {
		if sn.kind != jArray || len(sn.arr) == 0 {
			errs.add(sn.ptr, "steps must be a non-empty array")
		} else {
			for _, stn := range sn.arr {
				if st := parseStep(stn, errs); st != nil {
					d.Steps = append(d.Steps, st)
				}
			}
		}
	}
	if en := r.node("edges", false); en != nil {
		if en.kind != jArray {
			errs.add(en.ptr, "edges must be an array of {from, to, when?}")
		} else {
			for _, edn := range en.arr {
				er := newObjReader(edn, errs, "edge")
				if er == nil {
					continue
				}
				e := &Edge{From: er.str("from", true), To: er.str("to", true), Ptr: edn.ptr}
				if wn := er.node("when", false); wn != nil {
					e.When = parseExpr(wn, errs)
				}
				er.done()
				d.Edges = append(d.Edges, e)
			}
		}
	}
	var ptrs []string
	d.RequiredCaps, _ = r.strList("required_caps", false)
	d.AllowedEffects, ptrs = r.strList("allowed_effects", false)
	for i, k := range d.AllowedEffects {
		if err := checkDotted("effect kind", k); err != nil {
			errs.add(ptrs[i], "%v", err)
		}
	}
	if in := r.node("invariants", false); in != nil {
		if in.kind != jArray {
			errs.add(in.ptr, "invariants must be an array of expressions")
		} else {
			for _, x := range in.arr {
				if e := parseExpr(x, errs); e != nil {
					d.Invariants = append(d.Invariants, e)
				}
			}
		}
	}
	r.done()
	if d.Name == "" {
		return nil
	}
	return d
}

func parseExprOrValue(n *jnode, errs *problems) *ExprOrValue {
	if n == nil {
		return nil
	}
	ev := &ExprOrValue{Ptr: n.ptr, raw: n}
	if exprShape(n) {
		// Parse quietly first: a sugar literal can look like an expression.
		quiet := newProblems("")
		if e := parseExpr(n, quiet); e != nil && quiet.empty() {
			ev.Expr = e
		} else {
			// Not a valid expression: keep it as a literal, decided later
			// against the slot's type; but remember why it was not an
			// expression in case the literal does not fit either.
			ev.Expr = nil
		}
	}
	return ev
}

func parseStep(n *jnode, errs *problems) *Step {
	r := newObjReader(n, errs, "step")
	if r == nil {
		return nil
	}
	s := &Step{ID: r.str("id", true), Op: r.str("op", true), Ptr: n.ptr}
	if s.ID != "" {
		if err := checkIdent("step id", s.ID); err != nil {
			errs.add(n.get("id").ptr, "%v", err)
		}
	}
	what := s.Op + " step"
	r.what = what
	bind := func(key string) string {
		bn := r.node("bind", true)
		if bn == nil {
			return ""
		}
		br := newObjReader(bn, errs, what+" bind")
		if br == nil {
			return ""
		}
		v := br.str(key, true)
		br.done()
		if v != "" {
			if err := checkIdent("variable", v); err != nil {
				errs.add(childPtr(bn.ptr, key), "%v", err)
			}
		}
		return v
	}
	switch s.Op {
	case OpEmitEffect:
		s.Kind = r.str("kind", true)
		if s.Kind != "" {
			if err := checkDotted("effect kind", s.Kind); err != nil {
				errs.add(n.get("kind").ptr, "%v", err)
			}
		}
		s.Params = parseExprOrValue(r.node("params", true), errs)
		s.Cap = r.str("cap", true)
		s.IdempotencyKey = parseExprOrValue(r.node("idempotency_key", false), errs)
		s.EffectIDAs = bind("effect_id_as")
	case OpAwaitReceipt:
		s.For = parseExpr(r.node("for", true), errs)
		s.As = bind("as")
	case OpAwaitEvent:
		s.Event = r.name("event", true)
		if wn := r.node("where", false); wn != nil {
			s.Where = parseExpr(wn, errs)
		}
		s.As = bind("as")
	case OpRaiseEvent:
		s.Event = r.name("event", true)
		s.Value = parseExprOrValue(r.node("value", true), errs)
	case OpAssign:
		s.Expr = parseExprOrValue(r.node("expr", true), errs)
		s.As = bind("as")
	case OpEnd:
		s.Result = parseExprOrValue(r.node("result", false), errs)
	case "":
		return nil
	default:
		errs.add(n.get("op").ptr, "unknown step op %q (want %s)", s.Op,
			strings.Join([]string{OpEmitEffect, OpAwaitReceipt, OpAwaitEvent, OpRaiseEvent, OpAssign, OpEnd}, ", "))
		return nil
	}
	r.done()
	return s
}

func parseDefCap(n *jnode, at Origin, errs *problems) Def {
	r := newObjReader(n, errs, "defcap")
	r.node("$kind", true)
	d := &DefCap{Name: r.name("name", true), CapType: r.str("cap_type", true), At: at}
	if d.CapType != "" {
		if err := checkDotted("cap type", d.CapType); err != nil {
			errs.add(n.get("cap_type").ptr, "%v", err)
		}
	}
	if sn := r.node("schema", true); sn != nil {
		d.Schema = parseType(sn, errs)
	}
	if en := r.node("enforcer", false); en != nil {
		er := newObjReader(en, errs, "cap enforcer")
		if er != nil {
			d.Enforcer = er.name("module", true)
			er.done()
		}
	}
	r.done()
	if d.Name == "" || d.Schema == nil {
		return nil
	}
	return d
}

func parseDefPolicy(n *jnode, at Origin, errs *problems) Def {
	r := newObjReader(n, errs, "defpolicy")
	r.node("$kind", true)
	d := &DefPolicy{Name: r.name("name", true), At: at}
	if rn := r.node("rules", true); rn != nil {
		if rn.kind != jArray {
			errs.add(rn.ptr, "rules must be an array of {when, decision}")
		} else {
			for _, ruln := range rn.arr {
				rr := newObjReader(ruln, errs, "policy rule")
				if rr == nil {
					continue
				}
				var rule PolicyRule
				if wn := rr.node("when", true); wn != nil {
					wr := newObjReader(wn, errs, "policy match")
					if wr != nil {
						rule.When = PolicyMatch{EffectKind: wr.str("effect_kind", false), CapName: wr.str("cap_name", false),
							CapType: wr.str("cap_type", false), OriginKind: wr.str("origin_kind", false), OriginName: wr.name("origin_name", false)}
						if ok := rule.When.OriginKind; ok != "" && ok != "plan" && ok != "reducer" {
							errs.add(childPtr(wn.ptr, "origin_kind"), "origin_kind %q is not plan or reducer", ok)
						}
						wr.done()
					}
				}
				rule.Decision = rr.str("decision", true)
				if rule.Decision != "" && rule.Decision != "allow" && rule.Decision != "deny" {
					errs.add(childPtr(ruln.ptr, "decision"), "decision %q is not allow or deny", rule.Decision)
				}
				rr.done()
				d.Rules = append(d.Rules, rule)
			}
		}
	}
	r.done()
	if d.Name == "" {
		return nil
	}
	return d
}

func parseDefSecret(n *jnode, at Origin, errs *problems) Def {
	r := newObjReader(n, errs, "defsecret")
	r.node("$kind", true)
	d := &DefSecret{Name: r.name("name", true), BindingID: r.str("binding_id", true), ExpectedDigest: r.str("expected_digest", false), At: at}
	d.AllowedCaps, _ = r.strList("allowed_caps", false)
	d.AllowedPlans, _ = r.strList("allowed_plans", false)
	r.done()
	if d.Name == "" {
		return nil
	}
	return d
}

func parseDefEffect(n *jnode, at Origin, errs *problems) Def {
	r := newObjReader(n, errs, "defeffect")
	r.node("$kind", true)
	d := &DefEffect{Name: r.name("name", true), Kind: r.str("kind", true), ParamsSchema: r.name("params_schema", true),
		ReceiptSchema: r.name("receipt_schema", true), CapType: r.str("cap_type", true), OriginScope: r.str("origin_scope", true),
		Description: r.str("description", false), At: at}
	if d.Kind != "" {
		if err := checkDotted("effect kind", d.Kind); err != nil {
			errs.add(n.get("kind").ptr, "%v", err)
		}
	}
	switch d.OriginScope {
	case "", "reducer", "plan", "both":
	default:
		errs.add(n.get("origin_scope").ptr, "origin_scope %q is not reducer, plan or both", d.OriginScope)
	}
	r.done()
	if d.Name == "" {
		return nil
	}
	return d
}

func parseManifest(n *jnode, at Origin, errs *problems) Def {
	r := newObjReader(n, errs, "manifest")
	r.node("$kind", true)
	m := &Manifest{AirVersion: r.str("air_version", true), At: at}
	if m.AirVersion != "" && m.AirVersion != "1" {
		errs.add(n.get("air_version").ptr, "air_version %q is not supported (want \"1\")", m.AirVersion)
	}
	refs := func(key string) []NamedRef {
		ln := r.node(key, false)
		if ln == nil {
			return nil
		}
		if ln.kind != jArray {
			errs.add(ln.ptr, "%s must be an array of {\"name\": ..., \"hash\"?: ...}", key)
			return nil
		}
		var out []NamedRef
		for _, e := range ln.arr {
			er := newObjReader(e, errs, key+" entry")
			if er == nil {
				continue
			}
			nr := NamedRef{Name: er.name("name", true), Hash: er.str("hash", false), Ptr: e.ptr}
			er.done()
			if nr.Name != "" {
				out = append(out, nr)
			}
		}
		return out
	}
	for _, s := range manifestSections {
		*s.refs(m) = refs(s.section)
	}
	if dn := r.node("defaults", false); dn != nil {
		dr := newObjReader(dn, errs, "manifest defaults")
		if dr != nil {
			m.DefaultPolicy = dr.name("policy", false)
			if gn := dr.node("cap_grants", false); gn != nil {
				if gn.kind != jArray {
					errs.add(gn.ptr, "cap_grants must be an array of {name, cap, params, expiry_ns?}")
				} else {
					for _, g := range gn.arr {
						gr := newObjReader(g, errs, "cap grant")
						if gr == nil {
							continue
						}
						cg := &CapGrant{Name: gr.str("name", true), Cap: gr.name("cap", true), Ptr: g.ptr}
						if cg.Name != "" {
							if err := checkIdent("grant name", cg.Name); err != nil {
								errs.add(childPtr(g.ptr, "name"), "%v", err)
							}
						}
						cg.params = gr.node("params", true)
						if en := gr.node("expiry_ns", false); en != nil {
							v, err := (&normalizer{json: true}).integer(KindNat, jsonInput(en), nil)
							if err != nil {
								errs.add(en.ptr, "expiry_ns must be a nat")
							} else {
								u := v.(uint64)
								cg.ExpiryNS = &u
							}
						}
						gr.done()
						m.CapGrants = append(m.CapGrants, cg)
					}
				}
			}
			dr.done()
		}
	}
	if bn := r.node("module_bindings", false); bn != nil {
		if bn.kind != jObject {
			errs.add(bn.ptr, "module_bindings must map module names to {\"slots\": {...}}")
		} else {
			for _, f := range bn.fields() {
				if err := checkName(f.key); err != nil {
					errs.add(f.val.ptr, "%v", err)
				}
				br := newObjReader(f.val, errs, "module binding")
				if br == nil {
					continue
				}
				mb := ModuleBinding{Module: f.key, Ptr: f.val.ptr}
				if sn := br.node("slots", true); sn != nil {
					if sn.kind != jObject {
						errs.add(sn.ptr, "slots must map slot names to grant names")
					} else {
						for _, s := range sn.fields() {
							if s.val.kind != jString {
								errs.add(s.val.ptr, "slot %q must name a grant", s.key)
								continue
							}
							mb.Slots = append(mb.Slots, SlotBinding{Slot: s.key, Grant: s.val.str})
						}
						sort.Slice(mb.Slots, func(i, j int) bool { return mb.Slots[i].Slot < mb.Slots[j].Slot })
					}
				}
				br.done()
				m.ModuleBindings = append(m.ModuleBindings, mb)
			}
			sort.Slice(m.ModuleBindings, func(i, j int) bool { return m.ModuleBindings[i].Module < m.ModuleBindings[j].Module })
		}
	}
	if rn := r.node("routing", false); rn != nil {
		rr := newObjReader(rn, errs, "routing")
		if rr != nil {
			if en := rr.node("events", false); en != nil {
				if en.kind != jArray {
					errs.add(en.ptr, "routing.events must be an array of {event, reducer, key_field?}")
				} else {
					for _, e := range en.arr {
						er := newObjReader(e, errs, "route")
						if er == nil {
							continue
						}
						m.Routes = append(m.Routes, Route{Event: er.name("event", true), Reducer: er.name("reducer", true), KeyField: er.str("key_field", false), Ptr: e.ptr})
						er.done()
					}
				}
			}
			if in := rr.node("inboxes", false); in != nil {
				if in.kind != jArray {
					errs.add(in.ptr, "routing.inboxes must be an array of {source, reducer}")
				} else {
					for _, e := range in.arr {
						er := newObjReader(e, errs, "inbox")
						if er == nil {
							continue
						}
						m.Inboxes = append(m.Inboxes, Inbox{Source: er.str("source", true), Reducer: er.name("reducer", true), Ptr: e.ptr})
						er.done()
					}
				}
			}
			rr.done()
		}
	}
	if sn := r.node("mcp_servers", false); sn != nil {
		m.MCPServers = parseMCPServers(sn, errs)
	}
	if mn := r.node("models", false); mn != nil {
		m.Models = parseModels(mn, errs)
	}
	if tn := r.node("triggers", false); tn != nil {
		if tn.kind != jArray {
			errs.add(tn.ptr, "triggers must be an array of {event, plan, correlate_by?}")
		} else {
			for _, e := range tn.arr {
				tr := newObjReader(e, errs, "trigger")
				if tr == nil {
					continue
				}
				m.Triggers = append(m.Triggers, Trigger{Event: tr.name("event", true), Plan: tr.name("plan", true), CorrelateBy: tr.str("correlate_by", false), Ptr: e.ptr})
				tr.done()
			}
		}
	}
	r.done()
	return m
}

// parseModels parses the manifest's models: [{match, KEY: value, …}],
// each value a boolean, a number or a text, kept as text.
func parseModels(n *jnode, errs *problems) []ModelSetting {
	if n.kind != jArray {
		errs.add(n.ptr, `models must be an array of {"match": MODEL, OPTION: value, …}, such as {"match": "qwen3*", "reasoning": true}`)
		return nil
	}
	var out []ModelSetting
	for _, mn := range n.arr {
		if mn.kind != jObject {
			errs.add(mn.ptr, `a model setting must be an object {"match": MODEL, OPTION: value, …}`)
			continue
		}
		ms := ModelSetting{Ptr: mn.ptr}
		for _, f := range mn.fields() {
			var v string
			switch f.val.kind {
			case jString:
				v = f.val.str
			case jBool:
				v = strconv.FormatBool(f.val.b)
			case jNumber:
				v = f.val.num.String()
			default:
				errs.add(f.val.ptr, "%s: want true, false, a number or a text", f.key)
				continue
			}
			if f.key == "match" {
				ms.Match = v
				continue
			}
			ms.Options = append(ms.Options, ModelOption{Key: f.key, Value: v, Ptr: f.val.ptr})
		}
		if ms.Match == "" {
			errs.add(mn.ptr, `a model setting needs "match": the model's name, or a family ending in *`)
			continue
		}
		out = append(out, ms)
	}
	return out
}

// parseMCPServers parses the manifest's mcp_servers: [{name, command, args,
// env} | {name, url, headers}, aliases?, timeout_ms?].
func parseMCPServers(n *jnode, errs *problems) []MCPServer {
	if n.kind != jArray {
		errs.add(n.ptr, "mcp_servers must be an array of {name, command, args?, env?} or {name, url, headers?}")
		return nil
	}
	var out []MCPServer
	seen := map[string]bool{}
	for _, sn := range n.arr {
		r := newObjReader(sn, errs, "MCP server")
		if r == nil {
			continue
		}
		sv := MCPServer{Name: r.str("name", true), Command: r.str("command", false), URL: r.str("url", false), Ptr: sn.ptr}
		if sv.Name != "" {
			if err := checkIdent("MCP server name", sv.Name); err != nil || strings.Contains(sv.Name, ".") {
				errs.add(childPtr(sn.ptr, "name"), "MCP server name %q must be letters, digits, _ and - (it prefixes tool names)", sv.Name)
			}
			if seen[sv.Name] {
				errs.add(childPtr(sn.ptr, "name"), "MCP server %q is declared twice", sv.Name)
			}
			seen[sv.Name] = true
		}
		sv.Args, _ = r.strList("args", false)
		switch {
		case sv.Command == "" && sv.URL == "":
			errs.add(sn.ptr, "MCP server %q needs a command (stdio) or a url (streamable HTTP)", sv.Name)
		case sv.Command != "" && sv.URL != "":
			errs.add(sn.ptr, "MCP server %q has both a command and a url; give one", sv.Name)
		case sv.URL != "" && !strings.HasPrefix(sv.URL, "http://") && !strings.HasPrefix(sv.URL, "https://"):
			errs.add(childPtr(sn.ptr, "url"), "url %q must be http:// or https://", sv.URL)
		}
		sv.Env = parseMCPVars(r.node("env", false), errs)
		sv.Headers = parseMCPVars(r.node("headers", false), errs)
		if an := r.node("aliases", false); an != nil {
			if an.kind != jObject {
				errs.add(an.ptr, "aliases must map tool names to the names the model sees")
			} else {
				for _, f := range an.fields() {
					if f.val.kind != jString || f.val.str == "" {
						errs.add(f.val.ptr, "the alias of tool %q must be a non-empty text", f.key)
						continue
					}
					sv.Aliases = append(sv.Aliases, MCPAlias{Tool: f.key, Alias: f.val.str})
				}
				sort.Slice(sv.Aliases, func(i, j int) bool { return sv.Aliases[i].Tool < sv.Aliases[j].Tool })
			}
		}
		if tn := r.node("timeout_ms", false); tn != nil {
			v, err := (&normalizer{json: true}).integer(KindNat, jsonInput(tn), nil)
			if err != nil {
				errs.add(tn.ptr, "timeout_ms must be a nat")
			} else {
				sv.TimeoutMS = v.(uint64)
			}
		}
		r.done()
		out = append(out, sv)
	}
	return out
}

// parseMCPVars parses {NAME: "text" | {"literal": "text"} | {"secret": {"alias", "version"}}}.
func parseMCPVars(n *jnode, errs *problems) []MCPVar {
	if n == nil {
		return nil
	}
	if n.kind != jObject {
		errs.add(n.ptr, "want an object of NAME: value, where a value is text or {\"secret\": {\"alias\": ..., \"version\": N}}")
		return nil
	}
	t := &Type{Kind: KindVariant, Fields: []Field{
		{Name: "literal", Type: Primitive(KindText)},
		{Name: "secret", Type: &Type{Kind: KindRecord, Fields: []Field{{Name: "alias", Type: Primitive(KindText)}, {Name: "version", Type: Primitive(KindNat)}}}},
	}}
	var out []MCPVar
	for _, f := range n.fields() {
		in := jsonInput(f.val)
		if s, ok := in.(string); ok {
			in = Variant("literal", s)
		}
		v, err := (&normalizer{json: true}).norm(t, in, nil, 0)
		if err != nil {
			errs.add(f.val.ptr, "%s: %v", f.key, err)
			continue
		}
		out = append(out, MCPVar{Name: f.key, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
