package wasm

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
)

// engines are the two ways wazero runs a module: every limit must end a
// step at the same point in both.
var engines = []struct {
	name        string
	interpreter bool
}{{"compiler", false}, {"interpreter", true}}

// TestFuelLimits runs the modules that never end of themselves, in both
// engines: each step ends at the same limit with the same message.
func TestFuelLimits(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		event      schema.Value
		is         error
		want       string
	}{
		{"a runaway loop", "loop", "x", ErrFuel, "step ran out of fuel after 200000 instructions"},
		{"a recursion that never ends", "recurse", "x", ErrCallDepth, "step nested calls more than 1000 deep"},
		{"a recursion in breadth", "fib", uint64(23), ErrFuel, "step ran out of fuel after 200000 instructions"},
		{"a start that never ends", "startloop", "x", ErrFuel, "the start function ran out of fuel after 200000 instructions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var msgs []string
			for _, e := range engines {
				h := newHost(t, Options{Interpreter: e.interpreter, Limits: Limits{Fuel: 200_000}})
				def := testDef("test/Runaway@1")
				for i := range 2 {
					var err error
					if m, lerr := h.Load(t.Context(), def, readModule(t, tc.file)); lerr != nil {
						err = lerr
					} else {
						_, err = step(&Reducer{Module: m, Def: def}, nil, tc.event)
					}
					if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
						t.Fatalf("%s, step %d: %v; want %q", e.name, i, err, tc.want)
					}
					if errors.Is(err, reducer.ErrIrreproducible) {
						t.Errorf("%s: a limit of fuel or depth is irreproducible: %v", e.name, err)
					}
					msgs = append(msgs, err.Error())
				}
			}
			for _, m := range msgs[1:] {
				if m != msgs[0] {
					t.Errorf("the runs end differently:\n%q", msgs)
				}
			}
		})
	}
}

// TestCallDepth nests calls to just within the limit and just past it, in
// both engines.
func TestCallDepth(t *testing.T) {
	for _, e := range engines {
		h := newHost(t, Options{Interpreter: e.interpreter})
		r := load(t, h, "depth", testDef("test/Depth@1"))
		for _, tc := range []struct {
			calls uint64 // the step calls $down with it: depth calls+1
			fails bool
		}{{300, false}, {MaxCallDepth - 1, false}, {MaxCallDepth, true}, {5000, true}, {60000, true}} {
			_, err := step(r, nil, tc.calls)
			if tc.fails != (err != nil) || (err != nil && !errors.Is(err, ErrCallDepth)) {
				t.Errorf("%s: calls nested %d deep: %v; want it to fail: %v", e.name, tc.calls+1, err, tc.fails)
			}
		}
	}
}

// TestFuelUsed pins the fuel that steps of known modules use, in both
// engines: it is what decides whether a step near its limit ends, so it
// must not change unnoticed (a change is a change of what journals replay
// to; see the fuel's doc).
func TestFuelUsed(t *testing.T) {
	counterTick := counterInput(t)
	fib := func(n uint64) []byte {
		return AppendInput(nil, &Input{EventSchema: "test/Event@1", Event: enc(t, n)})
	}
	for _, tc := range []struct {
		name  string
		code  []byte
		input []byte
		want  uint64
	}{
		{"fib(10)", readModule(t, "fib"), fib(10), 3036},
		{"fib(15)", readModule(t, "fib"), fib(15), 33568},
		{"the AssemblyScript counter's Tick", counterModule(t), counterTick, 21549},
		{"the Rust counter's Tick", readModule(t, "rust/counter"), counterTick, 6396},
	} {
		var used []uint64
		for _, e := range engines {
			h := newHost(t, Options{Interpreter: e.interpreter})
			m, err := h.Load(t.Context(), testDef("test/Fuel@1"), tc.code)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				_, u, err := m.call(tc.input)
				if err != nil {
					t.Fatalf("%s (%s): %v", tc.name, e.name, err)
				}
				used = append(used, u)
			}
		}
		for _, u := range used {
			if u != tc.want {
				t.Errorf("%s uses %v fuel (compiler, compiler, interpreter, interpreter); want %d", tc.name, used, tc.want)
				break
			}
		}
	}
}

// TestTrapKinds traps in every way traps.wat knows, in both engines: the
// message names the kind in this package's words, the same in both, and
// wazero's own text (with its stack trace) is only the detail.
func TestTrapKinds(t *testing.T) {
	kinds := []string{"unreachable", "out of bounds memory access", "integer divide by zero", "integer overflow",
		"invalid conversion to integer", "undefined table element", "indirect call type mismatch", "out of bounds memory access"}
	for _, e := range engines {
		h := newHost(t, Options{Interpreter: e.interpreter})
		r := load(t, h, "traps", testDef("test/Traps@1"))
		for k, kind := range kinds {
			_, err := step(r, nil, uint64(k))
			want := fmt.Sprintf("wasm module test/Traps@1 (%s): step trapped: %s", r.Module.Ref().Short(), kind)
			if err == nil || err.Error() != want || !errors.Is(err, ErrTrap) {
				t.Errorf("%s, trap %d: %v; want %q", e.name, k, err, want)
				continue
			}
			if d := Detail(err); !strings.Contains(d, "wasm stack trace") {
				t.Errorf("%s, trap %d: the detail %q has no stack trace", e.name, k, d)
			}
		}
	}
}

// TestBackstop stops a step that would run for a very long time with fuel
// left: the error wraps reducer.ErrIrreproducible (the world journals
// nothing of it), and the instance is not used again.
func TestBackstop(t *testing.T) {
	h := newHost(t, Options{Limits: Limits{Fuel: 1 << 60, Deadline: 50 * time.Millisecond}})
	r := load(t, h, "loop", testDef("test/Loop@1"))
	_, err := step(r, nil, "x")
	if !errors.Is(err, ErrDeadline) || !errors.Is(err, reducer.ErrIrreproducible) || !strings.Contains(err.Error(), "its wall-clock backstop") {
		t.Fatalf("step: %v; want the backstop's error", err)
	}
	// A step that ends in time is not touched by the backstop.
	h2 := newHost(t, Options{Limits: Limits{Deadline: 50 * time.Millisecond}})
	r2 := load(t, h2, "stub_multi", testDef("test/Stub@1"))
	for range 3 {
		if _, err := step(r2, nil, "x"); err != nil {
			t.Fatal(err)
		}
	}
}
