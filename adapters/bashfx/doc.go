// Package bashfx ("bash effects") runs the scripted.run effect: a script
// of the bash tool (package tools/bash), where every tool of the world is
// a command, and every command runs through the same caps, policies and
// adapters as a direct tool call. It is not named bash, so that it never
// shadows the package it builds on in files that import both.
//
// # Shell and Adapter
//
// A [Shell] is the bash tool of a tool set: a bash.Tool whose commands
// are the given tools.Tool values, built once (callbacks are
// shared; each run gets a fresh interpreter). Shell.Run runs one script and
// hands every command to a [CallFunc], which decides how the command runs.
// A command's flags become the tool's JSON arguments (sorted keys); its
// stdout is the tool's, with a final newline added for tools whose output
// is a JSON object, as jq writes them.
//
// An [Adapter] is the effects.Adapter of scripted.run. Its CallFunc turns a
// command into the effect of the tool's family ([Route]: introspect.call,
// workspace.call, mcp.call), asks the world's effects.Gate about it — with
// the grant the world uses for that family ([GrantsFromPlan]), and the
// origin and logical time of the scripted.run intent — and, when allowed,
// runs the same effects.Adapter a direct call of that kind uses. A denial
// fails the command (exit status 1) with a message naming the cap or the
// policy that refused, which the script sees on stderr; the script goes on.
// The receipt is sys/ToolResponse@1: the script's output and exit status,
// every tool call it made (calls) and every workspace commit those calls
// made (commits), so replay and trace show it all.
//
// demiurge sh runs a Shell with [Direct], which calls the tools themselves,
// without a gate: it is the operator's shell, not the model's.
//
// # One workspace
//
// A run's [Mount] is the script's /workspace and, through
// workspace.Service.WithView, what the workspace_* commands of that
// workspace read and change: `workspace_write --path x ...; cat x` and
// `echo hi > f; workspace_read --path f` see what was just written, and
// the commands' changes become part of the script's one new version rather
// than commits of their own. A command that names a version the store has,
// or another workspace, reads and commits as it does outside a script.
//
// # Determinism
//
// The script's `date` reads the intent's logical time, never the host
// clock. Each command's effect gets the idempotency key
// "<scripted.run intent hash>/<call seq>", where the seq is the call's
// bash.CallSeq: the same script run again (after a crash) asks the
// same tools with the same keys. The sub-calls are not journaled as
// intents of their own: the scripted.run receipt, which the world
// journals, records them.
//
// # Caveats
//
// A command that succeeds returns only its stdout to the script, and one
// that fails only its stderr (as its error message, on one line): the
// callbacks of tools/bash have no other channel. A workspace command
// changes the script's files when it returns: a stage of a pipeline that
// writes the same path meanwhile may lose to it, as two writers would on a
// disk, and a file the script holds open at a path the command replaces is
// no longer the workspace's (as after a rename over it). A tool that ignores
// its context may still be running when the script ends; Run waits for it
// (until the call's context is done, at most Options.Drain) so that the
// commits it makes reach the receipt.
package bashfx
