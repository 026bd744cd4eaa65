package cas_test

import (
	"encoding/json"
	"strings"
)

func stringReader(s string) *strings.Reader { return strings.NewReader(s) }

// jsonToCBOR turns a JSON value decoded with UseNumber into the Go values
// the CBOR encoder writes as JSON means them (integers as integers).
func jsonToCBOR(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = jsonToCBOR(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = jsonToCBOR(e)
		}
		return out
	default:
		return v
	}
}
