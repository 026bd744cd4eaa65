package wasm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"
)

// ABIVersion is the version of AgentOS's reducer ABI this host speaks.
const ABIVersion = 1

// Input is the envelope a step sends a module: AgentOS's ReducerInput.
type Input struct {
	State       []byte // canonical CBOR of the cell's state; nil for a new cell
	EventSchema string
	Event       []byte // canonical CBOR of the event
	Key         []byte // canonical CBOR of the cell key; nil if not keyed
	Ctx         []byte // canonical CBOR of sys/ReducerContext@1; nil unless the module declares context
}

// AppendInput appends the envelope's CBOR to b: a map with the keys in
// AgentOS's order (serde's field order), version, state, event {schema,
// value, key?}, ctx?, as aos-wasm-abi writes it.
func AppendInput(b []byte, in *Input) []byte {
	n := uint64(3)
	if in.Ctx != nil {
		n++
	}
	b = appendHead(b, 5, n)
	b = appendText(b, "version")
	b = appendHead(b, 0, ABIVersion)
	b = appendText(b, "state")
	if in.State == nil {
		b = append(b, 0xf6)
	} else {
		b = appendBytes(b, in.State)
	}
	b = appendText(b, "event")
	en := uint64(2)
	if in.Key != nil {
		en++
	}
	b = appendHead(b, 5, en)
	b = appendText(b, "schema")
	b = appendText(b, in.EventSchema)
	b = appendText(b, "value")
	b = appendBytes(b, in.Event)
	if in.Key != nil {
		b = appendText(b, "key")
		b = appendBytes(b, in.Key)
	}
	if in.Ctx != nil {
		b = appendText(b, "ctx")
		b = appendBytes(b, in.Ctx)
	}
	return b
}

// AppendPureInput appends the envelope of a pure module's run: {version,
// input, ctx?}.
func AppendPureInput(b []byte, input, ctx []byte) []byte {
	n := uint64(2)
	if ctx != nil {
		n++
	}
	b = appendHead(b, 5, n)
	b = appendText(b, "version")
	b = appendHead(b, 0, ABIVersion)
	b = appendText(b, "input")
	b = appendBytes(b, input)
	if ctx != nil {
		b = appendText(b, "ctx")
		b = appendBytes(b, ctx)
	}
	return b
}

func appendHead(b []byte, major byte, n uint64) []byte {
	m := major << 5
	switch {
	case n < 24:
		return append(b, m|byte(n))
	case n <= math.MaxUint8:
		return append(b, m|24, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, m|25), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, m|26), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, m|27), n)
}

func appendText(b []byte, s string) []byte { return append(appendHead(b, 3, uint64(len(s))), s...) }
func appendBytes(b, p []byte) []byte       { return append(appendHead(b, 2, uint64(len(p))), p...) }

// Output is the envelope a module's step returns: AgentOS's ReducerOutput.
type Output struct {
	// State is the CBOR of the cell's new state; StateNull reports a null
	// state, which deletes the cell.
	State     []byte
	StateNull bool
	Events    []OutEvent
	Effects   []OutEffect
	// Ann is the CBOR of the step's annotations, or nil.
	Ann []byte
}

// OutEvent is a domain event a module emits.
type OutEvent struct {
	Schema string
	Value  []byte // CBOR
	Key    []byte // CBOR of the cell key, or nil
}

// OutEffect is a micro-effect a module emits.
type OutEffect struct {
	Kind           string
	Params         []byte // CBOR
	CapSlot        string
	IdempotencyKey []byte
}

// PureOutput is the envelope a pure module's run returns.
type PureOutput struct {
	Output []byte
}

// ErrEnvelope is returned (wrapped in an *EnvelopeError) for output that
// is not a valid envelope.
var ErrEnvelope = errors.New("wasm: malformed envelope")

// EnvelopeError reports where a module's output envelope is malformed.
type EnvelopeError struct {
	Offset int    // byte offset in the output
	Path   string // the field, such as "effects[0].kind"
	Msg    string
}

func (e *EnvelopeError) Error() string {
	p := e.Path
	if p == "" {
		p = "envelope"
	}
	return fmt.Sprintf("wasm: malformed envelope: %s at byte %d: %s", p, e.Offset, e.Msg)
}

// Unwrap makes errors.Is(err, ErrEnvelope) true.
func (e *EnvelopeError) Unwrap() error { return ErrEnvelope }

// maxDepth bounds the nesting of values skipped in an envelope.
const maxDepth = 64

// cbor reads the subset of CBOR an envelope is made of.
type cbor struct {
	b    []byte
	off  int
	path string
	err  *EnvelopeError
}

func (d *cbor) fail(format string, args ...any) {
	if d.err == nil {
		d.err = &EnvelopeError{Offset: d.off, Path: d.path, Msg: fmt.Sprintf(format, args...)}
	}
}

// head reads an item's major type and argument; indefinite lengths,
// floats and reserved values are refused.
func (d *cbor) head() (byte, uint64) {
	if d.err != nil {
		return 0xff, 0
	}
	if d.off >= len(d.b) {
		d.fail("unexpected end of data")
		return 0xff, 0
	}
	c := d.b[d.off]
	d.off++
	major, info := c>>5, c&0x1f
	var n uint64
	switch {
	case info < 24:
		n = uint64(info)
	case info <= 27:
		size := 1 << (info - 24)
		if len(d.b)-d.off < size {
			d.off--
			d.fail("unexpected end of data")
			return 0xff, 0
		}
		for _, x := range d.b[d.off : d.off+size] {
			n = n<<8 | uint64(x)
		}
		d.off += size
	default:
		d.off--
		d.fail("indefinite lengths and reserved values are not allowed (initial byte 0x%02x)", c)
		return 0xff, 0
	}
	if major == 7 && info > 23 {
		d.off--
		d.fail("floats are not allowed")
		return 0xff, 0
	}
	return major, n
}

// skipTag skips the self-describe tag 55799 if the next item has it.
func (d *cbor) skipTag() {
	if len(d.b)-d.off >= 3 && d.b[d.off] == 0xd9 && d.b[d.off+1] == 0xd9 && d.b[d.off+2] == 0xf7 {
		d.off += 3
	}
}

// text reads a text string.
func (d *cbor) text() string {
	major, n := d.head()
	if d.err != nil {
		return ""
	}
	if major != 3 {
		d.fail("want a text string, got major type %d", major)
		return ""
	}
	b := d.take(n)
	if d.err == nil && !utf8.Valid(b) {
		d.fail("text is not UTF-8")
	}
	return string(b)
}

func (d *cbor) take(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)-d.off) {
		d.fail("length %d past the end of data", n)
		return nil
	}
	out := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return out
}

// bytesOrNull reads a byte string or null (null gives nil, true).
func (d *cbor) bytesOrNull() ([]byte, bool) {
	start := d.off
	major, n := d.head()
	if d.err != nil {
		return nil, false
	}
	switch {
	case major == 7 && n == 22:
		return nil, true
	case major == 2:
		return d.take(n), false
	case major == 4:
		// serde writes a Vec<u8> without serde_bytes as an array of
		// integers; accept it.
		out := make([]byte, 0, min(n, uint64(len(d.b))))
		for i := uint64(0); i < n && d.err == nil; i++ {
			m, v := d.head()
			if m != 0 || v > 255 {
				d.fail("want a byte (0-255) in a byte array")
				return nil, false
			}
			out = append(out, byte(v))
		}
		return out, false
	}
	d.off = start
	d.fail("want a byte string or null, got major type %d", major)
	return nil, false
}

// cborValue checks that b is one well-formed CBOR item of the kind a
// schema value is made of.
func cborValue(b []byte, path string) *EnvelopeError {
	d := &cbor{b: b, path: path}
	d.skipTag()
	d.skip(0)
	if d.err == nil && d.off != len(d.b) {
		d.fail("%d bytes after the value", len(d.b)-d.off)
	}
	return d.err
}

// skip skips one item.
func (d *cbor) skip(depth int) {
	if depth > maxDepth {
		d.fail("nested more than %d deep", maxDepth)
		return
	}
	major, n := d.head()
	switch major {
	case 0, 1:
	case 2, 3:
		d.take(n)
	case 4:
		for i := uint64(0); i < n && d.err == nil; i++ {
			d.skip(depth + 1)
		}
	case 5:
		for i := uint64(0); i < n && d.err == nil; i++ {
			d.skip(depth + 1)
			d.skip(depth + 1)
		}
	case 6:
		d.skip(depth + 1)
	case 7:
		if n != 20 && n != 21 && n != 22 {
			d.off--
			d.fail("simple value %d is not allowed", n)
		}
	}
}

// mapLen reads a map head.
func (d *cbor) mapLen() uint64 {
	major, n := d.head()
	if d.err == nil && major != 5 {
		d.off--
		d.fail("want a map, got major type %d", major)
	}
	return n
}

// arrayLen reads an array head, or null as an empty array.
func (d *cbor) arrayLen() uint64 {
	major, n := d.head()
	if d.err != nil {
		return 0
	}
	if major == 7 && n == 22 {
		return 0
	}
	if major != 4 {
		d.off--
		d.fail("want an array, got major type %d", major)
		return 0
	}
	return n
}

// DecodeOutput reads a step's output envelope. It accepts the envelope as
// serde_cbor writes it (any key order, unknown keys ignored, an optional
// self-describe tag) and checks that state, event values, keys and effect
// params are well-formed CBOR; state is required (null deletes the cell).
func DecodeOutput(b []byte) (*Output, error) {
	d := &cbor{b: b}
	out := &Output{}
	d.skipTag()
	n := d.mapLen()
	seenState := false
	seen := map[string]bool{}
	for i := uint64(0); i < n && d.err == nil; i++ {
		d.path = ""
		k := d.text()
		if d.err != nil {
			break
		}
		if seen[k] {
			d.fail("key %q twice", k)
			break
		}
		seen[k] = true
		d.path = k
		switch k {
		case "state":
			out.State, out.StateNull = d.bytesOrNull()
			seenState = true
			if !out.StateNull && d.err == nil {
				if e := cborValue(out.State, "state"); e != nil {
					return nil, e
				}
			}
		case "domain_events":
			m := d.arrayLen()
			for j := uint64(0); j < m && d.err == nil; j++ {
				d.path = fmt.Sprintf("domain_events[%d]", j)
				ev := d.event()
				out.Events = append(out.Events, ev)
			}
		case "effects":
			m := d.arrayLen()
			for j := uint64(0); j < m && d.err == nil; j++ {
				d.path = fmt.Sprintf("effects[%d]", j)
				out.Effects = append(out.Effects, d.effect())
			}
		case "ann":
			ann, null := d.bytesOrNull()
			if !null {
				out.Ann = ann
			}
		default:
			d.skip(0)
		}
	}
	if d.err == nil && d.off != len(d.b) {
		d.path = ""
		d.fail("%d bytes after the envelope", len(d.b)-d.off)
	}
	if d.err != nil {
		return nil, d.err
	}
	if !seenState {
		return nil, &EnvelopeError{Offset: 0, Msg: "no state (want bytes, or null to delete the cell)"}
	}
	return out, nil
}

func (d *cbor) event() OutEvent {
	var ev OutEvent
	n := d.mapLen()
	base := d.path
	var hasSchema, hasValue bool
	for i := uint64(0); i < n && d.err == nil; i++ {
		d.path = base
		k := d.text()
		d.path = base + "." + k
		switch k {
		case "schema":
			ev.Schema, hasSchema = d.text(), true
		case "value":
			v, null := d.bytesOrNull()
			if null {
				d.fail("value is null")
			}
			ev.Value, hasValue = v, true
			if d.err == nil {
				if e := cborValue(v, d.path); e != nil {
					d.err = e
				}
			}
		case "key":
			v, null := d.bytesOrNull()
			if !null {
				ev.Key = v
				if d.err == nil {
					if e := cborValue(v, d.path); e != nil {
						d.err = e
					}
				}
			}
		default:
			d.skip(0)
		}
	}
	d.path = base
	if d.err == nil && (!hasSchema || !hasValue) {
		d.fail("an event needs schema and value")
	}
	return ev
}

func (d *cbor) effect() OutEffect {
	var ef OutEffect
	n := d.mapLen()
	base := d.path
	var hasKind, hasParams bool
	for i := uint64(0); i < n && d.err == nil; i++ {
		d.path = base
		k := d.text()
		d.path = base + "." + k
		switch k {
		case "kind":
			ef.Kind, hasKind = d.text(), true
		case "params_cbor":
			v, null := d.bytesOrNull()
			if null {
				d.fail("params_cbor is null")
			}
			ef.Params, hasParams = v, true
			if d.err == nil {
				if e := cborValue(v, d.path); e != nil {
					d.err = e
				}
			}
		case "cap_slot":
			major, _ := d.peek()
			if major == 7 {
				d.head()
			} else {
				ef.CapSlot = d.text()
			}
		case "idempotency_key":
			v, _ := d.bytesOrNull()
			ef.IdempotencyKey = v
		default:
			d.skip(0)
		}
	}
	d.path = base
	if d.err == nil && (!hasKind || !hasParams) {
		d.fail("an effect needs kind and params_cbor")
	}
	return ef
}

func (d *cbor) peek() (byte, bool) {
	if d.err != nil || d.off >= len(d.b) {
		return 0xff, false
	}
	return d.b[d.off] >> 5, true
}

// DecodePureOutput reads a pure module's output envelope {output}.
func DecodePureOutput(b []byte) (*PureOutput, error) {
	d := &cbor{b: b}
	d.skipTag()
	n := d.mapLen()
	out := &PureOutput{}
	found := false
	for i := uint64(0); i < n && d.err == nil; i++ {
		d.path = ""
		k := d.text()
		d.path = k
		if k == "output" {
			v, null := d.bytesOrNull()
			if null {
				d.fail("output is null")
			}
			out.Output, found = v, true
			continue
		}
		d.skip(0)
	}
	if d.err == nil && d.off != len(d.b) {
		d.fail("%d bytes after the envelope", len(d.b)-d.off)
	}
	if d.err != nil {
		return nil, d.err
	}
	if !found {
		return nil, &EnvelopeError{Msg: "no output"}
	}
	return out, nil
}
