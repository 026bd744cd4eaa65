package cas

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
	"unicode/utf8"

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

// cborModes are the encoder and decoder of canonical CBOR.
type cborModes struct {
	enc cbor.UserBufferEncMode
	dec cbor.DecMode
}

// modes returns the CBOR modes, made on first use: making them cost every
// start of the binary ~0.04 ms, though a command that touches no store
// (demiurge sh without --manifest) never encodes a node.
var modes = sync.OnceValue(func() cborModes {
	// Core Deterministic Encoding (RFC 8949 §4.2.1): shortest integers,
	// definite lengths, map keys sorted by the bytewise order of their
	// encodings. Floats never get through checkAIR. Go time values never
	// appear in nodes (times are integer nanoseconds), so no time options
	// are needed.
	eo := cbor.CoreDetEncOptions()
	eo.BinaryMarshaler = cbor.BinaryMarshalerNone
	enc, err := eo.UserBufferEncMode()
	if err != nil {
		panic(fmt.Sprintf("cas: canonical CBOR options: %v", err)) // programmer error
	}
	dec, err := cbor.DecOptions{
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		MaxNestedLevels:   maxNestedLevels,
		MaxArrayElements:  maxArrayElements,
		MaxMapPairs:       maxMapPairs,
		IndefLength:       cbor.IndefLengthForbidden,
		TagsMd:            cbor.TagsForbidden, // checkAIR rejects them first, with an offset
		IntDec:            cbor.IntDecConvertNone,
		UTF8:              cbor.UTF8RejectInvalid,
		DefaultMapType:    reflect.TypeFor[map[any]any](),
		BinaryUnmarshaler: cbor.BinaryUnmarshalerNone,
	}.DecMode()
	if err != nil {
		panic(fmt.Sprintf("cas: CBOR decode options: %v", err)) // programmer error
	}
	return cborModes{enc: enc, dec: dec}
})

// Marshal returns the canonical CBOR encoding of v, prefixed with the
// self-describe tag 55799: the bytes a node is stored and hashed as.
//
// Go structs encode as maps keyed by their `cbor` (or field) names, in
// canonical key order; Go maps are sorted by their encoded keys, so the
// result never depends on map iteration order. Nil slices and nil maps
// encode as null, empty ones as an empty array or map: the two hash
// differently.
//
// Marshal refuses what Unmarshal refuses (see Unmarshal): floats, tags,
// simple values other than false, true and null, invalid UTF-8 in text,
// and negative integers below -2^63, so Unmarshal accepts everything
// Marshal writes (into an empty interface too, unless a map has array or
// map keys, see Unmarshal).
func Marshal(v any) ([]byte, error) {
	buf := encBufPool.Get().(*bytes.Buffer)
	defer putEncBuf(buf)
	buf.Reset()
	buf.Write(SelfDescribePrefix)
	if err := modes().enc.MarshalToBuffer(v, buf); err != nil {
		return nil, fmt.Errorf("cas: encode canonical CBOR: %w", err)
	}
	b := buf.Bytes()
	if err := checkAIR(b[len(SelfDescribePrefix):], len(SelfDescribePrefix)); err != nil {
		return nil, fmt.Errorf("cas: encode canonical CBOR: %w", err)
	}
	return bytes.Clone(b), nil
}

// encBufPool holds encoding buffers, so that Marshal allocates only its
// result.
var encBufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func putEncBuf(b *bytes.Buffer) {
	if b.Cap() <= 1<<20 { // do not pin the memory of a huge node
		encBufPool.Put(b)
	}
}

// MarshalBody is like Marshal without the self-describe prefix: the
// canonical encoding of v for embedding inside another item.
func MarshalBody(v any) ([]byte, error) {
	b, err := modes().enc.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("cas: encode canonical CBOR: %w", err)
	}
	if err := checkAIR(b, 0); err != nil {
		return nil, fmt.Errorf("cas: encode canonical CBOR: %w", err)
	}
	return b, nil
}

// Unmarshal decodes one CBOR item from data into v. A leading
// self-describe tag is skipped. Duplicate map keys, indefinite lengths,
// invalid UTF-8, trailing bytes and nesting deeper than 128 levels are
// errors; Unmarshal never panics on bad input.
//
// Unmarshal accepts only the CBOR that AIR values are made of, so that
// everything it decodes re-encodes to the same canonical bytes. It
// rejects, with the byte offset of the culprit:
//   - floats (of any width, NaN and infinities included): AIR has no
//     floats, decimals are dec128 text, times and durations integers;
//   - tags other than the one leading 55799 prefix (bignums, dates, a
//     second 55799…): AIR values carry no tags;
//   - simple values other than false, true and null (undefined included,
//     which would otherwise decode as nil and re-encode as null);
//   - negative integers below -2^63 (AIR int is 64-bit; nat is uint64).
//
// Decoding into an empty interface yields nil, bool, uint64 (non-negative
// integers), int64 (negative integers), string, []byte, []any and
// map[any]any, whose keys are any of those scalars except that byte
// string keys are cbor.ByteString (a []byte cannot be a map key). A map
// whose keys are arrays or maps cannot be decoded into an empty interface
// and is an error. Marshal of the decoded value yields the canonical
// encoding of the input.
func Unmarshal(data []byte, v any) error {
	off := 0
	if bytes.HasPrefix(data, SelfDescribePrefix) {
		data = data[len(SelfDescribePrefix):]
		off = len(SelfDescribePrefix)
	}
	if err := checkAIR(data, off); err != nil {
		return fmt.Errorf("cas: decode CBOR: %w", err)
	}
	if err := modes().dec.Unmarshal(data, v); err != nil {
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

// checkAIR checks that data is exactly one well-formed CBOR item made only
// of what AIR values contain: unsigned and negative integers within 64-bit
// range, byte and text strings (valid UTF-8), arrays, maps, false, true and
// null, all of definite length and nested at most maxNestedLevels deep.
// base is the offset of data[0] in the caller's input, for messages.
func checkAIR(data []byte, base int) error {
	if len(data) == 0 {
		return fmt.Errorf("empty input: want one CBOR item")
	}
	end, err := checkItem(data, 0, 1, base)
	if err != nil {
		return err
	}
	if end != len(data) {
		return fmt.Errorf("at byte %d: %d trailing bytes after the CBOR item", base+end, len(data)-end)
	}
	return nil
}

// checkItem checks the item starting at data[off] and returns the offset
// just past it.
func checkItem(data []byte, off, depth, base int) (int, error) {
	if depth > maxNestedLevels {
		return 0, fmt.Errorf("at byte %d: nested deeper than %d levels", base+off, maxNestedLevels)
	}
	if off >= len(data) {
		return 0, fmt.Errorf("at byte %d: unexpected end of input", base+off)
	}
	start := off
	ib := data[off]
	major, ai := ib>>5, ib&0x1f
	off++
	var arg uint64
	switch {
	case ai < 24:
		arg = uint64(ai)
	case ai <= 27:
		n := 1 << (ai - 24) // 1, 2, 4 or 8 bytes
		if len(data)-off < n {
			return 0, fmt.Errorf("at byte %d: unexpected end of input in item head", base+start)
		}
		for _, c := range data[off : off+n] {
			arg = arg<<8 | uint64(c)
		}
		off += n
	case ai == 31:
		if major == 7 {
			return 0, fmt.Errorf("at byte %d: unexpected break (0xff) outside an indefinite-length item", base+start)
		}
		return 0, fmt.Errorf("at byte %d: indefinite-length item not allowed", base+start)
	default:
		return 0, fmt.Errorf("at byte %d: reserved additional information %d in initial byte 0x%02x", base+start, ai, ib)
	}
	switch major {
	case 0: // unsigned integer
		return off, nil
	case 1: // negative integer -1-arg
		if arg > math.MaxInt64 {
			return 0, fmt.Errorf("at byte %d: negative integer -1-%d is below -2^63 (AIR integers are 64-bit)", base+start, arg)
		}
		return off, nil
	case 2, 3: // byte string, text string
		if arg > uint64(len(data)-off) {
			return 0, fmt.Errorf("at byte %d: string of %d bytes runs past the end of input (%d bytes left)", base+start, arg, len(data)-off)
		}
		end := off + int(arg)
		if major == 3 && !utf8.Valid(data[off:end]) {
			return 0, fmt.Errorf("at byte %d: text string is not valid UTF-8", base+start)
		}
		return end, nil
	case 4, 5: // array, map
		items := arg
		if major == 5 {
			if arg > math.MaxUint64/2 {
				return 0, fmt.Errorf("at byte %d: map of %d pairs runs past the end of input", base+start, arg)
			}
			items = 2 * arg
		}
		// Every item takes at least one byte: a count larger than what is
		// left is malformed, and checking it first bounds the loop.
		if items > uint64(len(data)-off) {
			return 0, fmt.Errorf("at byte %d: %s of %d items runs past the end of input (%d bytes left)", base+start, kindName(major), arg, len(data)-off)
		}
		var err error
		for i := uint64(0); i < items; i++ {
			if off, err = checkItem(data, off, depth+1, base); err != nil {
				return 0, err
			}
		}
		return off, nil
	case 6:
		return 0, fmt.Errorf("at byte %d: tag %d not allowed (AIR values carry no tags; only a leading 55799 prefix is skipped)", base+start, arg)
	default: // 7: simple values and floats
		switch {
		case ai == 20 || ai == 21 || ai == 22: // false, true, null
			return off, nil
		case ai == 23:
			return 0, fmt.Errorf("at byte %d: undefined (0xf7) not allowed: use null", base+start)
		case ai >= 25:
			return 0, fmt.Errorf("at byte %d: float not allowed (AIR values have no floats: decimals are dec128 text, times integer nanoseconds)", base+start)
		default:
			return 0, fmt.Errorf("at byte %d: simple value %d not allowed (only false, true and null)", base+start, arg)
		}
	}
}

func kindName(major byte) string {
	if major == 4 {
		return "array"
	}
	return "map"
}
