package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
)

// The modules under testdata are built from the .wat beside them by
//
//	for f in testdata/*.wat; do wat2wasm "$f" -o "${f%.wat}.wasm"; done
//
// (wat2wasm is Debian's wabt); TestWATBuilds checks they are up to date.

func TestWATBuilds(t *testing.T) {
	if _, err := exec.LookPath("wat2wasm"); err != nil {
		t.Skip("wat2wasm is not installed (apt-get install wabt)")
	}
	wats, _ := filepath.Glob("testdata/*.wat")
	for _, w := range wats {
		out := filepath.Join(t.TempDir(), "m.wasm")
		if b, err := exec.Command("wat2wasm", w, "-o", out).CombinedOutput(); err != nil {
			t.Fatalf("wat2wasm %s: %v\n%s", w, err, b)
		}
		got, _ := os.ReadFile(out)
		want, err := os.ReadFile(strings.TrimSuffix(w, ".wat") + ".wasm")
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s.wasm is not what wat2wasm builds from %s: rebuild it", strings.TrimSuffix(w, ".wat"), w)
		}
	}
}

func readModule(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testDef(name string) *schema.DefModule {
	return &schema.DefModule{Name: name, ModuleKind: "reducer",
		Reducer: &schema.ReducerABI{State: "test/State@1", Event: "test/Event@1"}}
}

func newHost(t testing.TB, opts Options) *Host {
	t.Helper()
	h, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

func load(t testing.TB, h *Host, file string, def *schema.DefModule) *Reducer {
	t.Helper()
	m, err := h.Load(context.Background(), def, readModule(t, file))
	if err != nil {
		t.Fatalf("load %s: %v", file, err)
	}
	return &Reducer{Module: m, Def: def}
}

func step(r *Reducer, state, event schema.Value) (reducer.Output, error) {
	c := &reducer.Context{Module: r.Def.Name, EventSchema: r.Def.Reducer.Event,
		Stamp: reducer.Stamp{NowNS: 5, LogicalNowNS: 6, JournalHeight: 7, Entropy: []byte{1, 2}}}
	return r.Step(c, state, event)
}

func enc(t testing.TB, v schema.Value) []byte {
	t.Helper()
	b, err := schema.Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBothStepForms(t *testing.T) {
	h := newHost(t, Options{})
	want := schema.Record("n", uint64(7))
	for _, file := range []string{"stub_multi", "stub_retptr"} {
		t.Run(file, func(t *testing.T) {
			r := load(t, h, file, testDef("test/"+file+"@1"))
			if r.Module.retPtr != (file == "stub_retptr") {
				t.Errorf("retPtr = %v", r.Module.retPtr)
			}
			for i := range 3 {
				out, err := step(r, nil, schema.Variant("Tick", nil))
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if !schema.Equal(out.State, want) || len(out.Events) != 0 || len(out.Effects) != 0 {
					t.Errorf("step %d: %s %v %v; want %s", i, schema.String(out.State), out.Events, out.Effects, schema.String(want))
				}
			}
		})
	}
}

// echoed runs the echo module and returns the envelope it was sent.
func echoed(t *testing.T, r *Reducer, c *reducer.Context, state, event schema.Value) []byte {
	t.Helper()
	out, err := r.Step(c, state, event)
	if err != nil {
		t.Fatal(err)
	}
	b, ok := out.State.([]byte)
	if !ok {
		t.Fatalf("state %s is not bytes", schema.String(out.State))
	}
	return b
}

func TestInputEnvelope(t *testing.T) {
	h := newHost(t, Options{})
	def := testDef("test/Echo@1")
	r := load(t, h, "echo", def)
	state := schema.Record("n", uint64(1))
	event := schema.Variant("Start", schema.Record("target", uint64(3)))
	c := &reducer.Context{Module: def.Name, EventSchema: "test/Event@1", Key: "cell-1"}
	got := echoed(t, r, c, state, event)
	want := AppendInput(nil, &Input{State: enc(t, state), EventSchema: "test/Event@1", Event: enc(t, event), Key: enc(t, "cell-1")})
	if !bytes.Equal(got, want) {
		t.Fatalf("sent %x; want %x", got, want)
	}
	// The envelope as AgentOS's serde writes it: the keys in field order.
	v, err := schema.Decode(got)
	if err != nil {
		t.Fatal(err)
	}
	m := v.(*schema.Map)
	if ver, _ := m.Get("version"); ver != uint64(1) {
		t.Errorf("version = %v; want 1", ver)
	}
	if _, ok := m.Get("ctx"); ok {
		t.Error("ctx sent to a module that declares no context")
	}
	if !bytes.HasPrefix(got, []byte("\xa3\x67version\x01\x65state")) {
		t.Errorf("envelope starts %x; want version then state", got[:16])
	}

	// A new cell: state null. A module that declares a context gets it.
	def2 := testDef("test/EchoCtx@1")
	def2.Reducer.Context = "sys/ReducerContext@1"
	r2 := load(t, h, "echo", def2)
	c.Module = def2.Name
	c.Stamp = reducer.Stamp{NowNS: 10, LogicalNowNS: 12, JournalHeight: 7, Entropy: bytes.Repeat([]byte{0x11}, 64), ManifestHash: cas.Sum([]byte("m"))}
	got = echoed(t, r2, c, nil, event)
	v, _ = schema.Decode(got)
	m = v.(*schema.Map)
	if s, _ := m.Get("state"); s != nil {
		t.Errorf("state = %v; want null", s)
	}
	cb, _ := m.Get("ctx")
	cv, err := schema.Decode(cb.([]byte))
	if err != nil {
		t.Fatal(err)
	}
	ctx := cv.(*schema.Map)
	for k, want := range map[string]schema.Value{"now_ns": uint64(10), "logical_now_ns": uint64(12), "journal_height": uint64(7),
		"reducer": "test/EchoCtx@1", "cell_mode": true, "key": enc(t, "cell-1"), "manifest_hash": cas.Sum([]byte("m")).String()} {
		if got, _ := ctx.Get(k); !schema.Equal(got, want) {
			t.Errorf("ctx.%s = %s; want %s", k, schema.String(got), schema.String(want))
		}
	}
	// The context fits sys/ReducerContext@1 as it is: normalizing changes nothing.
	typ, _ := schema.BuiltinTypes.SchemaType("sys/ReducerContext@1")
	norm, err := schema.Normalize(schema.BuiltinTypes, typ, cv)
	if err != nil || !bytes.Equal(enc(t, norm), cb.([]byte)) {
		t.Errorf("ctx is not canonical sys/ReducerContext@1: %v", err)
	}
}

func TestRefusals(t *testing.T) {
	h := newHost(t, Options{})
	version2 := append([]byte("\x00asm\x02\x00\x00\x00"), readModule(t, "trap")[8:]...)
	for _, tc := range []struct {
		name string
		code []byte
		want string
	}{
		{"an import", readModule(t, "import"), "imports func env.now () -> (i64)"},
		{"a WASI import without WASI", readModule(t, "wasi"), "run with --wasi"},
		{"no alloc", readModule(t, "noalloc"), "does not export alloc"},
		{"no memory export", readModule(t, "nomemory"), `does not export its memory as "memory"`},
		{"a bad step signature", readModule(t, "badsig"), "exports step (i32) -> (i32), want (i32, i32) -> (i32, i32) or (i32, i32, i32) -> ()"},
		{"memory over the cap", readModule(t, "bigmem"), "declares 2000 pages of memory (128000 KiB), over its cap of 1024 pages"},
		{"binary version 2", version2, "binary version 2, want 1"},
		{"not wasm", []byte("hello, world"), "no \\0asm magic"},
		{"truncated", readModule(t, "echo")[:40], "malformed module"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.Load(t.Context(), testDef("test/Refused@1"), tc.code)
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("Load: %v; want ErrRefused", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load: %v; want it to say %q", err, tc.want)
			}
			// Only the refusal that the host's configuration decides
			// (WASI not given) is not the module's, and not journaled.
			if irr := errors.Is(err, reducer.ErrIrreproducible); irr != (tc.name == "a WASI import without WASI") {
				t.Errorf("Load: %v: irreproducible %v", err, irr)
			}
		})
	}
}

func TestStepFailures(t *testing.T) {
	h := newHost(t, Options{Limits: Limits{Fuel: 100_000, MemoryPages: 64}})
	for _, tc := range []struct {
		file string
		is   error
		want string
	}{
		{"trap", ErrTrap, "step trapped: unreachable"},
		{"loop", ErrFuel, "step ran out of fuel after 100000 instructions"},
		{"notcbor", ErrEnvelope, "malformed envelope"},
		{"growcap", ErrTrap, "step trapped: unreachable"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			r := load(t, h, tc.file, testDef("test/"+tc.file+"@1"))
			for i := range 2 { // the module runs again after a failure
				_, err := step(r, nil, "x")
				if err == nil || !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("step %d: %v; want an error saying %q", i, err, tc.want)
				}
				if !strings.Contains(err.Error(), "test/"+tc.file+"@1") {
					t.Errorf("the error does not name the module: %v", err)
				}
			}
		})
	}
}

// TestNoStateSurvives steps modules that keep counts in a global and in
// memory, and that grow their memory: every step must see a fresh
// instance.
func TestNoStateSurvives(t *testing.T) {
	for _, interp := range []bool{false, true} {
		h := newHost(t, Options{Interpreter: interp})
		for _, tc := range []struct {
			file string
			want schema.Value
		}{
			{"leak", []schema.Value{uint64(1), uint64(1)}},
			{"leaktable", []schema.Value{uint64(1), uint64(1)}},
			{"grow", uint64(2)},
		} {
			r := load(t, h, tc.file, testDef("test/"+tc.file+"@1"))
			if tc.file == "leaktable" && r.Module.info.Resettable {
				t.Error("a module that uses table.set is resettable")
			}
			for i := range 4 {
				out, err := step(r, nil, "x")
				if err != nil {
					t.Fatalf("%s step %d: %v", tc.file, i, err)
				}
				if !schema.Equal(out.State, tc.want) {
					t.Errorf("%s (interpreter %v) step %d: state %s; want %s", tc.file, interp, i, schema.String(out.State), schema.String(tc.want))
				}
			}
		}
	}
}

func TestWASI(t *testing.T) {
	h := newHost(t, Options{WASI: true})
	r := load(t, h, "wasi", testDef("test/WASI@1"))
	for i := range 3 {
		out, err := step(r, nil, "x")
		if err != nil {
			t.Fatal(err)
		}
		// The clock is fixed at zero and the random bytes are zeros.
		if want := []schema.Value{uint64(0), uint64(0)}; !schema.Equal(out.State, want) {
			t.Errorf("step %d: %s; want [0, 0]", i, schema.String(out.State))
		}
	}
	if _, err := h.Load(t.Context(), testDef("test/Import@1"), readModule(t, "import")); !errors.Is(err, ErrRefused) {
		t.Errorf("WASI lets a module import env.now: %v", err)
	}
}

// TestCompilerAndInterpreter runs the same steps in wazero's compiler and
// its interpreter: the outputs must be the same bytes.
func TestCompilerAndInterpreter(t *testing.T) {
	comp, interp := newHost(t, Options{}), newHost(t, Options{Interpreter: true})
	c := &reducer.Context{Module: "test/Echo@1", EventSchema: "test/Event@1", Key: uint64(9)}
	for _, file := range []string{"echo", "leak", "stub_retptr"} {
		a, b := load(t, comp, file, testDef("test/Echo@1")), load(t, interp, file, testDef("test/Echo@1"))
		for i := range 3 {
			ev := schema.Record("i", uint64(i))
			oa, err1 := a.Step(c, schema.Record("s", "x"), ev)
			ob, err2 := b.Step(c, schema.Record("s", "x"), ev)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if !bytes.Equal(enc(t, oa.State), enc(t, ob.State)) {
				t.Errorf("%s step %d: compiler %s, interpreter %s", file, i, schema.String(oa.State), schema.String(ob.State))
			}
		}
	}
}

// TestCompileCache opens a second host on the same cache directory: it
// must find the module compiled.
func TestCompileCache(t *testing.T) {
	dir := t.TempDir()
	h1 := newHost(t, Options{CacheDir: dir})
	load(t, h1, "echo", testDef("test/Echo@1"))
	_ = h1.Close()
	entries, _ := os.ReadDir(dir)
	if len(entries) == 0 {
		t.Fatal("the cache directory is empty after a compile")
	}
	h2 := newHost(t, Options{CacheDir: dir})
	r := load(t, h2, "echo", testDef("test/Echo@1"))
	if _, err := step(r, nil, "x"); err != nil {
		t.Fatal(err)
	}
}

// TestReducerFromStore makes a reducer of a defmodule through the host's
// reducer.Modules side: its code from a store, by BLAKE3.
func TestReducerFromStore(t *testing.T) {
	h := newHost(t, Options{})
	store := cas.NewMemory()
	code := readModule(t, "stub_multi")
	ref, err := store.Put(t.Context(), code)
	if err != nil {
		t.Fatal(err)
	}
	def := testDef("test/Stub@1")
	def.WasmHash = ref.String()
	red, err := h.Reducer(t.Context(), def, store)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := red.Step(&reducer.Context{EventSchema: "test/Event@1"}, nil, "x"); err != nil {
		t.Fatal(err)
	}
	def2 := testDef("test/Missing@1")
	def2.WasmHash = cas.Sum([]byte("nothing")).String()
	if _, err := h.Reducer(t.Context(), def2, store); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("missing code: %v; want cas.ErrNotFound", err)
	}
	def3 := testDef("test/Sha@1")
	def3.WasmHash = "sha256:" + strings.Repeat("ab", 32)
	if _, err := h.Reducer(t.Context(), def3, store); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("a sha256 wasm_hash: %v", err)
	}
}

// TestCounters steps the AssemblyScript counter (examples/counter) and the
// Rust one (testdata/rust) through the reducer interface against the
// native counter over the same envelopes: the states must be the same
// bytes at every step, each from a reset instance.
func TestCounters(t *testing.T) {
	mods := map[string][]byte{"assemblyscript": counterModule(t), "rust": readModule(t, "rust/counter")}
	if code, err := buildGoCounter(t); err != nil {
		t.Logf("the Go counter is not tested: %v", err)
	} else {
		mods["go"] = code
	}
	for _, interp := range []bool{false, true} {
		h := newHost(t, Options{Interpreter: interp, WASI: true})
		for name, code := range mods {
			if name == "go" && interp {
				continue // Go's runtime is slow to start in the interpreter
			}
			m, err := h.Load(t.Context(), testDef("counter/Counter@1"), code)
			if err != nil {
				t.Fatal(err)
			}
			r := &Reducer{Module: m, Def: testDef("counter/Counter@1")}
			var state schema.Value
			events := []schema.Value{schema.Variant("Tick", nil), schema.Variant("Start", schema.Record("target", uint64(300))),
				schema.Variant("Start", schema.Record("target", uint64(0))), schema.Variant("Start", schema.Record("target", uint64(70000)))}
			for i := range 40 {
				ev := events[min(i, 3)]
				if i > 3 {
					ev = schema.Variant("Tick", nil)
				}
				out, err := r.Step(&reducer.Context{EventSchema: "counter/Event@1"}, state, ev)
				if err != nil {
					t.Fatalf("%s step %d: %v", name, i, err)
				}
				var sb []byte
				if state != nil {
					sb = enc(t, state)
				}
				native, err := nativeCounterStep(AppendInput(nil, &Input{State: sb, EventSchema: "counter/Event@1", Event: enc(t, ev)}))
				if err != nil {
					t.Fatal(err)
				}
				env, _ := DecodeOutput(native)
				want, _ := schema.Decode(env.State)
				if !bytes.Equal(enc(t, out.State), enc(t, want)) {
					t.Fatalf("%s (interpreter %v) step %d: %s; native %s", name, interp, i, schema.String(out.State), schema.String(want))
				}
				state = out.State
			}
		}
	}
}

// TestRustBuilds rebuilds testdata/rust/counter.wasm with a rustc that has
// the wasm32-unknown-unknown target (Debian's rustc with
// libstd-rust-dev-wasm32 has) and checks it is the one committed.
func TestRustBuilds(t *testing.T) {
	var rustc string
	for _, c := range []string{"/usr/bin/rustc", "rustc"} {
		p, err := exec.LookPath(c)
		if err != nil {
			continue
		}
		dir, err := exec.Command(p, "--print", "target-libdir", "--target", "wasm32-unknown-unknown").Output()
		if err != nil {
			continue
		}
		if libs, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(dir)), "libcore-*.rlib")); len(libs) > 0 {
			rustc = p
			break
		}
	}
	if rustc == "" {
		t.Skip("no rustc with the wasm32-unknown-unknown target (apt-get install rustc libstd-rust-dev-wasm32)")
	}
	out := filepath.Join(t.TempDir(), "counter.wasm")
	cmd := exec.Command(rustc, "--edition", "2021", "--crate-type", "cdylib", "--target", "wasm32-unknown-unknown",
		"-C", "opt-level=3", "-C", "panic=abort", "-C", "strip=symbols", "-o", out, "counter.rs")
	cmd.Dir = filepath.Join("testdata", "rust") // the source's path is in the module
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", rustc, err, b)
	}
	got, _ := os.ReadFile(out)
	v, _ := exec.Command(rustc, "--version").Output()
	if !bytes.Equal(got, readModule(t, "rust/counter")) {
		// Another rustc builds other bytes: say so, but only Debian's
		// 1.63 must build the committed ones.
		if !strings.Contains(string(v), "1.63") {
			t.Skipf("%s (%s) builds other bytes than the committed module, which Debian's rustc 1.63 built", rustc, strings.TrimSpace(string(v)))
		}
		t.Errorf("testdata/rust/counter.wasm is not what %s builds from counter.rs: rebuild it", strings.TrimSpace(string(v)))
	}
}

// buildGoCounter builds testdata/go, the counter in Go (wasip1, a
// reactor), as its doc says.
func buildGoCounter(t testing.TB) ([]byte, error) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "counter.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-o", out, ".")
	cmd.Dir = filepath.Join("testdata", "go")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build: %v\n%s", err, b)
	}
	return os.ReadFile(out)
}

// TestStartFuel loads a module whose start function never returns: the
// load fails when the start runs out of fuel, rather than hanging.
func TestStartFuel(t *testing.T) {
	h := newHost(t, Options{Limits: Limits{Fuel: 50_000}})
	_, err := h.Load(t.Context(), testDef("test/StartLoop@1"), readModule(t, "startloop"))
	if !errors.Is(err, ErrRefused) || !errors.Is(err, ErrFuel) || !strings.Contains(err.Error(), "the start function ran out of fuel") {
		t.Fatalf("Load: %v; want a refusal for the fuel", err)
	}
}

// TestPureRun runs a pure module (run, not step): it gets {version: 1,
// input, ctx?} and its output is returned.
func TestPureRun(t *testing.T) {
	h := newHost(t, Options{})
	def := &schema.DefModule{Name: "test/Pure@1", ModuleKind: "pure", Pure: &schema.PureABI{Input: "sys/CapCheckInput@1", Output: "sys/CapCheckOutput@1"}}
	m, err := h.Load(t.Context(), def, readModule(t, "pure"))
	if err != nil {
		t.Fatal(err)
	}
	input := enc(t, schema.Record("a", uint64(1)))
	got, err := m.Run(input, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := AppendPureInput(nil, input, nil); !bytes.Equal(got, want) {
		t.Errorf("sent %x; want %x", got, want)
	}
	if _, err := h.Load(t.Context(), testDef("test/NotPure@1"), readModule(t, "pure")); !errors.Is(err, ErrRefused) {
		t.Errorf("a module without step loads as a reducer: %v", err)
	}
	r := load(t, h, "echo", testDef("test/Echo@1"))
	if _, err := r.Module.Run(input, nil); err == nil {
		t.Error("Run of a reducer module succeeded")
	}
}

// TestCompilePanic compiles a module whose function section gives a
// function that its step calls a type out of range, on which wazero's
// validator panics (found by FuzzInspect): compile turns the panic into an
// error, and Load refuses the module before it gets there.
func TestCompilePanic(t *testing.T) {
	good := readModule(t, "callee")
	bad := bytes.Clone(good)
	// The function section (id 3): its last byte is the type of the
	// last function, $one.
	for off := 8; off < len(bad); {
		id, size, n := bad[off], int(bad[off+1]), 2 // the sections of stub_multi are under 128 bytes
		if id == secFunction {
			bad[off+n+size-1] = 0x30
			break
		}
		off += n + size
	}
	if bytes.Equal(good, bad) {
		t.Fatal("no function section")
	}
	for _, e := range engines {
		h := newHost(t, Options{Interpreter: e.interpreter})
		r := load(t, h, "callee", testDef("test/Callee@1"))
		if _, err := step(r, nil, "x"); err != nil {
			t.Fatalf("%s: the module as built: %v", e.name, err)
		}
		rt, err := h.runtime(t.Context(), DefaultMemoryPages)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := compile(t.Context(), rt, bad); err == nil || !strings.Contains(err.Error(), "wazero panicked") {
			t.Errorf("%s: compile: %v; want the panic as an error", e.name, err)
		}
		_, err = h.Load(t.Context(), testDef("test/Panic@1"), bad)
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "function 2: type 48 out of range") {
			t.Errorf("%s: Load: %v; want a refusal", e.name, err)
		}
	}
}

// TestHugeVectors reads modules of a few bytes that declare billions of
// elements, which wazero's decoder would allocate before reading them
// (found by FuzzInspect: the process ran out of memory): Inspect refuses
// them, so Load never hands them to wazero.
func TestHugeVectors(t *testing.T) {
	head := "\x00asm\x01\x00\x00\x00"
	big := "\x80\x80\x80\x80\x08" // 2^31
	section := func(id byte, body string) string { return string([]byte{id, byte(len(body))}) + body }
	for _, tc := range []struct {
		name, code, want string
	}{
		{"data segments", head + section(secData, big), "a vector of 2147483648 elements"},
		{"elements", head + section(secElement, big), "a vector of 2147483648 elements"},
		{"tables", head + section(secTable, big), "a vector of 2147483648 elements"},
		{"a data segment's bytes", head + section(secData, "\x01\x01"+big), "past the end"},
		{"function names", head + section(secCustom, "\x04name\x01\x05"+big), "name subsection 1: wasm: malformed module: at byte 5: a vector of 2147483648 elements"},
		{"locals", head + section(secType, "\x01\x60\x00\x00") + section(secFunction, "\x01\x00") +
			section(secCode, "\x01\x08\x01\xff\xff\xff\xff\x0f\x7f\x0b"), "4294967295 locals, more than the 50000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Inspect([]byte(tc.code))
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Inspect: %v; want it refused: %q", err, tc.want)
			}
		})
	}
}
