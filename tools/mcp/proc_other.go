//go:build !unix

package mcp

import "os/exec"

// newProcessGroup does nothing where there are no process groups.
func newProcessGroup(cmd *exec.Cmd) {}

// killProcessGroup kills the server's process if it is still running.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
