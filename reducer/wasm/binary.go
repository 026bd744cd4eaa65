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

	sections      []section  // the binary's sections, for rewriting
	globals       int        // imported + defined globals
	start         int64      // the start section's function, or -1
	bodies        []funcBody // the code section's function bodies
	types         []FuncType // the type section
	funcTypes     []uint32   // the type of every function, imported first
	importedFuncs int
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

// count reads the length of a vector, which cannot be more than the bytes
// left (each element takes one at least). wazero's decoder allocates a
// vector's elements before it reads them: a module of a few bytes that
// declares billions of them would exhaust the memory of the process, so
// Inspect refuses one before wazero sees it.
func (r *reader) count() uint32 {
	n := r.u32()
	if r.err == nil && uint64(n) > uint64(len(r.b)-r.off) {
		r.fail("a vector of %d elements in %d bytes", n, len(r.b)-r.off)
		return 0
	}
	return n
}

// byteVec skips a vector of bytes.
func (r *reader) byteVec() { r.bytes(uint64(r.u32())) }

// elementSegment skips an element segment, in any of its eight forms.
func (r *reader) elementSegment() {
	flags := r.u32()
	if flags > 7 {
		r.fail("element segment flags %d", flags)
		return
	}
	if flags&2 != 0 && flags&1 == 0 {
		r.u32() // table index
	}
	if flags&1 == 0 {
		r.constExpr() // offset
	}
	if flags&3 != 0 {
		r.byte() // element kind or reference type
	}
	n := r.count()
	for i := uint32(0); i < n && r.err == nil; i++ {
		if flags&4 != 0 {
			r.constExpr()
		} else {
			r.u32()
		}
	}
}

// dataSegment skips a data segment, active, passive or with a memory index.
func (r *reader) dataSegment() {
	switch flags := r.u32(); flags {
	case 0:
		r.constExpr()
	case 1:
	case 2:
		r.u32()
		r.constExpr()
	default:
		r.fail("data segment flags %d", flags)
		return
	}
	r.byteVec()
}

// nameSection checks the custom section "name", whose subsections wazero
// decodes: the module's name, the functions' names and the locals' names.
func (r *reader) nameSection() {
	for !r.done() {
		id := r.byte()
		sub := &reader{b: r.bytes(uint64(r.u32()))}
		if r.err != nil {
			return
		}
		switch id {
		case 0:
			sub.byteVec()
		case 1:
			n := sub.count()
			for i := uint32(0); i < n && sub.err == nil; i++ {
				sub.u32()
				sub.byteVec()
			}
		case 2:
			n := sub.count()
			for i := uint32(0); i < n && sub.err == nil; i++ {
				sub.u32()
				m := sub.count()
				for j := uint32(0); j < m && sub.err == nil; j++ {
					sub.u32()
					sub.byteVec()
				}
			}
		default:
			continue
		}
		if sub.err == nil && sub.off != len(sub.b) {
			sub.fail("%d bytes past the subsection's contents", len(sub.b)-sub.off)
		}
		if sub.err != nil {
			r.fail("name subsection %d: %v", id, sub.err)
			return
		}
	}
}

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
	in := &Info{Resettable: true, start: -1}
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
			if s.name() == "name" {
				s.nameSection()
			}
		case secType:
			n := s.count()
			for i := uint32(0); i < n && s.err == nil; i++ {
				if f := s.byte(); f != 0x60 {
					s.fail("type form 0x%02x, want a function type (0x60)", f)
					break
				}
				types = append(types, FuncType{Params: s.valueTypes(), Results: s.valueTypes()})
			}
		case secImport:
			n := s.count()
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
					in.importedFuncs++
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
			n := s.count()
			for i := uint32(0); i < n && s.err == nil; i++ {
				ti := s.u32()
				if int(ti) >= len(types) && s.err == nil {
					s.fail("function %d: type %d out of range", len(funcs), ti)
				}
				funcs = append(funcs, ti)
			}
		case secMemory:
			n := s.count()
			for i := uint32(0); i < n && s.err == nil; i++ {
				if l := s.limits(); i == 0 {
					in.Memory, in.HasMemory = l, true
				}
			}
		case secTable:
			n := s.count()
			for i := uint32(0); i < n && s.err == nil; i++ {
				s.valueType()
				s.limits()
			}
		case secElement:
			n := s.count()
			for i := uint32(0); i < n && s.err == nil; i++ {
				s.elementSegment()
			}
		case secData:
			n := s.count()
			for i := uint32(0); i < n && s.err == nil; i++ {
				s.dataSegment()
			}
		case secGlobal:
			n := s.count()
			for i := uint32(0); i < n && s.err == nil; i++ {
				t := s.valueType()
				mut := s.byte()
				if mut > 1 {
					s.fail("global mutability 0x%02x", mut)
				}
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
			n := s.count()
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
		case secStart:
			in.start = int64(s.u32())
		case secDataCount:
			s.u32()
		case secCode:
			n := s.count()
			for i := uint32(0); i < n && s.err == nil; i++ {
				fb := s.bytes(uint64(s.u32()))
				if s.err != nil {
					break
				}
				body, err := walkBody(fb, in.importedFuncs)
				if err != nil {
					return nil, fmt.Errorf("function %d: %w", i, err)
				}
				if body.why != "" && in.Resettable {
					in.Resettable, in.Why = false, fmt.Sprintf("function %d: %s", i, body.why)
				}
				in.bodies = append(in.bodies, body)
			}
		}
		parsed := id != secCustom && id <= secDataCount
		if s.err == nil && parsed && s.off != len(s.b) {
			s.fail("%d bytes past the section's contents", len(s.b)-s.off)
		}
		if s.err != nil {
			return nil, fmt.Errorf("%w (in section %d at byte %d)", s.err, id, start)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	in.types, in.funcTypes = types, funcs
	if in.start >= int64(len(funcs)) {
		return nil, fmt.Errorf("%w: the start section names function %d, out of range", ErrMalformed, in.start)
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
