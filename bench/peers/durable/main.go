// Command durable runs demiurge's 5-effect sequential workflow
// (world/testdata/bench5's bench/sequential@1: a start event, then five
// effects, each awaited before the next, then the end) on a durable
// execution peer, Restate or Temporal, whose server run.sh starts on
// loopback. It prints Go benchmark lines, so the figures read like
// demiurge's own (go test ./world -bench 'Workflow5/sequential'):
//
//	durable restate  -ingress http://127.0.0.1:18080 -admin http://127.0.0.1:19070
//	durable temporal -hostport 127.0.0.1:17233
//
// Two measurements, as BenchmarkWorkflow5/sequential and
// BenchmarkWorkflowThroughput/sequential make them: the p50 and p90
// latency of one workflow at a time in one world (a Restate virtual
// object key; a Temporal workflow id of its own each time), and the
// workflows per second of 50 worlds running workflows back to back.
//
// It is a separate Go module so that the peers' SDKs stay out of
// demiurge's dependency graph.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// config is what both peers run.
type config struct {
	latencyN   int           // workflows timed one at a time
	latencyMax time.Duration // stop the latency round after this long
	worlds     int           // concurrent worlds in the throughput round
	window     time.Duration // length of the throughput round
	warmup     int           // workflows run first, not timed
	rounds     int           // latency+throughput rounds
}

func (c *config) flags(fs *flag.FlagSet) {
	fs.IntVar(&c.latencyN, "n", 300, "workflows timed one at a time, in one world")
	fs.DurationVar(&c.latencyMax, "latency-max", 20*time.Second, "stop timing single workflows after this long")
	fs.IntVar(&c.worlds, "worlds", 50, "worlds running workflows at once in the throughput round")
	fs.DurationVar(&c.window, "window", 10*time.Second, "length of the throughput round")
	fs.IntVar(&c.warmup, "warmup", 20, "workflows run before timing")
	fs.IntVar(&c.rounds, "rounds", 1, "latency and throughput rounds")
}

// runner runs one workflow in a world and returns once it has ended.
type runner func(ctx context.Context, world, n int) error

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: durable restate|temporal [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "restate":
		err = mainRestate(os.Args[2:])
	case "temporal":
		err = mainTemporal(os.Args[2:])
	default:
		err = fmt.Errorf("unknown peer %q (want restate or temporal)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "durable:", err)
		os.Exit(1)
	}
}

// measure runs cfg's rounds with run and prints one benchmark line per
// measurement, named for the peer. diskBytes, if set, returns the bytes
// the peer's store holds, for the bytes per workflow.
func measure(ctx context.Context, peer string, cfg config, run runner, diskBytes func() int64) error {
	for i := range cfg.warmup {
		if err := run(ctx, 0, i); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	seq := cfg.warmup
	for range cfg.rounds {
		var lat []time.Duration
		start := time.Now()
		for i := 0; i < cfg.latencyN && time.Since(start) < cfg.latencyMax; i++ {
			seq++
			t0 := time.Now()
			if err := run(ctx, 0, seq); err != nil {
				return err
			}
			lat = append(lat, time.Since(t0))
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		fmt.Printf("Benchmark%sWorkflow5/sequential\t%d\t%d ns/op\t%.3f p50-ms\t%.3f p90-ms\n", peer, len(lat),
			time.Since(start).Nanoseconds()/int64(len(lat)), ms(lat[len(lat)/2]), ms(lat[len(lat)*9/10]))

		var d0 int64
		if diskBytes != nil {
			d0 = diskBytes()
		}
		var done atomic.Int64
		var firstErr error
		var once sync.Once
		wctx, cancel := context.WithTimeout(ctx, cfg.window)
		t0 := time.Now()
		var wg sync.WaitGroup
		for w := range cfg.worlds {
			wg.Go(func() {
				for n := seq; wctx.Err() == nil; n++ {
					if err := run(ctx, w+1, n); err != nil {
						once.Do(func() { firstErr = err })
						cancel()
						return
					}
					done.Add(1)
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(t0)
		cancel()
		if firstErr != nil {
			return firstErr
		}
		seq += int(done.Load()) + 1
		line := fmt.Sprintf("Benchmark%sWorkflowThroughput/sequential\t%d\t%d ns/op\t%.1f workflows/s", peer, done.Load(),
			elapsed.Nanoseconds()/max(done.Load(), 1), float64(done.Load())/elapsed.Seconds())
		if diskBytes != nil && done.Load() > 0 {
			line += fmt.Sprintf("\t%.0f disk-bytes/workflow", float64(diskBytes()-d0)/float64(done.Load()))
		}
		fmt.Println(line)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// dirSize returns the bytes of the files under dir.
func dirSize(dir string) int64 {
	var n int64
	_ = walk(dir, func(size int64) { n += size })
	return n
}

func walk(dir string, fn func(int64)) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		p := dir + "/" + e.Name()
		if e.IsDir() {
			_ = walk(p, fn)
			continue
		}
		if fi, err := e.Info(); err == nil {
			fn(fi.Size())
		}
	}
	return nil
}
