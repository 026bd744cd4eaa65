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
// # Purity and limits
//
// Load checks a module before it runs: it imports nothing (with
// Options.WASI, only wasi_snapshot_preview1's functions, served
// deterministically: fixed clocks, zero entropy, no files, no environment),
// exports what the ABI needs with the right signatures, and declares no
// more memory than its cap; anything else is ErrRefused. It then compiles
// the module as Info.Instrument rewrites it: its mutable globals exported
// (so they can be restored), a fuel count and stop flag that every loop
// checks (the deadline; and a safepoint for Go's collector every 1024
// iterations), its start function exported (so it runs under a deadline).
//
// No state survives a step: after each step the instance is reset to the
// image it had once instantiated (memory and mutable globals). On Linux the
// memory is a private mapping of that image and a reset copies back only
// the pages the step wrote; elsewhere it copies the whole image. A module
// whose memory grew in the step, or whose code changes a table or drops a
// segment (Info.Resettable), gets a fresh instance instead.
//
// A trap, a step past its deadline (ErrDeadline), an exit or a malformed
// envelope (ErrEnvelope) is the step's error; the world journals it as it
// does a Go reducer's and keeps the old state.
//
// # Caveats
//
//   - The deadline is measured on the wall clock (Limits.Deadline, 2 s by
//     default), checked by a watchdog that ticks every 10 ms while steps
//     run: a step that needs about as long as its deadline may end
//     differently on a slower machine, and a replay would report the
//     divergence. It guards against runaway modules; keep steps far below it.
//   - Instructions beyond WebAssembly 2.0 (threads, exceptions, tail calls)
//     are refused: the host must read every instruction to instrument it.
//   - The compile cache (Options.CacheDir) holds machine code for this
//     wazero version and CPU; wazero checks both and compiles again when
//     they differ.
package wasm
