// Package cluster runs the worlds of a PostgreSQL store (package pgstore)
// on many workers, one owner per world, and lets clients talk to a world
// wherever it runs.
//
// # Workers
//
// A Worker takes free or expired worlds up to Options.MaxWorlds (a lease
// each, with a fencing token), renews their leases every Options.Renew,
// and runs each world as world.Open does: recovered from its journal
// (from its newest snapshot), with the intents still waiting for receipts
// dispatched again. Every commit of a world is fenced with its lease: once
// another worker took the world over, the old owner's commits are refused
// by the database, whatever the old owner believes, and the old owner
// stops the world as soon as it learns (a refused commit or a failed
// renewal). A worker that cannot renew for a whole lease stops all its
// worlds. A world whose commit failed for another reason (the database
// restarted) is reopened from the journal.
//
// # Messages
//
// Messages to a world are rows of its inbox (pgstore.Store.Post), which
// its owner reads when woken by a notification, or at the latest every
// Options.Poll. It sends them to the world one at a time, in order; the
// commit that journals a message's event marks the message taken in the
// same transaction, so each message is journaled exactly once across
// crashes and takeovers. A message that does not fit its schema is
// refused, and nothing of it is journaled.
//
// # Clients
//
// A Remote is a world as a client sees it: SendJSON posts to the inbox
// and waits until the event is journaled, WaitIdle waits until every
// effect journaled has its receipt, State reads a cell's state, and
// OnCommit sees every new record: all read from the journal, so a client
// follows the world through takeovers.
//
// # Caveats
//
//   - Takeover after a worker dies takes up to the lease plus an acquire
//     period (Lease/5): DefaultLease is short (1s) for that; a worker
//     paused longer than its lease loses its worlds.
//   - Effects are at least once: an effect in flight when its worker died
//     (or was paused past its lease) runs again on the new owner (with the
//     same idempotency key). Otherwise a world moves only when its worker
//     hands it over, once the effects it has in flight are answered (see
//     Worker.Run and Options.Handover): a worker that joins, or one that
//     stops cleanly, makes nothing run twice.
//   - A worker opens a world with the manifest clients registered (the
//     one their last message was checked against); its adapters are
//     whatever Options.Open gives it.
package cluster
