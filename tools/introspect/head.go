package introspect

import (
	"context"
	"encoding/json"
)

// headOut is introspect_journal_head's answer.
type headOut struct {
	World        string  `json:"world"`
	Height       uint64  `json:"height"`
	HeadHash     *string `json:"head_hash"`
	ManifestHash string  `json:"manifest_hash"`
}

func headSpec(r *reader) spec {
	return spec{
		name:  ToolJournalHead,
		short: "Show the world's journal head: its height, hash and manifest",
		description: "Show where the world's journal stands: the world's name, the height of the newest record (a journal seq; use it with consistency exact:<h> or at_least:<h>), " +
			"that record's hash and the hash of the manifest the world runs.",
		prompt:   `introspect_journal_head: the world's journal head as JSON {world, height, head_hash, manifest_hash}. Input: {}.`,
		synopsis: `{}`,
		body:     `Prints {world, height, head_hash, manifest_hash}: the world's name, the seq of its newest journal record, the BLAKE3 hash of that record ("blake3:<hex>", null for a world without records) and the hash of the manifest the world runs. Heights are what consistency exact:<h> and at_least:<h> of the other introspect tools take.`,
		examples: []string{`{}`},
		input: `{
  "type": "object",
  "properties": {},
  "additionalProperties": false
}`,
		output: `{
  "type": "object",
  "properties": {
    "world": {"type": "string"},
    "height": {"type": "integer", "minimum": 0},
    "head_hash": {"type": ["string", "null"]},
    "manifest_hash": {"type": "string"}
  },
  "required": ["world", "height", "head_hash", "manifest_hash"],
  "additionalProperties": false
}`,
		run: func(ctx context.Context, raw json.RawMessage) (any, error) {
			var a struct{}
			if err := decodeArgs(raw, &a); err != nil {
				return nil, err
			}
			h, err := r.v.Head(ctx)
			if err != nil {
				return nil, err
			}
			out := &headOut{World: r.v.Name(), Height: h.Height, ManifestHash: h.Manifest.String()}
			if h.Hash.Valid() {
				s := h.Hash.String()
				out.HeadHash = &s
			}
			return out, nil
		},
	}
}
