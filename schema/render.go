package schema

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
)

// MarshalJSON renders a canonical value as JSON in the sugar form of its
// type, the form NormalizeJSON reads back to the same value: records and
// text-keyed maps as objects, variants as {"$tag": T, "$value": V}, other
// maps as [[key, value], ...] pairs, bytes as standard base64, integers as
// numbers. Object members come in canonical order.
func MarshalJSON(r Resolver, t *Type, v Value) ([]byte, error) {
	var b bytes.Buffer
	if err := writeJSON(&b, r, t, v, 0); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ValueJSON renders a value as JSON without knowing its type, for
// diagnostics and dumps: maps with text keys become objects, other maps
// [[key, value]] pairs, bytes {"$bytes": "<base64>"}.
func ValueJSON(v Value) []byte {
	var b bytes.Buffer
	_ = writeJSON(&b, nil, nil, v, 0)
	return b.Bytes()
}

func writeJSON(b *bytes.Buffer, r Resolver, t *Type, v Value, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("schema: value nested too deeply")
	}
	if t != nil {
		n := normalizer{r: r}
		rt, err := n.resolve(t, nil)
		if err != nil {
			return err
		}
		t = rt
		if t.Kind == KindOption {
			if v == nil {
				b.WriteString("null")
				return nil
			}
			return writeJSON(b, r, t.Elem, v, depth+1)
		}
	}
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case uint64:
		b.WriteString(strconv.FormatUint(v, 10))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case string:
		q, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.Write(q)
	case []byte:
		s := base64.StdEncoding.EncodeToString(v)
		if t == nil {
			b.WriteString(`{"$bytes":"` + s + `"}`)
		} else {
			b.WriteString(`"` + s + `"`)
		}
	case []Value:
		var et *Type
		if t != nil && (t.Kind == KindList || t.Kind == KindSet) {
			et = t.Elem
		}
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, r, et, e, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case *Map:
		return writeMapJSON(b, r, t, v, depth)
	default:
		if i, ok := canonicalInt(v); ok {
			return writeJSON(b, r, t, i, depth)
		}
		return fmt.Errorf("schema: %T is not a value", v)
	}
	return nil
}

func writeMapJSON(b *bytes.Buffer, r Resolver, t *Type, m *Map, depth int) error {
	textKeys := true
	for _, e := range m.Entries() {
		if _, ok := e.Key.(string); !ok {
			textKeys = false
			break
		}
	}
	if t != nil && t.Kind == KindMap {
		n := normalizer{r: r}
		kt, err := n.resolve(t.Key, nil)
		if err != nil {
			return err
		}
		textKeys = kt.Kind == KindText
	}
	if !textKeys {
		var kt, vt *Type
		if t != nil && t.Kind == KindMap {
			kt, vt = t.Key, t.Value
		}
		b.WriteByte('[')
		for i, e := range m.Entries() {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('[')
			if err := writeJSON(b, r, kt, e.Key, depth+1); err != nil {
				return err
			}
			b.WriteByte(',')
			if err := writeJSON(b, r, vt, e.Value, depth+1); err != nil {
				return err
			}
			b.WriteByte(']')
		}
		b.WriteByte(']')
		return nil
	}
	b.WriteByte('{')
	for i, e := range m.Entries() {
		if i > 0 {
			b.WriteByte(',')
		}
		k := e.Key.(string)
		q, err := json.Marshal(k)
		if err != nil {
			return err
		}
		b.Write(q)
		b.WriteByte(':')
		var ft *Type
		if t != nil {
			switch t.Kind {
			case KindRecord:
				ft, _ = t.FieldType(k)
			case KindMap:
				ft = t.Value
			case KindVariant:
				if k == ValueKey {
					if tag, _, ok := m.VariantTag(); ok {
						ft, _ = t.FieldType(tag)
					}
				}
			}
		}
		if err := writeJSON(b, r, ft, e.Value, depth+1); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}
