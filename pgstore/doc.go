// Package pgstore keeps demiurge's journal and CAS in a PostgreSQL
// database, together with what running worlds on many workers needs: each
// world's lease and the inbox of messages to it.
//
// # Basics
//
// Open connects to a store URL (postgres://user:password@host:port/db,
// with a search_path option to pick a schema) and creates or upgrades its
// tables (SchemaVersion, recorded in demiurge_meta). Store.Journal is a
// journal.Store and Store.CAS a cas.Store: both pass the conformance
// suites the bbolt backend passes (journal/journaltest, cas/castest).
// Store.Commit is world.Storage's Commit: a world step's records and
// blobs are written in one transaction.
//
// # Tables
//
//	journal_records  world, seq, kind, payload, prev, hash   (a row per record)
//	journal_heads    world, seq, hash                         (a row per world)
//	cas_blobs        digest, size, data                       (data NULL: chunked)
//	cas_chunks       digest, n, data                          (ChunkSize a row)
//	worlds           world, manifest, owner, token, expires   (the lease)
//	inbox            id, world, manifest, schema, value, posted, seq, error
//
// A record's hash is the BLAKE3 of its canonical encoding (journal.Record
// Encode), which Read recomputes for every record it reads, checking the
// chain of prev links as the bbolt journal does. A blob is re-hashed on
// every Get; Reader and PutReader stream blobs of any size.
//
// # Commits
//
// A commit is one round trip: a batch of statements that the server runs
// as one implicit transaction. Its first statement calls the function
// demiurge_append, which checks the fence (the world's lease is the
// writer's: owner and token), then moves the world's head row from the
// expected head to the new one (an UPDATE with the expected seq and hash
// in its WHERE, or an INSERT for a new world) and inserts the records.
// A failed check raises an error that aborts the whole transaction, so a
// conflicting or fenced-off writer writes nothing, not even its blobs.
// Writers of one world queue on its head row; a second writer with the
// same expected head finds it moved and fails with a
// *journal.ConflictError.
//
// # Leases and the inbox
//
// A world is run by one worker at a time: the worker that holds its lease
// (Acquire), renews it before it expires (Renew), and commits under it
// (CommitWith and a Fence). Each takeover increments the world's fencing
// token; the append function reads the lease row FOR SHARE and refuses a
// commit made with another token (a *LeaseError), whatever its writer
// believes, so a paused worker that wakes up after its world moved cannot
// write; and a takeover waits for a commit in flight under the old lease
// to end. Expiry is by the server's clock. Messages to a world are rows
// of the inbox (Post, which also NOTIFYs listeners); the commit that
// journals one marks it taken, in the same transaction, so a message is
// journaled once whatever crashes when. What is not journaled goes the
// other way on a world's stream (PublishStream, ListenStream: NOTIFY on a
// channel of the world's own): a model's answer as it streams, from the
// worker to the clients that listen at that moment.
//
// # Caveats
//
//   - The URL's password is kept in memory (the pool reconnects with it)
//     and is scrubbed from every error; Name returns the URL redacted.
//   - Nothing is ever deleted: no garbage collection of blobs, and taken
//     inbox messages stay (they record where each message went).
//   - Worlds lists the worlds with a head row; records whose head row was
//     deleted are not listed.
package pgstore
