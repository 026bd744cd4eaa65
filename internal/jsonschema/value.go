package jsonschema

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/demiurge-dev/demiurge/internal/jsonschema/kind"
)

// UnmarshalJSON decodes one JSON value from r with numbers as
// json.Number, so no integer loses precision; anything after the value
// but white space is an error.
func UnmarshalJSON(r io.Reader) (any, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("invalid character after top-level value")
	}
	return v, nil
}

// jsonType is a JSON type, as a bit of a set (typeSet).
type jsonType int

const (
	invalidType jsonType = 0
	nullType    jsonType = 1 << iota
	booleanType
	numberType
	integerType
	stringType
	arrayType
	objectType
)

// typeOrder is the order in which a type error lists the types.
var typeNames = [...]struct {
	t    jsonType
	name string
}{
	{nullType, "null"}, {booleanType, "boolean"}, {numberType, "number"}, {integerType, "integer"},
	{stringType, "string"}, {arrayType, "array"}, {objectType, "object"},
}

func (t jsonType) String() string {
	for _, n := range typeNames {
		if n.t == t {
			return n.name
		}
	}
	return ""
}

func typeNamed(s string) jsonType {
	for _, n := range typeNames {
		if n.name == s {
			return n.t
		}
	}
	return invalidType
}

// typeSet is a set of JSON types.
type typeSet int

func (ts typeSet) has(t jsonType) bool { return int(ts)&int(t) != 0 }

func (ts *typeSet) add(t jsonType) { *ts |= typeSet(t) }

func (ts typeSet) names() []string {
	var out []string
	for _, n := range typeNames {
		if ts.has(n.t) {
			out = append(out, n.name)
		}
	}
	return out
}

// typeOf is the JSON type of a decoded value: numbers of any Go numeric
// type or json.Number are numbers (never integers: a schema's integer
// type is checked on the value), NaN and infinities are not JSON.
func typeOf(v any) jsonType {
	switch v := v.(type) {
	case nil:
		return nullType
	case bool:
		return booleanType
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return invalidType
		}
		return numberType
	case float32:
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return invalidType
		}
		return numberType
	case json.Number, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return numberType
	case string:
		return stringType
	case []any:
		return arrayType
	case map[string]any:
		return objectType
	}
	return invalidType
}

func isNumber(v any) bool {
	switch v.(type) {
	case json.Number, float32, float64, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return true
	}
	return false
}

// exactRat is a number's exact value, from its decimal text, or false when
// the text is no number big.Rat reads (json.Number("1e10000000"): its
// exponent is past big.Rat's bound).
func exactRat(v any) (*big.Rat, bool) {
	return new(big.Rat).SetString(fmt.Sprint(v))
}

// ratOf is a number's value for the numeric keywords. A number too large
// for an exact value (see exactRat) is taken as its float64, and past
// float64's range as ±10^400, beyond every float64 bound.
func ratOf(v any) *big.Rat {
	if r, ok := exactRat(v); ok {
		return r
	}
	f, _ := strconv.ParseFloat(fmt.Sprint(v), 64) // ±Inf or 0 when out of range
	if math.IsInf(f, 0) {
		r := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(400), nil))
		if f < 0 {
			r.Neg(r)
		}
		return r
	}
	if r := new(big.Rat).SetFloat64(f); r != nil {
		return r
	}
	return new(big.Rat)
}

func isInteger(v any) bool {
	r, ok := exactRat(v)
	return ok && r.IsInt()
}

// equal compares two JSON values as JSON Schema does: numbers by value.
// A Go value that is not JSON gives an InvalidJSONValue kind.
func equal(a, b any) (bool, *kind.InvalidJSONValue) {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false, nil
		}
		for _, k := range sortedKeys(a) {
			bv, ok := b[k]
			if !ok {
				return false, nil
			}
			if eq, bad := equal(a[k], bv); !eq || bad != nil {
				return eq, bad
			}
		}
		return true, nil
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false, nil
		}
		for i := range a {
			if eq, bad := equal(a[i], b[i]); !eq || bad != nil {
				return eq, bad
			}
		}
		return true, nil
	case nil:
		return b == nil, nil
	case bool:
		bb, ok := b.(bool)
		return ok && a == bb, nil
	case string:
		bs, ok := b.(string)
		return ok && a == bs, nil
	}
	if !isNumber(a) {
		return false, &kind.InvalidJSONValue{Value: a}
	}
	if typeOf(b) != numberType {
		return false, nil
	}
	ra, ok1 := exactRat(a)
	rb, ok2 := exactRat(b)
	return ok1 && ok2 && ra.Cmp(rb) == 0, nil
}

// duplicates finds the first pair of equal items (i < j, the least j
// first), or -1, -1.
func duplicates(arr []any) (int, int, *kind.InvalidJSONValue) {
	if len(arr) <= 20 {
		for j := 1; j < len(arr); j++ {
			for i := 0; i < j; i++ {
				if eq, bad := equal(arr[j], arr[i]); eq || bad != nil {
					return i, j, bad
				}
			}
		}
		return -1, -1, nil
	}
	// Longer arrays: items with the same canonical key are compared.
	seen := map[string][]int{}
	for j, item := range arr {
		key, bad := canonicalKey(item)
		if bad != nil {
			return -1, -1, bad
		}
		for _, i := range seen[key] {
			if eq, bad := equal(item, arr[i]); eq || bad != nil {
				return i, j, bad
			}
		}
		seen[key] = append(seen[key], j)
	}
	return -1, -1, nil
}

// canonicalKey writes a value so that equal values (numbers by value,
// objects in any order) have the same key.
func canonicalKey(v any) (string, *kind.InvalidJSONValue) {
	var b strings.Builder
	var write func(v any) *kind.InvalidJSONValue
	write = func(v any) *kind.InvalidJSONValue {
		switch v := v.(type) {
		case map[string]any:
			b.WriteByte('{')
			for _, k := range sortedKeys(v) {
				fmt.Fprintf(&b, "%q:", k)
				if bad := write(v[k]); bad != nil {
					return bad
				}
				b.WriteByte(',')
			}
			b.WriteByte('}')
		case []any:
			b.WriteByte('[')
			for _, e := range v {
				if bad := write(e); bad != nil {
					return bad
				}
				b.WriteByte(',')
			}
			b.WriteByte(']')
		case nil:
			b.WriteString("null")
		case bool:
			fmt.Fprint(&b, v)
		case string:
			fmt.Fprintf(&b, "%q", v)
		default:
			if !isNumber(v) {
				return &kind.InvalidJSONValue{Value: v}
			}
			if r, ok := exactRat(v); ok {
				b.WriteString(r.RatString())
			} else {
				b.WriteString("?") // compared by equal, which finds it unequal to all
			}
		}
		return nil
	}
	bad := write(v)
	return b.String(), bad
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
