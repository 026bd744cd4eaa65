// Package world is the kernel of demiurge: a deterministic stepper that
// ties the journal, the reducers, the plans and the effects of one world.
//
// # Basics
//
// A world is loaded from an AIR manifest (a schema.Catalog) and runs in a
// single goroutine. Inputs enter it one at a time: domain events from
// outside (Send) and receipts of effects. Each input gets an ingress stamp
// (wall time, logical time, journal height, entropy) that is journaled
// with it and is the only time and randomness reducers and plans see.
//
// A Machine turns one input into the records it derives: events are routed
// to reducer cells (keyed by key_field or by the key an event carries),
// offered to plans waiting for them and start the plans their triggers
// name; plans run until they block; effects are decided (caps, policies,
// secrets) and become intents. All records of a step, and the new blobs
// they refer to, commit in one journal transaction. Only then are the
// step's intents dispatched to adapters, which run concurrently on a
// bounded pool; their receipts come back as inputs. Receipts that arrive
// together share one commit.
//
// # Inline effects
//
// An effect whose adapter is an effects.InlineAdapter (the introspect
// reads, say) changes nothing outside the world, so it need not wait for
// its intent to be durable: the world runs it right after the step that
// emits it and applies its receipt as the next input of the same batch.
// The intent, the run and the receipt then commit together — a tool round
// of the agent costs one commit instead of two — and a crash before that
// commit loses them all, which is the same as the input never having been
// applied. While it runs, the effect reads the world through its context
// (InStep, StepJournal, StepCAS): the machine as the step left it, the
// step's records with the hashes they commit with, and its blobs. The
// effects one step emits run concurrently (the tool calls of one turn),
// each receipt stamped when its run ended, and join the batch in emission
// order. They run under the world's lock, so they must be quick, and the
// adapter says no (and is dispatched as usual) when it would wait for the
// world to move on.
//
// # Early effects
//
// An effect whose adapter is an effects.EarlyAdapter (the model's) starts
// while the commit of its intent is under way, and sends nothing until the
// intent is durable (effects.WaitDurable): it reads its inputs and builds
// its request while the commit waits for the disk. It reads the batch's
// blobs through the overlay until the commit has stored them. If the
// commit fails, WaitDurable says so and the call is cancelled; nothing has
// left the process. The write-ahead rule holds: an effect that reaches
// outside the world does so only for an intent in the journal.
//
// # Reads
//
// State, Head and PlanInput read what the last commit published (the
// cells and plans its batch changed, stored once it is durable, before
// OnCommit and before the Send that made them returns), without the
// world's lock: a reader never waits for the batch being applied and
// committed, and never sees a state that is not durable yet. View, ViewAt
// and Cells read the machine itself under the lock, which a batch holds
// from its first step to the end of its commit.
//
// # Journal
//
// Inputs are Manifest, DomainEvent and Receipt records. Everything else —
// Event, State, ReducerError, PlanStarted, PlanEnded, Intent, Denied,
// Rejected, Snapshot — is derived, and Rerun re-derives it byte for byte,
// reporting the first difference as a *DivergenceError (which, at a State
// record, holds both states decoded, and the blobs the step derived).
// Derived events are never applied twice: replay compares them, it does
// not apply them. A Fork record (see Fork) ends the records a world
// copied from the world it was forked from; Rerun checks them against
// that world's hash chain.
//
// # Recovery
//
// Open restores the newest snapshot and re-derives (and so verifies) every
// record after it. It finds that snapshot by reading the journal back from
// the head in growing windows, so opening a long-lived world costs the
// records since its last snapshot, not its whole journal; records before
// the snapshot are checked by `demiurge journal verify` and replay from
// genesis, not by Open. Intents without receipts are dispatched again with the
// same intent hash and idempotency key: effects are at least once.
//
// # Caveats
//
//   - One input may derive at most MaxDerived events and plan runs; more
//     means a reducer or plan loops, and the world stops with an error
//     saying so (its journal as it was before the input).
//   - A world stops when a commit fails (a full disk, a damaged page) or
//     when a reducer or an adapter reads a damaged store (an error wrapping
//     cas.ErrCorrupt): nothing of the step is journaled (a damaged store is
//     not the reducer's error, nor the effect's), and Send, WaitIdle and
//     every later call return the error at once. Reopening recovers from
//     the journal; intents left without receipts run again.
//   - A world's journal has one writer. Open the same world in one process
//     at a time (the bbolt file lock ensures it for BoltStorage).
//   - Send returns once its input is durable; when several inputs share a
//     commit, the head it returns may include records after its own.
//   - A failed micro-effect (blob.put, blob.get, timer.set) still comes
//     back to its reducer, as a result event with status "error" or
//     "timeout" and a zero receipt. A denied one is journaled (Denied) and
//     the reducer hears nothing.
//   - Every plan ends with a PlanEnded record. A plan that fails also
//     raises a sys/PlanEnded@1 event (carrying the plan's input and the
//     key of the event that started it) when something routes, triggers on
//     or awaits that schema, so a reducer can answer for it.
//   - A world reopened with a changed manifest records the change (a
//     Manifest record, the new catalog's nodes stored with it) and runs
//     the new one from then on. Recovery and replay run every record under
//     the manifest it was written under: a Manifest record switches the
//     machine to its catalog, rebuilt from the store (schema.LoadFromCAS)
//     when it is not the one given. A plan instance in flight across the
//     change runs on with the plan def it started with (pinned by hash),
//     also after a restore from a snapshot taken after the change: the
//     snapshot names the manifests such instances still need
//     (plan_manifests), and the restore loads them from the store.
//     RerunOptions.UnderManifest replays everything under the manifest
//     given instead, to see what changed AIR would derive differently.
package world
