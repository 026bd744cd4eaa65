package wasm

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tetratelabs/wazero/sys"

	"github.com/demiurge-dev/demiurge/reducer"
)

// Errors of a step, each returned wrapped. The text of a step's error is
// what the world journals (a ReducerError), so it says what happened in
// words of this package, never wazero's: a wazero upgrade that words a
// trap differently must not change what a journal replays to. wazero's own
// message, with the module's stack, is the error's detail (Detail), which
// Options.Logger hears.
var (
	// ErrFuel is returned for a step that ran out of fuel (Limits.Fuel).
	ErrFuel = errors.New("wasm: step ran out of fuel")
	// ErrCallDepth is returned for a step whose calls nested deeper than
	// MaxCallDepth.
	ErrCallDepth = errors.New("wasm: calls nested too deep")
	// ErrTrap is returned for a step that trapped: an unreachable
	// instruction (AssemblyScript's abort, Rust's panic), a memory access
	// out of bounds, a division by zero, ...
	ErrTrap = errors.New("wasm: trap")
	// ErrExit is returned for a module that exited (WASI's proc_exit, as
	// Go's runtime does when it panics).
	ErrExit = errors.New("wasm: module exited")
	// ErrDeadline is returned for a step stopped by its wall-clock
	// backstop (Limits.Deadline) before it ran out of fuel. It also wraps
	// reducer.ErrIrreproducible: a faster machine might have finished the
	// step, so the world journals nothing of the input.
	ErrDeadline = errors.New("wasm: step ran past its wall-clock backstop")
)

// hostError is an error of the host: a message that reads the same with
// any wazero version, the sentinels it wraps, and the detail left out of
// the message.
type hostError struct {
	msg    string
	wraps  []error
	detail string
}

func (e *hostError) Error() string   { return e.msg }
func (e *hostError) Unwrap() []error { return e.wraps }

// Detail returns what the message of err leaves out: wazero's own words
// for a trap or a module it cannot compile or instantiate, with the
// module's stack. It is "" when there is none.
func Detail(err error) string {
	var details []string
	for err != nil {
		if he, ok := err.(*hostError); ok && he.detail != "" {
			details = append(details, he.detail)
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			var next error
			for _, e := range u.Unwrap() {
				if Detail(e) != "" {
					next = e
					break
				}
			}
			err = next
		default:
			err = nil
		}
	}
	return strings.Join(details, "\n")
}

// trapKinds names the traps of wazero's engines (the texts of its
// wasmruntime errors, v1.12.0) in this package's words, which are the
// WebAssembly specification's where it has one. A trap whose text is not
// here is journaled as "trapped" alone; TestTrapKinds checks every kind
// against both engines, so an upgrade that rewords one is caught.
var trapKinds = map[string]string{
	"unreachable":                   "unreachable",
	"out of bounds memory access":   "out of bounds memory access",
	"integer divide by zero":        "integer divide by zero",
	"integer overflow":              "integer overflow",
	"invalid conversion to integer": "invalid conversion to integer",
	"invalid table access":          "undefined table element",
	"indirect call type mismatch":   "indirect call type mismatch",
	"stack overflow":                "call stack exhausted",
}

// trapKind returns the kind of a trap, in trapKinds' words, or "".
func trapKind(err error) string {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if k, ok := trapKinds[e.Error()]; ok {
			return k
		}
	}
	return ""
}

// describe turns the error of a call of the module's function fn into the
// step's error: an exit (with what the module wrote to stderr, which is
// the module's own and deterministic) or a trap of a known kind.
func describe(fn string, err error, stderr *limitedBuffer) error {
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		msg := fmt.Sprintf("%s: module exited with code %d", fn, exit.ExitCode())
		if s := strings.TrimSpace(stderr.String()); s != "" {
			msg += ": " + s
		}
		return &hostError{msg: msg, wraps: []error{ErrExit}}
	}
	msg := fn + " trapped"
	if k := trapKind(err); k != "" {
		msg += ": " + k
	}
	if s := strings.TrimSpace(stderr.String()); s != "" {
		msg += " (stderr: " + s + ")"
	}
	return &hostError{msg: msg, wraps: []error{ErrTrap}, detail: err.Error()}
}

// limitFailure returns the error of fn's call that trapped when a limit
// of the host ended it, read from the instrumented globals (see
// Info.Instrument), or nil when the trap was the module's own.
func (m *Module) limitFailure(in *instance, fn string, err error) error {
	// The watchdog sets the stop global from its own goroutine, with
	// expired, under wmu: the host reads expired, not the global, so the
	// two goroutines never touch the global's cell at once.
	in.wmu.Lock()
	expired := in.expired
	in.wmu.Unlock()
	switch {
	case int64(in.fuel.Get()) < 0:
		return &hostError{msg: fmt.Sprintf("%s ran out of fuel after %d instructions (raise the defmodule's \"limits\": {\"fuel\": N} if it needs more)", fn, m.limits.Fuel),
			wraps: []error{ErrFuel}}
	case int32(uint32(in.depth.Get())) > MaxCallDepth:
		return &hostError{msg: fmt.Sprintf("%s nested calls more than %d deep", fn, MaxCallDepth), wraps: []error{ErrCallDepth}}
	case expired:
		return &hostError{msg: fmt.Sprintf("%s was still running after %v, its wall-clock backstop, with fuel left: nothing of the input is journaled, since a faster machine might have finished it (give the module less fuel, or raise the backstop: demiurge --wasm-backstop)", fn, m.limits.Deadline),
			wraps: []error{ErrDeadline, reducer.ErrIrreproducible}, detail: err.Error()}
	}
	return nil
}

// failure is the error of a call of fn that returned err: a limit's, or
// the module's own trap or exit.
func (m *Module) failure(in *instance, fn string, err error) error {
	if f := m.limitFailure(in, fn, err); f != nil {
		return f
	}
	return describe(fn, err, in.stderr)
}
