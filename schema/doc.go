// Package schema implements AIR v1, the manifest language of AgentOS that
// demiurge worlds are written in: types, typed values, defs and the
// manifest loader.
//
// # Values
//
// Every event, effect parameter, receipt and reducer state passes through
// one normalizer (Normalize, NormalizeJSON) that gives it one canonical
// form (see Value), whose canonical CBOR (Encode) is what demiurge hashes
// and journals. JSON input may use either AIR JSON form, tagged or sugar.
//
// # Loading a world
//
// Load reads a manifest and the defs beside it, adds the built-in sys/*
// defs shipped in the binary, resolves every name and validates the whole:
// types, plan graphs and expressions, effects, caps and grants, policies,
// routing and triggers. It reports every problem at once, each as
// "file: /json/pointer: message" (ErrorList). The result, a Catalog, holds
// the node hash of every def and of the manifest.
//
// # Differences from AgentOS
//
// AIR written for AgentOS v0.9 loads unchanged, with these deliberate
// differences:
//   - hashes are BLAKE3 ("blake3:<hex>"); "sha256:" ids in AgentOS files
//     are accepted as opaque names and never recomputed;
//   - a defmodule runs the Go reducer registered under its name if there
//     is one, else its WASM module (found beside the manifest as AgentOS's
//     CLI lays it out, modules/<name>-<sha256 hex>.wasm); its wasm_hash is
//     recorded as the module's BLAKE3, so the manifest's hash pins the code;
//   - int and nat values are equal when their numbers are;
//   - the manifest hash includes "$kind";
//   - a constant that looks like an expression but does not fit its slot's
//     type is read as a sugar literal ({"text": "hi"} for a record with a
//     field "text");
//   - a world with effects and no policy loads with a warning: its effects
//     are denied (AgentOS allowed everything).
//
// # Caveats
//
// Variable and step references may contain dots ("@var:a.b"): the longest
// prefix that names a variable wins and the rest is a path into it.
package schema
