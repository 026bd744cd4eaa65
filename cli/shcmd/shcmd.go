package shcmd

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/demiurge-dev/demiurge/adapters/bashfx"
	"github.com/demiurge-dev/demiurge/internal/readall"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/bash"
)

// Options are the flags of a shell's command line.
type Options struct {
	// Command is -c SCRIPT.
	Command string
	// Prompt is --prompt: print the bash tool's system prompt, run nothing.
	Prompt bool
	// Timeout is --timeout, the script's time limit.
	Timeout time.Duration
}

// AddFlags adds -c, --prompt and --timeout to fs, setting o.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.Command, "command", "c", "", "run `SCRIPT` (a bash script)")
	fs.BoolVar(&o.Prompt, "prompt", false, "print the bash tool's system prompt and exit")
	fs.DurationVar(&o.Timeout, "timeout", bashfx.DefaultTimeout, "the script's time limit")
}

// A UsageError is a mistake on the command line (exit status 2).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usagef(format string, args ...any) error { return &UsageError{fmt.Errorf(format, args...)} }

// Check returns a *UsageError if the flags fs parsed into o and the
// arguments args (at most one, the script FILE) do not go together.
func (o *Options) Check(fs *pflag.FlagSet, args []string) error {
	hasCommand := fs.Changed("command")
	switch {
	case len(args) > 1:
		return usagef("sh: takes at most 1 argument (the script FILE), got %d", len(args))
	case o.Prompt && (hasCommand || len(args) > 0):
		return usagef("sh: --prompt runs nothing; give no script with it")
	case hasCommand && len(args) > 0:
		return usagef("sh: give the script with -c or as FILE, not both")
	case o.Timeout <= 0:
		return usagef("sh: --timeout must be positive, got %s", o.Timeout)
	}
	return nil
}

// Script returns the script: -c, the file args[0], or in (standard
// input) when there is neither or the file is "-".
func (o *Options) Script(fs *pflag.FlagSet, args []string, in io.Reader) (string, error) {
	switch {
	case fs.Changed("command"):
		return o.Command, nil
	case len(args) == 1 && args[0] != "-":
		b, err := readall.File(args[0], "a script file (pipe anything else to standard input)", maxScriptFile)
		if err != nil {
			return "", fmt.Errorf("sh: read the script: %w", err)
		}
		return string(b), nil
	}
	b, err := io.ReadAll(io.LimitReader(in, maxScriptFile+1))
	if err != nil {
		return "", fmt.Errorf("sh: read the script from stdin: %w", err)
	}
	if len(b) > maxScriptFile {
		return "", fmt.Errorf("sh: the script on standard input is over %d MiB: not a script", maxScriptFile>>20)
	}
	return string(b), nil
}

// maxScriptFile bounds what sh reads as its script, well over the
// interpreter's own limit (which refuses it with a clearer message), so
// that /dev/zero is not read until memory runs out.
const maxScriptFile = 16 << 20

// NewShell builds the shell whose commands are ts (none without a
// world), with the time limit of o.
func (o *Options) NewShell(ts []tools.Tool) (*bashfx.Shell, error) {
	return bashfx.NewShell(ts, bashfx.ShellOptions{Timeout: o.Timeout, MaxTime: o.Timeout})
}

// PrintPrompt prints the system prompt the model sees for sh's bash tool.
func PrintPrompt(w io.Writer, sh *bashfx.Shell) error {
	_, err := fmt.Fprintln(w, sh.Tool().Info().SystemPrompt)
	return err
}

// Run runs script in sh with the workspace mnt at /workspace (an empty
// in-memory one when mnt is zero), printing its stdout and stderr as it
// runs, and, when the output was cut at the tool's limits, a note on
// stderr that name (the program) begins.
func Run(ctx context.Context, sh *bashfx.Shell, script string, mnt bashfx.Mount, stdout, stderr io.Writer, name string) bashfx.Result {
	res := sh.Run(ctx, tools.Request{Commands: script}, bashfx.RunOptions{
		Mount: mnt,
		Status: func(s tools.Status) {
			switch {
			case s.Phase != tools.PhaseOutput:
			case s.Stream == "stderr":
				io.WriteString(stderr, s.Output)
			default:
				io.WriteString(stdout, s.Output)
			}
		},
	})
	if res.StdoutTruncated || res.StderrTruncated {
		lim := sh.Tool().Limits()
		fmt.Fprintf(stderr, "%s: output cut at %d bytes of stdout and %d of stderr\n", name, lim.MaxStdoutBytes, lim.MaxStderrBytes)
	}
	return res
}

// ExitCodes describes the exit codes of a script, for a command's help:
// it ends without a period, so that the command adds its own.
func ExitCodes() string {
	l := bash.DefaultLimits()
	return `Exit codes: the script's own exit status (0 when it succeeds; 2 a syntax
error or unsupported syntax; 124 its time limit, --timeout; 127 an unknown
command; 1 or the command's status for a failed command; 1 when a resource
limit stops it, with "resource limit exceeded": ` + fmt.Sprintf("at most %d commands,\n%d iterations of one loop (%d in all) and %d tool calls",
		l.MaxCommands, l.MaxLoopIterations, l.MaxTotalLoopIterations, l.MaxToolCalls) + `)`
}
