// Package shcmd is the command line of the sandbox's shell, shared by
// `demiurge sh` (package cli) and demiurge-sh (cmd/demiurge-sh): the
// flags both take (-c, --timeout, --prompt), reading the script (-c, a
// file or standard input), building the shell, running a script with its
// output printed as it runs, and the help text of the exit codes.
//
// Main is demiurge-sh itself: a script in the sandbox with no world (the
// shell, its utilities and an empty in-memory workspace), and, given
// --manifest, `demiurge sh` run in its place. It exists because one
// binary that also holds the model adapters, serve and the metrics cannot
// start in under 3× `bash -c true` (docs/BENCHMARKS.md, "Start-up"): Go
// runs the init of every package a program links, whatever it runs. So
// this package, and all it imports, must stay light: none of net/http,
// adapters/llm, the model SDKs, prometheus, the MCP SDK, serve, wazero or
// pgx (cmd/demiurge-sh's test fails if one of them is linked).
package shcmd
