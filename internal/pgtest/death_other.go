//go:build !linux

package pgtest

import "syscall"

// dieWithParent does nothing where the kernel cannot signal a child when
// its parent dies: a test binary killed outright leaves its server
// running (Close stops it in every other case).
func dieWithParent(*syscall.SysProcAttr) {}
