// Command shbashfx is BenchmarkStartupSDKs' measure of the shell as
// `demiurge sh` builds it (adapters/bashfx, which links the MCP SDK for
// MCP servers' tools), without the rest of demiurge's command line: it
// runs `shbashfx -c SCRIPT` with no world tools. It is not a command of
// demiurge's.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/demiurge-dev/demiurge/adapters/bashfx"
	"github.com/demiurge-dev/demiurge/tools"
)

func main() {
	if len(os.Args) != 3 || os.Args[1] != "-c" {
		fmt.Fprintln(os.Stderr, "usage: shbashfx -c SCRIPT")
		os.Exit(2)
	}
	sh, err := bashfx.NewShell(nil, bashfx.ShellOptions{Timeout: bashfx.DefaultTimeout, MaxTime: bashfx.DefaultTimeout})
	if err != nil {
		fmt.Fprintln(os.Stderr, "shbashfx:", err)
		os.Exit(1)
	}
	res := sh.Run(context.Background(), tools.Request{Commands: os.Args[2]}, bashfx.RunOptions{Status: printOutput})
	os.Exit(res.ExitCode)
}

// printOutput prints the script's output as it runs.
func printOutput(s tools.Status) {
	switch {
	case s.Phase != tools.PhaseOutput:
	case s.Stream == "stderr":
		io.WriteString(os.Stderr, s.Output)
	default:
		io.WriteString(os.Stdout, s.Output)
	}
}
