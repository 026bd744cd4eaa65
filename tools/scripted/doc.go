// Package scripted runs bash scripts in a sandbox where every registered
// tool is a command, so that a model can orchestrate many tools — with
// pipes, variables, loops, conditionals and jq — in one tool call.
//
// A [Builder] registers tools ([ToolDef] plus a [ToolCallback] or a
// [PositionalCallback]) and configuration (environment, [Limits], clock,
// error sanitizing) and builds a [ScriptedTool], which implements the
// tools.Tool contract. Each Execute parses the script, checks and
// instruments it, and runs it in a fresh mvdan.cc/sh/v3 interpreter; the
// callbacks are shared between executions.
//
// Inside a script, a tool is called as `name --key value --flag=value`;
// flags are coerced by the tool's JSON Schema and validated before the
// callback runs. `help`, `discover`, `<tool> --help` and
// `<tool> --dry-run` describe the tools, and a small set of in-process
// utilities (echo, printf, jq, grep, sed, head, tail, sort, uniq, wc, cut,
// tr, seq, cat, tee, xargs, basename, dirname, base64, date, true, false,
// test) processes their output.
//
// # Sandbox
//
// Nothing of the host is reachable from a script: no process is started,
// no file is opened, read, listed or checked (redirections other than
// /dev/null, /dev/stdout, /dev/stderr and /dev/stdin fail with
// "filesystem redirection disabled"), no host environment variable is
// visible (the environment is exactly the Builder's), and there is no
// network. Syntax the sandbox cannot contain — process substitution,
// background jobs, coprocesses — is rejected before anything runs.
// Commands, loop iterations, function depth, concurrent pipeline stages,
// tool calls, output, variable memory and wall time are bounded by
// [Limits].
//
// # Exit status
//
// 0 success; 1 a failed callback (its message replaced by
// "<tool>: callback failed" unless SanitizeErrors(false)) or an exceeded
// resource limit ("resource limit exceeded: ..."); 2 a flag, schema or
// syntax error, or a rejected script; 124 the time limit; 127 an unknown
// command, reported with the list of the commands that exist.
//
// # Caveats
//
// A callback that ignores its context keeps running (in its goroutine)
// after Execute returns; Execute itself returns on time. Stages of a
// pipeline run concurrently, so the calls they make are traced in the
// order they started. The interpreter is mvdan.cc/sh/v3 v3.14.1, which
// differs from bash in places: the last stage of a pipeline runs in the
// current shell, a bare `return` returns 0, ${#assoc[@]} counts 1.
package scripted
