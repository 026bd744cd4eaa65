package wasm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Section ids of the WebAssembly binary format.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
)

// Extern kinds of imports and exports.
const (
	externFunc   = 0
	externTable  = 1
	externMemory = 2
	externGlobal = 3
)

// ValueType is a WebAssembly value type.
type ValueType byte

// The value types.
const (
	I32       ValueType = 0x7f
	I64       ValueType = 0x7e
	F32       ValueType = 0x7d
	F64       ValueType = 0x7c
	V128      ValueType = 0x7b
	FuncRef   ValueType = 0x70
	ExternRef ValueType = 0x6f
)

func (t ValueType) String() string {
	switch t {
	case I32:
		return "i32"
	case I64:
		return "i64"
	case F32:
		return "f32"
	case F64:
		return "f64"
	case V128:
		return "v128"
	case FuncRef:
		return "funcref"
	case ExternRef:
		return "externref"
	}
	return fmt.Sprintf("type(0x%02x)", byte(t))
}

// FuncType is a function signature.
type FuncType struct {
	Params, Results []ValueType
}

func (f FuncType) String() string {
	s := "("
	for i, p := range f.Params {
		if i > 0 {
			s += ", "
		}
		s += p.String()
	}
	s += ") -> ("
	for i, r := range f.Results {
		if i > 0 {
			s += ", "
		}
		s += r.String()
	}
	return s + ")"
}

func (f FuncType) is(params, results []ValueType) bool {
	return equalTypes(f.Params, params) && equalTypes(f.Results, results)
}

func equalTypes(a, b []ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Import is one import of a module.
type Import struct {
	Module, Name string
	Kind         string    // "func", "table", "memory" or "global"
	Type         *FuncType // for a function
}

func (i Import) String() string {
	s := fmt.Sprintf("%s %s.%s", i.Kind, i.Module, i.Name)
	if i.Type != nil {
		s += " " + i.Type.String()
	}
	return s
}

// Export is one export of a module.
type Export struct {
	Name  string
	Kind  string    // "func", "table", "memory" or "global"
	Type  *FuncType // for a function
	index uint32
	kind  byte
}

func (e Export) String() string {
	s := e.Kind + " " + e.Name
	if e.Type != nil {
		s += " " + e.Type.String()
	}
	return s
}

// MemLimits are the page limits of a memory or the element limits of a
// table. HasMax is false when the module sets no maximum.
type MemLimits struct {
	Min, Max uint64
	HasMax   bool
}

// Info is what a module's binary says about it: its imports and exports,
// its memory, and what resetting an instance to its instantiated image
// needs to know.
type Info struct {
	Imports []Import
	Exports []Export
	// Memory is the limits of the module's memory (defined or imported);
	// HasMemory is false for a module without one.
	Memory    MemLimits
	HasMemory bool
	// MutableGlobals are the indexes of the mutable globals the module
	// defines (imported globals come first in the index space).
	MutableGlobals []uint32
	// Resettable reports whether an instance can be reset to its
	// instantiated image by restoring its memory and mutable globals:
	// its code never changes a table nor drops a segment, and uses only
	// instructions the scanner knows. Why says why not, when it cannot.
	Resettable bool
	Why        string

	sections []section // the binary's sections, for rewriting
	globals  int       // imported + defined globals
}

type section struct {
	id   byte
	body []byte
}

// Export returns the export named name.
func (in *Info) Export(name string) (Export, bool) {
	for _, e := range in.Exports {
		if e.Name == name {
			return e, true
		}
	}
	return Export{}, false
}

// ErrMalformed is returned (wrapped) for bytes that are not a WebAssembly
// binary module.
var ErrMalformed = errors.New("wasm: malformed module")

// reader reads the binary format.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: at byte %d: %s", ErrMalformed, r.off, fmt.Sprintf(format, args...))
	}
}

func (r *reader) done() bool { return r.err != nil || r.off >= len(r.b) }

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.fail("unexpected end")
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *reader) bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)-r.off) {
		r.fail("length %d past the end", n)
		return nil
	}
	out := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return out
}

// uleb reads an unsigned LEB128 of at most bits bits.
func (r *reader) uleb(bits uint) uint64 {
	var v uint64
	var shift uint
	for {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			break
		}
		if shift >= bits+7 {
			r.fail("LEB128 too long")
			return 0
		}
	}
	if bits < 64 && v>>bits != 0 {
		r.fail("LEB128 out of range")
		return 0
	}
	return v
}

func (r *reader) u32() uint32 { return uint32(r.uleb(32)) }

// sleb skips a signed LEB128 of at most bits bits.
func (r *reader) sleb(bits uint) {
	for n := uint(0); ; n += 7 {
		c := r.byte()
		if r.err != nil || c&0x80 == 0 {
			return
		}
		if n >= bits {
			r.fail("LEB128 too long")
			return
		}
	}
}

func (r *reader) name() string {
	b := r.bytes(uint64(r.u32()))
	if r.err == nil && !utf8.Valid(b) {
		r.fail("a name is not UTF-8")
	}
	return string(b)
}

func (r *reader) limits() MemLimits {
	flags := r.byte()
	var l MemLimits
	switch flags {
	case 0x00:
		l.Min = uint64(r.u32())
	case 0x01:
		l.Min, l.Max, l.HasMax = uint64(r.u32()), uint64(r.u32()), true
	default:
		r.fail("limits flags 0x%02x (shared or 64-bit memories are not supported)", flags)
	}
	return l
}

func (r *reader) valueType() ValueType {
	t := ValueType(r.byte())
	switch t {
	case I32, I64, F32, F64, V128, FuncRef, ExternRef:
	default:
		r.fail("value type 0x%02x", byte(t))
	}
	return t
}

func (r *reader) valueTypes() []ValueType {
	n := r.u32()
	if uint64(n) > uint64(len(r.b)-r.off) {
		r.fail("%d value types past the end", n)
		return nil
	}
	out := make([]ValueType, 0, n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		out = append(out, r.valueType())
	}
	return out
}

// constExpr skips a constant expression (a global's or segment's
// initializer) up to and including its end.
func (r *reader) constExpr() {
	for r.err == nil {
		op := r.byte()
		switch op {
		case 0x0b:
			return
		case 0x41:
			r.sleb(32)
		case 0x42:
			r.sleb(64)
		case 0x43:
			r.bytes(4)
		case 0x44:
			r.bytes(8)
		case 0x23, 0xd2:
			r.u32()
		case 0xd0:
			r.byte()
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended constant expressions
		case 0xfd:
			if r.u32() != 12 {
				r.fail("instruction 0xfd in a constant expression")
			}
			r.bytes(16)
		default:
			r.fail("instruction 0x%02x in a constant expression", op)
		}
	}
}

var externNames = [...]string{"func", "table", "memory", "global"}

// Inspect reads a module's binary: its sections, imports, exports,
// memory and globals, and scans its code for what makes an instance
// impossible to reset. It does not validate the module; wazero does that
// when it compiles it.
func Inspect(b []byte) (*Info, error) {
	if len(b) < 8 || string(b[:4]) != "\x00asm" {
		return nil, fmt.Errorf("%w: no \\0asm magic (not a WebAssembly binary)", ErrMalformed)
	}
	if v := binary.LittleEndian.Uint32(b[4:8]); v != 1 {
		return nil, fmt.Errorf("%w: binary version %d, want 1 (a component or a newer format is not a core module)", ErrMalformed, v)
	}
	in := &Info{Resettable: true}
	r := &reader{b: b, off: 8}
	var types []FuncType
	var funcs []uint32 // type index of every function, imported first
	var exports []Export
	var lastID byte
	for !r.done() {
		id := r.byte()
		size := r.u32()
		start := r.off
		body := r.bytes(uint64(size))
		if r.err != nil {
			break
		}
		in.sections = append(in.sections, section{id: id, body: body})
		if id != secCustom {
			if order(id) <= order(lastID) && lastID != 0 {
				r.fail("section %d out of order", id)
				break
			}
			lastID = id
		}
		s := &reader{b: body}
		switch id {
		case secCustom:
			s.name()
		case secType:
			n := s.u32()
			for i := uint32(0); i < n && s.err == nil; i++ {
				if f := s.byte(); f != 0x60 {
					s.fail("type form 0x%02x, want a function type (0x60)", f)
					break
				}
				types = append(types, FuncType{Params: s.valueTypes(), Results: s.valueTypes()})
			}
		case secImport:
			n := s.u32()
			for i := uint32(0); i < n && s.err == nil; i++ {
				im := Import{Module: s.name(), Name: s.name()}
				kind := s.byte()
				switch kind {
				case externFunc:
					ti := s.u32()
					if int(ti) >= len(types) {
						s.fail("import %s.%s: type %d out of range", im.Module, im.Name, ti)
						break
					}
					im.Type = &types[ti]
					funcs = append(funcs, ti)
				case externTable:
					s.valueType()
					s.limits()
				case externMemory:
					in.Memory, in.HasMemory = s.limits(), true
				case externGlobal:
					s.valueType()
					s.byte()
					in.globals++
				default:
					s.fail("import kind 0x%02x", kind)
				}
				if int(kind) < len(externNames) {
					im.Kind = externNames[kind]
				}
				in.Imports = append(in.Imports, im)
			}
		case secFunction:
			n := s.u32()
			for i := uint32(0); i < n && s.err == nil; i++ {
				funcs = append(funcs, s.u32())
			}
		case secMemory:
			if n := s.u32(); n > 0 {
				in.Memory, in.HasMemory = s.limits(), true
			}
		case secGlobal:
			n := s.u32()
			for i := uint32(0); i < n && s.err == nil; i++ {
				t := s.valueType()
				mut := s.byte()
				s.constExpr()
				if mut == 1 {
					in.MutableGlobals = append(in.MutableGlobals, uint32(in.globals))
					if t == V128 && in.Resettable {
						in.Resettable, in.Why = false, fmt.Sprintf("global %d is a mutable v128", in.globals)
					}
				}
				in.globals++
			}
		case secExport:
			n := s.u32()
			for i := uint32(0); i < n && s.err == nil; i++ {
				e := Export{Name: s.name()}
				e.kind = s.byte()
				e.index = s.u32()
				if int(e.kind) < len(externNames) {
					e.Kind = externNames[e.kind]
				} else {
					s.fail("export kind 0x%02x", e.kind)
				}
				exports = append(exports, e)
			}
		case secCode:
			n := s.u32()
			for i := uint32(0); i < n && s.err == nil && in.Resettable; i++ {
				fb := s.bytes(uint64(s.u32()))
				if why := scanBody(fb); why != "" {
					in.Resettable, in.Why = false, fmt.Sprintf("function %d: %s", i, why)
				}
			}
		}
		if s.err != nil {
			return nil, fmt.Errorf("%w (in section %d at byte %d)", s.err, id, start)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	for _, e := range exports {
		if e.kind == externFunc {
			if int(e.index) >= len(funcs) || int(funcs[e.index]) >= len(types) {
				return nil, fmt.Errorf("%w: export %q names function %d, out of range", ErrMalformed, e.Name, e.index)
			}
			t := types[funcs[e.index]]
			e.Type = &t
		}
		in.Exports = append(in.Exports, e)
	}
	return in, nil
}

// order is the position of a known section in the binary.
func order(id byte) int {
	switch id {
	case secDataCount:
		return 10 // between element (9) and code (10)
	case secCode:
		return 11
	case secData:
		return 12
	}
	return int(id)
}

// scanBody scans a function body for instructions that change a table or
// drop a segment, and for instructions it does not know. It returns why
// an instance running this code cannot be reset, or "".
func scanBody(b []byte) string {
	r := &reader{b: b}
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		r.u32()
		r.valueType()
	}
	for !r.done() {
		op := r.byte()
		switch {
		case op == 0x02 || op == 0x03 || op == 0x04: // block, loop, if
			bt := r.byte()
			switch ValueType(bt) {
			case 0x40, I32, I64, F32, F64, V128, FuncRef, ExternRef:
			default:
				r.off--
				r.sleb(33)
			}
		case op <= 0x01, op == 0x05, op == 0x0b, op == 0x0f, op == 0x1a, op == 0x1b, op == 0xd1:
		case op == 0x0c || op == 0x0d || op == 0x10 || op == 0x12 || (op >= 0x20 && op <= 0x24) || op == 0x25 || op == 0xd2:
			r.u32()
		case op == 0x0e: // br_table
			k := r.u32()
			for j := uint32(0); j <= k && r.err == nil; j++ {
				r.u32()
			}
		case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
			r.u32()
			r.u32()
		case op == 0x1c: // select t*
			r.valueTypes()
		case op == 0x26:
			return "table.set changes a table"
		case op >= 0x28 && op <= 0x3e: // loads and stores
			r.u32()
			r.u32()
		case op == 0x3f || op == 0x40: // memory.size, memory.grow
			r.byte()
		case op == 0x41:
			r.sleb(32)
		case op == 0x42:
			r.sleb(64)
		case op == 0x43:
			r.bytes(4)
		case op == 0x44:
			r.bytes(8)
		case op >= 0x45 && op <= 0xc4:
		case op == 0xd0:
			r.byte()
		case op == 0xfc:
			switch sub := r.u32(); {
			case sub <= 7:
			case sub == 8: // memory.init
				r.u32()
				r.byte()
			case sub == 9:
				return "data.drop drops a data segment"
			case sub == 10:
				r.byte()
				r.byte()
			case sub == 11:
				r.byte()
			case sub == 12 || sub == 14 || sub == 15 || sub == 17:
				return "a table instruction (0xfc " + fmt.Sprint(sub) + ") changes a table"
			case sub == 13:
				return "elem.drop drops an element segment"
			case sub == 16: // table.size
				r.u32()
			default:
				return fmt.Sprintf("unknown instruction 0xfc %d", sub)
			}
		case op == 0xfd:
			switch sub := r.u32(); {
			case sub <= 0x0b || sub == 0x5c || sub == 0x5d:
				r.u32()
				r.u32()
			case sub == 0x0c || sub == 0x0d:
				r.bytes(16)
			case sub >= 0x15 && sub <= 0x22:
				r.byte()
			case sub >= 0x54 && sub <= 0x5b:
				r.u32()
				r.u32()
				r.byte()
			case sub <= 0x113:
			default:
				return fmt.Sprintf("unknown instruction 0xfd %d", sub)
			}
		default:
			return fmt.Sprintf("unknown instruction 0x%02x", op)
		}
	}
	if r.err != nil {
		return r.err.Error()
	}
	return ""
}

// globalExportPrefix names the exports withGlobalsExported adds.
const globalExportPrefix = "demiurge:global:"

// withGlobalsExported returns the module's binary with an export added for
// each of its mutable globals, named globalExportPrefix + index, so that
// the host can read and restore them (wazero gives access to exported
// globals only). Exporting a global changes nothing of how the module
// runs.
func (in *Info) withGlobalsExported() []byte {
	if len(in.MutableGlobals) == 0 {
		return nil
	}
	var exp []byte
	count := uint32(0)
	var rest []byte
	for _, s := range in.sections {
		if s.id == secExport {
			r := &reader{b: s.body}
			count = r.u32()
			rest = s.body[r.off:]
		}
	}
	exp = binary.AppendUvarint(exp, uint64(count)+uint64(len(in.MutableGlobals)))
	exp = append(exp, rest...)
	for _, g := range in.MutableGlobals {
		name := globalExportPrefix + fmt.Sprint(g)
		exp = binary.AppendUvarint(exp, uint64(len(name)))
		exp = append(exp, name...)
		exp = append(exp, externGlobal)
		exp = binary.AppendUvarint(exp, uint64(g))
	}
	out := []byte("\x00asm\x01\x00\x00\x00")
	put := func(id byte, body []byte) {
		out = append(out, id)
		out = binary.AppendUvarint(out, uint64(len(body)))
		out = append(out, body...)
	}
	written := false
	for _, s := range in.sections {
		if !written && s.id != secCustom && order(s.id) >= order(secExport) {
			put(secExport, exp)
			written = true
			if s.id == secExport {
				continue
			}
		}
		put(s.id, s.body)
	}
	if !written {
		put(secExport, exp)
	}
	return out
}
