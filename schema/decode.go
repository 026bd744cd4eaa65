package schema

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/cas"
)

// decoder parses CBOR straight into Values. It accepts what AIR values are
// made of — integers, byte and text strings, arrays, maps, false, true and
// null, all of definite length, optionally after one self-describe tag —
// and rejects the rest (floats, other tags, undefined, indefinite lengths)
// with the byte offset. Map keys are re-encoded canonically, entries sorted
// if the input was not, and duplicates are an error.
type decoder struct {
	data []byte
	off  int
}

var errTruncated = errors.New("unexpected end of data")

func (d *decoder) fail(format string, args ...any) error {
	return fmt.Errorf("cas: decode CBOR: at byte %d: %s", d.off, fmt.Sprintf(format, args...))
}

// head reads an item's major type and argument.
func (d *decoder) head() (major byte, arg uint64, err error) {
	if d.off >= len(d.data) {
		return 0, 0, d.fail("%v", errTruncated)
	}
	b := d.data[d.off]
	d.off++
	major, info := b>>5, b&0x1f
	switch {
	case info < 24:
		return major, uint64(info), nil
	case info == 24:
		if d.off+1 > len(d.data) {
			return 0, 0, d.fail("%v", errTruncated)
		}
		arg = uint64(d.data[d.off])
		d.off++
	case info == 25:
		if d.off+2 > len(d.data) {
			return 0, 0, d.fail("%v", errTruncated)
		}
		arg = uint64(binary.BigEndian.Uint16(d.data[d.off:]))
		d.off += 2
	case info == 26:
		if d.off+4 > len(d.data) {
			return 0, 0, d.fail("%v", errTruncated)
		}
		arg = uint64(binary.BigEndian.Uint32(d.data[d.off:]))
		d.off += 4
	case info == 27:
		if d.off+8 > len(d.data) {
			return 0, 0, d.fail("%v", errTruncated)
		}
		arg = binary.BigEndian.Uint64(d.data[d.off:])
		d.off += 8
	case info == 31:
		d.off--
		return 0, 0, d.fail("indefinite-length items are not allowed")
	default:
		d.off--
		return 0, 0, d.fail("reserved additional information %d", info)
	}
	return major, arg, nil
}

func (d *decoder) value(depth int) (Value, error) {
	if depth > maxDepth {
		return nil, d.fail("value nested deeper than %d levels", maxDepth)
	}
	start := d.off
	major, arg, err := d.head()
	if err != nil {
		return nil, err
	}
	switch major {
	case 0:
		return arg, nil
	case 1:
		if arg > math.MaxInt64 {
			d.off = start
			return nil, d.fail("negative integer below -2^63")
		}
		return -1 - int64(arg), nil
	case 2, 3:
		if arg > uint64(len(d.data)-d.off) {
			return nil, d.fail("%v", errTruncated)
		}
		b := d.data[d.off : d.off+int(arg)]
		d.off += int(arg)
		if major == 2 {
			return bytes.Clone(b), nil
		}
		if e := internText(b); e != nil {
			return e.v, nil // no string made, nor boxed
		}
		if !utf8.Valid(b) {
			d.off = start
			return nil, d.fail("text is not valid UTF-8")
		}
		return string(b), nil
	case 4:
		if arg > uint64(len(d.data)-d.off) { // each element takes at least a byte
			return nil, d.fail("%v", errTruncated)
		}
		out := make([]Value, arg)
		for i := range out {
			if out[i], err = d.value(depth + 1); err != nil {
				return nil, err
			}
		}
		return out, nil
	case 5:
		if arg > uint64(len(d.data)-d.off)/2 {
			return nil, d.fail("%v", errTruncated)
		}
		m := allocMap(int(arg))
		es := m.entries
		sorted := true
		for i := range es {
			k, err := d.value(depth + 1)
			if err != nil {
				return nil, err
			}
			switch k.(type) {
			case string, uint64, int64:
			default:
				return nil, d.fail("map key of type %T is not allowed (AIR map keys are integers or text)", k)
			}
			v, err := d.value(depth + 1)
			if err != nil {
				return nil, err
			}
			es[i] = MapEntry{Key: k, Value: v, enc: keyEncoding(k)} // interned for short texts
			if i > 0 && bytes.Compare(es[i-1].enc, es[i].enc) >= 0 {
				sorted = false
			}
		}
		if !sorted {
			sort.Slice(es, func(i, j int) bool { return bytes.Compare(es[i].enc, es[j].enc) < 0 })
			for i := 1; i < len(es); i++ {
				if bytes.Equal(es[i-1].enc, es[i].enc) {
					return nil, d.fail("duplicate map key %s", String(es[i].Key))
				}
			}
		}
		return m, nil
	case 6:
		d.off = start
		return nil, d.fail("CBOR tag %d is not allowed in a value", arg)
	default: // 7
		switch arg {
		case 20:
			return false, nil
		case 21:
			return true, nil
		case 22:
			return nil, nil
		}
		d.off = start
		if arg >= 25 && arg <= 27 {
			return nil, d.fail("floating-point numbers are not allowed in a value (use dec128 text)")
		}
		return nil, d.fail("simple value %d is not allowed in a value", arg)
	}
}

// decodeFast parses data (with or without the self-describe prefix) into a
// Value.
func decodeFast(data []byte) (Value, error) {
	d := &decoder{data: bytes.TrimPrefix(data, cas.SelfDescribePrefix)}
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	if d.off != len(d.data) {
		return nil, d.fail("%d bytes after the value", len(d.data)-d.off)
	}
	return v, nil
}
