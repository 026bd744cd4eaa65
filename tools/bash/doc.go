// Package bash is the bash tool: it runs bash scripts in a sandbox where
// every registered tool is a command, so that a model can orchestrate many
// tools — with pipes, variables, loops, conditionals and jq — in one tool
// call.
//
// A [Builder] registers tools ([ToolDef] plus a [ToolCallback] or a
// [PositionalCallback]) and configuration (environment, [Limits], clock,
// error sanitizing) and builds a [Tool], which implements the tools.Tool
// contract. Each run parses the script, checks and instruments it, and
// runs it in a fresh mvdan.cc/sh/v3 interpreter; the callbacks are shared
// between executions.
//
// In a world, scripted.run is the effect that runs the bash tool
// (sys/scripted.run@1, cap sys/scripted@1), carried out by package
// adapters/bashfx. Those names are journaled and shared with AgentOS, so
// they keep the word "scripted"; the tool, its package and its demo
// (examples/bash) are called bash.
//
// Inside a script, a tool is called as `name --key value --flag=value`;
// flags are coerced by the tool's JSON Schema and validated before the
// callback runs (a boolean also takes `--flag true|false`, and `--a-b`
// names the property a_b when the schema has no a-b). `help`, `discover`,
// `<tool> --help` and `<tool> --dry-run` describe the tools, and
// in-process utilities process their output and files: awk (a POSIX awk
// of our own), jq (gojq), grep, sed, sort, find, ls, cp, mv, rm, diff, bc,
// tar and gzip, rg, tree, file, xxd and hexdump, numfmt, join, split, shuf
// and some sixty more (see the SystemPrompt of [Tool.Info]). shuf draws
// from the sandbox's random source, never the host's.
//
// # Sandbox
//
// Nothing of the host is reachable from a script: no process is started,
// no host file is opened, read, listed or checked, no host environment
// variable is visible (the environment is the Builder's and a few the
// sandbox sets: HOME, USER, SHELL, PATH, UID), and there is no network. The
// script's file system is package vfs: /workspace, its working directory
// (empty, or a caller's workspace through [RunOptions].FS), /tmp scratch
// space and /dev; paths never leave it. A caller whose tools change that
// workspace too applies their changes to the same files (vfs.FS.Set), so
// that the script sees one workspace: adapters/bashfx does so for the
// workspace_* commands. bash and sh run child shells in
// the same sandbox. eval, source and trap handlers run only when their
// code holds no loop or function definition (which the limits could not
// bound); a background job (&) runs in the foreground; coprocesses and
// >(...) are rejected before anything runs; exec only makes redirections
// the shell's own ("exec >log 2>&1"), it runs no command. Commands, loop iterations,
// function depth, concurrent pipeline stages, nested shells, tool calls,
// output, variable memory, the file system's size and wall time are
// bounded by [Limits].
//
// # Exit status
//
// 0 success; 1 a failed callback (its message replaced by
// "<tool>: callback failed" unless SanitizeErrors(false)) or an exceeded
// resource limit ("resource limit exceeded: ..."); 2 a flag, schema or
// syntax error, or a rejected script; 124 the time limit; 127 an unknown
// command, reported with the closest command's name when it looks like a
// typo of it.
//
// # Caveats
//
// A callback that ignores its context keeps running (in its goroutine)
// after Run returns; Run itself returns on time. Stages of a
// pipeline run concurrently, so the calls they make are traced in the
// order they started. The interpreter is mvdan.cc/sh/v3 v3.14.1, which
// differs from bash in places: the last stage of a pipeline runs in the
// current shell, a bare `return` returns 0, ${#assoc[@]} counts 1, and an
// arithmetic expansion that divides by zero ($((1/0))) prints "division by
// zero", expands to nothing and lets the script go on with status 0, where
// bash stops it with status 1 ((( 1/0 )) and let do fail): the error is
// decided inside the interpreter's expansion, where no handler of ours
// sees it. Where a rewrite of the script mends a difference, the sandbox
// makes it: an element assignment (m[k]=v) also sets an array declared
// without a value, which the interpreter left unset for set -u (`set -x`
// shows the `m+=()` that does it).
// Output is streamed (Run's status) a line at a time.
package bash
