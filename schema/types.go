package schema

import (
	"fmt"
	"sort"
	"strings"
)

// TypeKind is the form of an AIR type.
type TypeKind uint8

// The AIR v1 type forms.
const (
	KindInvalid TypeKind = iota
	KindBool
	KindInt
	KindNat
	KindDec128
	KindBytes
	KindText
	KindTime
	KindDuration
	KindHash
	KindUUID
	KindUnit
	KindRecord
	KindVariant
	KindList
	KindSet
	KindMap
	KindOption
	KindRef
)

var kindNames = [...]string{
	KindInvalid: "invalid", KindBool: "bool", KindInt: "int", KindNat: "nat",
	KindDec128: "dec128", KindBytes: "bytes", KindText: "text", KindTime: "time",
	KindDuration: "duration", KindHash: "hash", KindUUID: "uuid", KindUnit: "unit",
	KindRecord: "record", KindVariant: "variant", KindList: "list", KindSet: "set",
	KindMap: "map", KindOption: "option", KindRef: "ref",
}

func (k TypeKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("TypeKind(%d)", k)
}

var primitiveKinds = map[string]TypeKind{
	"bool": KindBool, "int": KindInt, "nat": KindNat, "dec128": KindDec128,
	"bytes": KindBytes, "text": KindText, "time": KindTime, "duration": KindDuration,
	"hash": KindHash, "uuid": KindUUID, "unit": KindUnit,
}

// RefType returns the type {"ref": name}: the type of the defschema name.
func RefType(name string) *Type { return &Type{Kind: KindRef, Ref: name} }

// Type is an AIR type expression. Types are immutable after parsing.
type Type struct {
	Kind TypeKind
	// Fields of a record and arms of a variant, sorted by name.
	Fields []Field
	// Elem is the element type of a list, set or option.
	Elem *Type
	// Key and Value are the types of a map's keys and values.
	Key, Value *Type
	// Ref is the schema name a ref type points at.
	Ref string

	canon []fieldKey // record fields in canonical key order (parsed types)
}

// Field is a named member of a record type, or an arm of a variant.
type Field struct {
	Name string
	Type *Type
}

// fieldKey is a record field in canonical key order, with its encoding.
type fieldKey struct {
	field Field
	enc   []byte
}

// canonicalFields returns a record's fields in canonical CBOR key order,
// with their key encodings: cached for parsed types, computed for types
// built in Go.
func (t *Type) canonicalFields() []fieldKey {
	if t.canon != nil {
		return t.canon
	}
	return makeCanonical(t.Fields)
}

func makeCanonical(fs []Field) []fieldKey {
	out := make([]fieldKey, len(fs))
	for i, f := range fs {
		out[i] = fieldKey{field: f, enc: keyEncoding(f.Name)}
	}
	sort.Slice(out, func(i, j int) bool { return string(out[i].enc) < string(out[j].enc) })
	return out
}

// Primitive returns the type of the given primitive kind.
func Primitive(k TypeKind) *Type { return &Type{Kind: k} }

// FieldType returns the type of the named record field or variant arm.
func (t *Type) FieldType(name string) (*Type, bool) {
	i := sort.Search(len(t.Fields), func(i int) bool { return t.Fields[i].Name >= name })
	if i < len(t.Fields) && t.Fields[i].Name == name {
		return t.Fields[i].Type, true
	}
	return nil, false
}

// FieldNames returns the names of a record's fields or a variant's arms.
func (t *Type) FieldNames() []string {
	out := make([]string, len(t.Fields))
	for i, f := range t.Fields {
		out[i] = f.Name
	}
	return out
}

// String renders the type compactly, e.g. "record{a: nat, b: list<text>}".
func (t *Type) String() string {
	var b strings.Builder
	t.write(&b)
	return b.String()
}

func (t *Type) write(b *strings.Builder) {
	switch t.Kind {
	case KindRecord, KindVariant:
		b.WriteString(t.Kind.String())
		b.WriteByte('{')
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(f.Name)
			b.WriteString(": ")
			f.Type.write(b)
		}
		b.WriteByte('}')
	case KindList, KindSet, KindOption:
		b.WriteString(t.Kind.String())
		b.WriteByte('<')
		t.Elem.write(b)
		b.WriteByte('>')
	case KindMap:
		b.WriteString("map<")
		t.Key.write(b)
		b.WriteString(", ")
		t.Value.write(b)
		b.WriteByte('>')
	case KindRef:
		b.WriteString(t.Ref)
	default:
		b.WriteString(t.Kind.String())
	}
}

// node returns the type in its AIR JSON structure, as a Value, for
// hashing defs: {"record": {"x": {"int": {}}}}.
func (t *Type) node() Value {
	empty := &Map{}
	switch t.Kind {
	case KindRecord, KindVariant:
		fs := &Map{}
		for _, f := range t.Fields {
			fs.set(f.Name, f.Type.node())
		}
		return Record(t.Kind.String(), fs)
	case KindList, KindSet, KindOption:
		return Record(t.Kind.String(), t.Elem.node())
	case KindMap:
		return Record("map", Record("key", t.Key.node(), "value", t.Value.node()))
	case KindRef:
		return Record("ref", t.Ref)
	default:
		return Record(t.Kind.String(), empty)
	}
}

// parseType parses an AIR type expression. Problems are added to errs.
func parseType(n *jnode, errs *problems) *Type {
	if n == nil {
		return nil
	}
	if n.kind != jObject {
		errs.add(n.ptr, "type must be an object like {\"text\":{}}, got %s", n.kind)
		return nil
	}
	fs := n.fields()
	if len(fs) != 1 {
		errs.add(n.ptr, "type must have exactly one form (bool, int, nat, dec128, bytes, text, time, duration, hash, uuid, unit, record, variant, list, set, map, option, ref), got keys %v", n.keys())
		return nil
	}
	form, body := fs[0].key, fs[0].val
	if k, ok := primitiveKinds[form]; ok {
		if body.kind != jObject || len(body.fields()) != 0 {
			errs.add(body.ptr, "%s type takes an empty object: {\"%s\":{}}", form, form)
			return nil
		}
		return &Type{Kind: k}
	}
	switch form {
	case "record", "variant":
		if body.kind != jObject {
			errs.add(body.ptr, "%s type takes an object of %s", form, map[string]string{"record": "fields", "variant": "arms"}[form])
			return nil
		}
		t := &Type{Kind: KindRecord}
		if form == "variant" {
			t.Kind = KindVariant
			if len(body.fields()) == 0 {
				errs.add(body.ptr, "variant type needs at least one arm")
			}
		}
		for _, f := range body.fields() {
			if f.key == "" || strings.HasPrefix(f.key, "$") {
				errs.add(f.val.ptr, "%s member name %q is not allowed", form, f.key)
				continue
			}
			ft := parseType(f.val, errs)
			if ft == nil {
				continue
			}
			t.Fields = append(t.Fields, Field{Name: f.key, Type: ft})
		}
		sort.Slice(t.Fields, func(i, j int) bool { return t.Fields[i].Name < t.Fields[j].Name })
		t.canon = makeCanonical(t.Fields)
		return t
	case "list", "set", "option":
		elem := parseType(body, errs)
		if elem == nil {
			return nil
		}
		return &Type{Kind: map[string]TypeKind{"list": KindList, "set": KindSet, "option": KindOption}[form], Elem: elem}
	case "map":
		if body.kind != jObject {
			errs.add(body.ptr, "map type takes {\"key\": T, \"value\": T}")
			return nil
		}
		for _, k := range body.keys() {
			if k != "key" && k != "value" {
				errs.add(childPtr(body.ptr, k), "unknown member %q of a map type (want key, value)", k)
			}
		}
		kn, vn := body.get("key"), body.get("value")
		if kn == nil || vn == nil {
			errs.add(body.ptr, "map type needs both \"key\" and \"value\"")
			return nil
		}
		kt, vt := parseType(kn, errs), parseType(vn, errs)
		if kt == nil || vt == nil {
			return nil
		}
		switch kt.Kind {
		case KindInt, KindNat, KindText, KindUUID, KindHash:
		default:
			errs.add(kn.ptr, "map key type must be int, nat, text, uuid or hash, got %s", kt)
			return nil
		}
		return &Type{Kind: KindMap, Key: kt, Value: vt}
	case "ref":
		if body.kind != jString {
			errs.add(body.ptr, "ref type takes a schema name, e.g. {\"ref\":\"ns/Name@1\"}")
			return nil
		}
		if err := checkName(body.str); err != nil {
			errs.add(body.ptr, "%v", err)
			return nil
		}
		return RefType(body.str)
	}
	errs.add(childPtr(n.ptr, form), "unknown type form %q (want bool, int, nat, dec128, bytes, text, time, duration, hash, uuid, unit, record, variant, list, set, map, option or ref)", form)
	return nil
}
