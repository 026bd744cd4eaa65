package cli

import (
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkStartup starts `demiurge sh -c true` as a process, side by
// side with `bash -c true` in the same run: the cost of a process start
// (loading the binary, package initialization, running an empty script).
// The binary is built with `go build` first, outside the timer; the
// benchmark is skipped without the go command or bash.
//
// demiurge-sh and bash-c time each command alone; interleaved runs them
// in turns, one of each an iteration, so that a machine whose load
// changes during the run slows both alike, and reports the medians of
// both (demiurge-ms, bash-ms) and their ratio (x-bash), the figure issue
// #16 sets at 3 at most.
func BenchmarkStartup(b *testing.B) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("go command not found")
	}
	bin := filepath.Join(b.TempDir(), "demiurge")
	if out, err := exec.Command(gobin, "build", "-o", bin, "../cmd/demiurge").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	demiurge := []string{bin, "sh", "-c", "true"}
	bench := func(b *testing.B, argv []string) {
		if err := exec.Command(argv[0], argv[1:]...).Run(); err != nil {
			b.Fatalf("%s: %v", argv, err)
		}
		for b.Loop() {
			exec.Command(argv[0], argv[1:]...).Run()
		}
	}
	b.Run("demiurge-sh", func(b *testing.B) { bench(b, demiurge) })
	bash, err := exec.LookPath("bash")
	if err != nil {
		b.Log("bash not installed: no side-by-side figures")
		return
	}
	b.Run("bash-c", func(b *testing.B) { bench(b, []string{bash, "-c", "true"}) })
	b.Run("interleaved", func(b *testing.B) {
		var d, s []time.Duration
		timed := func(argv ...string) time.Duration {
			start := time.Now()
			if err := exec.Command(argv[0], argv[1:]...).Run(); err != nil {
				b.Fatalf("%s: %v", argv, err)
			}
			return time.Since(start)
		}
		for b.Loop() {
			d = append(d, timed(demiurge...))
			s = append(s, timed(bash, "-c", "true"))
		}
		median := func(ts []time.Duration) float64 {
			slices.Sort(ts)
			return float64(ts[len(ts)/2]) / float64(time.Millisecond)
		}
		dm, sm := median(d), median(s)
		b.ReportMetric(dm, "demiurge-ms")
		b.ReportMetric(sm, "bash-ms")
		b.ReportMetric(dm/sm, "x-bash")
	})
}
