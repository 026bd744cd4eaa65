package eval

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/tools"
)

// benchSuite lays out a suite of n cassette-backed cases in a temporary
// directory: the cases of examples/evals in turn, each under a new name,
// with its recording (a symbolic link to examples/evals/cassettes).
func benchSuite(b *testing.B, n int) (suite, tapes string) {
	b.Helper()
	src := "../examples/evals"
	files, err := filepath.Glob(filepath.Join(src, "*.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	var cases []string
	for _, f := range files {
		if filepath.Base(f) != "suite.yaml" {
			cases = append(cases, strings.TrimSuffix(filepath.Base(f), ".yaml"))
		}
	}
	suite, tapes = b.TempDir(), b.TempDir()
	sb, err := os.ReadFile(filepath.Join(src, "suite.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	abs, _ := filepath.Abs(src)
	if err := os.WriteFile(filepath.Join(suite, "suite.yaml"), []byte(strings.Replace(string(sb), "manifest: ../demiurge", "manifest: "+filepath.Join(abs, "..", "demiurge"), 1)), 0o644); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		c := cases[i%len(cases)]
		id := fmt.Sprintf("c%03d-%s", i, c)
		cb, err := os.ReadFile(filepath.Join(src, c+".yaml"))
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(suite, id+".yaml"), cb, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(tapes, id), 0o755); err != nil {
			b.Fatal(err)
		}
		for _, m := range []string{"gpt-5-mini", "gpt-5-mini.judge"} {
			from := filepath.Join(abs, "cassettes", c, m)
			if _, err := os.Stat(from); err == nil {
				if err := os.Symlink(from, filepath.Join(tapes, id, m)); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	return suite, tapes
}

// BenchmarkEval100 runs 100 cassette-backed cases (examples/evals' eight
// in turn) in a fresh store, two at a time (the CI machine has two
// cores), and reports the time of the 100 (s/100-cases; the target is
// under a minute) and the CPU time they took (cpu-s/100-cases). Beside
// it, in the same iteration, it runs the same 100 with the process's
// cache of compiled tool schemas off (tools.SetSchemaCache: every world
// compiles its bash tool's command schemas and the chat's tool specs
// again), -nocache, and the ratios (x-cache: how many times longer the
// 100 take without the cache; cpu-x-cache, in CPU time); and the eight
// distinct cases one at a time, their mean (s/case-alone), and the ratio
// of the 100 to it (x-one-case): the 100 at concurrency 2 would ideally
// cost 50 cases' time. The machine is shared, so the ratios are the
// figures to compare across runs.
func BenchmarkEval100(b *testing.B) {
	suitePath, tapes := benchSuite(b, 100)
	s := mustLoad(b, suitePath)
	distinct := &Suite{Dir: s.Dir, Name: s.Name, Cases: s.Cases[:8]}
	ctx := context.Background()
	defer tools.SetSchemaCache(true)
	runOnce := func(su *Suite, conc int, cache bool) (wall, cpu time.Duration) {
		tools.SetSchemaCache(cache)
		st, _ := storage(b)
		c0 := cpuTime(b)
		t0 := time.Now()
		rep, err := Run(ctx, su, Options{Storage: st, Cassettes: tapes, Concurrency: conc})
		if err != nil {
			b.Fatal(err)
		}
		wall, cpu = time.Since(t0), cpuTime(b)-c0
		if !rep.Passed() {
			var buf strings.Builder
			_ = rep.WriteText(&buf, TextOptions{})
			b.Fatalf("a case failed:\n%s", buf.String())
		}
		return wall, cpu
	}
	runOnce(distinct, 1, true) // warm up: the AIR, the catalog, the schemas
	var all, allCPU, cold, coldCPU, alone time.Duration
	n := 0
	for b.Loop() {
		w, _ := runOnce(distinct, 1, true)
		alone += w / 8
		// The two alternate, so that neither always runs second.
		order := []bool{true, false}
		if n%2 == 1 {
			order = []bool{false, true}
		}
		for _, cache := range order {
			w, c := runOnce(s, 2, cache)
			if cache {
				all, allCPU = all+w, allCPU+c
			} else {
				cold, coldCPU = cold+w, coldCPU+c
			}
		}
		n++
	}
	b.ReportMetric(all.Seconds()/float64(n), "s/100-cases")
	b.ReportMetric(allCPU.Seconds()/float64(n), "cpu-s/100-cases")
	b.ReportMetric(cold.Seconds()/float64(n), "s/100-cases-nocache")
	b.ReportMetric(coldCPU.Seconds()/float64(n), "cpu-s/100-cases-nocache")
	b.ReportMetric(float64(cold)/float64(all), "x-cache")
	b.ReportMetric(float64(coldCPU)/float64(allCPU), "cpu-x-cache")
	b.ReportMetric(alone.Seconds()/float64(n), "s/case-alone")
	b.ReportMetric(float64(all)/float64(alone), "x-one-case")
	b.ReportMetric(100*float64(n)/all.Seconds(), "cases/s")
}
