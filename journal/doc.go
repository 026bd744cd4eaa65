// Package journal implements the append-only, hash-chained record log of
// each world.
//
// # Basics
//
// A world is a name (see ValidateWorld) and its journal is a sequence of
// records numbered from 1. A caller appends Entries — a kind and an opaque
// payload, usually canonical CBOR — with Append, naming the head it
// expects; all entries of one append are written in one transaction with
// contiguous seqs, or none is. The world is written by one stepper, which
// always knows its head, so a wrong expected head is a conflict
// (ErrConflict), never a silent interleaving.
//
// Each record is stored as the canonical CBOR map (cas.Marshal, with the
// self-describe prefix)
//
//	{"seq": uint, "kind": text, "payload": bytes, "prev": bytes(32)}
//
// and its hash is the BLAKE3 of those bytes (cas.Sum). prev is the hash of
// the previous record; the first record's prev is Genesis(world), the
// BLAKE3 of "demiurge/journal/v1\x00" followed by the world name, so a
// chain moved to another world is detected. The Head of a world is the
// seq and hash of its newest record; the zero Head means no records.
//
// Read returns records in seq order and checks the chain as it reads;
// Verify walks a whole world without trusting the backend. A record that
// does not decode, a missing seq, a broken link or a head that does not
// match the last record is a *CorruptError wrapping ErrCorrupt, naming the
// world and the seq: "journal: world W: hash chain broken at seq N: …".
//
// # Backends
//
// Package pgstore keeps records in PostgreSQL, a row each, for worlds run
// on many machines; EncodeEntries and Checker let such a backend in
// another package chain and check records as this package's do, and
// journaltest checks them all alike.
//
// Memory keeps records in memory, for tests and replay. Bolt keeps them in
// a bbolt file, either its own (OpenBolt) or one shared with the world's
// CAS store (NewBolt), in top-level buckets (see layout.go):
//
//	journal          "format" -> "demiurge/journal/v2"
//	journal.log      8-byte big-endian position -> step
//	                 position ++ 4-byte big-endian index -> record bytes
//	                 0xff ++ world name -> head seq ++ head digest ++ position of its last step
//	journal.anchors  world name ++ 0x00 ++ 8-byte big-endian seq -> position
//
// The log holds every world's records in commit order: each append is one
// step (a header naming its world, its first seq and the position of the
// world's previous step, then its records under keys of their own) at the
// next position. Appends of any number
// of worlds therefore write at the right edge of one B+tree, plus their
// head entries: a group commit of 64 worlds writes about the pages of its
// records, not the tail pages of 64 trees (format v1, one bucket per world,
// wrote 4.8 pages per 5-record step; see docs/BENCHMARKS.md). A read
// follows a world's links back from its head, or from an anchor (one for
// each step that holds a seq s with (s-1) % 128 == 0), so reading from any
// seq touches at most 128 records it does not return. A journal of format
// v1 is rewritten into v2, records byte for byte, when it is first opened
// read-write.
//
// Bolt commits one transaction at a time and groups appends: appends that
// arrive while a commit runs queue up, and the committer goroutine takes
// every one of them (from any number of worlds and callers) into the next
// transaction, so they share one fsync (group commit); an append that finds
// no commit running is committed by its own goroutine at once, so a single
// writer pays what a raw bbolt Update costs. bbolt's db.Batch is not used:
// it waits 10 ms for company even when there is none. Each append is
// acknowledged only after its transaction is durable. Appends of one world
// in a group are applied in arrival order, each checked against the head
// the earlier ones left. Bolt's AppendWith also runs a caller function in
// the same transaction, so the CAS blobs of a step commit with its records.
//
// The package journaltest holds the conformance suite every backend
// passes.
//
// # Caveats
//
// World names are 1 to 128 bytes of ASCII letters, digits, '.', '_' and
// '-', starting with a letter or digit; other names are rejected
// (ErrInvalidWorld) so that a name is safe in file names, URLs, shells and
// database keys. The rule can be loosened later without breaking stored
// journals; tightening it could.
//
// A Head or Read of a world without records is not an error: the head is
// the zero Head and Read calls fn never. Verify, which is for humans
// checking a store, returns ErrNotFound for such a world.
//
// A record's payload is at most MaxPayloadSize (16 MiB) and its kind at
// most MaxKindLen bytes; big data belongs in the CAS.
//
// A flipped byte in a record's payload breaks the link into the next record
// (or the head), so it is reported at the next seq: "hash chain broken at
// seq N+1 … (record N or N+1 was altered)". The chain cannot tell which of
// the two was changed, and Read gives neither to its callback: a record is
// delivered only once the next link (or the head) confirms it. The chain detects damage, not forgery: whoever
// rewrites a tail of records together with the head goes unnoticed.
//
// Read with from > 1 checks the link into record from but nothing before
// it; only reading from 1 (or Verify) checks a world from its genesis.
//
// Bolt trusts bbolt's own page structure, and turns bbolt's panics on a
// damaged page (and faults on the mapped file) into a *CorruptError whose
// Err is a *cas.BoltDamageError naming the file and the page, when it
// opens, reads and commits alike. OpenBolt refuses, as cas.OpenBoltDB does,
// a file cut short (before bbolt maps it) and an empty one.
//
// The callback of AppendWith may run more than once (when the group
// transaction it ran in is rolled back because of another append) and must
// write only through its tx.
//
// Records of one world are spread over the log among other worlds'
// records: reading a world costs a B+tree lookup per step instead of a
// sequential scan of its own tree. Anchors and links are an index: Read
// checks every step they lead to, and when one is damaged it scans the log
// from the last good step instead, delivering every good record before
// reporting the first bad one, or, if every record is good, the damaged
// link. A world's records beyond its head entry (which a crash cannot
// leave, since a step and its head commit together) are not seen.
//
// If a group commit fails because the disk failed, each append of the
// group is retried alone; the outcome of an append whose commit returned
// an I/O error is unknown until the journal is read again.
//
// Durability is bbolt's: an acknowledged append has been fdatasync'ed,
// unless the DB passed to NewBolt has NoSync set.
package journal
