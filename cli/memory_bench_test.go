package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
)

// BenchmarkRunMemory measures the peak memory (resident set) of a
// `demiurge run -m` process whose one turn has N tool rounds (the model
// calls introspect_journal_head N times, then answers), for N = 25 and
// 1000, with no context window (every request carries the whole
// transcript: at 1000 rounds, some 600 KB) and with a window of 32,000
// tokens (the chat compacts: requests stay under about 128 KB). It
// reports the peak resident set, which counts the pages of the store's
// file that bbolt maps (the store grows with the session), and the peak
// of the process's own memory (RssAnon, sampled every 5 ms). The binary
// is built once, into a temporary directory.
func BenchmarkRunMemory(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "demiurge")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/demiurge").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	for _, c := range []struct{ rounds, window int }{{25, 0}, {1000, 0}, {25, 32000}, {1000, 32000}} {
		rounds := c.rounds
		name := fmt.Sprintf("rounds=%d", rounds)
		var extra []string
		if c.window > 0 {
			name += fmt.Sprintf("/window=%d", c.window)
			extra = []string{"--model-option", fmt.Sprintf("context_window=%d", c.window)}
		}
		b.Run(name, func(b *testing.B) {
			var peak, anon int64
			for b.Loop() {
				calls := 0
				srv := llmtest.NewServerFunc(func(r llmtest.Request) llmtest.Turn {
					if strings.Contains(string(r.Body), "summarizing the earlier part of a conversation") {
						return llmtest.Turn{Text: "SUMMARY: the journal head was read many times."}
					}
					if calls++; calls <= rounds {
						return llmtest.Turn{Calls: []llmtest.Call{{Name: "introspect_journal_head", Arguments: `{}`}}}
					}
					return llmtest.Turn{Text: "done"}
				})
				args := append([]string{"--store", filepath.Join(b.TempDir(), "store"), "run", filepath.Join("..", "examples", "demiurge"),
					"--model", "gpt-test", "--max-rounds", fmt.Sprint(rounds + 2), "--max-repeats", fmt.Sprint(rounds + 2), "-m", "go"}, extra...)
				cmd := exec.Command(bin, args...)
				cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+srv.URL, "OPENAI_API_KEY=k3y-k3y-k3y")
				var out strings.Builder
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				// The child's own high-water mark, read from /proc while it
				// runs: its rusage would count the memory of this process,
				// which it shares until it execs.
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				var err error
			poll:
				for {
					peak = max(peak, vmHWM(cmd.Process.Pid))
					anon = max(anon, procStatus(cmd.Process.Pid, "RssAnon"))
					select {
					case err = <-done:
						break poll
					case <-time.After(5 * time.Millisecond):
					}
				}
				srv.Close()
				if err != nil {
					b.Fatalf("run: %v\n%s", err, out.String())
				}
			}
			b.ReportMetric(float64(peak)/1024, "peak-RSS-MB")
			// The process's own memory, without the store's file pages
			// (bbolt maps the file, and its pages count in the RSS).
			b.ReportMetric(float64(anon)/1024, "peak-anon-MB")

		})
	}
}

// vmHWM returns a process's peak resident set in KiB (VmHWM in
// /proc/PID/status), 0 if it cannot be read.
func vmHWM(pid int) int64 { return procStatus(pid, "VmHWM") }

// procStatus returns a field of /proc/PID/status in KiB, 0 if it cannot
// be read.
func procStatus(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kb)
			return kb
		}
	}
	return 0
}
