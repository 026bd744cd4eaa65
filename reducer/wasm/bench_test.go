package wasm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
)

// cpuTime returns the process's CPU time (user and system). On a shared,
// loaded machine wall time per op mostly measures waiting for a CPU; the
// benchmarks report CPU time per op beside it ("cpu-ns/op").
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loop runs fn b.N times and reports its CPU time per op.
func loop(b *testing.B, fn func() error) {
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		if err := fn(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// reportFuel reports the fuel one step of m uses ("fuel/op").
func reportFuel(b *testing.B, m *Module, input []byte) {
	_, used, err := m.call(input)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(used), "fuel/op")
}

// counterModule reads the AssemblyScript counter of examples/counter.
func counterModule(b testing.TB) []byte {
	b.Helper()
	files, _ := filepath.Glob("../../examples/counter/modules/counter/Counter@1-*.wasm")
	if len(files) != 1 {
		b.Fatalf("the counter module: %v", files)
	}
	code, err := os.ReadFile(files[0])
	if err != nil {
		b.Fatal(err)
	}
	return code
}

// counterInput is the envelope of a Tick to a counting counter.
func counterInput(b testing.TB) []byte {
	state := enc(b, schema.Record("pc", schema.Variant("Counting", nil), "remaining", uint64(1000)))
	event := enc(b, schema.Variant("Tick", nil))
	return AppendInput(nil, &Input{State: state, EventSchema: "counter/Event@1", Event: event})
}

// nativeCounterStep is the counter as a native Go function over the same
// envelopes as the module: it decodes the input envelope, the state and
// the event, counts down, and encodes the state and the output envelope.
func nativeCounterStep(input []byte) ([]byte, error) {
	v, err := schema.Decode(input)
	if err != nil {
		return nil, err
	}
	env := v.(*schema.Map)
	sb, _ := env.Get("state")
	ev, _ := env.Get("event")
	eb, _ := ev.(*schema.Map).Get("value")
	event, err := schema.Decode(eb.([]byte))
	if err != nil {
		return nil, err
	}
	pc, remaining := "Idle", uint64(0)
	if sbytes, ok := sb.([]byte); ok {
		state, err := schema.Decode(sbytes)
		if err != nil {
			return nil, err
		}
		st := state.(*schema.Map)
		pcv, _ := st.Get("pc")
		pc, _, _ = pcv.(*schema.Map).VariantTag()
		rv, _ := st.Get("remaining")
		remaining = rv.(uint64)
	}
	switch tag, v, _ := event.(*schema.Map).VariantTag(); tag {
	case "Start":
		t, _ := v.(*schema.Map).Get("target")
		remaining = t.(uint64)
		pc = "Counting"
		if remaining == 0 {
			pc = "Done"
		}
	case "Tick":
		if pc == "Counting" && remaining > 0 {
			remaining--
			if remaining == 0 {
				pc = "Done"
			}
		}
	}
	ns, err := schema.Encode(schema.Record("pc", schema.Variant(pc, nil), "remaining", remaining))
	if err != nil {
		return nil, err
	}
	return schema.Encode(schema.Record("state", ns, "domain_events", []schema.Value{}, "effects", []schema.Value{}, "ann", nil))
}

// BenchmarkStep compares one step of the counter: native Go over the
// envelope, the AssemblyScript module (its instance reset to the
// instantiated image after the step), the Rust-shaped module, and the
// module through reducer.Reducer (the envelope encoded from the world's
// values and the output decoded back); interleaved runs them all in
// turns, each a hundred steps an iteration, and reports each one's CPU
// time a step and its ratio to native's. go test ./reducer/wasm -bench Step
func BenchmarkStep(b *testing.B) {
	input := counterInput(b)
	b.Run("native", func(b *testing.B) {
		loop(b, func() error { _, err := nativeCounterStep(input); return err })
	})
	h := newHost(b, Options{})
	ctx := context.Background()
	m, err := h.Load(ctx, testDef("counter/Counter@1"), counterModule(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("assemblyscript", func(b *testing.B) {
		loop(b, func() error { _, _, err := m.call(input); return err })
		reportFuel(b, m, input)
	})
	rust, err := h.Load(ctx, testDef("counter/RustCounter@1"), readModule(b, "rust/counter"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("rust-shaped", func(b *testing.B) {
		loop(b, func() error { _, _, err := rust.call(input); return err })
		reportFuel(b, rust, input)
	})
	var goStep func() error // the Go module's step, if the go command built it
	if code, err := buildGoCounter(b); err == nil {
		hw := newHost(b, Options{WASI: true})
		gm, err := hw.Load(ctx, testDef("counter/GoCounter@1"), code)
		if err != nil {
			b.Fatal(err)
		}
		goStep = func() error { _, _, err := gm.call(input); return err }
		b.Run("go-wasip1", func(b *testing.B) {
			loop(b, goStep)
			reportFuel(b, gm, input)
		})
	}
	r := &Reducer{Module: m, Def: testDef("counter/Counter@1")}
	state := schema.Record("pc", schema.Variant("Counting", nil), "remaining", uint64(1000))
	tick := schema.Variant("Tick", nil)
	c := &reducer.Context{EventSchema: "counter/Event@1"}
	b.Run("assemblyscript-reducer", func(b *testing.B) {
		loop(b, func() error { _, err := r.Step(c, state, tick); return err })
	})
	steps := []namedStep{
		{"native", func() error { _, err := nativeCounterStep(input); return err }},
		{"assemblyscript", func() error { _, _, err := m.call(input); return err }},
		{"rust-shaped", func() error { _, _, err := rust.call(input); return err }},
		{"assemblyscript-reducer", func() error { _, err := r.Step(c, state, tick); return err }},
	}
	if goStep != nil {
		steps = append(steps, namedStep{"go-wasip1", goStep})
	}
	b.Run("interleaved", func(b *testing.B) { interleave(b, steps) })
}

// namedStep is one of the steps interleave runs.
type namedStep struct {
	name string
	step func() error
}

// interleave runs each step stepsPerTurn times in turn, every iteration,
// so that a machine whose load changes during the run weighs on all of
// them alike, and reports each one's process CPU time a step
// ("<name>-cpu-ns") and, for each after the first, its ratio to the first
// ("<name>-x-<first>"): the figures BENCHMARKS reads on a shared machine.
// An iteration is stepsPerTurn steps of each.
func interleave(b *testing.B, steps []namedStep) {
	const stepsPerTurn = 100
	cpu := make([]time.Duration, len(steps))
	for b.Loop() {
		for i, s := range steps {
			start := cpuTime()
			for range stepsPerTurn {
				if err := s.step(); err != nil {
					b.Fatalf("%s: %v", s.name, err)
				}
			}
			cpu[i] += cpuTime() - start
		}
	}
	per := func(i int) float64 { return float64(cpu[i]) / float64(b.N*stepsPerTurn) }
	for i, s := range steps {
		b.ReportMetric(per(i), s.name+"-cpu-ns")
		if i > 0 {
			b.ReportMetric(per(i)/per(0), s.name+"-x-"+steps[0].name)
		}
	}
}

// BenchmarkCompile measures what opening a module costs a process: a
// compile to machine code (a new host without a cache), a compile found in
// the cache directory that an earlier process filled (a new host on it:
// what a second demiurge command pays), and a module the host has already
// loaded. go test ./reducer/wasm -bench Compile
func BenchmarkCompile(b *testing.B) {
	ctx := context.Background()
	for _, mod := range []struct {
		name string
		code []byte
	}{{"assemblyscript", counterModule(b)}, {"rust", readModule(b, "rust/counter")}} {
		def := testDef("counter/Counter@1")
		b.Run(mod.name+"/uncached", func(b *testing.B) {
			loop(b, func() error {
				h, err := New(Options{})
				if err != nil {
					return err
				}
				defer h.Close()
				_, err = h.Load(ctx, def, mod.code)
				return err
			})
		})
		dir := b.TempDir()
		warm, err := New(Options{CacheDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := warm.Load(ctx, def, mod.code); err != nil {
			b.Fatal(err)
		}
		_ = warm.Close()
		b.Run(mod.name+"/disk-cache", func(b *testing.B) {
			loop(b, func() error {
				h, err := New(Options{CacheDir: dir})
				if err != nil {
					return err
				}
				defer h.Close()
				_, err = h.Load(ctx, def, mod.code)
				return err
			})
		})
		h := newHost(b, Options{})
		if _, err := h.Load(ctx, def, mod.code); err != nil {
			b.Fatal(err)
		}
		b.Run(mod.name+"/loaded", func(b *testing.B) {
			loop(b, func() error { _, err := h.Load(ctx, def, mod.code); return err })
		})
	}
}

// BenchmarkFuel measures how fast a runaway loop burns its fuel: one step
// of testdata/loop.wasm with 10 million units, until it runs out, in each
// engine. It is how long the default fuel (DefaultFuel) lets a runaway
// step run. go test ./reducer/wasm -bench Fuel
func BenchmarkFuel(b *testing.B) {
	const fuel = 10_000_000
	input := AppendInput(nil, &Input{EventSchema: "test/Event@1", Event: enc(b, "x")})
	for _, e := range engines {
		h := newHost(b, Options{Interpreter: e.interpreter, Limits: Limits{Fuel: fuel}})
		m, err := h.Load(context.Background(), testDef("test/Loop@1"), readModule(b, "loop"))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(e.name, func(b *testing.B) {
			start := cpuTime()
			for b.Loop() {
				if _, _, err := m.call(input); !errors.Is(err, ErrFuel) {
					b.Fatalf("step: %v; want it out of fuel", err)
				}
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N)/(fuel/1e6), "cpu-ns/Mfuel")
		})
	}
}
