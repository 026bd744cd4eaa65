//go:build !unix

package shcmd

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

const exeSuffix = ".exe"

// execve runs bin as a child with this process's streams and exits with
// its status: there is no exec(2) to replace this process with.
func execve(bin string, argv, env []string) error {
	cmd := exec.Command(bin, argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.Env = os.Stdin, os.Stdout, os.Stderr, env
	err := cmd.Run()
	var xe *exec.ExitError
	if errors.As(err, &xe) {
		os.Exit(xe.ExitCode())
	}
	if err != nil {
		return fmt.Errorf("run %s: %w", bin, err)
	}
	os.Exit(0)
	return nil
}
