// Package cas stores blobs under their BLAKE3 hash.
//
// A blob is raw bytes (a file, a model response body) and its Ref is the
// BLAKE3-256 of those bytes. A node is a Go value stored as canonical CBOR
// (Core Deterministic Encoding, prefixed with the self-describe tag 55799,
// byte-compatible with AgentOS) and its Ref is the BLAKE3 of those bytes.
//
// # Refs
//
// Ref is a comparable value usable as a map key; its text form is
// "blake3:<64 lowercase hex>". ParseRef also accepts "sha256:<hex>" ids
// found in AgentOS files; they are opaque names and never recomputed.
//
// # Canonical CBOR
//
// Marshal, Unmarshal, NodeRef and CheckCanonical are the one codec every
// other package uses for bytes that are hashed or journaled.
package cas
