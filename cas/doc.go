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
// found in AgentOS files; they are opaque names and never recomputed, and
// no store holds a blob under one.
//
// # Canonical CBOR
//
// Marshal, Unmarshal, NodeRef and CheckCanonical are the one codec every
// other package uses for bytes that are hashed or journaled. Both
// directions accept only what AIR values are made of (no floats, no tags
// besides the leading 55799, no simple values besides false, true and
// null), so whatever Unmarshal decodes, Marshal encodes back to the
// canonical bytes, and whatever Marshal writes, Unmarshal reads.
//
// # Stores
//
// Store is composed of one-method interfaces (Getter, Putter, Haser,
// Statter, Iterator); take the smallest one you need. Put computes the ref
// itself; Get re-hashes what it reads and returns a *CorruptError (which
// wraps ErrCorrupt) rather than bytes that do not match their ref. PutNode
// and GetNode store and load nodes through any Putter or Getter.
//
// Package pgstore keeps blobs in PostgreSQL and passes the same
// conformance suite (package cas/castest) as the two backends here:
// Memory, and Bolt, a bbolt file. Bolt can share a bbolt database with the
// journal (NewBolt) and write blobs inside the journal's transaction
// (PutTx), so that a step's records and blobs commit together. In the
// bucket "cas" a blob under 16 KiB is a value keyed by its 32-byte
// digest; a bigger one is a nested bucket under its digest holding the
// bytes under the key "blob" (package cas/internal/boltlayout), so that putting it does not rewrite
// the big blobs that would otherwise share its B+tree leaf (bbolt never
// splits a leaf of four keys or fewer). Reads accept either form.
//
// Verify walks a whole store and reports every corrupt blob.
//
// # A damaged file
//
// OpenBoltDB refuses a bbolt file damaged below its data with a
// *BoltDamageError rather than let bbolt crash on it or read it as good:
// a file cut short, a page that is not what the tree says, and a damaged
// meta page. bbolt keeps two meta pages, each naming the state after a
// commit (transaction t is written to page t%2, so a sound file holds two
// consecutive transactions, each in its slot); it reads the newest valid
// one and silently falls back to the other, taking a damaged page for a
// torn write. A torn meta page cannot happen on a disk that writes a
// sector at once (its fields are the first 80 bytes), so OpenBoltDB
// compares both pages, under the file's lock, and refuses a file whose
// pages are not so: a zeroed newer page would otherwise drop the last
// commit without a word, and the next write make the loss permanent. A
// zeroed page cannot tell whether it was the newer, so the older's damage
// is refused too. (Keeping the last committed head beside the file was
// the other way: it would take a backup restored on purpose, a genuinely
// older file, for a damaged one, and could itself be lost or stale.)
// RecoverBoltMeta goes on from the valid page when the user says so
// (demiurge recover), keeping a copy of the damaged file.
//
// # Caveats
//
//   - Nothing is ever deleted: there is no garbage collection yet.
//   - Bolt.Put is one bbolt transaction with its own fsync; concurrent
//     Puts are serialized by bbolt and not grouped. Write many blobs in
//     one transaction with PutTx.
//   - Blobs are held whole in memory on Get and Put; bbolt limits a value
//     to 2 GiB.
package cas
