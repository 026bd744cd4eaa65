//go:build unix

package llm

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used, all its threads (the
// collector's too): what a benchmark's call costs in CPU, which waiting
// for a core on a loaded machine does not inflate. ok is false where it
// cannot be read.
func processCPU() (d time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
