package cli

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkStartup starts `demiurge sh -c true` as a process, side by
// side with `bash -c true` in the same run: the cost of a process start
// (loading the binary, package initialization, running an empty script).
// The binary is built with `go build` first, outside the timer; the
// benchmark is skipped without the go command or bash.
func BenchmarkStartup(b *testing.B) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("go command not found")
	}
	bin := filepath.Join(b.TempDir(), "demiurge")
	if out, err := exec.Command(gobin, "build", "-o", bin, "../cmd/demiurge").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	bench := func(b *testing.B, name string, args ...string) {
		if err := exec.Command(name, args...).Run(); err != nil {
			b.Fatalf("%s %v: %v", name, args, err)
		}
		for b.Loop() {
			exec.Command(name, args...).Run()
		}
	}
	b.Run("demiurge-sh", func(b *testing.B) { bench(b, bin, "sh", "-c", "true") })
	b.Run("bash-c", func(b *testing.B) {
		bash, err := exec.LookPath("bash")
		if err != nil {
			b.Skip("bash not installed")
		}
		bench(b, bash, "-c", "true")
	})
}
