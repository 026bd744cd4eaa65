//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// newProcessGroup makes a stdio server the leader of a process group of
// its own, so that what it starts (npx starts node) ends with it.
func newProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killProcessGroup kills what is left of a server's process group once
// its session is closed (the server itself has been waited for).
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
