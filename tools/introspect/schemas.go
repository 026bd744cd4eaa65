package introspect

import (
	"context"
	"encoding/json"

	"github.com/demiurge-dev/demiurge/schema"
)

// schemasArgs are introspect_schemas' arguments.
type schemasArgs struct {
	Names       []string `json:"names"`
	Consistency string   `json:"consistency"`
	ExpandRefs  bool     `json:"expand_refs"`
}

// schemaOut is one schema of the answer.
type schemaOut struct {
	Name string          `json:"name"`
	Hash string          `json:"hash"`
	Type json.RawMessage `json:"type"`
}

// schemasOut is introspect_schemas' answer.
type schemasOut struct {
	Schemas []schemaOut `json:"schemas"`
	Meta    metaJSON    `json:"meta"`
}

func schemasSpec(r *reader) spec {
	return spec{
		name:  ToolSchemas,
		short: "Show schemas (AIR types) by name, or every schema of the world",
		description: "Show the AIR type of schemas: given names (e.g. [\"counter/State@1\"], built-in sys/* names too), or every schema the world defines when names is empty. " +
			"Types are AIR JSON: {\"record\": {field: type}}, {\"variant\": {Arm: type}}, {\"list\": T}, {\"option\": T}, {\"map\": {\"key\": K, \"value\": V}}, {\"ref\": \"ns/Name@1\"}, {\"nat\": {}}, {\"text\": {}}, .... " +
			"expand_refs adds every schema the shown ones refer to.",
		prompt:   `introspect_schemas: AIR types of the world's schemas as JSON. Input: {"names"?: ["ns/Name@1", ...] (default: all user schemas), "expand_refs"?: bool, "consistency"?: "head"|"exact:<h>"|"at_least:<h>"}.`,
		synopsis: `{"names"?: ["<schema name>", ...], "expand_refs"?: true, "consistency"?: "head" | "exact:<h>" | "at_least:<h>"}`,
		body: `Prints {"schemas": [{name, hash, type}], meta}: each schema's type in AIR JSON, e.g. {"record": {"pc": {"ref": "counter/Phase@1"}, "remaining": {"nat": {}}}}. Without names, every schema the manifest lists that is not a built-in sys/* schema, sorted by name; with names, those, in the order given (built-in sys/* schemas may be named too).

expand_refs also prints, after them, every schema the printed types refer to through {"ref": ...}, transitively, each once.`,
		examples: []string{
			`{"names": ["counter/State@1"]}`,
			`{}`,
			`{"names": ["counter/Event@1"], "expand_refs": true}`,
		},
		input: `{
  "type": "object",
  "properties": {
    "names": {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": 200, "description": "Schema names, e.g. [\"counter/State@1\"]; empty or absent: every schema the world defines."},
    "expand_refs": {"type": "boolean", "description": "Also show every schema the shown ones refer to, transitively."},
    ` + consistencyProp + `
  },
  "additionalProperties": false
}`,
		output: `{
  "type": "object",
  "properties": {
    "schemas": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "hash": {"type": "string"}, "type": {"type": "object"}},
        "required": ["name", "hash", "type"],
        "additionalProperties": false
      }
    },
    ` + metaSchema + `
  },
  "required": ["schemas", "meta"],
  "additionalProperties": false
}`,
		run: func(ctx context.Context, raw json.RawMessage) (any, error) {
			var a schemasArgs
			if err := decodeArgs(raw, &a); err != nil {
				return nil, err
			}
			c, err := parseConsistency(a.Consistency)
			if err != nil {
				return nil, err
			}
			return r.schemas(ctx, c, a)
		},
	}
}

// schemas answers introspect_schemas.
func (r *reader) schemas(ctx context.Context, c Consistency, a schemasArgs) (*schemasOut, error) {
	d, err := r.manifestAt(ctx, c)
	if err != nil {
		return nil, err
	}
	names := a.Names
	if len(names) == 0 {
		for _, n := range d.names(schema.KindDefSchema) {
			if !isBuiltin(schema.KindDefSchema, n) {
				names = append(names, n)
			}
		}
	}
	out := &schemasOut{Schemas: []schemaOut{}, Meta: d.meta.json()}
	seen := map[string]bool{}
	var types []schema.Value
	add := func(name string) error {
		if seen[name] {
			return nil
		}
		seen[name] = true
		node, ref, err := d.def(ctx, schema.KindDefSchema, name)
		if err != nil {
			return err
		}
		t := schema.FieldPath(node, "type")
		types = append(types, t)
		out.Schemas = append(out.Schemas, schemaOut{Name: name, Hash: ref.String(), Type: schema.ValueJSON(t)})
		return nil
	}
	for _, n := range names {
		if err := add(n); err != nil {
			return nil, err
		}
	}
	if a.ExpandRefs {
		for i := 0; i < len(types); i++ {
			for _, ref := range typeRefs(types[i], map[string]bool{}, nil) {
				if err := add(ref); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}
