package bash

import (
	"runtime"
	"testing"
	"time"
)

func TestZZSmoke(t *testing.T) {
	st := shopTool(t, nil)
	for _, s := range []string{
		"echo {1..2000000} | wc -c",
		"x=$(jq -n 'range(3000000)'); echo ${#x}",
		"x=$(seq 1 3000000); echo ${#x}",
		"a=$(printf '%0100000000d' 1); echo ${#a}",
	} {
		var m runtime.MemStats
		start := time.Now()
		r := run(t, st, s)
		runtime.ReadMemStats(&m)
		t.Logf("$ %s\n%q %q %d %v heap=%dMB total=%dMB", s, r.Stdout, r.Stderr, r.ExitCode, time.Since(start), m.HeapAlloc>>20, m.TotalAlloc>>20)
	}
}
