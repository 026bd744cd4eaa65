package schema

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
)

// Resolver finds the type of a named schema.
type Resolver interface {
	// SchemaType returns the type defined by the defschema named name.
	SchemaType(name string) (*Type, bool)
}

// Normalize checks v against t and returns its canonical form. v is a
// value decoded from CBOR (Decode) or built in Go; canonical values pass
// through unchanged. Rules (one normalizer for every ingress):
//
//   - record: all fields present (a missing option field is null), no
//     unknown fields;
//   - variant: {"$tag": T, "$value": V}, "$value" absent for unit arms;
//   - set: sorted and deduplicated by canonical bytes; map: sorted by key,
//     duplicate keys rejected;
//   - hash, dec128 and uuid: their canonical text; time and duration:
//     integer nanoseconds; bytes: a byte string;
//   - int and nat: one integer representation (see Value).
//
// Errors are *PathError naming the path inside the value, e.g.
// `$.messages[3].role: unknown variant tag "Bot" (want Assistant|User)`.
func Normalize(r Resolver, t *Type, v Value) (Value, error) {
	return normalizeTwice(normalizer{r: r}, t, v)
}

// normalizeTwice normalizes v without tracking where it is inside the
// value (most values are valid, and the path's steps are allocations);
// on failure it normalizes again, tracking, to name the place in the error.
func normalizeTwice(n normalizer, t *Type, v Value) (Value, error) {
	n.untracked = true
	out, err := n.norm(t, v, nil, 0)
	if err == nil {
		return out, nil
	}
	n.untracked = false
	if _, again := n.norm(t, v, nil, 0); again != nil {
		return nil, again
	}
	return nil, err // not reached: normalizing is deterministic
}

// NormalizeJSON parses JSON and normalizes it against t. Both AIR JSON
// forms are accepted, and may be mixed: the tagged lens ({"nat": 3},
// {"record": {...}}, {"variant": {"tag": "T", "value": V}}, {"null": {}},
// {"bytes_b64": ".."}, {"map": [{"key": K, "value": V}]}, ...) and sugar,
// plain JSON read through the type (objects are records or text-keyed
// maps, {"Tag": V} or "Tag" or {"$tag": ..} are variants, [[k, v]] pairs are
// other maps, base64 strings are bytes, numbers or numeric strings are
// integers, RFC 3339 strings are times, Go duration strings are durations).
func NormalizeJSON(r Resolver, t *Type, data []byte) (Value, error) {
	j, err := parseJSON(data)
	if err != nil {
		return nil, &PathError{Path: "$", Msg: "invalid JSON: " + err.Error()}
	}
	return normalizeTwice(normalizer{r: r, json: true}, t, jsonInput(j))
}

// jsonInput converts parsed JSON into the generic input of the normalizer:
// objects become *Map with text keys, arrays []Value, numbers json.Number.
func jsonInput(j *jnode) Value {
	switch j.kind {
	case jNull:
		return nil
	case jBool:
		return j.b
	case jNumber:
		return j.num
	case jString:
		return j.str
	case jArray:
		out := make([]Value, len(j.arr))
		for i, e := range j.arr {
			out[i] = jsonInput(e)
		}
		return out
	default:
		m := &Map{}
		for _, f := range j.obj {
			m.set(f.key, jsonInput(f.val))
		}
		return m
	}
}

type normalizer struct {
	r    Resolver
	json bool // input came from JSON: the tagged lens and text encodings apply
	// untracked: the steps into the value are not recorded, and errors say
	// "$" for where they are (see normalizeTwice).
	untracked bool
}

// field, index and key are the path to a field, element or entry inside
// the value at path, or nil when paths are not tracked.
func (n *normalizer) field(path *vpath, name string) *vpath {
	if n.untracked {
		return nil
	}
	return path.field(name)
}

func (n *normalizer) index(path *vpath, i int) *vpath {
	if n.untracked {
		return nil
	}
	return path.index(i)
}

func (n *normalizer) key(path *vpath, k Value) *vpath {
	if n.untracked {
		return nil
	}
	return path.key(k)
}

func errAt(path *vpath, format string, args ...any) error {
	return &PathError{Path: path.String(), Msg: fmt.Sprintf(format, args...)}
}

func describe(v Value) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case uint64, int64, json.Number:
		return "a number"
	case string:
		return "a string"
	case []byte:
		return "bytes"
	case []Value:
		return "an array"
	case *Map:
		if _, _, ok := v.VariantTag(); ok {
			return "a variant"
		}
		if v.Len() == 1 {
			if k, ok := v.Entries()[0].Key.(string); ok {
				for _, tk := range taggedKeys {
					if tk == k {
						return fmt.Sprintf("a tagged %s {%q: ...}", k, k)
					}
				}
			}
		}
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// taggedKeys are the tagged-lens keys of each kind.
var taggedKeys = map[TypeKind]string{
	KindBool: "bool", KindInt: "int", KindNat: "nat", KindDec128: "dec128",
	KindBytes: "bytes_b64", KindText: "text", KindTime: "time_ns", KindDuration: "duration_ns",
	KindHash: "hash", KindUUID: "uuid", KindRecord: "record", KindVariant: "variant",
	KindList: "list", KindSet: "set", KindMap: "map",
}

func (n *normalizer) resolve(t *Type, path *vpath) (*Type, error) {
	for i := 0; t.Kind == KindRef; i++ {
		if n.r == nil {
			return nil, errAt(path, "type %s cannot be resolved: no schemas loaded", t.Ref)
		}
		rt, ok := n.r.SchemaType(t.Ref)
		if !ok {
			return nil, errAt(path, "unknown schema %s", t.Ref)
		}
		if i > 64 {
			return nil, errAt(path, "schema %s refers to itself", t.Ref)
		}
		t = rt
	}
	return t, nil
}

func (n *normalizer) norm(t *Type, v Value, path *vpath, depth int) (Value, error) {
	if depth > maxDepth {
		return nil, errAt(path, "value nested deeper than %d levels", maxDepth)
	}
	t, err := n.resolve(t, path)
	if err != nil {
		return nil, err
	}
	if t.Kind == KindOption {
		if v == nil {
			return nil, nil
		}
		if m, ok := v.(*Map); ok && n.json && m.Len() == 1 {
			if inner, ok := m.Get("null"); ok {
				if im, ok := inner.(*Map); ok && im.Len() == 0 {
					return nil, nil
				}
			}
		}
		return n.norm(t.Elem, v, path, depth+1)
	}
	// The tagged lens: {"<form>": body}. Try it first; if it does not fit,
	// read the same object as sugar, and report the tagged error if neither
	// works.
	if m, ok := v.(*Map); ok && n.json && m.Len() == 1 {
		if key, ok := taggedKeys[t.Kind]; ok {
			if body, ok := m.Get(key); ok {
				tv, terr := n.tagged(t, body, path, depth)
				if terr == nil {
					return tv, nil
				}
				if t.Kind == KindRecord || t.Kind == KindVariant || t.Kind == KindMap {
					if sv, serr := n.sugar(t, v, path, depth); serr == nil {
						return sv, nil
					}
				}
				return nil, terr
			}
		}
	}
	return n.sugar(t, v, path, depth)
}

// tagged normalizes the body of a tagged-lens value.
func (n *normalizer) tagged(t *Type, body Value, path *vpath, depth int) (Value, error) {
	switch t.Kind {
	case KindList, KindSet:
		if _, ok := body.([]Value); !ok {
			return nil, errAt(path, "tagged %s wants an array, got %s", t.Kind, describe(body))
		}
	case KindRecord:
		if _, ok := body.(*Map); !ok {
			return nil, errAt(path, "tagged record wants an object of fields, got %s", describe(body))
		}
	case KindVariant:
		m, ok := body.(*Map)
		if !ok {
			return nil, errAt(path, "tagged variant wants {\"tag\": T, \"value\": V}, got %s", describe(body))
		}
		tag, ok := m.Get("tag")
		if !ok {
			return nil, errAt(path, "tagged variant wants {\"tag\": T, \"value\": V}: missing \"tag\"")
		}
		for _, e := range m.Entries() {
			if k := e.Key.(string); k != "tag" && k != "value" {
				return nil, errAt(path, "tagged variant has unknown member %q (want tag, value)", k)
			}
		}
		val, has := m.Get("value")
		return n.variantArm(t, nil, tag, val, has, path, depth)
	case KindMap:
		arr, ok := body.([]Value)
		if !ok {
			return nil, errAt(path, "tagged map wants an array of {\"key\": K, \"value\": V}, got %s", describe(body))
		}
		return n.mapPairs(t, arr, path, depth)
	}
	return n.sugar(t, body, path, depth)
}

func (n *normalizer) sugar(t *Type, v Value, path *vpath, depth int) (Value, error) {
	switch t.Kind {
	case KindUnit:
		if v == nil {
			return nil, nil
		}
		if m, ok := v.(*Map); ok && m.Len() == 0 {
			return nil, nil
		}
		return nil, errAt(path, "want unit (null), got %s", describe(v))
	case KindBool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, errAt(path, "want bool, got %s", describe(v))
	case KindInt, KindNat:
		return n.integer(t.Kind, v, path)
	case KindDec128:
		var s string
		switch v := v.(type) {
		case string:
			s = v
		case json.Number:
			s = v.String()
		case uint64:
			s = strconv.FormatUint(v, 10)
		case int64:
			s = strconv.FormatInt(v, 10)
		default:
			return nil, errAt(path, "want dec128 (decimal text like \"0.2\"), got %s", describe(v))
		}
		d, err := canonicalDecimal(s)
		if err != nil {
			return nil, errAt(path, "%v", err)
		}
		return d, nil
	case KindBytes:
		switch bv := v.(type) {
		case []byte:
			return v, nil
		case string:
			if !n.json {
				return nil, errAt(path, "want bytes, got a string")
			}
			b, err := base64.StdEncoding.DecodeString(bv)
			if err != nil {
				return nil, errAt(path, "bytes must be standard base64 (with padding): %v", err)
			}
			return b, nil
		}
		return nil, errAt(path, "want bytes, got %s", describe(v))
	case KindText:
		if _, ok := v.(string); ok {
			return v, nil // v itself, not a new interface value of it
		}
		return nil, errAt(path, "want text, got %s", describe(v))
	case KindTime:
		if s, ok := v.(string); ok && n.json {
			if tm, err := time.Parse(time.RFC3339Nano, s); err == nil {
				return Int(tm.UnixNano()), nil
			}
		}
		iv, err := n.integer(KindInt, v, path)
		if err != nil {
			return nil, errAt(path, "want time (integer nanoseconds since the Unix epoch, or RFC 3339 text), got %s", describe(v))
		}
		return iv, nil
	case KindDuration:
		if s, ok := v.(string); ok && n.json {
			if d, err := time.ParseDuration(s); err == nil {
				return Int(int64(d)), nil
			}
		}
		iv, err := n.integer(KindInt, v, path)
		if err != nil {
			return nil, errAt(path, "want duration (integer nanoseconds, or text like \"1.5s\"), got %s", describe(v))
		}
		return iv, nil
	case KindHash:
		s, ok := v.(string)
		if !ok {
			return nil, errAt(path, "want hash (text like \"blake3:<64 hex>\"), got %s", describe(v))
		}
		if _, err := cas.ParseRef(s); err != nil {
			return nil, errAt(path, "%v", err)
		}
		return v, nil // ParseRef takes only a ref's canonical text
	case KindUUID:
		s, ok := v.(string)
		if !ok {
			return nil, errAt(path, "want uuid text, got %s", describe(v))
		}
		u, err := canonicalUUID(s)
		if err != nil {
			return nil, errAt(path, "%v", err)
		}
		return u, nil
	case KindRecord:
		return n.record(t, v, path, depth)
	case KindVariant:
		return n.variant(t, v, path, depth)
	case KindList, KindSet:
		arr, ok := v.([]Value)
		if !ok {
			return nil, errAt(path, "want %s (an array), got %s", t.Kind, describe(v))
		}
		var out []Value // made at the first element that changes
		for i, e := range arr {
			ev, err := n.norm(t.Elem, e, n.index(path, i), depth+1)
			if err != nil {
				return nil, err
			}
			if out == nil && !same(ev, e) {
				out = make([]Value, len(arr))
				copy(out, arr[:i])
			}
			if out != nil {
				out[i] = ev
			}
		}
		if t.Kind == KindSet {
			if out == nil {
				out = slices.Clone(arr) // sortSet must not sort the input
			}
			return sortSet(out, path)
		}
		if out == nil {
			return v, nil
		}
		return out, nil
	case KindMap:
		switch v := v.(type) {
		case *Map:
			return n.mapEntries(t, v.Entries(), path, depth)
		case []Value:
			return n.mapPairs(t, v, path, depth)
		}
		return nil, errAt(path, "want map (an object, or an array of [key, value] pairs), got %s", describe(v))
	}
	return nil, errAt(path, "cannot normalize a value of type %s", t)
}

func (n *normalizer) integer(k TypeKind, v Value, path *vpath) (Value, error) {
	// Already canonical and in range: v itself (no new interface value).
	switch x := v.(type) {
	case uint64:
		if k == KindNat || x <= math.MaxInt64 {
			return v, nil
		}
	case int64:
		if x < 0 && k == KindInt {
			return v, nil
		}
	}
	var iv Value
	switch v := v.(type) {
	case uint64, int64:
		iv = v
	case json.Number:
		var err error
		if iv, err = parseInteger(v.String()); err != nil {
			return nil, errAt(path, "want %s, got %s: %v", k, v, err)
		}
	case string:
		if !n.json {
			return nil, errAt(path, "want %s, got a string", k)
		}
		var err error
		if iv, err = parseInteger(v); err != nil {
			return nil, errAt(path, "want %s, got %q: %v", k, clipText(v), err)
		}
	default:
		if c, ok := canonicalInt(v); ok {
			iv = c
			break
		}
		return nil, errAt(path, "want %s, got %s", k, describe(v))
	}
	iv, _ = canonicalInt(iv)
	switch k {
	case KindNat:
		if _, ok := iv.(uint64); !ok {
			return nil, errAt(path, "want nat, got negative %s", String(iv))
		}
	case KindInt:
		if u, ok := iv.(uint64); ok && u > math.MaxInt64 {
			return nil, errAt(path, "int %d is out of range (max %d)", u, int64(math.MaxInt64))
		}
	}
	return iv, nil
}

func parseInteger(s string) (Value, error) {
	if s == "" {
		return nil, fmt.Errorf("empty number")
	}
	if s[0] == '-' {
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("not an integer in range")
		}
		return Int(i), nil
	}
	u, err := strconv.ParseUint(strings.TrimPrefix(s, "+"), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("not an integer in range")
	}
	return u, nil
}

// vpath is a path inside a value, built as the normalizer descends and
// rendered only for errors: "$", ".field", "[3]", "[key]". A nil *vpath
// is the root.
type vpath struct {
	parent *vpath
	name   string // a field or arm; "" for an index or key
	idx    int
	mkey   Value
	kind   byte // 'f' field, 'i' index, 'k' map key
}

func (p *vpath) field(name string) *vpath { return &vpath{parent: p, name: name, kind: 'f'} }
func (p *vpath) index(i int) *vpath       { return &vpath{parent: p, idx: i, kind: 'i'} }
func (p *vpath) key(k Value) *vpath       { return &vpath{parent: p, mkey: k, kind: 'k'} }

func (p *vpath) String() string {
	if p == nil {
		return "$"
	}
	s := p.parent.String()
	switch p.kind {
	case 'f':
		name := p.name
		if name != "" && (isLetter(name[0]) || name[0] == '_' || name[0] == '$') &&
			allOf(name, func(c byte) bool { return isLetter(c) || isDigit(c) || c == '_' || c == '$' }) {
			return s + "." + name
		}
		return s + "[" + strconv.Quote(name) + "]"
	case 'i':
		return s + "[" + strconv.Itoa(p.idx) + "]"
	default:
		return s + "[" + String(p.mkey) + "]"
	}
}

func (n *normalizer) record(t *Type, v Value, path *vpath, depth int) (Value, error) {
	m, ok := v.(*Map)
	if !ok {
		return nil, errAt(path, "want record {%s}, got %s", strings.Join(t.FieldNames(), ", "), describe(v))
	}
	// aligned: m has exactly t's fields in canonical order, their keys
	// encoded (the form normalizing gives): no key needs checking or
	// looking up, and m is the result if each field's value normalizes to
	// itself (nothing is written to m, nothing copied). Otherwise out is
	// made at the first difference.
	fields := t.canonicalFields()
	aligned := m.Len() == len(fields)
	for j := 0; aligned && j < len(fields); j++ {
		e := &m.entries[j]
		aligned = e.enc != nil && string(e.enc) == string(fields[j].enc)
	}
	var out *Map
	if !aligned {
		for _, e := range m.Entries() {
			k, ok := e.Key.(string)
			if !ok {
				return nil, errAt(path, "record key %s is not text", String(e.Key))
			}
			if _, ok := t.FieldType(k); !ok {
				return nil, errAt(n.field(path, k), "unknown field %q (want %s)", k, strings.Join(t.FieldNames(), "|"))
			}
		}
		out = &Map{entries: make([]MapEntry, 0, len(fields))}
	}
	for j, fk := range fields {
		f := fk.field
		fp := n.field(path, f.Name)
		var fv Value
		present := aligned
		if aligned {
			fv = m.entries[j].Value
		} else if i, ok := m.search(fk.enc); ok {
			fv, present = m.entries[i].Value, true
		}
		ft, err := n.resolve(f.Type, fp)
		if err != nil {
			return nil, err
		}
		if !present && ft.Kind != KindOption && ft.Kind != KindUnit {
			return nil, errAt(fp, "missing field %q of type %s", f.Name, f.Type)
		}
		nv, err := n.norm(f.Type, fv, fp, depth+1)
		if err != nil {
			return nil, err
		}
		if out == nil && !same(nv, fv) {
			out = &Map{entries: make([]MapEntry, j, len(fields))}
			copy(out.entries, m.entries[:j])
		}
		if out != nil {
			out.entries = append(out.entries, MapEntry{Key: f.Name, Value: nv, enc: fk.enc})
		}
	}
	if out == nil {
		return m, nil
	}
	return out, nil
}

// same reports whether b is a (the same value as a): for the normalizer
// to tell that it changed nothing and can return its input. Maps, lists
// and bytes are the same only when they are the same object, so the test
// costs nothing; a false answer only costs a copy.
func same(a, b Value) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case *Map:
		bm, ok := b.(*Map)
		return ok && a == bm
	case []Value:
		bv, ok := b.([]Value)
		return ok && len(a) == len(bv) && (len(a) == 0 || &a[0] == &bv[0])
	case []byte:
		bb, ok := b.([]byte)
		return ok && len(a) == len(bb) && (len(a) == 0 || &a[0] == &bb[0])
	case string:
		bs, ok := b.(string)
		return ok && a == bs
	case uint64:
		bu, ok := b.(uint64)
		return ok && a == bu
	case int64:
		bi, ok := b.(int64)
		return ok && a == bi
	case bool:
		bb, ok := b.(bool)
		return ok && a == bb
	}
	return false
}

func (n *normalizer) variant(t *Type, v Value, path *vpath, depth int) (Value, error) {
	switch v := v.(type) {
	case string:
		return n.variantArm(t, nil, v, nil, false, path, depth)
	case *Map:
		if tag, ok := v.Get(TagKey); ok {
			for _, e := range v.Entries() {
				if k, _ := e.Key.(string); k != TagKey && k != ValueKey {
					return nil, errAt(path, "variant has unknown member %s (want $tag, $value)", String(e.Key))
				}
			}
			val, has := v.Get(ValueKey)
			var in *Map // v, if it is in the canonical form (keys encoded)
			if v.Len() == 2 && v.entries[0].enc != nil && v.entries[1].enc != nil ||
				v.Len() == 1 && v.entries[0].enc != nil {
				in = v
			}
			return n.variantArm(t, in, tag, val, has, path, depth)
		}
		if v.Len() == 1 {
			e := v.Entries()[0]
			return n.variantArm(t, nil, e.Key, e.Value, true, path, depth)
		}
	}
	return nil, errAt(path, "want variant of %s (e.g. {\"%s\": ...} or {\"$tag\": \"%s\", \"$value\": ...}), got %s",
		strings.Join(t.FieldNames(), "|"), t.Fields[0].Name, t.Fields[0].Name, describe(v))
}

// variantArm normalizes the arm tagv of t with the value val (has: val is
// given, even if null). in is the variant as given when it is a map of
// $tag and maybe $value, entries encoded: it is returned as it is if it is
// the normal form ({$tag} for a unit arm, {$tag, $value} for the others)
// and nothing in it changes.
func (n *normalizer) variantArm(t *Type, in *Map, tagv, val Value, has bool, path *vpath, depth int) (Value, error) {
	tag, ok := tagv.(string)
	if !ok {
		return nil, errAt(path, "variant tag must be text, got %s", describe(tagv))
	}
	at, ok := t.FieldType(tag)
	if !ok {
		return nil, errAt(path, "unknown variant tag %q (want %s)", tag, strings.Join(t.FieldNames(), "|"))
	}
	rt, err := n.resolve(at, path)
	if err != nil {
		return nil, err
	}
	if rt.Kind == KindUnit {
		if has {
			if _, err := n.norm(at, val, n.field(path, ValueKey), depth+1); err != nil {
				return nil, errAt(path, "variant arm %q is unit and takes no value, got %s", tag, describe(val))
			}
		}
		if in != nil && !has {
			return in, nil // already {$tag}
		}
		return Variant(tag, nil), nil
	}
	if !has && rt.Kind != KindOption {
		return nil, errAt(path, "variant arm %q needs a value of type %s", tag, at)
	}
	nv, err := n.norm(at, val, n.field(path, ValueKey), depth+1)
	if err != nil {
		return nil, err
	}
	if in != nil && has && same(nv, val) {
		return in, nil // already {$tag, $value} with a normal value
	}
	return Record(TagKey, tag, ValueKey, nv), nil
}

func (n *normalizer) mapPairs(t *Type, arr []Value, path *vpath, depth int) (Value, error) {
	es := make([]MapEntry, 0, len(arr))
	for i, p := range arr {
		ip := n.index(path, i)
		switch p := p.(type) {
		case []Value:
			if len(p) != 2 {
				return nil, errAt(ip, "map entry must be a [key, value] pair, got %d elements", len(p))
			}
			es = append(es, MapEntry{Key: p[0], Value: p[1]})
		case *Map:
			k, kok := p.Get("key")
			val, vok := p.Get("value")
			if !kok || !vok || p.Len() != 2 {
				return nil, errAt(ip, "map entry must be {\"key\": K, \"value\": V}")
			}
			es = append(es, MapEntry{Key: k, Value: val})
		default:
			return nil, errAt(ip, "map entry must be a [key, value] pair, got %s", describe(p))
		}
	}
	return n.mapEntries(t, es, path, depth)
}

func (n *normalizer) mapEntries(t *Type, es []MapEntry, path *vpath, depth int) (Value, error) {
	kt, err := n.resolve(t.Key, path)
	if err != nil {
		return nil, err
	}
	out := &Map{entries: make([]MapEntry, 0, len(es))}
	for _, e := range es {
		kp := n.key(path, e.Key)
		k := e.Key
		// JSON object keys are always strings; read them as the key type.
		if s, ok := k.(string); ok && n.json && (kt.Kind == KindInt || kt.Kind == KindNat) {
			iv, err := parseInteger(s)
			if err != nil {
				return nil, errAt(kp, "map key %q is not an integer", s)
			}
			k = iv
		}
		nk, err := n.norm(t.Key, k, kp, depth+1)
		if err != nil {
			return nil, err
		}
		nv, err := n.norm(t.Value, e.Value, kp, depth+1)
		if err != nil {
			return nil, err
		}
		out.entries = append(out.entries, MapEntry{Key: nk, Value: nv, enc: keyEncoding(nk)})
	}
	sortEntries(out.entries)
	for i := 1; i < len(out.entries); i++ {
		if string(out.entries[i].enc) == string(out.entries[i-1].enc) {
			return nil, errAt(path, "duplicate map key %s", String(out.entries[i].Key))
		}
	}
	return out, nil
}

// SetOf returns vs as a canonical set: sorted by canonical encoding and
// without duplicates.
func SetOf(vs []Value) ([]Value, error) {
	v, err := sortSet(vs, nil)
	if err != nil {
		return nil, err
	}
	return v.([]Value), nil
}

func sortSet(vs []Value, path *vpath) (Value, error) {
	type item struct {
		enc []byte
		v   Value
	}
	items := make([]item, len(vs))
	for i, v := range vs {
		enc, err := EncodeBody(v)
		if err != nil {
			return nil, errAt(path, "%v", err)
		}
		items[i] = item{enc, v}
	}
	sort.Slice(items, func(i, j int) bool { return string(items[i].enc) < string(items[j].enc) })
	out := make([]Value, 0, len(items))
	for i, it := range items {
		if i > 0 && string(it.enc) == string(items[i-1].enc) {
			continue
		}
		out = append(out, it.v)
	}
	return out, nil
}

func canonicalUUID(s string) (string, error) {
	l := strings.ToLower(s)
	if len(l) != 36 || l[8] != '-' || l[13] != '-' || l[18] != '-' || l[23] != '-' {
		return "", fmt.Errorf("%q is not a UUID (want 8-4-4-4-12 hex digits)", clipText(s))
	}
	for i := 0; i < len(l); i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			continue
		}
		if c := l[i]; !(isDigit(c) || 'a' <= c && c <= 'f') {
			return "", fmt.Errorf("%q is not a UUID (want 8-4-4-4-12 hex digits)", clipText(s))
		}
	}
	return l, nil
}
