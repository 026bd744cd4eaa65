package bash

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/tools"
)

// timeLimitScripts never end on their own: the shell's loops, a
// pipeline, command substitution, utilities that compute (sed's branch
// loop, awk, jq) and ones that wait (sleep, a read of a pipe nobody
// writes).
var timeLimitScripts = []string{
	`while :; do :; done`,
	`f() { while :; do x=$((x+1)); done; }; f`,
	`while :; do echo x; done | cat > /dev/null`,
	`x=$(while :; do :; done)`,
	`yes | sed ':a; s/y/yy/; ba'`,
	`awk 'BEGIN { while (1) x++ }'`,
	`jq -n 'def f: f; f'`,
	`sleep 100`,
	`cat <(sleep 100)`,
	`mkfifo() { :; }; { while :; do :; done; } | { while read l; do :; done; }`,
}

func timeLimitTool() *Tool {
	return NewBuilder("tl").Limits(Limits{Timeout: 300 * time.Millisecond, MaxCommands: 1 << 40,
		MaxLoopIterations: 1 << 40, MaxTotalLoopIterations: 1 << 40}).MustBuild()
}

// TestTimeLimit: a script that never ends stops at its time limit, with
// status 124 and the timeout's message. (How soon after the limit is
// BenchmarkTimeLimit's figure; the bound here only catches one that
// does not stop.)
func TestTimeLimit(t *testing.T) {
	st := timeLimitTool()
	for _, script := range timeLimitScripts {
		t.Run(script, func(t *testing.T) {
			start := time.Now()
			res := st.RunScript(context.Background(), tools.Request{Commands: script}, RunOptions{})
			took := time.Since(start)
			// (yes | sed may also hit yes's output limit first: sed reads
			// all its input)
			if res.ExitCode != 124 || res.Error != ErrorTimeout || !strings.HasSuffix(res.Stderr, "bash: execution timed out after 0.3s\n") {
				t.Errorf("exit %d error %q stderr %q; want the time limit's", res.ExitCode, res.Error, res.Stderr)
			}
			if took > 300*time.Millisecond+2*time.Second {
				t.Errorf("ended %v after it began; the limit is 300ms", took)
			}
		})
	}
}

// BenchmarkTimeLimit reports how long after its time limit (300 ms) a
// script that never ends has stopped, the worst of timeLimitScripts in
// each round: ms-past-limit.
func BenchmarkTimeLimit(b *testing.B) {
	st := timeLimitTool()
	var worst time.Duration
	for b.Loop() {
		for _, script := range timeLimitScripts {
			start := time.Now()
			st.RunScript(context.Background(), tools.Request{Commands: script}, RunOptions{})
			if past := time.Since(start) - 300*time.Millisecond; past > worst {
				worst = past
			}
		}
	}
	b.ReportMetric(float64(worst.Microseconds())/1000, "ms-past-limit")
}
