package cli

import (
	"context"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/tools"
)

// An Option extends the command line with what a program that builds its
// own demiurge adds: Go tools, reducers.
type Option func(*extensions)

// extensions are what the options add to every command.
type extensions struct {
	name     string
	tools    []tools.Tool
	reducers []func(*reducer.Registry)
	adapters map[string]effects.Adapter
	getenv   func(string) string
	commands []*cobra.Command
}

// WithTools adds Go tools to the agent of every world the command line
// runs (run, worker; see agent.WithTools: each is a tool the model can
// call and a command of its bash scripts, run as a custom.call effect),
// and to the commands of sh --manifest. agent.Func makes one of a Go
// function.
func WithTools(ts ...tools.Tool) Option {
	return func(e *extensions) { e.tools = append(e.tools, ts...) }
}

// WithReducers registers reducers beside the built-in ones and those of
// the example worlds, so that worlds whose AIR names them load in every
// command (run, send, replay, validate, ui, …).
func WithReducers(register func(*reducer.Registry)) Option {
	return func(e *extensions) { e.reducers = append(e.reducers, register) }
}

// WithAdapter runs effects of kind with a, in every world the command
// line opens (run, worker, send, sh, …): the adapter of a reducer's or a
// plan's own effect (see agent.WithAdapter). It replaces a built-in
// adapter of the same kind.
func WithAdapter(kind string, a effects.Adapter) Option {
	return func(e *extensions) {
		if e.adapters == nil {
			e.adapters = map[string]effects.Adapter{}
		}
		e.adapters[kind] = a
	}
}

// WithName names the program in its help, its usage errors and the
// completion scripts it writes (default "demiurge"): a program that
// extends the command line and is installed under its own name gives that
// name, so that its completion completes it.
func WithName(name string) Option { return func(e *extensions) { e.name = name } }

// WithEnv reads the environment with getenv instead of os.Getenv
// ($DEMIURGE_STORE, OPENAI_API_KEY and the rest): for tests of a program
// that extends the command line, which should not see the developer's.
func WithEnv(getenv func(string) string) Option { return func(e *extensions) { e.getenv = getenv } }

// WithCommands adds commands of the program's own beside demiurge's; a
// command named as one of demiurge's is never run (demiurge's is), so
// name them apart. Each runs as any cobra command does; the store flag
// (--store) and -v are the root's, persistent, so a command reads them
// with cmd.Flags().GetString("store").
func WithCommands(cmds ...*cobra.Command) Option {
	return func(e *extensions) { e.commands = append(e.commands, cmds...) }
}

// Main runs the command line on the process's arguments and exits with
// its exit code. Ctrl-C is routed as demiurge routes it (it stops a turn
// under way; twice quits), and SIGTERM ends the command (exit 143). It is
// the main of cmd/demiurge, and of a program that extends it:
//
//	func main() { cli.Main(cli.WithTools(getWeather)) }
func Main(opts ...Option) {
	ctx, cancel := context.WithCancelCause(context.Background())
	in := &interrupts{cancel: func() { cancel(nil) }}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		for s := range sig {
			if s == syscall.SIGTERM {
				cancel(errTerminated) // not routed: it ends the command
				continue
			}
			in.fire()
		}
	}()
	a := newApp(stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}, in)
	a.ext = newExtensions(opts)
	os.Exit(executeApp(ctx, a, os.Args[1:], a.ext.getenv))
}

// Run runs the command line args (without the program's name) with the
// given standard streams and the process's environment, and returns its
// exit code; ctx ending cancels the command. Signals are left to the
// caller. It is for tests of a program that extends the command line.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, opts ...Option) int {
	a := newApp(stdio{in: stdin, out: stdout, err: stderr}, nil)
	a.ext = newExtensions(opts)
	return executeApp(ctx, a, args, a.ext.getenv)
}

func newExtensions(opts []Option) *extensions {
	e := &extensions{name: "demiurge", getenv: os.Getenv}
	for _, o := range opts {
		o(e)
	}
	return e
}

// agentOptions are the agent options the extensions make.
func (e *extensions) agentOptions() []agent.Option {
	if e == nil {
		return nil
	}
	var opts []agent.Option
	if len(e.tools) > 0 {
		opts = append(opts, agent.WithTools(e.tools...))
	}
	for _, r := range e.reducers {
		opts = append(opts, agent.WithReducers(r))
	}
	kinds := make([]string, 0, len(e.adapters))
	for kind := range e.adapters {
		kinds = append(kinds, kind)
	}
	slices.Sort(kinds)
	for _, kind := range kinds {
		opts = append(opts, agent.WithAdapter(kind, e.adapters[kind]))
	}
	return opts
}
