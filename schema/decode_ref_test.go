package schema

import (
	"errors"
	"fmt"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/fxamacker/cbor/v2"
)

// refDecode is the reference decoder the fast one is checked against:
// fxamacker/cbor into any, then converted.
func refDecode(data []byte) (Value, error) {
	var raw any
	if err := cas.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	return fromCBOR(raw, 0)
}

func fromCBOR(x any, depth int) (Value, error) {
	if depth > maxDepth {
		return nil, errors.New("schema: value nested too deeply")
	}
	switch x := x.(type) {
	case nil, bool, string, []byte:
		return x, nil
	case uint64:
		return x, nil
	case int64:
		return Int(x), nil
	case []any:
		out := make([]Value, len(x))
		for i, e := range x {
			v, err := fromCBOR(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case map[any]any:
		m := &Map{entries: make([]MapEntry, 0, len(x))}
		for k, e := range x {
			kv, err := fromCBOR(k, depth+1)
			if err != nil {
				return nil, err
			}
			switch kv.(type) {
			case string, uint64, int64, []byte:
			default:
				return nil, fmt.Errorf("schema: map key of type %T is not allowed", kv)
			}
			ev, err := fromCBOR(e, depth+1)
			if err != nil {
				return nil, err
			}
			m.entries = append(m.entries, MapEntry{Key: kv, Value: ev, enc: keyEncoding(kv)})
		}
		sortEntries(m.entries)
		return m, nil
	case cbor.Tag:
		return nil, fmt.Errorf("schema: CBOR tag %d is not allowed in a value", x.Number)
	case float64, float32:
		return nil, errors.New("schema: floating-point numbers are not allowed in a value (use dec128 text)")
	default:
		return nil, fmt.Errorf("schema: CBOR item of type %T is not allowed in a value", x)
	}
}
