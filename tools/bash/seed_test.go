package bash

import (
	"context"
	"testing"

	"github.com/demiurge-dev/demiurge/tools"
)

// TestSeed checks that a run's randomness is a function of RunOptions.Seed:
// the same seed draws the same $RANDOM, $SRANDOM and shuf output, run
// after run (pipelines included, whatever order their stages start in),
// and another seed draws others.
func TestSeed(t *testing.T) {
	st := NewBuilder("seed").MustBuild()
	const script = `echo $RANDOM $RANDOM $SRANDOM; bash -c 'echo $RANDOM'
for i in 1 2; do seq 30 | shuf | tr '\n' ' '; echo; done
seq 30 | shuf | shuf -n 5 | tr '\n' ' '; echo
shuf -i 1-1000 -n 3 | tr '\n' ' '; head -c 8 /dev/urandom | od -An -tx1`
	runSeed := func(seed uint64) string {
		t.Helper()
		res := st.RunScript(context.Background(), tools.Request{Commands: script}, RunOptions{Seed: seed})
		if res.ExitCode != 0 {
			t.Fatalf("seed %d: exit %d: %s", seed, res.ExitCode, res.Stderr)
		}
		return res.Stdout
	}
	first := runSeed(42)
	for range 20 {
		if again := runSeed(42); again != first {
			t.Fatalf("seed 42 drew differently:\n%s\nthen\n%s", first, again)
		}
	}
	other := runSeed(7)
	if other == first {
		t.Fatalf("seeds 42 and 7 drew the same:\n%s", first)
	}
	lines := splitLines(first)
	if len(lines) < 4 || lines[2] == lines[3] {
		t.Errorf("shuf drew the same permutation twice in a loop:\n%s", first)
	}
	if zero := runSeed(0); zero == "" || zero != runSeed(0) {
		t.Errorf("seed 0 is not repeatable")
	}
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}
