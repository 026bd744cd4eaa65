// Command shbash is BenchmarkStartupSDKs' measure of a shell alone: it
// runs `shbash -c SCRIPT` in the sandbox's interpreter (package
// tools/bash, no world tools, no MCP), linking nothing else of demiurge,
// the floor under demiurge-sh (cmd/demiurge-sh), which adds the shell's
// command line and the world tools' packages.
// It is not a command of demiurge's.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/bash"
)

func main() {
	if len(os.Args) != 3 || os.Args[1] != "-c" {
		fmt.Fprintln(os.Stderr, "usage: shbash -c SCRIPT")
		os.Exit(2)
	}
	t, err := bash.NewBuilder("bash").Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, "shbash:", err)
		os.Exit(1)
	}
	res := t.RunScript(context.Background(), tools.Request{Commands: os.Args[2]}, bash.RunOptions{Status: printOutput})
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
