//go:build unix

package shcmd

import (
	"fmt"
	"syscall"
)

const exeSuffix = ""

// execve replaces this process with bin, so that signals and the exit
// status are demiurge's own.
func execve(bin string, argv, env []string) error {
	if err := syscall.Exec(bin, argv, env); err != nil {
		return fmt.Errorf("run %s: %w", bin, err)
	}
	return nil
}
