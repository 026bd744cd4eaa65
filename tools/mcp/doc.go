// Package mcp offers the tools of MCP servers as demiurge tools, with the
// official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// A world's manifest declares its servers (mcp_servers: a stdio command
// with arguments and environment, or a streamable-HTTP URL with headers;
// values may be defsecret refs). [FromManifest] turns them into [Server]
// values with secrets resolved; [Connect] starts them all at once, lists
// their tools and returns a [Set]:
//
//	servers, err := mcp.FromManifest(cat, os.LookupEnv, manifestDir)
//	set, err := mcp.Connect(ctx, servers, &mcp.Options{Store: store, Reserved: builtinNames})
//	defer set.Close()
//	set.Tools()   // tools.Tool values: the model's tools and the bash tool's commands
//	set.Specs()   // their specs: family mcp, server, server tool, strict false
//	set.Adapter() // the mcp.call effect adapter ({server, tool, arguments_json} → sys/ToolResponse@1)
//
// # Names
//
// A server's tool is "<server>_<tool>" for the model (and in bash
// scripts), unless the manifest gives it an alias. Names that collide —
// two servers', or a server's and a built-in tool's — and names an LLM API
// or the shell would refuse are an error of Connect, which names the alias
// that fixes it: nothing is silently shadowed. A tool whose input schema
// is not a JSON Schema object that compiles (the model API or the chat
// reducer would refuse it) is left out and listed in ServerInfo.Skipped.
//
// # What is kept
//
// Each server's tool list (its tools' names, descriptions, input and
// output schemas and annotations, as the model is sent them) is a
// [ToolList], stored in CAS as one canonical CBOR node. A call's response
// keeps the result's text content and its structuredContent (as compact
// JSON, unless it adds nothing to the text: a text block holds the same
// JSON, or it is an object of strings each a text block); a result with
// isError is an error response (tool_error) the model reads. Output is cut
// at the tool's limit while the text is assembled — [DefaultOutputLimit]
// bytes, [DefaultReadLimit] for tools the server marks read-only — on a
// UTF-8 boundary, with a note of the result's size. The SDK bounds each
// message a stdio server sends (16 MiB); a larger one closes the
// connection.
//
// # Failures
//
// Every call is bounded by its server's timeout (timeout_ms, default
// [DefaultCallTimeout]). A server that dies is restarted once, at its next
// call; if it dies again, its calls fail with an "unavailable" error that
// says so. A server that fails to start has no tools, and does not stop
// the others. Bad arguments (checked against the tool's schema before the
// call, then by the server), unknown servers and tools, and JSON-RPC
// errors are error responses with a category and an exit code, never Go
// errors or panics.
//
// # Secrets
//
// Resolved secrets go to the server's environment or headers only. They
// are never logged; every text that comes back from a server — results,
// error messages, the end of its stderr — has them replaced by "[secret]".
// A stdio server inherits only PATH, HOME, USER, LOGNAME, SHELL, TERM,
// TMPDIR and LANG from the host (not, say, OPENAI_API_KEY), plus its own
// environment.
//
// # Caveats
//
// The model sees the tools listed when the servers connected: a server
// that changes its tools later (or across its restart) is still offered
// with its first list, and a warning is logged. A stdio server runs in its
// own process group, which is killed when its session closes, so the
// processes it started (npx starts node) end with it. Servers are not
// replayed: replay reads their results from the journal.
package mcp
