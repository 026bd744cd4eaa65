// Package cli is the demiurge command line: run, send, trace, replay, sh,
// ui, worker and the rest, as the demiurge binary (cmd/demiurge) runs
// them. "demiurge help" lists the commands and the exit codes.
//
// A program extends it by building its own binary around Main, the way
// Caddy's plugins and OpenTelemetry's collector builder extend theirs:
// WithTools adds Go tools to the agent (a tool the model calls, and a
// command of its bash scripts), WithReducers adds reducers that its worlds'
// AIR can name, WithAdapter the adapters of their effects, WithCommands
// commands of its own, and WithName the program's own name (for its help
// and completion). Everything else is
// the demiurge command line as it is:
//
//	func main() { cli.Main(cli.WithName("mydemiurge"), cli.WithTools(getWeather)) }
//
// Run runs it in a test (WithEnv keeps the developer's environment out).
// examples/mydemiurge is such a program, with a test that runs it.
package cli
