package cas

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"

	"github.com/fxamacker/cbor/v2"
)

// SelfDescribePrefix is CBOR tag 55799 ("self-described CBOR"). Every
// top-level node demiurge encodes starts with it, byte-compatible with
// AgentOS's aos-cbor, and a node's ref is the BLAKE3 of the prefixed bytes.
var SelfDescribePrefix = []byte{0xd9, 0xd9, 0xf7}

// ErrNotCanonical is returned (wrapped) by CheckCanonical when bytes decode
// but are not the canonical encoding of what they hold.
var ErrNotCanonical = errors.New("cas: not canonical CBOR")

// Limits of the decoder, so hostile input costs bounded memory and stack.
const (
	maxNestedLevels  = 128
	maxArrayElements = 1 << 22
	maxMapPairs      = 1 << 22
)

var (
	encMode cbor.EncMode
	decMode cbor.DecMode
)

func init() {
	// Core Deterministic Encoding (RFC 8949 §4.2.1): shortest integers and
	// floats, definite lengths, map keys sorted by the bytewise order of
	// their encodings. Go time values never appear in nodes (times are
	// integer nanoseconds), so no time options are needed.
	eo := cbor.CoreDetEncOptions()
	eo.BinaryMarshaler = cbor.BinaryMarshalerNone
	var err error
	encMode, err = eo.EncMode()
	if err != nil {
		panic(fmt.Sprintf("cas: canonical CBOR options: %v", err)) // programmer error
	}
	decMode, err = cbor.DecOptions{
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		MaxNestedLevels:   maxNestedLevels,
		MaxArrayElements:  maxArrayElements,
		MaxMapPairs:       maxMapPairs,
		IndefLength:       cbor.IndefLengthForbidden,
		TagsMd:            cbor.TagsAllowed,
		IntDec:            cbor.IntDecConvertNone,
		UTF8:              cbor.UTF8RejectInvalid,
		DefaultMapType:    reflect.TypeFor[map[any]any](),
		BinaryUnmarshaler: cbor.BinaryUnmarshalerNone,
	}.DecMode()
	if err != nil {
		panic(fmt.Sprintf("cas: CBOR decode options: %v", err)) // programmer error
	}
}

// Marshal returns the canonical CBOR encoding of v, prefixed with the
// self-describe tag 55799: the bytes a node is stored and hashed as.
//
// Go structs encode as maps keyed by their `cbor` (or field) names, in
// canonical key order; Go maps are sorted by their encoded keys, so the
// result never depends on map iteration order.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(64)
	buf.Write(SelfDescribePrefix)
	if err := encMode.NewEncoder(&buf).Encode(v); err != nil {
		return nil, fmt.Errorf("cas: encode canonical CBOR: %w", err)
	}
	return buf.Bytes(), nil
}

// MarshalBody is like Marshal without the self-describe prefix: the
// canonical encoding of v for embedding inside another item.
func MarshalBody(v any) ([]byte, error) {
	b, err := encMode.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("cas: encode canonical CBOR: %w", err)
	}
	return b, nil
}

// Unmarshal decodes one CBOR item from data into v. A leading
// self-describe tag is skipped. Duplicate map keys, indefinite lengths,
// invalid UTF-8, trailing bytes and nesting deeper than 128 levels are
// errors; Unmarshal never panics on bad input.
//
// Decoding into an empty interface yields nil, bool, uint64 (non-negative
// integers), int64 (negative integers), float64, string, []byte, []any
// and map[any]any.
func Unmarshal(data []byte, v any) error {
	data = bytes.TrimPrefix(data, SelfDescribePrefix)
	if err := decMode.Unmarshal(data, v); err != nil {
		return fmt.Errorf("cas: decode CBOR: %w", err)
	}
	return nil
}

// NodeRef returns the canonical bytes of v (with the self-describe prefix)
// and their ref.
func NodeRef(v any) (Ref, []byte, error) {
	b, err := Marshal(v)
	if err != nil {
		return Ref{}, nil, err
	}
	return Sum(b), b, nil
}

// CheckCanonical reports whether data is exactly the canonical encoding,
// with the self-describe prefix, of the item it holds. It returns nil if
// so, an error wrapping ErrNotCanonical if the item decodes but its
// canonical encoding differs, and a decode error otherwise.
func CheckCanonical(data []byte) error {
	if !bytes.HasPrefix(data, SelfDescribePrefix) {
		return fmt.Errorf("%w: missing self-describe prefix d9d9f7", ErrNotCanonical)
	}
	var v any
	if err := Unmarshal(data, &v); err != nil {
		return err
	}
	again, err := Marshal(v)
	if err != nil {
		return err
	}
	if !bytes.Equal(again, data) {
		return fmt.Errorf("%w: %d bytes re-encode to %d different bytes", ErrNotCanonical, len(data), len(again))
	}
	return nil
}
