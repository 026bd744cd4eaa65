package schema

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/fxamacker/cbor/v2"
)

// Encode returns the canonical CBOR of v with the self-describe prefix: the
// bytes a value is stored and hashed as. It produces exactly the bytes
// cas.Marshal would, faster, without reflection.
func Encode(v Value) ([]byte, error) {
	// Encode into a reused buffer and copy the result out: one allocation
	// of the exact size, where appending to a fresh slice would make one
	// for every doubling.
	var out []byte
	err := WithEncoding(v, func(b []byte) error { out = bytes.Clone(b); return nil })
	return out, err
}

// scratch holds WithEncoding's buffers; maxScratch is the largest kept.
var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

const maxScratch = 1 << 20

// EncodeBody is Encode without the self-describe prefix, for embedding.
func EncodeBody(v Value) ([]byte, error) {
	return appendValue(make([]byte, 0, 32), v)
}

// AppendBody appends the canonical CBOR of v, without the self-describe
// prefix, to b: EncodeBody into a buffer the caller has.
func AppendBody(b []byte, v Value) ([]byte, error) {
	return appendValue(b, v)
}

// Ref returns the content ref of a value: the BLAKE3 of Encode(v).
func Ref(v Value) (cas.Ref, error) {
	var r cas.Ref
	err := WithEncoding(v, func(b []byte) error { r = cas.Sum(b); return nil })
	return r, err
}

// WithEncoding calls fn with Encode(v) in a buffer that is reused once fn
// returns, so fn must not keep it: for a caller that only reads the
// encoding (hashes it, decodes it) and need not allocate it. It returns
// the encoding's error, or fn's.
func WithEncoding(v Value, fn func([]byte) error) error {
	sp := scratch.Get().(*[]byte)
	b := append((*sp)[:0], cas.SelfDescribePrefix...)
	b, err := appendValue(b, v)
	if err == nil {
		err = fn(b)
		if cap(b) <= maxScratch {
			*sp = b
		}
	}
	scratch.Put(sp)
	return err
}

// MarshalCBOR makes a *Map encodable by cas.Marshal and any CBOR encoder.
func (m *Map) MarshalCBOR() ([]byte, error) { return appendValue(nil, m) }

var _ cbor.Marshaler = (*Map)(nil)

func appendHead(b []byte, major byte, n uint64) []byte {
	major <<= 5
	switch {
	case n < 24:
		return append(b, major|byte(n))
	case n <= math.MaxUint8:
		return append(b, major|24, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, major|25), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, major|26), uint32(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, major|27), n)
	}
}

func appendValue(b []byte, v Value) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, 0xf6), nil
	case bool:
		if v {
			return append(b, 0xf5), nil
		}
		return append(b, 0xf4), nil
	case uint64:
		return appendHead(b, 0, v), nil
	case int64:
		if v >= 0 {
			return appendHead(b, 0, uint64(v)), nil
		}
		return appendHead(b, 1, uint64(-(v + 1))), nil
	case string:
		if !utf8.ValidString(v) {
			return nil, errors.New("schema: text is not valid UTF-8")
		}
		b = appendHead(b, 3, uint64(len(v)))
		return append(b, v...), nil
	case []byte:
		b = appendHead(b, 2, uint64(len(v)))
		return append(b, v...), nil
	case []Value:
		b = appendHead(b, 4, uint64(len(v)))
		var err error
		for _, e := range v {
			if b, err = appendValue(b, e); err != nil {
				return nil, err
			}
		}
		return b, nil
	case *Map:
		b = appendHead(b, 5, uint64(v.Len()))
		var err error
		for i := range v.Entries() {
			e := &v.entries[i]
			b = append(b, e.encoding()...)
			if b, err = appendValue(b, e.Value); err != nil {
				return nil, err
			}
		}
		return b, nil
	default:
		if i, ok := canonicalInt(v); ok {
			return appendValue(b, i)
		}
		return nil, fmt.Errorf("schema: %T is not a value", v)
	}
}

// Decode decodes CBOR bytes (with or without the self-describe prefix)
// into a Value: maps become *Map, arrays []Value, integers canonical.
// It checks well-formedness only; Normalize checks the value against a
// type. Floats, tags and simple values other than null, true and false are
// errors: AIR values never hold them.
func Decode(data []byte) (Value, error) {
	return decodeFast(data)
}

const maxDepth = 128

func sortEntries(es []MapEntry) {
	sort.Slice(es, func(i, j int) bool { return string(es[i].encoding()) < string(es[j].encoding()) })
}
