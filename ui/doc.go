// Package ui serves a web view of a demiurge store on the loopback
// interface: the store's worlds (the one last active first, each with
// where its chats stand and how many of its turns and tool calls failed)
// and chats, each session as a timeline (turns, model calls, tool calls
// with their arguments, results, commands and workspace changes), filtered
// to one chat's turns or to the failed ones, any record decoded to JSON
// with its refs linked to their blobs, a replay run from the page with a
// divergence shown side by side, and running sessions updated live over
// server-sent events. A call that waits for approval shows Approve and
// Deny buttons, which hand the decision to Options.Decide (demiurge ui
// sends it to the process that runs the world, which journals it as it
// does demiurge approve's). The view never writes the store itself.
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
// it. Pages send a Content-Security-Policy that allows only the view's own
// script and style, and blobs are served raw only as downloads, so nothing
// read from the store runs in the page.
//
// A page on another port of the same host is the same site to a browser,
// which sends it the cookie: SameSite does not tell ports apart. So GET
// and HEAD only read, and what acts (a replay, an approval, a denial) is
// a POST from one of the view's own forms, which carry a form token (a
// hash of the view's token, in the pages, which another origin cannot
// read); a POST without it, or whose Origin is another's, is refused. A
// request that the browser says another site's page made
// (Sec-Fetch-Site cross-site or same-site) is refused too, unless it is a
// link followed to a page of the view: another page cannot even make the
// view read its store. Other methods get 405.
//
// # Caveats
//
// Every page reads the journal from the first record: a world of many
// thousand records takes as long to show as `demiurge trace` takes to
// print it, and the list of worlds reads every agent world's session (for
// its status and failures). A live page reads only the records that land
// after it.
//
// The buttons answer a call only through Options.Decide: demiurge ui
// answers only while a process runs the world (demiurge run, at its
// terminal or on a pipe), since the rest of the turn needs the model and
// the tools; otherwise the page names the demiurge approve command that
// answers it.
//
// A replay from the page runs in the server's process with the reducers
// of Options.Reducers, one at a time, and writes nothing; the blobs a
// diverging step derived (which the store never held) are kept in memory
// until the next replay diverges, so that the page's links to them work.
package ui
