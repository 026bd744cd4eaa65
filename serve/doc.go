// Package serve serves an agent over HTTP, for programs in any language
// and any chat front end: a native JSON API whose turns stream as
// Server-Sent Events carrying the events of `demiurge run --json` (one
// schema, docs/run-json.schema.json), and OpenAI-compatible endpoints
// (POST /v1/responses, POST /v1/chat/completions, GET /v1/models), so
// that an OpenAI client talks to the agent as if it were a model, its
// tools running, journaled, on the server. `demiurge serve` is a thin
// command over it; docs/api.md describes the API and docs/openapi.json
// each route.
//
// # Turns outlive requests
//
// A message starts a turn that runs in the server to its end, whatever
// becomes of the request that sent it: a client that goes away changes
// nothing (the turn is stopped only by POST …/stop). Each event of a
// stream has an id, "SEQ:N": the journal seq of the step that wrote it
// (or, for the model's text as it streams, of the last step before) and
// its place among the events since. A client that lost its stream comes
// back with Last-Event-ID and gets every event after it, once: from the
// events the server keeps in memory (text included) while the turn is
// recent, else from the journal (agent.Chat.Watch), where a server that
// was killed mid-turn, restarted, finds it: the world's reopening resumes
// the turn, and its stream goes on.
//
// # Where worlds run
//
// On a store of its own (bbolt) the server runs the worlds, opening each
// on first use and closing it once nothing has used it for
// Options.WorldIdle (or beyond Options.MaxWorlds unused ones): a request,
// a turn under way or waiting for approval keeps it open. The request
// that sends a message streams its turn by pulling the turn's events
// itself (iter.Pull2), with no goroutine between the agent and the
// client; a goroutine pulls the rest when no reader does. On PostgreSQL it runs none: a message goes to the world's
// inbox, the worker that holds the world runs the turn, and the server
// reads it from the journal; many servers and workers share the worlds,
// and a client may resume its stream on any server.
//
// # Who gets in
//
// Without tokens the server answers on loopback only (Listen refuses
// another address), to requests whose Host is a loopback name (no DNS
// rebinding). With a token file (TokenFile; demiurge serve token create)
// every request but the health checks carries a bearer token, kept in the
// file as its SHA-256 only, and scoped to worlds. A request from a page of
// another origin is refused unless Options.CORSOrigins names it; bodies
// are JSON (no form a page could post unasked), of bounded size; each
// token (or, without tokens, each address) has a rate limit; slow clients
// are cut off by the header, read and per-write timeouts. The access log
// names the token by its id, never its secret, and no message text.
//
// # Caveats
//
// The model's text as it streams (TextDelta) is not journaled: a stream
// resumed from the journal (after a restart, or on another server) has
// the whole text of each round in its message event, not its deltas.
// Chat Completions finds a conversation's chat from the messages it sends
// back (each chat's turns, indexed by hash): a history edited by the
// client matches no chat and is refused.
package serve
