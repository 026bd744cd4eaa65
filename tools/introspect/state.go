package introspect

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/demiurge-dev/demiurge/schema"
)

// MaxListedCells is the most cell keys introspect_state lists.
const MaxListedCells = 1000

// stateArgs are introspect_state's arguments.
type stateArgs struct {
	Reducer     string          `json:"reducer"`
	Key         json.RawMessage `json:"key"`
	Consistency string          `json:"consistency"`
}

// stateOut is introspect_state's answer for one cell.
type stateOut struct {
	Reducer     string          `json:"reducer"`
	Key         json.RawMessage `json:"key"`
	Consistency string          `json:"consistency"`
	Exists      bool            `json:"exists"`
	StateSchema string          `json:"state_schema"`
	StateHash   *string         `json:"state_hash"`
	State       json.RawMessage `json:"state"`
	Meta        metaJSON        `json:"meta"`
}

// cellOut is one cell of a listing.
type cellOut struct {
	Key       json.RawMessage `json:"key"`
	StateHash string          `json:"state_hash"`
}

// cellsOut is introspect_state's answer for a keyed reducer without key.
type cellsOut struct {
	Reducer     string    `json:"reducer"`
	KeySchema   string    `json:"key_schema"`
	Consistency string    `json:"consistency"`
	Cells       []cellOut `json:"cells"`
	Count       int       `json:"count"`
	Truncated   bool      `json:"truncated"`
	Meta        metaJSON  `json:"meta"`
}

func stateSpec(r *reader) spec {
	return spec{
		name:  ToolState,
		short: "Read a reducer's state (one cell, or the keys of a keyed reducer's cells), now or at a journal height",
		description: "Read the state of a reducer cell as JSON in the sugar form of its state schema (records as objects, variants as {\"$tag\": T, \"$value\": V}). " +
			"For a keyed reducer give key as JSON in the key schema's form (e.g. \"chat-1\"); without key it lists the keys of its cells. " +
			"consistency: head (default), exact:<journal height> for the state as it was then, at_least:<journal height>.",
		prompt:   `introspect_state: a reducer cell's state as JSON; keyed reducers without key list their cell keys. Input: {"reducer": "ns/Reducer@1", "key"?: <JSON key>, "consistency"?: "head"|"exact:<h>"|"at_least:<h>"}.`,
		synopsis: `{"reducer": "<reducer module>", "key"?: <key as JSON>, "consistency"?: "head" | "exact:<h>" | "at_least:<h>"}`,
		body: `Prints one cell: {reducer, key, consistency, exists, state_schema, state_hash, state, meta}. state is the cell's value in the sugar JSON of its state schema: records as objects, variants as {"$tag": T, "$value": V} ("$value" absent for unit arms), sets and lists as arrays, maps with text keys as objects and other maps as [[key, value], ...], bytes as base64, hashes as "blake3:<hex>". A cell without state (never written, or deleted) has exists false and state null.

A keyed reducer needs key, in the JSON form of its key schema (a text key is a JSON string). Without key it lists its cells instead: {reducer, key_schema, consistency, cells: [{key, state_hash}], count, truncated, meta}, in canonical key order, at most ` + fmt.Sprint(MaxListedCells) + ` of them. A reducer that is not keyed takes no key.

At exact:<h> the state is the one the newest State record at or before height h wrote, read from the journal.`,
		examples: []string{
			`{"reducer": "counter/Counter@1"}`,
			`{"reducer": "counter/Counter@1", "consistency": "exact:5"}`,
			`{"reducer": "demiurge/Demiurge@1", "key": "chat-1"}`,
			`{"reducer": "demiurge/Demiurge@1"}`,
		},
		input: `{
  "type": "object",
  "properties": {
    "reducer": {"type": "string", "minLength": 1, "description": "The reducer module, e.g. \"counter/Counter@1\"."},
    "key": {"description": "A keyed reducer's cell key as JSON in its key schema's form, e.g. \"chat-1\"; leave out to list the cells' keys."},
    ` + consistencyProp + `
  },
  "required": ["reducer"],
  "additionalProperties": false
}`,
		output: `{
  "anyOf": [
    {
      "type": "object",
      "properties": {
        "reducer": {"type": "string"},
        "key": {},
        "consistency": {"type": "string"},
        "exists": {"type": "boolean"},
        "state_schema": {"type": "string"},
        "state_hash": {"type": ["string", "null"]},
        "state": {},
        ` + metaSchema + `
      },
      "required": ["reducer", "key", "consistency", "exists", "state_schema", "state_hash", "state", "meta"],
      "additionalProperties": false
    },
    {
      "type": "object",
      "properties": {
        "reducer": {"type": "string"},
        "key_schema": {"type": "string"},
        "consistency": {"type": "string"},
        "cells": {
          "type": "array",
          "items": {
            "type": "object",
            "properties": {"key": {}, "state_hash": {"type": "string"}},
            "required": ["key", "state_hash"],
            "additionalProperties": false
          }
        },
        "count": {"type": "integer", "minimum": 0},
        "truncated": {"type": "boolean"},
        ` + metaSchema + `
      },
      "required": ["reducer", "key_schema", "consistency", "cells", "count", "truncated", "meta"],
      "additionalProperties": false
    }
  ]
}`,
		run: func(ctx context.Context, raw json.RawMessage) (any, error) {
			var a stateArgs
			if err := decodeArgs(raw, &a); err != nil {
				return nil, err
			}
			c, err := parseConsistency(a.Consistency)
			if err != nil {
				return nil, err
			}
			return r.stateTool(ctx, c, a)
		},
	}
}

// stateTool answers introspect_state.
func (r *reader) stateTool(ctx context.Context, c Consistency, a stateArgs) (any, error) {
	mod, err := r.reducerDef(a.Reducer)
	if err != nil {
		return nil, err
	}
	cat := r.v.Catalog()
	noKey := len(a.Key) == 0 || bytes.Equal(bytes.TrimSpace(a.Key), []byte("null"))
	if noKey && mod.KeySchema != "" {
		cells, m, err := r.cells(ctx, mod.Name, c, false)
		if err != nil {
			return nil, err
		}
		out := &cellsOut{Reducer: mod.Name, KeySchema: mod.KeySchema, Consistency: c.String(), Cells: []cellOut{},
			Count: len(cells), Meta: m.json()}
		for i, cell := range cells {
			if i == MaxListedCells {
				out.Truncated = true
				break
			}
			out.Cells = append(out.Cells, cellOut{Key: render(cat, mod.KeySchema, cell.key), StateHash: cell.ref.String()})
		}
		return out, nil
	}
	var key schema.Value
	if !noKey {
		if mod.KeySchema == "" {
			return nil, fmt.Errorf("%w: reducer %s is not keyed; leave key out", ErrInvalid, mod.Name)
		}
		key, err = schema.NormalizeJSON(cat, schema.RefType(mod.KeySchema), a.Key)
		if err != nil {
			return nil, fmt.Errorf("%w: key %s does not fit %s, the key schema of %s: %v", ErrInvalid, clip(string(a.Key)), mod.KeySchema, mod.Name, err)
		}
	}
	cr, err := r.state(ctx, mod.Name, key, c)
	if err != nil {
		return nil, err
	}
	out := &stateOut{Reducer: mod.Name, Key: json.RawMessage("null"), Consistency: c.String(), Exists: cr.ok,
		StateSchema: mod.Reducer.State, State: json.RawMessage("null"), Meta: cr.meta.json()}
	if key != nil {
		out.Key = render(cat, mod.KeySchema, key)
	}
	if cr.ok {
		h := cr.cell.Ref.String()
		out.StateHash = &h
		out.State = render(cat, mod.Reducer.State, cr.cell.State)
	}
	return out, nil
}

// render writes a value as the sugar JSON of its schema, or untyped JSON
// when it does not fit the schema (a state written under an older
// manifest, say).
func render(r schema.Resolver, schemaName string, v schema.Value) json.RawMessage {
	b, err := schema.MarshalJSON(r, schema.RefType(schemaName), v)
	if err != nil {
		return schema.ValueJSON(v)
	}
	return b
}
