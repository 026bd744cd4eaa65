// Package introspect lets a model and AIR plans read the world they run
// in: its manifest, schemas, modules, reducer state and journal head.
//
// # Tools
//
// Tools returns five tools.Tool that a world runs as introspect.call
// effects (through adapters/toolcall):
//
//   - introspect_manifest: the manifest's defs by kind with their hashes,
//     routing, triggers and defaults; optionally one def's full AIR;
//   - introspect_schemas: schemas' AIR types, by name or all of the world's;
//   - introspect_module: a module's key, state and event schemas with their
//     types, and the routes and triggers that reach it;
//   - introspect_state: a reducer cell's state as the sugar JSON of its
//     schema, or the keys of a keyed reducer's cells;
//   - introspect_journal_head: {world, height, head_hash, manifest_hash}.
//
// Each writes one compact JSON object to Stdout, cut at
// Options.OutputLimit bytes (50,000 by default) on a UTF-8 boundary with a
// note of the original size. Errors are exit code 1 with the reason on
// Stderr and a category (invalid_arguments, not_found, unavailable,
// internal) in Response.Error; a timeout is 124, a cancellation 130. The
// tools validate their arguments against their input schemas themselves,
// so a caller that skipped validation gets the same messages.
//
// # Effects
//
// Adapters returns the adapters of AgentOS's introspect effects for AIR
// plans: introspect.manifest, introspect.reducer_state,
// introspect.journal_head and introspect.list_cells, whose receipts fit
// the built-in sys/Introspect*Receipt@1 schemas (values as canonical
// CBOR bytes, and a sys/ReadMeta@1).
//
// # Consistency
//
// Reads take a consistency (ParseConsistency):
//
//   - "head": the world now;
//   - "exact:<h>": the world as it was at journal height h, 1 <= h <= head:
//     a cell's state is the one the newest State record with seq <= h
//     wrote, and the manifest the newest Manifest record's; a height above
//     the head is an error that names the head;
//   - "at_least:<h>": the world now, once the head has reached h. A read
//     waits for the head (polling it) up to Options.MaxWait (5 s by
//     default) and while its ctx lasts, then fails naming the head. Inside
//     a world the head moves on as other inputs arrive, and a height the
//     model saw has always been reached, so the wait is short or none.
//
// Every answer carries a ReadMeta: the height it belongs to and the
// manifest the world ran then. snapshot_hash is always null: reads come
// from the live world or the journal, never from a snapshot.
//
// # Wiring
//
// A View is what the package reads of a world; world/worldview implements
// it for a *world.World (worldview.New before world.Open, Attach after; or
// worldview.Of for an open world). The package does not import world.
//
// # Caveats
//
//   - exact:<h> below the head and introspect.list_cells read the journal
//     from its first record: their cost grows with the journal's length.
//   - introspect_state at exact:<h> renders a state with the schema the
//     world runs now; a state that does not fit it (written under an older
//     manifest) is shown as untyped JSON.
//   - introspect.list_cells' last_active_ns is the logical time (ingress
//     stamp) of the input whose step last changed the cell, found by reading
//     the journal; a step that left the cell unchanged does not count.
package introspect
