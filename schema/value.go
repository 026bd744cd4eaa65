package schema

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Value is a canonical AIR value, the one form every event, effect
// parameter, receipt and reducer state takes inside demiurge once it has
// been normalized against its type. Its dynamic type is one of:
//
//	nil        null, unit, an absent option
//	bool       bool
//	uint64     a non-negative int or nat (and time, duration ≥ 0)
//	int64      a negative int (and time, duration < 0)
//	string     text, and the text forms of hash, dec128 and uuid
//	[]byte     bytes
//	[]Value    list, and set (sorted and deduplicated)
//	*Map       record, variant ({"$tag", "$value"}) and map
//
// Integers have exactly one representation, so int and nat values are equal
// (with ==) when their numbers are: 3 is always uint64(3), -3 always
// int64(-3). Values are immutable once built; functions here never modify
// their arguments.
type Value = any

// Map is an ordered map of Values: a record (text keys), a variant
// ({"$tag": tag, "$value": v}) or an AIR map. Its entries are kept sorted
// in canonical CBOR key order (the bytewise order of the keys' canonical
// encodings: for text keys, shorter first, then bytewise) and keys are
// unique, so iterating a Map is deterministic.
//
// The zero Map is empty and ready to use.
type Map struct {
	entries []MapEntry
}

// MapEntry is one key/value pair of a Map.
type MapEntry struct {
	Key   Value
	Value Value
	enc   []byte // canonical encoding of Key
}

// NewMap returns a map holding the given entries. Later entries replace
// earlier ones with an equal key.
func NewMap(entries ...MapEntry) *Map {
	m := allocMap(len(entries))
	for i, e := range entries {
		m.entries[i] = MapEntry{Key: e.Key, Value: e.Value}
	}
	return m.sortEntries()
}

// allocMap returns a map of n zero entries, to be filled. A small map and
// its entries are one allocation.
func allocMap(n int) *Map {
	switch {
	case n == 0:
		return &Map{}
	case n == 1:
		x := &struct {
			m Map
			e [1]MapEntry
		}{}
		x.m.entries = x.e[:]
		return &x.m
	case n == 2:
		x := &struct {
			m Map
			e [2]MapEntry
		}{}
		x.m.entries = x.e[:]
		return &x.m
	case n <= 4:
		x := &struct {
			m Map
			e [4]MapEntry
		}{}
		x.m.entries = x.e[:n:n]
		return &x.m
	}
	return &Map{entries: make([]MapEntry, n)}
}

// sortEntries encodes the keys of m's entries and puts them in canonical
// order, the last of equal keys winning; it returns m.
func (m *Map) sortEntries() *Map {
	es := m.entries
	sorted := true
	for i := range es {
		es[i].enc = keyEncoding(es[i].Key)
		if i > 0 && bytes.Compare(es[i-1].enc, es[i].enc) >= 0 {
			sorted = false
		}
	}
	if sorted {
		return m
	}
	// A stable sort keeps equal keys in argument order; the last one wins.
	// Most maps built in Go code are records of a few fields: an insertion
	// sort, stable, moves them without the generic sort's overhead.
	if len(es) <= 16 {
		for i := 1; i < len(es); i++ {
			for j := i; j > 0 && bytes.Compare(es[j-1].enc, es[j].enc) > 0; j-- {
				es[j-1], es[j] = es[j], es[j-1]
			}
		}
	} else {
		slices.SortStableFunc(es, func(a, b MapEntry) int { return bytes.Compare(a.enc, b.enc) })
	}
	out := es[:0]
	for i, e := range es {
		if i+1 < len(es) && bytes.Equal(e.enc, es[i+1].enc) {
			continue
		}
		out = append(out, e)
	}
	clear(es[len(out):])
	m.entries = out
	return m
}

// Record returns a map with text keys, built from alternating key, value
// arguments: Record("a", uint64(1), "b", "x"). It panics if the arguments
// are not pairs with string keys; it is for building values in Go code.
func Record(kv ...any) *Map {
	if len(kv)%2 != 0 {
		panic("schema.Record: odd number of arguments")
	}
	m := allocMap(len(kv) / 2)
	for i := 0; i < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			panic(fmt.Sprintf("schema.Record: key %d is %T, want string", i/2, kv[i]))
		}
		m.entries[i/2] = MapEntry{Key: k, Value: kv[i+1]}
	}
	return m.sortEntries()
}

// Variant returns the canonical form of a variant value: {"$tag": tag,
// "$value": v}, with "$value" absent when v is nil (a unit arm).
func Variant(tag string, v Value) *Map {
	if v == nil {
		return Record(TagKey, tag)
	}
	return Record(TagKey, tag, ValueKey, v)
}

// Keys of the canonical variant form.
const (
	TagKey   = "$tag"
	ValueKey = "$value"
)

// Len returns the number of entries.
func (m *Map) Len() int {
	if m == nil {
		return 0
	}
	return len(m.entries)
}

// Entries returns the entries in canonical key order. The caller must not
// modify the returned slice.
func (m *Map) Entries() []MapEntry {
	if m == nil {
		return nil
	}
	return m.entries
}

// Get returns the value stored under key.
func (m *Map) Get(key Value) (Value, bool) {
	if m == nil {
		return nil, false
	}
	var buf [64]byte
	enc := buf[:0]
	if s, ok := key.(string); ok && len(s) < 48 {
		enc = append(appendHead(enc, 3, uint64(len(s))), s...)
	} else {
		enc = keyEncoding(key)
	}
	i, found := m.search(enc)
	if !found {
		return nil, false
	}
	return m.entries[i].Value, true
}

// Field returns the value of a record field (a text key).
func (m *Map) Field(name string) (Value, bool) { return m.Get(name) }

// FieldPath returns the value at a path of record fields under v: nil when
// a field is absent or a value on the way is not a map.
func FieldPath(v Value, path ...string) Value {
	for _, name := range path {
		m, ok := v.(*Map)
		if !ok || m == nil {
			return nil
		}
		v, _ = m.Get(name)
	}
	return v
}

// Has reports whether key is present.
func (m *Map) Has(key Value) bool {
	_, ok := m.Get(key)
	return ok
}

// With returns a copy of m with key set to v.
func (m *Map) With(key, v Value) *Map {
	n := &Map{entries: append([]MapEntry(nil), m.Entries()...)}
	n.set(key, v)
	return n
}

// Without returns a copy of m without key.
func (m *Map) Without(key Value) *Map {
	n := &Map{entries: append([]MapEntry(nil), m.Entries()...)}
	if i, ok := n.search(keyEncoding(key)); ok {
		n.entries = append(n.entries[:i], n.entries[i+1:]...)
	}
	return n
}

// VariantTag returns the tag and value of a canonical variant value.
func (m *Map) VariantTag() (tag string, v Value, ok bool) {
	t, ok := m.Get(TagKey)
	if !ok {
		return "", nil, false
	}
	tag, ok = t.(string)
	if !ok {
		return "", nil, false
	}
	v, _ = m.Get(ValueKey)
	return tag, v, true
}

func (m *Map) set(key, v Value) {
	enc := keyEncoding(key)
	i, found := m.search(enc)
	if found {
		m.entries[i].Value = v
		return
	}
	m.entries = append(m.entries, MapEntry{})
	copy(m.entries[i+1:], m.entries[i:])
	m.entries[i] = MapEntry{Key: key, Value: v, enc: enc}
}

func (m *Map) search(enc []byte) (int, bool) {
	i := sort.Search(len(m.entries), func(i int) bool {
		return bytes.Compare(m.entries[i].encoding(), enc) >= 0
	})
	return i, i < len(m.entries) && bytes.Equal(m.entries[i].encoding(), enc)
}

func (e *MapEntry) encoding() []byte {
	if e.enc == nil {
		e.enc = keyEncoding(e.Key)
	}
	return e.enc
}

func keyEncoding(k Value) []byte {
	if s, ok := k.(string); ok {
		if e := internString(s); e != nil {
			return e.enc
		}
		return append(appendHead(make([]byte, 0, len(s)+9), 3, uint64(len(s))), s...)
	}
	b, err := appendValue(make([]byte, 0, 9), k)
	if err != nil {
		// Keys come from normalized values or Go code; an unencodable key
		// is a programmer error.
		panic(fmt.Sprintf("schema: map key %T cannot be encoded: %v", k, err))
	}
	return b
}

// Equal reports whether a and b are the same value. Values built by the
// normalizer compare equal exactly when their canonical encodings are equal.
func Equal(a, b Value) bool {
	ea, err1 := EncodeBody(a)
	eb, err2 := EncodeBody(b)
	return err1 == nil && err2 == nil && bytes.Equal(ea, eb)
}

// Int returns the canonical integer value of i.
func Int(i int64) Value {
	if i >= 0 {
		return uint64(i)
	}
	return i
}

// AsInt64 returns an integer value as an int64, if it fits.
func AsInt64(v Value) (int64, bool) {
	switch v := v.(type) {
	case uint64:
		if v > math.MaxInt64 {
			return 0, false
		}
		return int64(v), true
	case int64:
		return v, true
	}
	return 0, false
}

// AsUint64 returns a non-negative integer value as a uint64.
func AsUint64(v Value) (uint64, bool) {
	u, ok := v.(uint64)
	return u, ok
}

// canonicalInt turns any Go integer into the canonical integer form.
func canonicalInt(v any) (Value, bool) {
	switch v := v.(type) {
	case uint64:
		return v, true
	case int64:
		return Int(v), true
	case int:
		return Int(int64(v)), true
	case int32:
		return Int(int64(v)), true
	case int16:
		return Int(int64(v)), true
	case int8:
		return Int(int64(v)), true
	case uint:
		return uint64(v), true
	case uint32:
		return uint64(v), true
	case uint16:
		return uint64(v), true
	case uint8:
		return uint64(v), true
	}
	return nil, false
}

// String renders a value for humans and error messages, in a compact
// JSON-like form. It is not a serialization.
func String(v Value) string {
	var b strings.Builder
	writeString(&b, v)
	return b.String()
}

func writeString(b *strings.Builder, v Value) {
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
		b.WriteString(strconv.Quote(v))
	case []byte:
		fmt.Fprintf(b, "h'%x'", v)
	case []Value:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, e)
		}
		b.WriteByte(']')
	case *Map:
		b.WriteByte('{')
		for i, e := range v.Entries() {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, e.Key)
			b.WriteByte(':')
			writeString(b, e.Value)
		}
		b.WriteByte('}')
	default:
		fmt.Fprintf(b, "<%T>", v)
	}
}
