package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
)

// Defaults of Limits.
const (
	// DefaultMemoryPages is the memory cap of a module: 64 MiB.
	DefaultMemoryPages = 1024
	// DefaultFuel is the fuel of one step: a billion instructions of
	// the module's code (see the fuel's doc), about a second of a tight
	// loop compiled on a current machine.
	DefaultFuel = 1_000_000_000
	// DefaultDeadline is the wall-clock backstop of one step.
	DefaultDeadline = 60 * time.Second
)

// WASIModule is the import module name of the deterministic WASI.
const WASIModule = "wasi_snapshot_preview1"

// Limits bound what one module may use.
type Limits struct {
	// MemoryPages caps the module's memory, in 64 KiB pages: a module
	// that declares more is refused, and memory.grow past it fails (the
	// instruction returns -1, as the spec says). 0 means
	// DefaultMemoryPages.
	MemoryPages uint32
	// Fuel bounds the instructions one step runs (see the fuel's doc):
	// a step that needs more fails with ErrFuel, at the same point on
	// every run. 0 means DefaultFuel.
	Fuel uint64
	// Deadline is the wall-clock backstop of one step, for what fuel
	// does not see (see the package doc): a step still running after it
	// is stopped, and fails with ErrDeadline, which wraps
	// reducer.ErrIrreproducible: the world journals nothing of the input.
	// 0 means DefaultDeadline.
	Deadline time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.MemoryPages == 0 {
		l.MemoryPages = DefaultMemoryPages
	}
	if l.Fuel == 0 {
		l.Fuel = DefaultFuel
	}
	if l.Deadline <= 0 {
		l.Deadline = DefaultDeadline
	}
	return l
}

// over returns l with the limits that o sets.
func (l Limits) over(o Limits) Limits {
	if o.MemoryPages != 0 {
		l.MemoryPages = o.MemoryPages
	}
	if o.Fuel != 0 {
		l.Fuel = o.Fuel
	}
	if o.Deadline > 0 {
		l.Deadline = o.Deadline
	}
	return l
}

// Options configure a Host. The zero value is the default.
type Options struct {
	// CacheDir, if set, is where wazero keeps the machine code it
	// compiles modules to, so that a second process does not compile
	// them again. A store keeps it beside its data.
	CacheDir string
	// Limits apply to every module; ModuleLimits override them by module
	// name, and a defmodule's own limits (its AIR member "limits") override
	// both: they are part of the world, pinned by its manifest's hash.
	Limits       Limits
	ModuleLimits map[string]Limits
	// WASI lets modules import wasi_snapshot_preview1 (Go's wasip1 and
	// TinyGo modules need it): a deterministic one, whose wall clock is
	// fixed at 0 (the Unix epoch) and monotonic clock at 1 ns, whose random
	// bytes are zeros, with no files, no
	// environment, no arguments, and stdout dropped (stderr is kept for
	// the error of a failed step). Without it, a module that imports
	// anything is refused.
	WASI bool
	// Interpreter runs modules in wazero's interpreter rather than
	// compiling them to machine code (slower; the tests check that both
	// give the same bytes).
	Interpreter bool
	// Logger, if set, hears the detail of a step that failed (wazero's
	// own message, with the module's stack), which the error of the step
	// leaves out: that error is journaled, and must read the same with any
	// wazero version.
	Logger *slog.Logger
}

// Host runs reducer modules. It compiles each module once (and, with
// Options.CacheDir, once across processes), and is safe for concurrent
// use: each step runs in an instance of its own. It implements
// reducer.Modules.
type Host struct {
	opts  Options
	cache wazero.CompilationCache

	watch watchdog

	mu       sync.Mutex
	runtimes map[uint32]wazero.Runtime // by memory limit
	modules  map[moduleKey]*Module
	byDef    sync.Map // *schema.DefModule → *Reducer or error
}

type moduleKey struct {
	ref    cas.Ref
	name   string
	limits Limits
}

var _ reducer.Modules = (*Host)(nil)

// New returns a host. Close it to release its compiled modules.
func New(opts Options) (*Host, error) {
	h := &Host{opts: opts, runtimes: map[uint32]wazero.Runtime{}, modules: map[moduleKey]*Module{}}
	return h, nil
}

// compileCache returns the host's compile cache, made on first use: a
// host that compiles nothing creates no directory. The caller holds mu.
func (h *Host) compileCache() wazero.CompilationCache {
	if h.cache != nil {
		return h.cache
	}
	if h.opts.CacheDir == "" {
		h.cache = wazero.NewCompilationCache()
		return h.cache
	}
	c, err := wazero.NewCompilationCacheWithDir(h.opts.CacheDir)
	if err != nil {
		// A cache that cannot be made (a read-only store) costs a
		// compile in each process, nothing else.
		c = wazero.NewCompilationCache()
	}
	h.cache = c
	return c
}

// Close releases the host's runtimes and compiled modules.
func (h *Host) Close() error {
	h.watch.close()
	h.mu.Lock()
	defer h.mu.Unlock()
	ctx := context.Background()
	var errs []error
	for _, m := range h.modules {
		m.closeInstances()
	}
	for _, r := range h.runtimes {
		errs = append(errs, r.Close(ctx))
	}
	h.runtimes, h.modules = map[uint32]wazero.Runtime{}, map[moduleKey]*Module{}
	h.byDef = sync.Map{}
	if h.cache != nil {
		errs = append(errs, h.cache.Close(ctx))
		h.cache = nil
	}
	return errors.Join(errs...)
}

// Limits returns the limits a module runs under: each the def's own (its
// AIR's "limits"), else Options.ModuleLimits' for its name, else
// Options.Limits', else the default.
func (h *Host) Limits(def *schema.DefModule) Limits { return h.limits(def) }

func (h *Host) limits(def *schema.DefModule) Limits {
	l := h.opts.Limits
	if ml, ok := h.opts.ModuleLimits[def.Name]; ok {
		l = l.over(ml)
	}
	l = l.over(Limits{MemoryPages: uint32(min(def.Limits.MemoryPages, schema.MaxMemoryPages)), Fuel: def.Limits.Fuel})
	return l.withDefaults()
}

// runtime returns the runtime of a memory limit. The caller holds mu.
func (h *Host) runtime(ctx context.Context, pages uint32) (wazero.Runtime, error) {
	if r, ok := h.runtimes[pages]; ok {
		return r, nil
	}
	cfg := wazero.NewRuntimeConfig()
	if h.opts.Interpreter {
		cfg = wazero.NewRuntimeConfigInterpreter()
	}
	cfg = cfg.WithCoreFeatures(api.CoreFeaturesV2).WithMemoryLimitPages(pages).WithCompilationCache(h.compileCache())
	r := wazero.NewRuntimeWithConfig(ctx, cfg)
	if h.opts.WASI {
		if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
			_ = r.Close(ctx)
			return nil, fmt.Errorf("wasm: instantiate WASI: %w", err)
		}
	}
	h.runtimes[pages] = r
	return r, nil
}

// Reducer returns the reducer of a defmodule whose wasm_hash names its
// module's code by BLAKE3 in code (reducer.Modules). A module refused
// (see Load) is an error, and so is code missing from the store (an error
// wrapping cas.ErrNotFound).
func (h *Host) Reducer(ctx context.Context, def *schema.DefModule, code cas.Getter) (reducer.Reducer, error) {
	if v, ok := h.byDef.Load(def); ok {
		if err, isErr := v.(error); isErr {
			return nil, err
		}
		return v.(*Reducer), nil
	}
	m, err := h.reducer(ctx, def, code)
	if err != nil {
		if !errors.Is(err, cas.ErrNotFound) && !errors.Is(err, cas.ErrCorrupt) && !errors.Is(err, reducer.ErrIrreproducible) && ctx.Err() == nil {
			h.byDef.Store(def, err) // the module is refused: it will be again
		}
		return nil, err
	}
	r := &Reducer{Module: m, Def: def}
	h.byDef.Store(def, r)
	return r, nil
}

func (h *Host) reducer(ctx context.Context, def *schema.DefModule, code cas.Getter) (*Module, error) {
	if def.WasmHash == "" {
		return nil, fmt.Errorf("wasm: module %s has no wasm_hash", def.Name)
	}
	ref, err := cas.ParseRef(def.WasmHash)
	if err != nil {
		return nil, fmt.Errorf("wasm: module %s: wasm_hash %q: %w", def.Name, def.WasmHash, err)
	}
	if ref.Algo() != cas.BLAKE3 {
		return nil, fmt.Errorf("wasm: module %s: wasm_hash %s is a SHA-256 id, and the store names code by BLAKE3: load the manifest from its directory, with modules/%s-<sha256 hex>.wasm beside it, so the loader finds the module and records its BLAKE3", def.Name, def.WasmHash, def.Name)
	}
	b, err := code.Get(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("wasm: the code of module %s (%s): %w", def.Name, ref.Short(), err)
	}
	return h.Load(ctx, def, b)
}

// ErrRefused is returned (wrapped) for a module the host will not run:
// it imports what the host does not give, lacks an export the ABI needs,
// exports one with the wrong signature, or declares more memory than its
// cap.
var ErrRefused = errors.New("wasm: module refused")

// Load compiles code as the module def names (its AIR interface: ABI
// event, state, context) and checks it against the ABI: exports memory,
// alloc (i32) -> i32 and step, either (i32, i32) -> (i32, i32) or (i32,
// i32, i32) -> () (or run for a pure module), imports nothing (or only
// WASI with Options.WASI), and declares no more memory than its cap.
func (h *Host) Load(ctx context.Context, def *schema.DefModule, code []byte) (*Module, error) {
	ref := cas.Sum(code)
	lim := h.limits(def)
	key := moduleKey{ref: ref, name: def.Name, limits: lim}
	h.mu.Lock()
	defer h.mu.Unlock()
	if m, ok := h.modules[key]; ok {
		return m, nil
	}
	refuse := func(err error) (*Module, error) {
		return nil, &hostError{msg: fmt.Sprintf("%v: %s (%s): %v", ErrRefused, def.Name, ref.Short(), err), wraps: []error{ErrRefused, err}}
	}
	info, err := Inspect(code)
	if err != nil {
		return refuse(err)
	}
	if err := h.checkABI(info, def, lim); err != nil {
		return refuse(err)
	}
	rt, err := h.runtime(ctx, lim.MemoryPages)
	if err != nil {
		return nil, err
	}
	compiled, err := compile(ctx, rt, info.Instrument())
	if err != nil {
		// wazero's validator words it: the detail, not the message.
		return refuse(&hostError{msg: "it does not compile: it is not valid WebAssembly 2.0 (demiurge validate shows why)", detail: err.Error()})
	}
	m := &Module{
		host: h, name: def.Name, ref: ref, info: info, limits: lim, rt: rt, compiled: compiled,
		pure: def.ModuleKind == "pure",
	}
	if err := m.bindExports(); err != nil {
		_ = compiled.Close(ctx)
		return refuse(err)
	}
	// One instance now: a module whose start fails is refused at load.
	inst, err := m.instantiate(ctx)
	if err != nil {
		_ = compiled.Close(ctx)
		return refuse(err)
	}
	m.put(inst)
	h.modules[key] = m
	return m, nil
}

// compile compiles code with rt. wazero v1.12.0's validator panics on some
// malformed modules (a block type naming a type out of range, found by
// FuzzInspect): the panic is the module's refusal, not the process's end.
func compile(ctx context.Context, rt wazero.Runtime, code []byte) (c wazero.CompiledModule, err error) {
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, fmt.Errorf("wazero panicked compiling it: %v", p)
		}
	}()
	return rt.CompileModule(ctx, code)
}

// checkABI checks a module's imports, exports and memory.
func (h *Host) checkABI(info *Info, def *schema.DefModule, lim Limits) error {
	var refused []string
	for _, im := range info.Imports {
		if h.opts.WASI && im.Module == WASIModule && im.Kind == "func" {
			continue
		}
		refused = append(refused, im.String())
	}
	if len(refused) > 0 {
		how := "a reducer module may import nothing"
		onlyWASI := true
		for _, im := range info.Imports {
			onlyWASI = onlyWASI && im.Module == WASIModule && im.Kind == "func"
		}
		if !h.opts.WASI && onlyWASI {
			// With WASI the host would run it: the refusal is the host's
			// configuration, not the module's, and a journal must not
			// depend on how the host was started.
			how += " (it imports WASI: run with --wasi for a deterministic WASI, as Go's wasip1 and TinyGo modules need; the input fails, unjournaled, until then)"
			return &hostError{msg: fmt.Sprintf("imports %s: %s", strings.Join(refused, ", "), how), wraps: []error{reducer.ErrIrreproducible}}
		}
		if h.opts.WASI {
			how += " but the deterministic WASI's functions"
		}
		return fmt.Errorf("imports %s: %s", strings.Join(refused, ", "), how)
	}
	mem, ok := info.Export("memory")
	if !ok || mem.Kind != "memory" {
		return errors.New("does not export its memory as \"memory\"")
	}
	if !info.HasMemory {
		return errors.New("has no memory")
	}
	if info.Memory.Min > uint64(lim.MemoryPages) {
		return fmt.Errorf("declares %d pages of memory (%d KiB), over its cap of %d pages (give it more with its defmodule's \"limits\": {\"memory_pages\": N})", info.Memory.Min, info.Memory.Min*64, lim.MemoryPages)
	}
	alloc, ok := info.Export("alloc")
	if !ok || alloc.Kind != "func" {
		return errors.New("does not export alloc (i32) -> (i32)")
	}
	if !alloc.Type.is([]ValueType{I32}, []ValueType{I32}) {
		return fmt.Errorf("exports alloc %s, want (i32) -> (i32)", alloc.Type)
	}
	entry := "step"
	if def.ModuleKind == "pure" {
		entry = "run"
	}
	fn, ok := info.Export(entry)
	if !ok || fn.Kind != "func" {
		return fmt.Errorf("does not export %s (i32, i32) -> (i32, i32) or (i32, i32, i32) -> ()", entry)
	}
	if !fn.Type.is([]ValueType{I32, I32}, []ValueType{I32, I32}) && !fn.Type.is([]ValueType{I32, I32, I32}, nil) {
		return fmt.Errorf("exports %s %s, want (i32, i32) -> (i32, i32) or (i32, i32, i32) -> ()", entry, fn.Type)
	}
	return nil
}

// Module is a compiled reducer (or pure) module and its pool of
// instances. It implements reducer.Reducer.
type Module struct {
	host     *Host
	name     string
	ref      cas.Ref
	info     *Info
	limits   Limits
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	pure     bool
	retPtr   bool // step(ret_ptr, ptr, len) rather than step(ptr, len) -> (ptr, len)
	start    []string

	mu   sync.Mutex
	free []*instance
}

// Ref is the BLAKE3 of the module's code.
func (m *Module) Ref() cas.Ref { return m.ref }

// Info is what the module's binary says about it.
func (m *Module) Info() *Info { return m.info }

func (m *Module) bindExports() error {
	entry := "step"
	if m.pure {
		entry = "run"
	}
	fn, _ := m.info.Export(entry)
	m.retPtr = len(fn.Type.Params) == 3
	if _, ok := m.info.Export("_initialize"); ok && m.host.opts.WASI {
		m.start = []string{"_initialize"}
	}
	return nil
}

// instance is one instance of a module, with the image it resets to.
type instance struct {
	mod     api.Module
	mem     api.Memory
	alloc   api.Function
	entry   api.Function
	globals []api.MutableGlobal
	gvals   []uint64
	// The globals Instrument adds: the fuel (tick and the rest), the
	// depth of calls, and the stop flag the watchdog sets.
	tick, fuel, depth, stop api.MutableGlobal
	image                   []byte     // the memory as instantiated; nil if the module cannot be reset
	cow                     *cowMemory // the memory, when it resets by dropping the pages a step wrote (Linux)
	stack                   []uint64
	stderr                  *limitedBuffer

	// The watchdog's: when the running step must end (zero when none
	// runs), and whether the watchdog ended it.
	wmu      sync.Mutex
	deadline time.Time
	expired  bool
}

// zeroReader is the deterministic WASI's entropy: zeros.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// limitedBuffer keeps the first bytes written to it.
type limitedBuffer struct{ bytes.Buffer }

const maxStderr = 4 << 10

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxStderr - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (m *Module) instantiate(ctx context.Context) (*instance, error) {
	stderr := &limitedBuffer{}
	cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions().
		WithStdout(io.Discard).WithStderr(stderr).
		WithWalltime(func() (int64, int32) { return 0, 0 }, 1).
		WithNanotime(func() int64 { return 1 }, 1). // Go's runtime refuses a monotonic clock at 0
		WithNanosleep(func(int64) {}).
		WithRandSource(zeroReader{})
	var lastMemory func() *cowMemory
	if m.info.Resettable && !m.host.opts.Interpreter {
		var allocator experimental.MemoryAllocator
		if allocator, lastMemory = newCowAllocator(); allocator != nil {
			ctx = experimental.WithMemoryAllocator(ctx, allocator)
		}
	}
	mod, err := m.rt.InstantiateModule(ctx, m.compiled, cfg)
	if err != nil {
		return nil, &hostError{msg: "it cannot be instantiated (demiurge validate shows why)", detail: err.Error()}
	}
	entry := "step"
	if m.pure {
		entry = "run"
	}
	in := &instance{
		mod: mod, mem: mod.Memory(), alloc: mod.ExportedFunction("alloc"), entry: mod.ExportedFunction(entry),
		stack: make([]uint64, 3), stderr: stderr,
	}
	if in.mem == nil || in.alloc == nil || in.entry == nil {
		_ = mod.Close(ctx)
		return nil, errors.New("exports missing after instantiation")
	}
	for _, g := range []struct {
		name string
		to   *api.MutableGlobal
	}{{tickExport, &in.tick}, {fuelExport, &in.fuel}, {depthExport, &in.depth}, {stopExport, &in.stop}} {
		mg, ok := mod.ExportedGlobal(g.name).(api.MutableGlobal)
		if !ok {
			_ = mod.Close(ctx)
			return nil, fmt.Errorf("the global %s is not exported as mutable", g.name)
		}
		*g.to = mg
	}
	// The start function (exported by Instrument) and WASI's
	// _initialize run now, under fuel and the backstop, as a step does.
	var starts []string
	if m.info.start >= 0 {
		starts = append(starts, startExport)
	}
	for _, name := range append(starts, m.start...) {
		fn := mod.ExportedFunction(name)
		if fn == nil {
			_ = mod.Close(ctx)
			return nil, fmt.Errorf("no export %s", name)
		}
		what := name
		if name == startExport {
			what = "the start function"
		}
		in.refuel(m.limits.Fuel)
		m.host.watch.start(in, m.limits.Deadline)
		_, err := fn.Call(ctx)
		m.host.watch.stop(in)
		if err != nil {
			err = m.failure(in, what, err)
			m.host.logFailure(m.name, m.ref, err)
			_ = mod.Close(ctx)
			return nil, err
		}
	}
	if m.info.Resettable {
		for _, g := range m.info.MutableGlobals {
			mg, ok := mod.ExportedGlobal(globalExportPrefix + fmt.Sprint(g)).(api.MutableGlobal)
			if !ok {
				_ = mod.Close(ctx)
				return nil, fmt.Errorf("global %d is not exported as mutable", g)
			}
			in.globals = append(in.globals, mg)
			in.gvals = append(in.gvals, mg.Get())
		}
		view, _ := in.mem.Read(0, in.mem.Size())
		in.image = bytes.Clone(view)
		if lastMemory != nil {
			if cow := lastMemory(); cow != nil && cow.freeze(in.image) == nil {
				in.cow = cow
			}
		}
	}
	return in, nil
}

// reset returns an instance to its instantiated image, or reports that it
// cannot be: its memory grew, or the module cannot be reset at all.
func (in *instance) reset() bool {
	if in.image == nil || in.mem.Size() != uint32(len(in.image)) {
		return false
	}
	if in.cow != nil {
		if !in.cow.reset() {
			return false
		}
	} else {
		view, ok := in.mem.Read(0, uint32(len(in.image)))
		if !ok {
			return false
		}
		copy(view, in.image)
	}
	for i, g := range in.globals {
		g.Set(in.gvals[i])
	}
	in.stderr.Reset()
	return true
}

func (m *Module) get(ctx context.Context) (*instance, error) {
	m.mu.Lock()
	if n := len(m.free); n > 0 {
		in := m.free[n-1]
		m.free = m.free[:n-1]
		m.mu.Unlock()
		return in, nil
	}
	m.mu.Unlock()
	return m.instantiate(ctx)
}

func (m *Module) put(in *instance) {
	m.mu.Lock()
	m.free = append(m.free, in)
	m.mu.Unlock()
}

func (m *Module) closeInstances() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, in := range m.free {
		_ = in.mod.Close(context.Background())
	}
	m.free = nil
}

// call runs one envelope through an instance and returns a copy of the
// output bytes and the fuel the step used. The instance is reset (or
// closed) before call returns, whatever happened. The wall-clock backstop
// is kept by the host's watchdog (a context with a deadline would cost a
// timer a step).
func (m *Module) call(input []byte) (out []byte, used uint64, err error) {
	ctx := context.Background()
	in, err := m.get(ctx)
	if err != nil {
		return nil, 0, err
	}
	entry := m.entryName()
	in.refuel(m.limits.Fuel)
	m.host.watch.start(in, m.limits.Deadline)
	defer func() {
		if m.host.watch.stop(in) && err == nil {
			// The watchdog asked the step to stop after it had
			// stopped: its outcome stands.
			in.stop.Set(0)
		}
		if err != nil {
			m.host.logFailure(m.name, m.ref, err)
		}
		if err == nil && in.reset() {
			m.put(in)
			return
		}
		_ = in.mod.Close(context.Background())
	}()
	// One alloc for the input and, in the return-pointer form, the 8 bytes
	// of the result after it (4-aligned).
	size := uint64(len(input))
	if m.retPtr {
		size = (size+3)&^3 + 8
	}
	if size > uint64(in.mem.Size()) || size > math.MaxInt32 {
		return nil, 0, fmt.Errorf("wasm: the input envelope (%d bytes) does not fit in the module's memory", len(input))
	}
	in.stack[0] = size
	if err := in.alloc.CallWithStack(ctx, in.stack); err != nil {
		return nil, 0, m.failure(in, "alloc", err)
	}
	ptr := uint32(in.stack[0])
	if !in.mem.Write(ptr, input) {
		return nil, 0, fmt.Errorf("wasm: alloc(%d) returned %d, out of memory bounds (%d bytes)", size, ptr, in.mem.Size())
	}
	var outPtr, outLen uint32
	if m.retPtr {
		ret := (ptr + uint32(len(input)) + 3) &^ 3
		in.stack[0], in.stack[1], in.stack[2] = uint64(ret), uint64(ptr), uint64(len(input))
		if err := in.entry.CallWithStack(ctx, in.stack); err != nil {
			return nil, 0, m.failure(in, entry, err)
		}
		pair, ok := in.mem.Read(ret, 8)
		if !ok {
			return nil, 0, fmt.Errorf("wasm: %s's return pointer %d is out of memory bounds", entry, ret)
		}
		outPtr, outLen = leUint32(pair[:4]), leUint32(pair[4:])
	} else {
		in.stack[0], in.stack[1] = uint64(ptr), uint64(len(input))
		if err := in.entry.CallWithStack(ctx, in.stack); err != nil {
			return nil, 0, m.failure(in, entry, err)
		}
		outPtr, outLen = uint32(in.stack[0]), uint32(in.stack[1])
	}
	if int32(outLen) < 0 {
		return nil, 0, fmt.Errorf("wasm: %s returned a negative length %d", entry, int32(outLen))
	}
	view, ok := in.mem.Read(outPtr, outLen)
	if !ok {
		return nil, 0, fmt.Errorf("wasm: %s returned %d bytes at %d, out of memory bounds (%d bytes)", entry, outLen, outPtr, in.mem.Size())
	}
	return bytes.Clone(view), in.used(m.limits.Fuel), nil
}

// entryName is the name of the module's entry point: step, or run.
func (m *Module) entryName() string {
	if m.pure {
		return "run"
	}
	return "step"
}

// refuel gives the instance a step's fuel: up to fuelPeriod in tick, the
// rest in fuel.
func (in *instance) refuel(fuel uint64) {
	tick := min(fuel, fuelPeriod)
	in.tick.Set(api.EncodeI32(int32(tick)))
	in.fuel.Set(api.EncodeI64(int64(fuel - tick)))
}

// used is the fuel a step given fuel has used.
func (in *instance) used(fuel uint64) uint64 {
	left := int64(in.fuel.Get()) + int64(int32(uint32(in.tick.Get())))
	return fuel - uint64(left)
}

// logFailure gives Options.Logger the detail of a step's failure.
func (h *Host) logFailure(name string, ref cas.Ref, err error) {
	if h.opts.Logger == nil {
		return
	}
	h.opts.Logger.Info("wasm: a module failed", "module", name, "code", ref.String(), "error", err.Error(), "detail", Detail(err))
}

func leUint32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
