package shcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/demiurge-dev/demiurge/adapters/bashfx"
)

// Name is the program Main is: demiurge-sh.
const Name = "demiurge-sh"

// Main runs demiurge-sh on the process's arguments and exits with its
// exit code: the script's status, 2 for a wrong command line, 1 when the
// script cannot be read, 130 after Ctrl-C and 143 after SIGTERM (the
// script is stopped). With --manifest it runs `demiurge sh` in its place,
// with the same arguments (see Handover).
func Main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		if s := <-sig; s == syscall.SIGTERM {
			cancel(&Stopped{Signal: "SIGTERM", Code: 143})
		} else {
			cancel(&Stopped{Signal: "Ctrl-C (SIGINT)", Code: 130})
		}
	}()
	os.Exit(Execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Stopped is the cause of the context Main passes to Execute when a
// signal stops the script.
type Stopped struct {
	// Signal names the signal.
	Signal string
	// Code is the exit status: a shell's 128+n.
	Code int
}

func (s *Stopped) Error() string { return "the script was stopped by " + s.Signal }

// Execute runs demiurge-sh's command line args (without the program's
// name) with the given streams and returns its exit code; ctx ending
// stops the script. With --manifest, it runs `demiurge sh` with args in
// this process's place (Handover), and returns only if that fails.
func Execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var o Options
	var manifest, world string
	fs := pflag.NewFlagSet(Name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.AddFlags(fs)
	fs.StringVar(&manifest, "manifest", "", "run demiurge sh in this program's place, with the world's AIR at `PATH` (see demiurge sh --help)")
	fs.StringVar(&world, "world", "", "the world's `NAME` (with --manifest)")
	err := fs.Parse(args)
	if manifest != "" || (err != nil && wantsWorld(args)) {
		// demiurge sh reads the rest: its flags (--store, -v, …) are
		// not this program's.
		err := Handover(args, os.Environ())
		fmt.Fprintf(stderr, "%s: %v\n", Name, err)
		return 1
	}
	if errors.Is(err, pflag.ErrHelp) {
		fmt.Fprint(stdout, usage(fs))
		return 0
	}
	if err == nil {
		err = o.Check(fs, fs.Args())
	}
	if err == nil && fs.Changed("world") {
		err = usagef("sh: --world needs --manifest, the world's AIR")
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", Name, err, Name)
		return 2
	}
	sh, err := o.NewShell(nil)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", Name, err)
		return 1
	}
	if o.Prompt {
		if err := PrintPrompt(stdout, sh); err != nil {
			return 1
		}
		return 0
	}
	script, err := o.Script(fs, fs.Args(), stdin)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", Name, err)
		return 1
	}
	res := Run(ctx, sh, script, bashfx.Mount{}, stdout, stderr, Name)
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "%s: %v\n", Name, context.Cause(ctx))
		var st *Stopped
		if errors.As(context.Cause(ctx), &st) {
			return st.Code
		}
		return 130
	}
	return res.ExitCode
}

// wantsWorld reports whether args name a world, spelled as demiurge sh
// takes it (--manifest, --manifest=PATH, or the old -m), which hands the
// command line over even when it has flags only demiurge sh knows.
func wantsWorld(args []string) bool {
	for _, a := range args {
		switch {
		case a == "--":
			return false
		case a == "--manifest", strings.HasPrefix(a, "--manifest="), a == "-m", strings.HasPrefix(a, "-m="):
			return true
		}
	}
	return false
}

// Handover runs `demiurge sh ARGS` in this process's place: the demiurge
// beside this program's executable (as go install puts both), else the
// one on PATH. It returns only when it cannot, with an error saying how
// to install demiurge when neither exists.
func Handover(args []string, env []string) error {
	self, _ := os.Executable()
	bin, err := FindDemiurge(self, exec.LookPath)
	if err != nil {
		return err
	}
	return execve(bin, append([]string{"demiurge", "sh"}, args...), env)
}

// FindDemiurge returns the path of the demiurge program: "demiurge" in
// the directory of self (this program's executable, "" if unknown),
// else lookPath's.
func FindDemiurge(self string, lookPath func(string) (string, error)) (string, error) {
	if self != "" {
		if resolved, err := filepath.EvalSymlinks(self); err == nil {
			self = resolved
		}
		beside := filepath.Join(filepath.Dir(self), "demiurge"+exeSuffix)
		if fi, err := os.Stat(beside); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return beside, nil
		}
	}
	if p, err := lookPath("demiurge"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("--manifest runs the world's tools with demiurge sh, and demiurge is neither beside %s nor on PATH: "+
		"install it with `go install github.com/demiurge-dev/demiurge/cmd/demiurge@latest` "+
		"(or `go install ./cmd/...` in a checkout, which installs both), or run without --manifest", orName(self))
}

func orName(self string) string {
	if self == "" {
		return Name
	}
	return self
}

// usage is demiurge-sh --help.
func usage(fs *pflag.FlagSet) string {
	return `Usage: ` + Name + ` [-c SCRIPT | FILE] [--timeout DURATION] [--prompt]

Run a bash script in demiurge's sandbox, the one the model's bash tool
runs in: no host process, file, environment variable or network is
reachable. The commands are the sandbox's utilities (echo, printf, jq,
grep, sed, awk, sort, head, ...) and the file system is an empty
in-memory workspace at /workspace, the working directory (/tmp is scratch
space), gone when the script ends. The script is -c SCRIPT, the file
FILE, or standard input. Its stdout and stderr are printed as it runs.

This is ` + "`demiurge sh`" + ` without a world, in a program of its own that starts
about as fast as bash. With --manifest (a world's tools as commands), it
runs ` + "`demiurge sh`" + ` with the same arguments: the demiurge beside it, else
the one on PATH.

Flags:
` + fs.FlagUsages() + `
` + ExitCodes() + `, or 2 when
the command line is wrong, 130 after Ctrl-C and 143 after SIGTERM.

Examples:
  ` + Name + ` -c 'echo hello | tr a-z A-Z'
  ` + Name + ` -c 'echo "{\"a\":[1,2,3]}" | jq ".a | add"'
  ` + Name + ` script.sh
  ` + Name + ` --manifest examples/demiurge -c 'workspace_list'   # runs demiurge sh
`
}
