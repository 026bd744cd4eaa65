package introspect

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/demiurge-dev/demiurge/schema"
)

// consistencyProp is the input schema of the consistency argument.
const consistencyProp = `"consistency": {
      "type": "string",
      "pattern": "^(head|exact:[0-9]+|at_least:[0-9]+)$",
      "description": "How fresh the answer must be: \"head\" (default, the world now), \"exact:<h>\" (as it was at journal height h), \"at_least:<h>\" (now, once the journal has reached height h)."
    }`

// metaSchema is the output schema of meta, sys/ReadMeta@1 in JSON.
const metaSchema = `"meta": {
      "type": "object",
      "description": "What the read saw: the journal height it belongs to and the manifest the world ran then.",
      "properties": {
        "journal_height": {"type": "integer", "minimum": 0},
        "manifest_hash": {"type": "string"},
        "snapshot_hash": {"type": ["string", "null"]}
      },
      "required": ["journal_height", "manifest_hash", "snapshot_hash"],
      "additionalProperties": false
    }`

// refListSchema is the output schema of a list of {name, hash}.
const refListSchema = `{"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "hash": {"type": "string"}}, "required": ["name", "hash"], "additionalProperties": false}}`

// manifestArgs are introspect_manifest's arguments.
type manifestArgs struct {
	Consistency    string `json:"consistency"`
	Def            string `json:"def"`
	Kind           string `json:"kind"`
	IncludeBuiltin bool   `json:"include_builtin"`
}

// manifestOut is introspect_manifest's answer.
type manifestOut struct {
	World          string              `json:"world"`
	ManifestHash   string              `json:"manifest_hash"`
	AirVersion     string              `json:"air_version"`
	Schemas        []namedRef          `json:"schemas"`
	Modules        []namedRef          `json:"modules"`
	Plans          []namedRef          `json:"plans"`
	Effects        []namedRef          `json:"effects"`
	Caps           []namedRef          `json:"caps"`
	Policies       []namedRef          `json:"policies"`
	Secrets        []namedRef          `json:"secrets"`
	Defaults       json.RawMessage     `json:"defaults"`
	ModuleBindings json.RawMessage     `json:"module_bindings"`
	Routing        json.RawMessage     `json:"routing"`
	Triggers       json.RawMessage     `json:"triggers"`
	Builtin        map[string][]string `json:"builtin,omitempty"`
	Def            *defOut             `json:"def,omitempty"`
	Meta           metaJSON            `json:"meta"`
}

// defOut is one def in full.
type defOut struct {
	Kind string          `json:"kind"`
	Name string          `json:"name"`
	Hash string          `json:"hash"`
	AIR  json.RawMessage `json:"air"`
}

func manifestSpec(r *reader) spec {
	return spec{
		name:  ToolManifest,
		short: "Show the world's manifest: its defs with their hashes, routing, triggers and defaults",
		description: "Show the AIR manifest the world runs: air_version, every def it lists by kind (schemas, modules, plans, effects, caps, policies, secrets) " +
			"with its name and hash, the cap grants and default policy, module bindings, event routing and plan triggers. " +
			"Give def (and kind if the name is ambiguous) to also get that def's full AIR. " +
			"consistency picks the moment: head (default), exact:<journal height> or at_least:<journal height>.",
		prompt:   `introspect_manifest: the world's AIR manifest as JSON (defs by kind with hashes, routing, triggers, defaults). Input: {"consistency"?: "head"|"exact:<h>"|"at_least:<h>", "def"?: "<name>", "kind"?: "defschema"|..., "include_builtin"?: bool}.`,
		synopsis: `{"consistency"?: "head" | "exact:<h>" | "at_least:<h>", "def"?: "<def name>", "kind"?: "<def kind>", "include_builtin"?: true}`,
		body: `Prints the manifest the world runs (or ran, at exact:<h>): air_version, the defs it lists in its sections schemas, modules, plans, effects, caps, policies and secrets, each as {name, hash}; defaults (default policy, cap grants), module_bindings, routing (events routed to reducers) and triggers (events that start plans), as the manifest's AIR has them.

def names a def whose full AIR to include, as "def": {kind, name, hash, air}; kind (defschema, defmodule, defplan, defeffect, defcap, defpolicy, defsecret) is needed only when two defs of different kinds share the name. Built-in sys/* defs are always available; include_builtin lists their names by section.`,
		examples: []string{
			`{}`,
			`{"def": "counter/Counter@1"}`,
			`{"consistency": "exact:1", "include_builtin": true}`,
		},
		input: `{
  "type": "object",
  "properties": {
    ` + consistencyProp + `,
    "def": {"type": "string", "minLength": 1, "description": "A def whose full AIR to include, e.g. \"counter/State@1\"."},
    "kind": {"type": "string", "enum": ["defschema", "defmodule", "defplan", "defeffect", "defcap", "defpolicy", "defsecret"], "description": "The kind of def, when its name alone is ambiguous."},
    "include_builtin": {"type": "boolean", "description": "Also list the names of the built-in sys/* defs, by section."}
  },
  "additionalProperties": false
}`,
		output: `{
  "type": "object",
  "properties": {
    "world": {"type": "string"},
    "manifest_hash": {"type": "string"},
    "air_version": {"type": "string"},
    "schemas": ` + refListSchema + `,
    "modules": ` + refListSchema + `,
    "plans": ` + refListSchema + `,
    "effects": ` + refListSchema + `,
    "caps": ` + refListSchema + `,
    "policies": ` + refListSchema + `,
    "secrets": ` + refListSchema + `,
    "defaults": {"type": "object"},
    "module_bindings": {"type": "object"},
    "routing": {"type": "object"},
    "triggers": {"type": "array"},
    "builtin": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
    "def": {
      "type": "object",
      "properties": {"kind": {"type": "string"}, "name": {"type": "string"}, "hash": {"type": "string"}, "air": {"type": "object"}},
      "required": ["kind", "name", "hash", "air"],
      "additionalProperties": false
    },
    ` + metaSchema + `
  },
  "required": ["world", "manifest_hash", "air_version", "schemas", "modules", "plans", "effects", "caps", "policies", "secrets", "defaults", "module_bindings", "routing", "triggers", "meta"],
  "additionalProperties": false
}`,
		run: func(ctx context.Context, raw json.RawMessage) (any, error) {
			var a manifestArgs
			if err := decodeArgs(raw, &a); err != nil {
				return nil, err
			}
			c, err := parseConsistency(a.Consistency)
			if err != nil {
				return nil, err
			}
			if a.Kind != "" && a.Def == "" {
				return nil, fmt.Errorf("%w: kind %s is given without def; name the def to show", ErrInvalid, a.Kind)
			}
			return r.manifest(ctx, c, a)
		},
	}
}

// manifest answers introspect_manifest.
func (r *reader) manifest(ctx context.Context, c Consistency, a manifestArgs) (*manifestOut, error) {
	d, err := r.manifestAt(ctx, c)
	if err != nil {
		return nil, err
	}
	list := func(kind string) []namedRef { return append([]namedRef{}, d.listed[kind]...) }
	obj := func(name string) json.RawMessage {
		v := schema.FieldPath(d.node, name)
		if v == nil {
			return json.RawMessage("{}")
		}
		return schema.ValueJSON(v)
	}
	av, _ := schema.FieldPath(d.node, "air_version").(string)
	out := &manifestOut{
		World: r.v.Name(), ManifestHash: d.ref.String(), AirVersion: av,
		Schemas: list(schema.KindDefSchema), Modules: list(schema.KindDefModule), Plans: list(schema.KindDefPlan),
		Effects: list(schema.KindDefEffect), Caps: list(schema.KindDefCap), Policies: list(schema.KindDefPolicy),
		Secrets:  list(schema.KindDefSecret),
		Defaults: obj("defaults"), ModuleBindings: obj("module_bindings"), Routing: obj("routing"),
		Triggers: json.RawMessage("[]"),
		Meta:     d.meta.json(),
	}
	if t := schema.FieldPath(d.node, "triggers"); t != nil {
		out.Triggers = schema.ValueJSON(t)
	}
	if a.IncludeBuiltin {
		out.Builtin = map[string][]string{}
		for _, s := range sections {
			out.Builtin[s.section] = append([]string{}, schema.BuiltinNames(s.kind)...)
		}
	}
	if a.Def != "" {
		kind := a.Kind
		if kind == "" {
			kinds := d.kindsOf(a.Def)
			switch len(kinds) {
			case 0:
				return nil, fmt.Errorf("%w: unknown def %q; the manifest lists: %s", ErrNotFound, clip(a.Def), listNames(d.allNames(), a.Def))
			case 1:
				kind = kinds[0]
			default:
				return nil, fmt.Errorf("%w: %s names a def of each of the kinds %s; give kind to pick one", ErrInvalid, a.Def, joinNames(kinds))
			}
		}
		node, ref, err := d.def(ctx, kind, a.Def)
		if err != nil {
			return nil, err
		}
		out.Def = &defOut{Kind: kind, Name: a.Def, Hash: ref.String(), AIR: schema.ValueJSON(node)}
	}
	return out, nil
}

// allNames returns the names of every def the manifest lists, sorted.
func (d *manifestDefs) allNames() []string {
	var out []string
	for _, s := range sections {
		out = append(out, d.names(s.kind)...)
	}
	return out
}
