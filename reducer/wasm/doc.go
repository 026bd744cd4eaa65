// Package wasm runs reducers compiled to WebAssembly with AgentOS's reducer
// ABI v1, on wazero (pure Go): a defmodule that no Go reducer serves runs
// the module its wasm_hash names (reducer.Registry.SetModules; Host
// implements reducer.Modules).
//
// # The ABI
//
// A module exports memory, alloc(len) -> ptr and step, either (ptr, len) ->
// (ptr, len) or (ret, ptr, len) -> () writing (ptr, len) at ret; a pure
// module exports run the same way. The host allocates the input, writes the
// envelope {version: 1, state, event {schema, value, key?}, ctx?} (CBOR, the
// keys in AgentOS's order, AppendInput) and reads the output envelope
// {state, domain_events, effects, ann} (DecodeOutput). ctx, the canonical
// CBOR of sys/ReducerContext@1, goes only to a module whose defmodule
// declares a context.
//
// # Purity
//
// Load checks a module before it runs: it imports nothing (with
// Options.WASI, only wasi_snapshot_preview1's functions, served
// deterministically: fixed clocks, zero entropy, no files, no environment),
// exports what the ABI needs with the right signatures, and declares no
// more memory than its cap; anything else is ErrRefused. It then compiles
// the module as Info.Instrument rewrites it: counting its fuel and the
// depth of its calls, its mutable globals exported (so they can be
// restored), its start function exported (so it runs under fuel too).
//
// No state survives a step: after each step the instance is reset to the
// image it had once instantiated (memory and mutable globals). On Linux the
// memory is a private mapping of that image and a reset copies back only
// the pages the step wrote; elsewhere it copies the whole image. A module
// whose memory grew in the step, or whose code changes a table or drops a
// segment (Info.Resettable), gets a fresh instance instead.
//
// # Limits
//
// Every limit that can end a step is deterministic: it ends the step at the
// same point on every run, in wazero's compiler and in its interpreter,
// on any machine, so a journal records it and a replay derives it again.
//
//   - Fuel (Limits.Fuel, a defmodule's "limits": {"fuel": N}): the
//     instructions a step may run, counted by the module itself as
//     Instrument rewrote it (see the fuel's doc for the accounting). A step
//     past it fails with ErrFuel. The start function and WASI's
//     _initialize get a step's fuel of their own.
//   - Depth of calls: MaxCallDepth nested calls, counted by the module
//     too; one more fails the step with ErrCallDepth. This comes before
//     any engine's own stack limit, which differ (wazero's interpreter
//     stops at 2000 frames, its compiler at 400 MB of stack).
//   - Memory (Limits.MemoryPages, "limits": {"memory_pages": N}): a module
//     that declares more is refused; memory.grow past it returns -1.
//
// A trap (ErrTrap, with its kind), an exit (ErrExit), a limit or a
// malformed envelope (ErrEnvelope) is the step's error; the world journals
// it as it does a Go reducer's and keeps the old state. Its text is this
// package's own: wazero's words and the module's stack are its detail
// (Detail, and Options.Logger), which a journal never holds, so that
// another wazero version replays it to the same bytes.
//
// # The backstop
//
// Fuel bounds the instructions a step runs, not the time they take. A
// wall-clock backstop (Limits.Deadline, 60 s by default) stops a step that
// is still running after it, checked by a watchdog that ticks every 10 ms
// while steps run and read by the module each time it refuels. Its error,
// ErrDeadline, wraps reducer.ErrIrreproducible: the world journals nothing
// of the input, which fails, since a faster machine would have finished
// the step. So the backstop can make an input fail, never make a journal
// differ from its replay. It fires only when a step's fuel takes longer
// than the backstop to burn, which it does not for the default fuel on a
// machine of today, except:
//
//   - in wazero's interpreter (tens of times slower than its compiler), or
//     on a machine starved of CPU;
//   - for a module given far more fuel than the default;
//   - for what fuel does not count: a call of a WASI function (each does a
//     bounded amount of work), memory.grow (bounded by the memory cap), the
//     host's own work (the envelope's copy, the reset).
//
// # What can make a replay differ
//
// Nothing of the machine. What a replay must have as the run had:
//
//   - the module's code (the manifest pins it by hash);
//   - its limits: those of its defmodule are in the manifest (the command
//     line's --wasm-fuel and --wasm-memory-pages are written there as the
//     AIR loads: reducer.Registry.SetLimits); those given to the host
//     (Options.Limits, Options.ModuleLimits) for modules whose defmodule
//     sets none must be given again, or a step near a changed limit ends
//     differently;
//   - Options.WASI, for a module that imports WASI: without it the module
//     is refused with an error that wraps reducer.ErrIrreproducible, so
//     its input fails rather than journaling the refusal;
//   - this package's fuel accounting and trap names: changing either
//     changes what old journals replay to (the tests pin both).
//
// # Caveats
//
//   - Instructions beyond WebAssembly 2.0 (threads, exceptions, tail calls)
//     are refused: the host must read every instruction to instrument it.
//   - The compile cache (Options.CacheDir) holds machine code for this
//     wazero version and CPU; wazero checks both and compiles again when
//     they differ.
package wasm
