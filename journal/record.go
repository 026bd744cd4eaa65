package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/cas"
)

// Encode returns the canonical bytes of r as the journal stores them:
// cas.Marshal of the map {seq, kind, payload, prev} (prev as a 32-byte
// byte string). r.Hash is ignored; the record's hash is cas.Sum of the
// result.
func (r Record) Encode() ([]byte, error) {
	if r.Seq == 0 {
		return nil, errors.New("journal: encode record: seq 0 (seqs start at 1)")
	}
	if err := validateKind(r.Kind); err != nil {
		return nil, fmt.Errorf("journal: encode record %d: %v", r.Seq, err)
	}
	if len(r.Payload) > MaxPayloadSize {
		return nil, fmt.Errorf("journal: encode record %d: payload is %d bytes, at most %d allowed", r.Seq, len(r.Payload), MaxPayloadSize)
	}
	if r.Prev.Algo() != cas.BLAKE3 {
		return nil, fmt.Errorf("journal: encode record %d: prev %s is not a BLAKE3 ref", r.Seq, r.Prev)
	}
	return encodeRecord(r.Seq, r.Kind, r.Payload, r.Prev.Digest())
}

func encodeRecord(seq uint64, kind string, payload []byte, prev [cas.Size]byte) ([]byte, error) {
	if payload == nil {
		payload = []byte{} // a nil slice would encode as CBOR null
	}
	// The stored form of a record is the canonical CBOR map {seq, kind,
	// payload, prev}, written here in key order in one allocation of the
	// exact size: the bytes cas.Marshal gives for that map
	// (TestEncodeRecordBytes).
	n := len(cas.SelfDescribePrefix) + 1 + len(keySeq) + headLen(seq) + len(keyKind) + headLen(uint64(len(kind))) + len(kind) +
		len(keyPrev) + headLen(cas.Size) + cas.Size + len(keyPayload) + headLen(uint64(len(payload))) + len(payload)
	b := make([]byte, 0, n)
	b = append(b, cas.SelfDescribePrefix...)
	b = appendHead(b, majorMap, 4)
	b = appendHead(append(b, keySeq...), majorUint, seq)
	b = append(appendHead(append(b, keyKind...), majorText, uint64(len(kind))), kind...)
	b = append(appendHead(append(b, keyPrev...), majorBytes, cas.Size), prev[:]...)
	b = append(appendHead(append(b, keyPayload...), majorBytes, uint64(len(payload))), payload...)
	return b, nil
}

// appendHead appends the shortest CBOR head of major type major and
// argument n.
func appendHead(b []byte, major byte, n uint64) []byte {
	m := major << 5
	switch {
	case n < 24:
		return append(b, m|byte(n))
	case n <= 0xff:
		return append(b, m|24, byte(n))
	case n <= 0xffff:
		return append(b, m|25, byte(n>>8), byte(n))
	case n <= 0xffffffff:
		return append(b, m|26, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	return append(b, m|27, byte(n>>56), byte(n>>48), byte(n>>40), byte(n>>32), byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

// headLen is the length of the shortest CBOR head of argument n.
func headLen(n uint64) int {
	switch {
	case n < 24:
		return 1
	case n <= 0xff:
		return 2
	case n <= 0xffff:
		return 3
	case n <= 0xffffffff:
		return 5
	}
	return 9
}

// DecodeRecord parses the stored bytes of one record and computes its
// Hash. It accepts exactly the bytes Encode produces — the canonical
// encoding, self-describe prefix included — and returns an error saying
// what is wrong and at which byte offset otherwise; it never panics.
// The returned Payload aliases b.
func DecodeRecord(b []byte) (Record, error) {
	d := decoder{b: b}
	rec, err := d.record()
	if err != nil {
		return Record{}, err
	}
	rec.Hash = cas.Sum(b)
	return rec, nil
}

// The encoded keys of a record map in canonical order: shorter encodings
// first, then bytewise ("seq" < "kind" < "prev" < "payload").
var (
	keySeq     = []byte{0x63, 's', 'e', 'q'}
	keyKind    = []byte{0x64, 'k', 'i', 'n', 'd'}
	keyPrev    = []byte{0x64, 'p', 'r', 'e', 'v'}
	keyPayload = []byte{0x67, 'p', 'a', 'y', 'l', 'o', 'a', 'd'}
)

// CBOR major types used by records.
const (
	majorUint  = 0
	majorBytes = 2
	majorText  = 3
	majorMap   = 5
)

// decoder is a strict reader for the one shape a record has. Accepting
// only the canonical bytes means a decoded record re-encodes to the very
// bytes its hash was computed over.
type decoder struct {
	b   []byte
	off int
}

func (d *decoder) errorf(format string, args ...any) error {
	return d.errorAt(d.off, format, args...)
}

func (d *decoder) errorAt(off int, format string, args ...any) error {
	return fmt.Errorf("at byte %d: %s", off, fmt.Sprintf(format, args...))
}

func (d *decoder) record() (Record, error) {
	var rec Record
	if !bytes.HasPrefix(d.b, cas.SelfDescribePrefix) {
		return rec, d.errorf("missing self-describe prefix d9d9f7")
	}
	d.off = len(cas.SelfDescribePrefix)
	start := d.off
	if n, err := d.head(majorMap, "map header"); err != nil {
		return rec, err
	} else if n != 4 {
		return rec, d.errorAt(start, "map has %d entries, want 4 (seq, kind, prev, payload)", n)
	}

	if err := d.key(keySeq, "seq"); err != nil {
		return rec, err
	}
	start = d.off
	seq, err := d.head(majorUint, "seq")
	if err != nil {
		return rec, err
	}
	if seq == 0 {
		return rec, d.errorAt(start, "seq is 0 (seqs start at 1)")
	}
	rec.Seq = seq

	if err := d.key(keyKind, "kind"); err != nil {
		return rec, err
	}
	start = d.off
	kind, err := d.bytes(majorText, "kind", MaxKindLen)
	if err != nil {
		return rec, err
	}
	if len(kind) == 0 {
		return rec, d.errorAt(start, "empty kind")
	}
	if !utf8.Valid(kind) {
		return rec, d.errorAt(start, "kind is not valid UTF-8")
	}
	rec.Kind = internKind(kind)

	if err := d.key(keyPrev, "prev"); err != nil {
		return rec, err
	}
	start = d.off
	prev, err := d.bytes(majorBytes, "prev", cas.Size)
	if err != nil {
		return rec, err
	}
	if len(prev) != cas.Size {
		return rec, d.errorAt(start, "prev is %d bytes, want %d", len(prev), cas.Size)
	}
	rec.Prev = cas.RefFromDigest(cas.BLAKE3, [cas.Size]byte(prev))

	if err := d.key(keyPayload, "payload"); err != nil {
		return rec, err
	}
	payload, err := d.bytes(majorBytes, "payload", MaxPayloadSize)
	if err != nil {
		return rec, err
	}
	rec.Payload = payload

	if d.off != len(d.b) {
		return rec, d.errorf("%d trailing bytes after the record", len(d.b)-d.off)
	}
	return rec, nil
}

// head reads a CBOR item head of the given major type in its shortest
// form and returns its argument.
func (d *decoder) head(major byte, what string) (uint64, error) {
	if d.off >= len(d.b) {
		return 0, d.errorf("truncated: want %s", what)
	}
	ib := d.b[d.off]
	if ib>>5 != major {
		return 0, d.errorf("%s: want CBOR major type %d, got %d (byte %#02x)", what, major, ib>>5, ib)
	}
	ai := ib & 0x1f
	var size int
	switch {
	case ai < 24:
		d.off++
		return uint64(ai), nil
	case ai == 24:
		size = 1
	case ai == 25:
		size = 2
	case ai == 26:
		size = 4
	case ai == 27:
		size = 8
	default:
		return 0, d.errorf("%s: indefinite length or reserved additional info %d", what, ai)
	}
	if len(d.b)-d.off-1 < size {
		return 0, d.errorf("truncated: %s needs %d more bytes", what, size)
	}
	p := d.b[d.off+1 : d.off+1+size]
	var v, min uint64
	switch size {
	case 1:
		v, min = uint64(p[0]), 24
	case 2:
		v, min = uint64(binary.BigEndian.Uint16(p)), 1<<8
	case 4:
		v, min = uint64(binary.BigEndian.Uint32(p)), 1<<16
	case 8:
		v, min = binary.BigEndian.Uint64(p), 1<<32
	}
	if v < min {
		return 0, d.errorf("%s: %d not in its shortest form", what, v) // d.off is the item's first byte
	}
	d.off += 1 + size
	return v, nil
}

// bytes reads a byte or text string of at most max bytes.
func (d *decoder) bytes(major byte, what string, max int) ([]byte, error) {
	start := d.off
	n, err := d.head(major, what)
	if err != nil {
		return nil, err
	}
	if n > uint64(max) {
		d.off = start
		return nil, d.errorf("%s is %d bytes, at most %d allowed", what, n, max)
	}
	if left := len(d.b) - d.off; uint64(left) < n {
		d.off = start
		return nil, d.errorf("truncated: %s is %d bytes, only %d left", what, n, left)
	}
	s := d.b[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return s, nil
}

// key reads one map key, which must be exactly want.
func (d *decoder) key(want []byte, name string) error {
	if !bytes.HasPrefix(d.b[d.off:], want) {
		return d.errorf("want key %q", name)
	}
	d.off += len(want)
	return nil
}

// chain verifies records one after the other as a backend reads them in
// key order.
type chain struct {
	world string
	next  uint64  // the seq the next record must have
	last  cas.Ref // hash of record next-1, or the genesis
}

// newChain starts a chain at seq from, where prev is the hash of record
// from-1 (Genesis(world) if from is 1).
func newChain(world string, from uint64, prev cas.Ref) *chain {
	return &chain{world: world, next: from, last: prev}
}

// check verifies the record stored under key seq with bytes value and
// returns it. The Record's Payload aliases value.
func (c *chain) check(seq uint64, value []byte) (Record, error) {
	if seq != c.next {
		if seq > c.next {
			return Record{}, corruptf(c.world, c.next, "record %d is missing (the next stored record is %d)", c.next, seq)
		}
		return Record{}, corruptf(c.world, seq, "record %d stored out of order after %d", seq, c.next-1)
	}
	rec, err := DecodeRecord(value)
	if err != nil {
		return Record{}, corruptf(c.world, seq, "record %d does not decode: %v", seq, err)
	}
	if rec.Seq != seq {
		return Record{}, corruptf(c.world, seq, "record stored as seq %d holds seq %d", seq, rec.Seq)
	}
	if rec.Prev != c.last { // both BLAKE3: DecodeRecord, Genesis and cas.Sum make no other
		return Record{}, brokenLink(c.world, seq, rec.Prev, c.last)
	}
	c.last = rec.Hash
	c.next++
	return rec, nil
}

// finish checks that the last record checked is the world's head. It is
// called when the reader has reached the end of the stored records.
func (c *chain) finish(head Head) error {
	last := c.next - 1
	switch {
	case head.Seq > last:
		return corruptf(c.world, last+1, "record %d is missing (the head is seq %d, the records end at %d)", last+1, head.Seq, last)
	case head.Seq < last:
		return corruptf(c.world, head.Seq+1, "record %d is stored beyond the head (seq %d)", head.Seq+1, head.Seq)
	case head.Seq > 0 && head.Hash != c.last:
		return corruptf(c.world, last, "hash chain broken at seq %d: the head is %s, but record %d hashes to %s (record %d or the head was altered)",
			last, head.Hash, last, c.last, last)
	}
	return nil
}

// encodeEntries encodes entries as the records that follow head in world
// and returns their bytes and the new head.
func encodeEntries(world string, head Head, entries []Entry) ([][]byte, Head, error) {
	prev := head.Hash
	if head.Seq == 0 {
		prev = Genesis(world)
	}
	if head.Seq > ^uint64(0)-uint64(len(entries)) {
		return nil, Head{}, fmt.Errorf("journal: world %s: seq would overflow", world)
	}
	out := make([][]byte, len(entries))
	for i, e := range entries {
		seq := head.Seq + 1
		b, err := encodeRecord(seq, e.Kind, e.Payload, prev.Digest())
		if err != nil {
			return nil, Head{}, fmt.Errorf("world %s: %w", world, err)
		}
		out[i] = b
		prev = cas.Sum(b)
		head = Head{Seq: seq, Hash: prev}
	}
	return out, head, nil
}

// kinds caches record kinds, which are few and recur in every record
// read: decoding a record makes no string for its kind once the kind is
// cached. A slot holds the last kind stored in it.
var kinds [64]atomic.Pointer[string]

func internKind(b []byte) string {
	h := uint32(2166136261) // FNV-1a
	for _, c := range b {
		h ^= uint32(c)
		h *= 16777619
	}
	slot := &kinds[h%uint32(len(kinds))]
	if p := slot.Load(); p != nil && *p == string(b) {
		return *p
	}
	s := string(b)
	slot.Store(&s)
	return s
}
