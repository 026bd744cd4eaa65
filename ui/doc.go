// Package ui serves a read-only web view of a demiurge store on the
// loopback interface: the store's worlds and chats, each session as a
// timeline (turns, model calls, tool calls with their arguments, results,
// commands and workspace changes), any record decoded to JSON with its refs
// linked to their blobs, a replay run from the page with a divergence shown
// side by side, and running sessions updated live over server-sent events.
// `demiurge ui` is a thin command over it.
//
// The pages are rendered on the server with html/template; the assets (the
// templates, a style sheet and a small script for the live updates) are
// embedded in the binary. Nothing is built at run time.
//
// # Who gets in
//
// Listen accepts loopback addresses only. A Server refuses, with 403, a
// request whose Host header is not the address it serves (the name in
// its link: no DNS rebinding), and one that carries neither its token nor
// the cookie that the token's first use sets (HttpOnly, SameSite=Strict,
// named after the port), as Jupyter does. The link (URL) carries the
// token; the first request with it is redirected to the same page without
// it. Only GET and HEAD are served. Pages send a Content-Security-Policy
// that allows only the view's own script and style, and blobs are served
// raw only as downloads, so nothing read from the store runs in the page.
//
// # Caveats
//
// Every page reads the journal from the first record: a world of many
// thousand records takes as long to show as `demiurge trace` takes to
// print it. A live page reads only the records that land after it.
//
// A replay from the page runs in the server's process with the reducers
// of Options.Reducers, one at a time, and writes nothing; the blobs a
// diverging step derived (which the store never held) are kept in memory
// until the next replay diverges, so that the page's links to them work.
package ui
