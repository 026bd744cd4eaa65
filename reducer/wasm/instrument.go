package wasm

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Fuel is what bounds a step deterministically: the instrumented module
// counts it down as it runs, so a step ends at the same point on every run,
// in wazero's compiler and in its interpreter alike, however fast the
// machine. One unit is one instruction of the module's code as written,
// charged ahead (see Info.Instrument):
//
//   - a call charges every instruction of the function outside its loops
//     (those run at most once a call);
//   - each iteration of a loop charges every instruction of the loop's
//     body outside its inner loops (those run at most once an iteration);
//   - memory.fill, memory.copy, memory.init, table.fill, table.copy,
//     table.init and table.grow charge one unit more per 16 bytes (or
//     elements) they touch.
//
// Branches that are not taken are charged all the same: fuel bounds the
// instructions a step runs from above. This accounting is part of what a
// journal records (a step that runs out of fuel fails, one that does not
// goes on), so it is fixed: the tests pin the fuel known modules use, and
// changing how fuel is counted changes what old journals replay to.
const (
	// MaxCallDepth is how deep calls may nest in a step: a call past it
	// fails the step (ErrCallDepth). The host counts depth itself, below
	// what any wazero engine allows (its interpreter stops at 2000
	// frames), so that deep recursion ends the same way everywhere.
	MaxCallDepth = 1000

	// fuelPeriod is how much fuel the module spends between two visits
	// to the host's refuel function, which moves fuel from the step's
	// budget, checks the wall-clock backstop and calls memory.grow 0, a
	// point where the Go runtime can stop the goroutine for its collector
	// (machine code alone cannot be preempted).
	fuelPeriod = 1 << 14

	// bulkShift: a bulk memory or table instruction charges its length
	// shifted right by bulkShift.
	bulkShift = 4

	// maxLocals is how many locals a function may declare, as the Web's
	// engines allow: wazero allocates them all before it reads the code.
	maxLocals = 50000
)

// Names of the exports Instrument adds.
const (
	globalExportPrefix = "demiurge:global:"
	tickExport         = "demiurge:tick"
	fuelExport         = "demiurge:fuel"
	depthExport        = "demiurge:depth"
	stopExport         = "demiurge:stop"
	startExport        = "demiurge:start"
)

// Values of the stop global.
const (
	stopRequested = 1 // set by the watchdog: the step is past its backstop
	stopped       = 2 // set by the module as it traps for it
)

// funcBody is a function body and where Instrument changes it.
type funcBody struct {
	code     []byte
	groupsAt int    // the offset after the count of local groups
	codeAt   int    // the offset of the first instruction
	groups   uint32 // local groups
	locals   uint64 // locals declared
	entry    uint32 // the fuel of a call: the instructions outside loops
	sites    []site // in the order of their offsets
	bulk     bool   // some site is a bulk instruction: the body needs a scratch local
	why      string // why an instance running this code cannot be reset, or ""
}

type siteKind uint8

const (
	siteLoop    siteKind = iota // the top of a loop: charge its body
	siteCallIn                  // before a call: count the depth
	siteCallOut                 // after a call
	siteBulk                    // before a bulk instruction: charge its length
)

// site is a point of a body where Instrument adds code.
type site struct {
	at   int
	kind siteKind
	cost uint32 // siteLoop: the fuel of one iteration
}

// errUnknownInstruction is returned (wrapped) by walkBody for an
// instruction it does not know.
var errUnknownInstruction = errors.New("an instruction this host does not run")

// walkBody decodes a function body's instructions: where its loops, calls
// and bulk instructions are, the fuel of a call and of each loop's
// iteration, and whether it keeps an instance from being reset (it changes
// a table or drops a segment). An instruction it does not know (threads,
// exceptions, tail calls: features this host does not enable) is an error.
// importedFuncs is how many functions the module imports: a call to one of
// them (a host function) does not nest.
func walkBody(b []byte, importedFuncs int) (funcBody, error) {
	out := funcBody{code: b}
	r := &reader{b: b}
	out.groups = r.count()
	out.groupsAt = r.off
	for i := uint32(0); i < out.groups && r.err == nil; i++ {
		out.locals += uint64(r.u32())
		r.valueType()
	}
	if out.locals > maxLocals {
		return out, fmt.Errorf("%w: %d locals, more than the %d a function may have", ErrMalformed, out.locals, maxLocals)
	}
	out.codeAt = r.off
	unknown := func(format string, args ...any) (funcBody, error) {
		return out, fmt.Errorf("%w: %s at byte %d of the body", errUnknownInstruction, fmt.Sprintf(format, args...), r.off)
	}
	mutate := func(why string) {
		if out.why == "" {
			out.why = why
		}
	}
	// costs[0] is the fuel of a call, costs[i] that of the iteration of
	// the loop whose site is loops[i-1]. frames holds, for each open
	// block, the index in costs its instructions count to.
	costs := []uint32{0}
	var loops []int
	frames := []int{0}
	for !r.done() {
		at := r.off
		op := r.byte()
		if len(frames) > 0 {
			if c := &costs[frames[len(frames)-1]]; *c < 1<<30 {
				*c++
			}
		}
		switch {
		case op == 0x02 || op == 0x03 || op == 0x04: // block, loop, if
			bt := r.byte()
			switch ValueType(bt) {
			case 0x40, I32, I64, F32, F64, V128, FuncRef, ExternRef:
			default:
				r.off--
				r.sleb(33)
			}
			target := 0
			if len(frames) > 0 {
				target = frames[len(frames)-1]
			}
			if op == 0x03 {
				costs = append(costs, 0)
				target = len(costs) - 1
				loops = append(loops, len(out.sites))
				out.sites = append(out.sites, site{at: r.off, kind: siteLoop})
			}
			frames = append(frames, target)
		case op == 0x0b: // end
			if len(frames) > 0 {
				frames = frames[:len(frames)-1]
			}
		case op <= 0x01, op == 0x05, op == 0x0f, op == 0x1a, op == 0x1b, op == 0xd1:
		case op == 0x10: // call
			if callee := r.u32(); int(callee) >= importedFuncs {
				out.sites = append(out.sites, site{at: at, kind: siteCallIn}, site{at: r.off, kind: siteCallOut})
			}
		case op == 0x11: // call_indirect
			r.u32()
			r.u32()
			out.sites = append(out.sites, site{at: at, kind: siteCallIn}, site{at: r.off, kind: siteCallOut})
		case op == 0x0c || op == 0x0d || (op >= 0x20 && op <= 0x24) || op == 0x25 || op == 0xd2:
			r.u32()
		case op == 0x0e: // br_table
			k := r.u32()
			for j := uint32(0); j <= k && r.err == nil; j++ {
				r.u32()
			}
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
			sub := r.u32()
			switch sub {
			case 8, 10, 11, 12, 14, 15, 17: // their last operand is a length
				out.sites = append(out.sites, site{at: at, kind: siteBulk})
				out.bulk = true
			}
			switch {
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
	out.entry = costs[0]
	for i, s := range loops {
		out.sites[s].cost = costs[i+1]
	}
	return out, nil
}

// Instrument returns the module's binary as the host runs it: the module
// counts its fuel, its call depth, and stops when the host asks. It adds
// four globals after the module's own, each exported: the fuel left before
// the next refuel (tick, i32), the rest of the step's fuel (fuel, i64),
// the depth of calls (depth, i32) and the stop flag (stop, i32); and one
// function, refuel. Then:
//
//   - every function, on entry, and every loop, at the top of each
//     iteration, subtracts its cost from tick (see the fuel's doc), as
//     does a bulk instruction its length; when tick goes below zero it
//     calls refuel;
//   - refuel takes what tick overdrew from fuel, and traps if that leaves
//     fuel below zero (the step is out of fuel); else it moves up to
//     fuelPeriod units into tick, calls memory.grow 0 (a safepoint for Go's
//     collector, see fuelPeriod), and traps if the stop flag is set (the
//     wall-clock backstop), setting it to 2 first;
//   - a call to a function of the module adds one to depth, and traps when
//     that is over MaxCallDepth; the call's return subtracts it.
//
// So the host tells why a step trapped from the globals: fuel below zero,
// depth over MaxCallDepth, stop at 2, or else the module's own trap.
// Instrument also exports each of the module's mutable globals, named
// globalExportPrefix + index, so that the host can restore them (wazero
// gives access to exported globals only), and the start section's
// function, if any, as startExport rather than letting wazero run it as it
// instantiates, so that the host runs it under fuel too. None of this
// changes what the module computes, until a limit ends the step.
func (in *Info) Instrument() []byte {
	base := uint32(in.globals)
	tick, fuel, depth, stop := base, base+1, base+2, base+3
	refuel := uint32(len(in.funcTypes))
	uleb := func(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }
	sleb := func(b []byte, v int64) []byte { return appendSleb(b, v) }

	// The snippets.
	charge := func(b []byte, cost uint32) []byte {
		b = uleb(append(b, 0x23), uint64(tick))       // global.get tick
		b = sleb(append(b, 0x41), int64(cost))        // i32.const cost
		b = uleb(append(b, 0x6b, 0x24), uint64(tick)) // i32.sub; global.set tick
		b = uleb(append(b, 0x23), uint64(tick))       // global.get tick
		b = append(b, 0x41, 0x00, 0x48, 0x04, 0x40)   // i32.const 0; i32.lt_s; if
		b = uleb(append(b, 0x10), uint64(refuel))     //   call refuel
		return append(b, 0x0b)                        // end
	}
	callIn := func(b []byte) []byte {
		b = uleb(append(b, 0x23), uint64(depth))                   // global.get depth
		b = uleb(append(b, 0x41, 0x01, 0x6a, 0x24), uint64(depth)) // i32.const 1; i32.add; global.set depth
		b = uleb(append(b, 0x23), uint64(depth))                   // global.get depth
		b = sleb(append(b, 0x41), MaxCallDepth)                    // i32.const MaxCallDepth
		return append(b, 0x4b, 0x04, 0x40, 0x00, 0x0b)             // i32.gt_u; if unreachable end
	}
	callOut := func(b []byte) []byte {
		b = uleb(append(b, 0x23), uint64(depth))                      // global.get depth
		return uleb(append(b, 0x41, 0x01, 0x6b, 0x24), uint64(depth)) // i32.const 1; i32.sub; global.set depth
	}
	bulk := func(b []byte, scratch uint64) []byte {
		b = uleb(append(b, 0x22), scratch)                                   // local.tee scratch (the length)
		b = uleb(append(b, 0x23), uint64(tick))                              // global.get tick
		b = uleb(append(b, 0x20), scratch)                                   // local.get scratch
		b = uleb(append(b, 0x41, bulkShift, 0x76, 0x6b, 0x24), uint64(tick)) // i32.const bulkShift; i32.shr_u; i32.sub; global.set tick
		b = uleb(append(b, 0x23), uint64(tick))                              // global.get tick
		b = append(b, 0x41, 0x00, 0x48, 0x04, 0x40)                          // i32.const 0; i32.lt_s; if
		b = uleb(append(b, 0x10), uint64(refuel))                            //   call refuel
		return append(b, 0x0b)                                               // end
	}

	// The code section: each body instrumented, then refuel.
	code := uleb(nil, uint64(len(in.bodies))+1)
	for i, fb := range in.bodies {
		var nb []byte
		var scratch uint64
		if fb.bulk {
			params := 0
			if fi := in.importedFuncs + i; fi < len(in.funcTypes) && int(in.funcTypes[fi]) < len(in.types) {
				params = len(in.types[in.funcTypes[fi]].Params)
			}
			scratch = uint64(params) + fb.locals
			nb = uleb(nb, uint64(fb.groups)+1)
			nb = append(nb, fb.code[fb.groupsAt:fb.codeAt]...)
			nb = append(nb, 0x01, byte(I32))
		} else {
			nb = append(nb, fb.code[:fb.codeAt]...)
		}
		nb = charge(nb, max(fb.entry, 1))
		last := fb.codeAt
		for _, s := range fb.sites {
			nb = append(nb, fb.code[last:s.at]...)
			last = s.at
			switch s.kind {
			case siteLoop:
				nb = charge(nb, max(s.cost, 1))
			case siteCallIn:
				nb = callIn(nb)
			case siteCallOut:
				nb = callOut(nb)
			case siteBulk:
				nb = bulk(nb, scratch)
			}
		}
		nb = append(nb, fb.code[last:]...)
		code = uleb(code, uint64(len(nb)))
		code = append(code, nb...)
	}
	var rf []byte
	rf = append(rf, 0x00)                                     // no locals
	rf = uleb(append(rf, 0x23), uint64(fuel))                 // global.get fuel
	rf = uleb(append(rf, 0x23), uint64(tick))                 // global.get tick
	rf = uleb(append(rf, 0xac, 0x7c, 0x24), uint64(fuel))     // i64.extend_i32_s; i64.add; global.set fuel
	rf = uleb(append(rf, 0x23), uint64(fuel))                 // global.get fuel
	rf = append(rf, 0x42, 0x00, 0x53, 0x04, 0x40, 0x00, 0x0b) // i64.const 0; i64.lt_s; if unreachable end
	rf = uleb(append(rf, 0x23), uint64(fuel))                 // global.get fuel
	rf = sleb(append(rf, 0x42), fuelPeriod)                   // i64.const fuelPeriod
	rf = append(rf, 0x53, 0x04, byte(I32))                    // i64.lt_s; if (result i32)
	rf = uleb(append(rf, 0x23), uint64(fuel))                 //   global.get fuel
	rf = append(rf, 0xa7, 0x05)                               //   i32.wrap_i64; else
	rf = sleb(append(rf, 0x41), fuelPeriod)                   //   i32.const fuelPeriod
	rf = uleb(append(rf, 0x0b, 0x24), uint64(tick))           // end; global.set tick
	rf = uleb(append(rf, 0x23), uint64(fuel))                 // global.get fuel
	rf = uleb(append(rf, 0x23), uint64(tick))                 // global.get tick
	rf = uleb(append(rf, 0xad, 0x7d, 0x24), uint64(fuel))     // i64.extend_i32_u; i64.sub; global.set fuel
	if in.HasMemory {
		rf = append(rf, 0x41, 0x00, 0x40, 0x00, 0x1a) // memory.grow 0; drop
	}
	rf = uleb(append(rf, 0x23), uint64(stop))        // global.get stop
	rf = sleb(append(rf, 0x04, 0x40, 0x41), stopped) // if i32.const stopped
	rf = uleb(append(rf, 0x24), uint64(stop))        //   global.set stop
	rf = append(rf, 0x00, 0x0b, 0x0b)                //   unreachable end; end
	code = uleb(code, uint64(len(rf)))
	code = append(code, rf...)

	// The type of refuel, () -> (), and the function section.
	replace := map[byte][]byte{secCode: code}
	refuelType := -1
	for i, t := range in.types {
		if len(t.Params) == 0 && len(t.Results) == 0 {
			refuelType = i
			break
		}
	}
	if refuelType < 0 {
		refuelType = len(in.types)
		body := uleb(nil, uint64(len(in.types))+1)
		if s, ok := in.section(secType); ok {
			r := &reader{b: s}
			r.u32()
			body = append(body, s[r.off:]...)
		}
		replace[secType] = append(body, 0x60, 0x00, 0x00)
	}
	funcs := uleb(nil, uint64(len(in.funcTypes)-in.importedFuncs)+1)
	if s, ok := in.section(secFunction); ok {
		r := &reader{b: s}
		r.u32()
		funcs = append(funcs, s[r.off:]...)
	}
	replace[secFunction] = uleb(funcs, uint64(refuelType))

	// The globals: tick, fuel, depth and stop after the module's own.
	var globalCount uint64
	var globalRest []byte
	if s, ok := in.section(secGlobal); ok {
		r := &reader{b: s}
		globalCount = uint64(r.u32())
		globalRest = s[r.off:]
	}
	glob := uleb(nil, globalCount+4)
	glob = append(glob, globalRest...)
	glob = append(glob, byte(I32), 0x01, 0x41, 0x00, 0x0b) // tick: (mut i32) (i32.const 0)
	glob = append(glob, byte(I64), 0x01, 0x42, 0x00, 0x0b) // fuel: (mut i64) (i64.const 0)
	glob = append(glob, byte(I32), 0x01, 0x41, 0x00, 0x0b) // depth: (mut i32) (i32.const 0)
	glob = append(glob, byte(I32), 0x01, 0x41, 0x00, 0x0b) // stop: (mut i32) (i32.const 0)
	replace[secGlobal] = glob

	// The exports: the module's, its mutable globals, the four globals
	// and the start function.
	var count uint64
	var rest []byte
	if s, ok := in.section(secExport); ok {
		r := &reader{b: s}
		count = uint64(r.u32())
		rest = s[r.off:]
	}
	added := uint64(len(in.MutableGlobals)) + 4
	if in.start >= 0 {
		added++
	}
	exp := uleb(nil, count+added)
	exp = append(exp, rest...)
	addExport := func(name string, kind byte, idx uint32) {
		exp = uleb(exp, uint64(len(name)))
		exp = append(exp, name...)
		exp = append(exp, kind)
		exp = uleb(exp, uint64(idx))
	}
	for _, g := range in.MutableGlobals {
		addExport(globalExportPrefix+fmt.Sprint(g), externGlobal, g)
	}
	addExport(tickExport, externGlobal, tick)
	addExport(fuelExport, externGlobal, fuel)
	addExport(depthExport, externGlobal, depth)
	addExport(stopExport, externGlobal, stop)
	if in.start >= 0 {
		addExport(startExport, externFunc, uint32(in.start))
	}
	replace[secExport] = exp

	// The binary: each section replaced or kept in place, the new ones
	// where their order puts them; the start section dropped (exported
	// as startExport instead).
	out := []byte("\x00asm\x01\x00\x00\x00")
	put := func(id byte, body []byte) {
		out = append(out, id)
		out = uleb(out, uint64(len(body)))
		out = append(out, body...)
	}
	written := map[byte]bool{}
	flush := func(before int) {
		for _, id := range []byte{secType, secFunction, secGlobal, secExport, secCode} {
			if b, ok := replace[id]; ok && !written[id] && order(id) < before {
				put(id, b)
				written[id] = true
			}
		}
	}
	for _, s := range in.sections {
		if s.id != secCustom {
			flush(order(s.id))
		}
		switch {
		case s.id == secStart:
		case s.id != secCustom && replace[s.id] != nil:
			if !written[s.id] {
				put(s.id, replace[s.id])
				written[s.id] = true
			}
		default:
			put(s.id, s.body)
		}
	}
	flush(1 << 30)
	return out
}

// section returns the body of the module's section id.
func (in *Info) section(id byte) ([]byte, bool) {
	for _, s := range in.sections {
		if s.id == id {
			return s.body, true
		}
	}
	return nil, false
}

// appendSleb appends v as a signed LEB128.
func appendSleb(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
