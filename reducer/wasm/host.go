package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
)

// Defaults of Limits.
const (
	// DefaultMemoryPages is the memory cap of a module: 64 MiB.
	DefaultMemoryPages = 1024
	// DefaultDeadline is how long one step may run.
	DefaultDeadline = 2 * time.Second
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
	// Deadline is how long one step may run before it is stopped and
	// fails. 0 means DefaultDeadline. It is a guard against a runaway
	// module, measured on the wall clock: a step that needs about as long
	// as its deadline may end differently on a slower machine, so keep
	// steps far below it.
	Deadline time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.MemoryPages == 0 {
		l.MemoryPages = DefaultMemoryPages
	}
	if l.Deadline <= 0 {
		l.Deadline = DefaultDeadline
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
	// name.
	Limits       Limits
	ModuleLimits map[string]Limits
	// WASI lets modules import wasi_snapshot_preview1 (Go's wasip1 and
	// TinyGo modules need it): a deterministic one, whose clocks are fixed
	// at zero, whose random bytes are zeros, with no files, no
	// environment, no arguments, and stdout dropped (stderr is kept for
	// the error of a failed step). Without it, a module that imports
	// anything is refused.
	WASI bool
	// Interpreter runs modules in wazero's interpreter rather than
	// compiling them to machine code (slower; the tests check that both
	// give the same bytes).
	Interpreter bool
}

// Host runs reducer modules. It compiles each module once (and, with
// Options.CacheDir, once across processes), and is safe for concurrent
// use: each step runs in an instance of its own. It implements
// reducer.Modules.
type Host struct {
	opts  Options
	cache wazero.CompilationCache

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
	if opts.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(opts.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasm: compile cache %s: %w", opts.CacheDir, err)
		}
		h.cache = c
	} else {
		h.cache = wazero.NewCompilationCache()
	}
	return h, nil
}

// Close releases the host's runtimes and compiled modules.
func (h *Host) Close() error {
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
	errs = append(errs, h.cache.Close(ctx))
	return errors.Join(errs...)
}

func (h *Host) limits(name string) Limits {
	if l, ok := h.opts.ModuleLimits[name]; ok {
		return l.withDefaults()
	}
	return h.opts.Limits.withDefaults()
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
	cfg = cfg.WithCoreFeatures(api.CoreFeaturesV2).WithMemoryLimitPages(pages).
		WithCloseOnContextDone(true).WithCompilationCache(h.cache)
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
		if !errors.Is(err, cas.ErrNotFound) && !errors.Is(err, cas.ErrCorrupt) && ctx.Err() == nil {
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
	lim := h.limits(def.Name)
	key := moduleKey{ref: ref, name: def.Name, limits: lim}
	h.mu.Lock()
	defer h.mu.Unlock()
	if m, ok := h.modules[key]; ok {
		return m, nil
	}
	fail := func(format string, args ...any) (*Module, error) {
		return nil, fmt.Errorf("%w: %s (%s): %s", ErrRefused, def.Name, ref.Short(), fmt.Sprintf(format, args...))
	}
	info, err := Inspect(code)
	if err != nil {
		return fail("%v", err)
	}
	if err := h.checkABI(info, def, lim); err != nil {
		return fail("%v", err)
	}
	rt, err := h.runtime(ctx, lim.MemoryPages)
	if err != nil {
		return nil, err
	}
	bin := code
	if info.Resettable {
		if rewritten := info.withGlobalsExported(); rewritten != nil {
			bin = rewritten
		}
	}
	compiled, err := rt.CompileModule(ctx, bin)
	if err != nil {
		return fail("compile: %v", err)
	}
	m := &Module{
		host: h, name: def.Name, ref: ref, info: info, limits: lim, rt: rt, compiled: compiled,
		pure: def.ModuleKind == "pure",
	}
	if err := m.bindExports(); err != nil {
		_ = compiled.Close(ctx)
		return fail("%v", err)
	}
	// One instance now: a module whose start fails is refused at load.
	inst, err := m.instantiate(ctx)
	if err != nil {
		_ = compiled.Close(ctx)
		return fail("instantiate: %v", err)
	}
	m.put(inst)
	h.modules[key] = m
	return m, nil
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
		if !h.opts.WASI {
			if strings.HasPrefix(refused[0], "func "+WASIModule+".") {
				how += " (it imports WASI: run with --wasi for a deterministic WASI, as Go's wasip1 and TinyGo modules need)"
			}
		} else {
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
		return fmt.Errorf("declares %d pages of memory (%d KiB), over its cap of %d pages", info.Memory.Min, info.Memory.Min*64, lim.MemoryPages)
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
	image   []byte // the memory as instantiated; nil if the module cannot be reset
	stack   []uint64
	stderr  *limitedBuffer
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
	cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions(m.start...).
		WithStdout(io.Discard).WithStderr(stderr).
		WithWalltime(func() (int64, int32) { return 0, 0 }, 1).
		WithNanotime(func() int64 { return 0 }, 1).
		WithNanosleep(func(int64) {}).
		WithRandSource(zeroReader{})
	ctx, cancel := context.WithTimeout(ctx, m.limits.Deadline)
	defer cancel()
	mod, err := m.rt.InstantiateModule(ctx, m.compiled, cfg)
	if err != nil {
		return nil, describe(err, stderr)
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
	}
	return in, nil
}

// reset returns an instance to its instantiated image, or reports that it
// cannot be: its memory grew, or the module cannot be reset at all.
func (in *instance) reset() bool {
	if in.image == nil || in.mem.Size() != uint32(len(in.image)) {
		return false
	}
	view, ok := in.mem.Read(0, uint32(len(in.image)))
	if !ok {
		return false
	}
	copy(view, in.image)
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

// describe turns an error of a call into the step's error: a deadline, an
// exit (with what the module wrote to stderr), or a trap.
func describe(err error, stderr *limitedBuffer) error {
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		switch exit.ExitCode() {
		case sys.ExitCodeDeadlineExceeded:
			return fmt.Errorf("%w: %v", ErrDeadline, err)
		case sys.ExitCodeContextCanceled:
			return fmt.Errorf("wasm: step cancelled: %w", err)
		}
		msg := fmt.Sprintf("wasm: module exited with code %d", exit.ExitCode())
		if s := strings.TrimSpace(stderr.String()); s != "" {
			msg += ": " + s
		}
		return errors.New(msg)
	}
	msg := fmt.Sprintf("wasm: trap: %v", err)
	if s := strings.TrimSpace(stderr.String()); s != "" {
		msg += " (stderr: " + s + ")"
	}
	return errors.New(msg)
}

// ErrDeadline is returned (wrapped) for a step that ran past its
// deadline.
var ErrDeadline = errors.New("wasm: step ran past its deadline")

// call runs one envelope through an instance and returns a copy of the
// output bytes. The instance is reset (or closed) before call returns,
// whatever happened.
func (m *Module) call(input []byte) (out []byte, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), m.limits.Deadline)
	defer cancel()
	in, err := m.get(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err == nil && in.reset() {
			m.put(in)
			return
		}
		_ = in.mod.Close(context.Background())
	}()
	if uint64(len(input)) > uint64(in.mem.Size()) {
		return nil, fmt.Errorf("wasm: the input envelope (%d bytes) does not fit in the module's memory", len(input))
	}
	ptr, err := in.allocate(ctx, uint32(len(input)))
	if err != nil {
		return nil, err
	}
	if !in.mem.Write(ptr, input) {
		return nil, fmt.Errorf("wasm: alloc(%d) returned %d, out of memory bounds (%d bytes)", len(input), ptr, in.mem.Size())
	}
	var outPtr, outLen uint32
	if m.retPtr {
		ret, err := in.allocate(ctx, 8)
		if err != nil {
			return nil, err
		}
		in.stack[0], in.stack[1], in.stack[2] = uint64(ret), uint64(ptr), uint64(len(input))
		if err := in.entry.CallWithStack(ctx, in.stack); err != nil {
			return nil, describe(err, in.stderr)
		}
		pair, ok := in.mem.Read(ret, 8)
		if !ok {
			return nil, fmt.Errorf("wasm: step's return pointer %d is out of memory bounds", ret)
		}
		outPtr, outLen = leUint32(pair[:4]), leUint32(pair[4:])
	} else {
		in.stack[0], in.stack[1] = uint64(ptr), uint64(len(input))
		if err := in.entry.CallWithStack(ctx, in.stack); err != nil {
			return nil, describe(err, in.stderr)
		}
		outPtr, outLen = uint32(in.stack[0]), uint32(in.stack[1])
	}
	if int32(outLen) < 0 {
		return nil, fmt.Errorf("wasm: step returned a negative length %d", int32(outLen))
	}
	view, ok := in.mem.Read(outPtr, outLen)
	if !ok {
		return nil, fmt.Errorf("wasm: step returned %d bytes at %d, out of memory bounds (%d bytes)", outLen, outPtr, in.mem.Size())
	}
	return bytes.Clone(view), nil
}

func (in *instance) allocate(ctx context.Context, n uint32) (uint32, error) {
	in.stack[0] = uint64(n)
	if err := in.alloc.CallWithStack(ctx, in.stack); err != nil {
		return 0, describe(err, in.stderr)
	}
	return uint32(in.stack[0]), nil
}

func leUint32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
