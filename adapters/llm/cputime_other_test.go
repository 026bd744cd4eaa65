//go:build !unix

package llm

import "time"

// processCPU is not read here: the benchmarks report wall time only.
func processCPU() (time.Duration, bool) { return 0, false }
