package schema

import (
	"sync/atomic"
	"unicode/utf8"
)

// Short texts — record field names, variant tags, schema names — recur in
// every value decoded or built: the same few hundred strings, each with
// its canonical encoding as a map key. interned caches them, so that
// decoding or building a value makes neither the string, nor its boxing
// as a Value, nor its key encoding again. The cache is a fixed table of
// slots indexed by a hash of the text; a slot holds the last text stored
// in it, so two texts with the same slot take turns (a miss only costs
// what there is no cache for). Entries are immutable once stored.
type internEntry struct {
	s   string
	v   Value  // s as a Value, boxed once
	enc []byte // the canonical encoding of s (len == cap: never appended to)
}

const (
	internSlots = 4096 // a power of two
	maxIntern   = 48   // longer texts are not cached
)

var interned [internSlots]atomic.Pointer[internEntry]

func internSlot[T string | []byte](b T) *atomic.Pointer[internEntry] {
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(b); i++ {
		h ^= uint32(b[i])
		h *= 16777619
	}
	return &interned[h&(internSlots-1)]
}

// internText returns the cached entry of the text b, adding it; nil if b
// is too long to cache or is not valid UTF-8.
func internText(b []byte) *internEntry {
	if len(b) > maxIntern {
		return nil
	}
	slot := internSlot(b)
	if e := slot.Load(); e != nil && e.s == string(b) {
		return e
	}
	if !utf8.Valid(b) {
		return nil
	}
	e := newInternEntry(string(b))
	slot.Store(e)
	return e
}

// internString is internText for a string (valid UTF-8 or not: the
// caller checks, as the encoder does).
func internString(s string) *internEntry {
	if len(s) > maxIntern {
		return nil
	}
	slot := internSlot(s)
	if e := slot.Load(); e != nil && e.s == s {
		return e
	}
	e := newInternEntry(s)
	slot.Store(e)
	return e
}

func newInternEntry(s string) *internEntry {
	enc := append(appendHead(make([]byte, 0, len(s)+2), 3, uint64(len(s))), s...)
	return &internEntry{s: s, v: s, enc: enc[:len(enc):len(enc)]}
}
