package bash

import (
	"context"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/tools"
)

// heapWatcher samples the process's heap (live and unswept objects)
// until stopped, and keeps the largest sample.
type heapWatcher struct {
	stop chan struct{}
	done chan struct{}
	peak uint64
}

func watchProcessHeap() *heapWatcher {
	w := &heapWatcher{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > w.peak {
				w.peak = v
			}
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// heapObjects is the process's heap (live and unswept objects) now.
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func (w *heapWatcher) end() uint64 {
	close(w.stop)
	<-w.done
	return w.peak
}

// TestMemoryBudget: scripts that allocate without bound, in the shell
// and in utilities, end at the memory budget with its message.
func TestMemoryBudget(t *testing.T) {
	const budget = 8 << 20
	st := NewBuilder("mem").Limits(Limits{MaxMemoryBytes: budget, MaxCommandInputBytes: 1 << 30,
		MaxVarBytes: 1 << 30, MaxLoopIterations: 1 << 40, MaxTotalLoopIterations: 1 << 40, MaxCommands: 1 << 40}).MustBuild()
	for _, script := range []string{
		`x=a; while :; do x=$x$x; done`,
		`a=(); while :; do a+=("$RANDOM$RANDOM$RANDOM"); done`,
		`declare -A m; i=0; while :; do m[$i]=$i; i=$((i+1)); done`,
		`x=$(yes | head -c 100000000); echo ${#x}`,
		`yes 0123456789 | head -c 100000000 | sort | tail -1`,
		`awk 'BEGIN { while (1) a[i++] = i }'`,
		`jq -n '[range(1e9)] | length'`,
		`yes | head -c 5000000 | tac | wc -l`,
		`seq 1 10000000 | { mapfile -t lines; echo ${#lines[@]}; }`,
		// the runaways the issue measured: sed's pattern space and jq's
		// values growing without bound
		`echo x | sed ':a; s/.*/&&/; ba'`,
		`yes | sed ':a; N; ba'`,
		`echo x | sed 'h; :a; G; H; ba'`,
		`jq -n 'reduce range(1e9) as $i ("x"; . + .)'`,
		`jq -n '[limit(1e9; repeat("0123456789"))] | length'`,
		`jq -n 'def f: [., .] | f; 0 | f'`,
		`yes 0123456789 | head -c 100000000 | awk '{ a[NR] = $0 } END { print length(a) }'`,
		`yes | tr -d '\n' | fold -w 100000000 | head -1 | wc -c`,
	} {
		t.Run(script, func(t *testing.T) {
			res := st.RunScript(context.Background(), tools.Request{Commands: script}, RunOptions{})
			if res.ExitCode != 1 || res.Error != ErrorLimitExceeded ||
				!strings.HasSuffix(res.Stderr, "resource limit exceeded: memory budget exceeded (8388608 bytes)\n") {
				t.Errorf("exit %d error %q stderr %q; want the memory budget's message", res.ExitCode, res.Error, res.Stderr)
			}
		})
	}
}

// TestMemoryBudgetHeap: a script that allocates without bound keeps the
// process's heap within its budget and a constant, and three at once
// within three budgets.
func TestMemoryBudgetHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates three budgets")
	}
	const budget = 64 << 20
	st := NewBuilder("mem").Limits(Limits{MaxMemoryBytes: budget, MaxLoopIterations: 1 << 40,
		MaxTotalLoopIterations: 1 << 40, MaxCommands: 1 << 40}).MustBuild()
	script := `x=a; while :; do x=$x$x; done`
	for _, n := range []int{1, 3} {
		runtime.GC()
		base := heapObjects()
		w := watchProcessHeap()
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				res := st.RunScript(context.Background(), tools.Request{Commands: script}, RunOptions{})
				if res.Error != ErrorLimitExceeded {
					t.Errorf("stderr %q; want the memory budget's message", res.Stderr)
				}
			})
		}
		wg.Wait()
		peak := w.end()
		t.Logf("%d at once: heap peak %d MiB above %d MiB (budget %d MiB each)", n, (peak-base)>>20, base>>20, budget>>20)
		if limit := uint64(n*budget + 32<<20); peak-base > limit {
			t.Errorf("%d scripts at once took the heap %d MiB past where it was; want at most %d MiB", n, (peak-base)>>20, limit>>20)
		}
	}
}
