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

	sections []section  // the binary's sections, for rewriting
	globals  int        // imported + defined globals
	start    int64      // the start section's function, or -1
	bodies   []funcBody // the code section's function bodies
}

// funcBody is a function body and the offsets of its loops.
type funcBody struct {
	code  []byte
	loops []int
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
		case secStart:
			in.start = int64(s.u32())
		case secCode:
			n := s.u32()
			for i := uint32(0); i < n && s.err == nil; i++ {
				fb := s.bytes(uint64(s.u32()))
				if s.err != nil {
					break
				}
				scan, err := walkBody(fb)
				if err != nil {
					return nil, fmt.Errorf("function %d: %w", i, err)
				}
				if scan.why != "" && in.Resettable {
					in.Resettable, in.Why = false, fmt.Sprintf("function %d: %s", i, scan.why)
				}
				in.bodies = append(in.bodies, funcBody{code: fb, loops: scan.loops})
			}
		}
		parsed := id == secType || id == secImport || id == secFunction || id == secMemory || id == secGlobal || id == secExport || id == secStart || id == secCode
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

// bodyScan is what walkBody finds in a function body.
type bodyScan struct {
	// loops are the offsets, in the body, right after each loop's block
	// type: where the host's stop check goes.
	loops []int
	// why says why an instance running this code cannot be reset: it
	// changes a table or drops a segment. Empty if it can be.
	why string
}

// errUnknownInstruction is returned (wrapped) by walkBody for an
// instruction it does not know.
var errUnknownInstruction = errors.New("an instruction this host does not run")

// walkBody decodes a function body's instructions. It returns the offsets
// of its loops and whether it keeps an instance from being reset; an
// instruction it does not know (threads, exceptions, tail calls: features
// this host does not enable) is an error.
func walkBody(b []byte) (bodyScan, error) {
	var out bodyScan
	r := &reader{b: b}
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		r.u32()
		r.valueType()
	}
	unknown := func(format string, args ...any) (bodyScan, error) {
		return out, fmt.Errorf("%w: %s at byte %d of the body", errUnknownInstruction, fmt.Sprintf(format, args...), r.off)
	}
	mutate := func(why string) {
		if out.why == "" {
			out.why = why
		}
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
			if op == 0x03 {
				out.loops = append(out.loops, r.off)
			}
		case op <= 0x01, op == 0x05, op == 0x0b, op == 0x0f, op == 0x1a, op == 0x1b, op == 0xd1:
		case op == 0x0c || op == 0x0d || op == 0x10 || (op >= 0x20 && op <= 0x24) || op == 0x25 || op == 0xd2:
			r.u32()
		case op == 0x0e: // br_table
			k := r.u32()
			for j := uint32(0); j <= k && r.err == nil; j++ {
				r.u32()
			}
		case op == 0x11: // call_indirect
			r.u32()
			r.u32()
		case op == 0x1c: // select t*
			r.valueTypes()
		case op == 0x26:
			r.u32()
			mutate("table.set changes a table")
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
				r.u32()
				mutate("data.drop drops a data segment")
			case sub == 10:
				r.byte()
				r.byte()
			case sub == 11:
				r.byte()
			case sub == 12: // table.init
				r.u32()
				r.u32()
				mutate("table.init changes a table")
			case sub == 13:
				r.u32()
				mutate("elem.drop drops an element segment")
			case sub == 14: // table.copy
				r.u32()
				r.u32()
				mutate("table.copy changes a table")
			case sub == 15 || sub == 17: // table.grow, table.fill
				r.u32()
				mutate(fmt.Sprintf("a table instruction (0xfc %d) changes a table", sub))
			case sub == 16: // table.size
				r.u32()
			default:
				return unknown("0xfc %d", sub)
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
				return unknown("0xfd %d", sub)
			}
		default:
			return unknown("0x%02x", op)
		}
	}
	if r.err != nil {
		return out, r.err
	}
	return out, nil
}

// Names of the exports Instrument adds, and how many loop iterations run
// between two checks.
const (
	globalExportPrefix = "demiurge:global:"
	fuelExport         = "demiurge:fuel"
	stopExport         = "demiurge:stop"
	startExport        = "demiurge:start"
	checkEvery         = 1024
)

// Instrument returns the module's binary as the host runs it, with two
// mutable i32 globals added after the module's own: a fuel count and a stop
// flag (exported as stopExport). Every loop, at the top of each iteration,
// counts its fuel down; every checkEvery iterations it refills it, calls
// memory.grow 0, which changes nothing but leaves the machine code for
// wazero's Go side (where the Go runtime can stop the goroutine for the
// collector: machine code alone cannot be preempted, and a loop that never
// left it would hold up every goroutine at the next collection), and
// traps if the stop flag is set (the step's deadline). Instrument also
// exports each of the module's mutable globals, named globalExportPrefix
// + index, so that the host can restore them (wazero gives access to
// exported globals only). The start section's function, if any, is
// exported as startExport rather than run by wazero as it instantiates, so
// that the host runs it under a deadline too. None of this changes what the
// module computes.
func (in *Info) Instrument() []byte {
	fuel, stop := uint32(in.globals), uint32(in.globals)+1
	uleb := func(v uint32) []byte { return binary.AppendUvarint(nil, uint64(v)) }
	every := uleb(checkEvery)
	var check []byte
	check = append(append(check, 0x23), uleb(fuel)...)  // global.get fuel
	check = append(check, 0x41, 0x01, 0x6b)             // i32.const 1; i32.sub
	check = append(append(check, 0x24), uleb(fuel)...)  // global.set fuel
	check = append(append(check, 0x23), uleb(fuel)...)  // global.get fuel
	check = append(check, 0x45, 0x04, 0x40)             // i32.eqz; if
	check = append(append(check, 0x41), every...)       //   i32.const checkEvery
	check = append(append(check, 0x24), uleb(fuel)...)  //   global.set fuel
	check = append(check, 0x41, 0x00, 0x40, 0x00, 0x1a) //  memory.grow 0; drop
	check = append(append(check, 0x23), uleb(stop)...)  //   global.get stop
	check = append(check, 0x04, 0x40, 0x00, 0x0b)       //   if unreachable end
	check = append(check, 0x0b)                         // end

	var exp []byte
	count := uint32(0)
	var rest []byte
	var globalCount uint32
	var globalRest []byte
	for _, s := range in.sections {
		switch s.id {
		case secExport:
			r := &reader{b: s.body}
			count = r.u32()
			rest = s.body[r.off:]
		case secGlobal:
			r := &reader{b: s.body}
			globalCount = r.u32()
			globalRest = s.body[r.off:]
		}
	}
	added := uint64(len(in.MutableGlobals)) + 2
	if in.start >= 0 {
		added++
	}
	exp = binary.AppendUvarint(exp, uint64(count)+added)
	exp = append(exp, rest...)
	addExport := func(name string, idx uint32) {
		exp = binary.AppendUvarint(exp, uint64(len(name)))
		exp = append(exp, name...)
		exp = append(exp, externGlobal)
		exp = binary.AppendUvarint(exp, uint64(idx))
	}
	for _, g := range in.MutableGlobals {
		addExport(globalExportPrefix+fmt.Sprint(g), g)
	}
	addExport(fuelExport, fuel)
	addExport(stopExport, stop)
	if in.start >= 0 {
		name := startExport
		exp = binary.AppendUvarint(exp, uint64(len(name)))
		exp = append(exp, name...)
		exp = append(exp, externFunc)
		exp = binary.AppendUvarint(exp, uint64(in.start))
	}

	glob := binary.AppendUvarint(nil, uint64(globalCount)+2)
	glob = append(glob, globalRest...)
	glob = append(append(glob, byte(I32), 0x01, 0x41), every...) // fuel: (mut i32) (i32.const checkEvery)
	glob = append(glob, 0x0b)
	glob = append(glob, byte(I32), 0x01, 0x41, 0x00, 0x0b) // stop: (mut i32) (i32.const 0)

	var code []byte
	code = binary.AppendUvarint(code, uint64(len(in.bodies)))
	for _, b := range in.bodies {
		var nb []byte
		last := 0
		for _, at := range b.loops {
			nb = append(nb, b.code[last:at]...)
			nb = append(nb, check...)
			last = at
		}
		nb = append(nb, b.code[last:]...)
		code = binary.AppendUvarint(code, uint64(len(nb)))
		code = append(code, nb...)
	}

	out := []byte("\x00asm\x01\x00\x00\x00")
	put := func(id byte, body []byte) {
		out = append(out, id)
		out = binary.AppendUvarint(out, uint64(len(body)))
		out = append(out, body...)
	}
	wroteGlobal, wroteExport := false, false
	for _, s := range in.sections {
		if s.id != secCustom {
			if !wroteGlobal && order(s.id) >= order(secGlobal) {
				put(secGlobal, glob)
				wroteGlobal = true
				if s.id == secGlobal {
					continue
				}
			}
			if !wroteExport && order(s.id) >= order(secExport) {
				put(secExport, exp)
				wroteExport = true
				if s.id == secExport {
					continue
				}
			}
		}
		switch s.id {
		case secCode:
			put(secCode, code)
		case secStart:
			// Exported as startExport instead: the host calls it after
			// instantiating, under the step's deadline.
		default:
			put(s.id, s.body)
		}
	}
	if !wroteGlobal {
		put(secGlobal, glob)
	}
	if !wroteExport {
		put(secExport, exp)
	}
	return out
}
