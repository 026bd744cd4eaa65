package introspect

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/demiurge-dev/demiurge/schema"
)

// moduleArgs are introspect_module's arguments.
type moduleArgs struct {
	Name        string `json:"name"`
	Consistency string `json:"consistency"`
}

// routeOut is a route that reaches a reducer.
type routeOut struct {
	Event    string  `json:"event"`
	KeyField *string `json:"key_field"`
}

// triggerOut is a trigger whose plan meets a reducer, and how.
type triggerOut struct {
	Event       string  `json:"event"`
	Plan        string  `json:"plan"`
	CorrelateBy *string `json:"correlate_by"`
	Why         string  `json:"why"`
}

// moduleOut is introspect_module's answer.
type moduleOut struct {
	Name           string          `json:"name"`
	Hash           string          `json:"hash"`
	ModuleKind     string          `json:"module_kind"`
	Keyed          bool            `json:"keyed"`
	KeySchema      *schemaOut      `json:"key_schema"`
	State          *schemaOut      `json:"state,omitempty"`
	Event          *schemaOut      `json:"event,omitempty"`
	Input          *schemaOut      `json:"input,omitempty"`
	Output         *schemaOut      `json:"output,omitempty"`
	Context        *string         `json:"context"`
	EffectsEmitted []string        `json:"effects_emitted"`
	CapSlots       json.RawMessage `json:"cap_slots"`
	Bindings       json.RawMessage `json:"bindings"`
	Routes         []routeOut      `json:"routes"`
	Triggers       []triggerOut    `json:"triggers"`
	Meta           metaJSON        `json:"meta"`
}

func moduleSpec(r *reader) spec {
	return spec{
		name:  ToolModule,
		short: "Show a module: its kind, key, state and event schemas with their types, and how events reach it",
		description: "Show one module of the world by name: reducer or pure, whether it is keyed and its key schema, its state and event schemas (reducers) " +
			"or input and output schemas (pure modules) with their AIR types, the effects it may emit and its cap slots and bindings, " +
			"the routes that deliver events to it and the plan triggers that meet it (plans started by the same events, or plans that raise events routed to it).",
		prompt:   `introspect_module: one module's definition as JSON (kind, key/state/event schemas with types, routes and triggers that reach it). Input: {"name": "ns/Module@1", "consistency"?: "head"|"exact:<h>"|"at_least:<h>"}.`,
		synopsis: `{"name": "<module name>", "consistency"?: "head" | "exact:<h>" | "at_least:<h>"}`,
		body: `Prints the module's definition: name, hash, module_kind (reducer or pure), keyed and key_schema ({name, hash, type} or null), state and event ({name, hash, type}) for a reducer, input and output for a pure module, context, effects_emitted, cap_slots (slot: cap type) and bindings (slot: grant, from the manifest's module_bindings).

routes are the manifest's event routes to the reducer: {event, key_field}; an event that is a ref arm of a routed variant reaches it too, wrapped in that arm. triggers are the plans that meet the reducer: those started by an event routed to it, and those that raise an event routed to it, each with why.`,
		examples: []string{
			`{"name": "counter/Counter@1"}`,
			`{"name": "sys/Workspace@1", "consistency": "at_least:10"}`,
		},
		input: `{
  "type": "object",
  "properties": {
    "name": {"type": "string", "minLength": 1, "description": "The module's name, e.g. \"counter/Counter@1\"."},
    ` + consistencyProp + `
  },
  "required": ["name"],
  "additionalProperties": false
}`,
		output: `{
  "type": "object",
  "$defs": {
    "schema": {
      "type": "object",
      "properties": {"name": {"type": "string"}, "hash": {"type": "string"}, "type": {"type": "object"}},
      "required": ["name", "hash", "type"],
      "additionalProperties": false
    }
  },
  "properties": {
    "name": {"type": "string"},
    "hash": {"type": "string"},
    "module_kind": {"type": "string"},
    "keyed": {"type": "boolean"},
    "key_schema": {"anyOf": [{"$ref": "#/$defs/schema"}, {"type": "null"}]},
    "state": {"$ref": "#/$defs/schema"},
    "event": {"$ref": "#/$defs/schema"},
    "input": {"$ref": "#/$defs/schema"},
    "output": {"$ref": "#/$defs/schema"},
    "context": {"type": ["string", "null"]},
    "effects_emitted": {"type": "array", "items": {"type": "string"}},
    "cap_slots": {"type": "object", "additionalProperties": {"type": "string"}},
    "bindings": {"type": "object", "additionalProperties": {"type": "string"}},
    "routes": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {"event": {"type": "string"}, "key_field": {"type": ["string", "null"]}},
        "required": ["event", "key_field"],
        "additionalProperties": false
      }
    },
    "triggers": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {"event": {"type": "string"}, "plan": {"type": "string"}, "correlate_by": {"type": ["string", "null"]}, "why": {"type": "string"}},
        "required": ["event", "plan", "correlate_by", "why"],
        "additionalProperties": false
      }
    },
    ` + metaSchema + `
  },
  "required": ["name", "hash", "module_kind", "keyed", "key_schema", "context", "effects_emitted", "cap_slots", "bindings", "routes", "triggers", "meta"],
  "additionalProperties": false
}`,
		run: func(ctx context.Context, raw json.RawMessage) (any, error) {
			var a moduleArgs
			if err := decodeArgs(raw, &a); err != nil {
				return nil, err
			}
			c, err := parseConsistency(a.Consistency)
			if err != nil {
				return nil, err
			}
			return r.module(ctx, c, a.Name)
		},
	}
}

// module answers introspect_module.
func (r *reader) module(ctx context.Context, c Consistency, name string) (*moduleOut, error) {
	d, err := r.manifestAt(ctx, c)
	if err != nil {
		return nil, err
	}
	node, ref, err := d.def(ctx, schema.KindDefModule, name)
	if err != nil {
		return nil, err
	}
	out := &moduleOut{Name: name, Hash: ref.String(), EffectsEmitted: []string{}, CapSlots: json.RawMessage("{}"),
		Bindings: json.RawMessage("{}"), Routes: []routeOut{}, Triggers: []triggerOut{}, Meta: d.meta.json()}
	out.ModuleKind, _ = schema.FieldPath(node, "module_kind").(string)
	schemaRef := func(name string) (*schemaOut, error) {
		t, h, err := d.schemaType(ctx, name)
		if err != nil {
			return nil, err
		}
		return &schemaOut{Name: name, Hash: h.String(), Type: t}, nil
	}
	if ks, ok := schema.FieldPath(node, "key_schema").(string); ok {
		out.Keyed = true
		if out.KeySchema, err = schemaRef(ks); err != nil {
			return nil, err
		}
	}
	abi := schema.FieldPath(node, "abi")
	red, pure := schema.FieldPath(abi, "reducer"), schema.FieldPath(abi, "pure")
	set := func(dst **schemaOut, from schema.Value, key string) error {
		s, ok := schema.FieldPath(from, key).(string)
		if !ok {
			return nil
		}
		var err error
		*dst, err = schemaRef(s)
		return err
	}
	for _, f := range []struct {
		dst  **schemaOut
		from schema.Value
		key  string
	}{{&out.State, red, "state"}, {&out.Event, red, "event"}, {&out.Input, pure, "input"}, {&out.Output, pure, "output"}} {
		if err := set(f.dst, f.from, f.key); err != nil {
			return nil, err
		}
	}
	for _, part := range []schema.Value{red, pure} {
		if ctxName, ok := schema.FieldPath(part, "context").(string); ok {
			out.Context = &ctxName
		}
	}
	if l, ok := schema.FieldPath(red, "effects_emitted").([]schema.Value); ok {
		for _, e := range l {
			if s, ok := e.(string); ok {
				out.EffectsEmitted = append(out.EffectsEmitted, s)
			}
		}
	}
	if slots := schema.FieldPath(red, "cap_slots"); slots != nil {
		out.CapSlots = schema.ValueJSON(slots)
	}
	if slots := schema.FieldPath(schema.FieldPath(schema.FieldPath(d.node, "module_bindings"), name), "slots"); slots != nil {
		out.Bindings = schema.ValueJSON(slots)
	}
	if red == nil {
		return out, nil
	}
	for _, rt := range d.routes() {
		if rt.Reducer == name {
			out.Routes = append(out.Routes, routeOut{Event: rt.Event, KeyField: rt.KeyField})
		}
	}
	for _, t := range d.triggers() {
		var why []string
		if _, ok := d.routedTo(ctx, t.Event, name); ok {
			why = append(why, "starts on "+t.Event+", which is also routed to this reducer")
		}
		for _, ev := range d.raises(ctx, t.Plan) {
			if _, ok := d.routedTo(ctx, ev, name); ok {
				why = append(why, "raises "+ev+", which is routed to this reducer")
			}
		}
		if len(why) > 0 {
			out.Triggers = append(out.Triggers, triggerOut{Event: t.Event, Plan: t.Plan, CorrelateBy: t.CorrelateBy, Why: strings.Join(why, "; ")})
		}
	}
	return out, nil
}
