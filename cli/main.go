package cli

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/tools"
)

// An Option extends the command line with what a program that builds its
// own demiurge adds: Go tools, reducers.
type Option func(*extensions)

// extensions are what the options add to every command.
type extensions struct {
	tools    []tools.Tool
	reducers []func(*reducer.Registry)
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
	os.Exit(executeApp(ctx, a, os.Args[1:], os.Getenv))
}

// Run runs the command line args (without the program's name) with the
// given standard streams and the process's environment, and returns its
// exit code; ctx ending cancels the command. Signals are left to the
// caller. It is for tests of a program that extends the command line.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, opts ...Option) int {
	a := newApp(stdio{in: stdin, out: stdout, err: stderr}, nil)
	a.ext = newExtensions(opts)
	return executeApp(ctx, a, args, os.Getenv)
}

func newExtensions(opts []Option) *extensions {
	e := &extensions{}
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
	return opts
}
