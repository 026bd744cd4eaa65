// Package replay checks recorded worlds against the code: it replays
// journals and session bundles, reports the first divergence readably,
// prints timelines (Trace), and re-derives recorded sessions with new code
// (Rebase). The golden replay test of a session is replaytest.CheckGolden.
//
// # Session bundles
//
// A bundle is a portable directory holding one world's session:
//
//	bundle.json      format, world name, head, manifest hash, counts
//	air/             the AIR files the world was loaded from, and beside
//	                 them its WASM modules (air/modules/<name>-<hex>.wasm),
//	                 so that air/ loads as the world's folder did
//	journal.cbor     every record, as stored, in a CBOR sequence
//	blobs/<hex>      every blob the records refer to, directly or through
//	                 other blobs, named by their BLAKE3 digest
//
// Export writes one from a store; Import reads one into a store, checking
// every record's hash chain and every blob's hash. A bundle replays without
// the model or any tool: its inputs, receipts included, are in the journal.
package replay
