//go:build unix

package store

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
)

// followerEnv names the store a test binary started with it follows, as
// the follower process of BenchmarkCommitFollowed.
const followerEnv = "DEMIURGE_BENCH_FOLLOW"

func TestMain(m *testing.M) {
	if dir := os.Getenv(holderEnv); dir != "" {
		// Hold the store (read-only if the value ends in ",ro") until
		// stdin closes: another process, for TestLocked.
		dir, ro := strings.CutSuffix(dir, ",ro")
		s, err := Open(dir, &Options{ReadOnly: ro})
		if err != nil {
			fmt.Fprintln(os.Stderr, "holder:", err)
			os.Exit(1)
		}
		fmt.Println("held")
		_, _ = io.Copy(io.Discard, os.Stdin)
		_ = s.Close()
		os.Exit(0)
	}
	if dir := os.Getenv(followerEnv); dir != "" {
		if err := followForBench(dir, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "follower:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// followForBench follows world "bench" of the store in dir as trace
// --follow does: it waits for records, reads them, and gets the blob each
// names; after each round it prints the seq it has read up to.
func followForBench(dir string, out io.Writer) error {
	ctx := context.Background()
	l, err := OpenLive(ctx, dir, nil)
	if err != nil {
		return err
	}
	defer l.Close()
	var last uint64
	for {
		if _, err := l.Wait(ctx, "bench", last); err != nil {
			return err
		}
		var refs []cas.Ref
		err := l.Read(ctx, "bench", last+1, func(r journal.Record) error {
			if len(r.Payload) >= 33 && r.Payload[0] == 's' {
				ref, err := cas.ParseRef(string(r.Payload[1:]))
				if err != nil {
					return err
				}
				refs = append(refs, ref)
			}
			last = r.Seq
			return nil
		})
		if err != nil {
			return err
		}
		blobs, err := l.GetMany(ctx, refs)
		if err != nil {
			return err
		}
		for i, b := range blobs {
			if b == nil {
				return fmt.Errorf("blob %s not found", refs[i])
			}
		}
		if _, err := fmt.Fprintln(out, last); err != nil {
			return err
		}
	}
}

// BenchmarkCommitFollowed measures a durable commit of one world step (an
// event record of 200 bytes, a state record naming a new 1 KiB state blob,
// the blob, in one transaction with fsync, as world.BoltStorage commits a
// step) with and without another process following the world through the
// writer (waiting for commits, reading their records, getting the blobs
// the state records name in one request, as trace --follow does). The follower runs
// throughout and is stopped (SIGSTOP) and continued (SIGCONT) in blocks
// of commits, so that both halves share the machine's noise. Metrics:
// the median commit time of each half, and followed/alone (target ≤ 1.05).
func BenchmarkCommitFollowed(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	s, err := Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.Serving(); err != nil {
		b.Skipf("the store does not serve reads here: %v", err)
	}
	event := make([]byte, 200)
	state := make([]byte, 1024)
	var head journal.Head
	var n uint64
	commit := func() {
		n++
		binary := strconv.AppendUint(nil, n, 10)
		copy(event, binary)
		copy(state, binary) // a new blob each step
		ref := cas.Sum(state)
		head, err = s.Journal().AppendWith(ctx, "bench", head, []journal.Entry{
			{Kind: "DomainEvent", Payload: event},
			{Kind: "State", Payload: append([]byte("s"), ref.String()...)},
		}, func(tx *bbolt.Tx) error {
			_, err := s.CAS().PutTx(tx, state)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	commit() // the world exists before the follower starts

	follower := exec.Command(os.Args[0], "-test.run=^$")
	follower.Env = append(os.Environ(), followerEnv+"="+dir)
	follower.Stderr = os.Stderr
	outPipe, err := follower.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := follower.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = follower.Process.Kill()
		_ = follower.Wait()
	}()
	seen := make(chan uint64, 1<<16)
	var rounds atomic.Int64 // the follower's rounds (a wait, a read, the blobs)
	go func() {
		sc := bufio.NewScanner(outPipe)
		for sc.Scan() {
			if v, err := strconv.ParseUint(sc.Text(), 10, 64); err == nil {
				rounds.Add(1)
				seen <- v
			}
		}
		close(seen)
	}()
	// caughtUp waits (untimed) until the follower has read every record.
	var pos uint64 // what the follower has read up to
	caughtUp := func() {
		if pos >= head.Seq {
			return
		}
		deadline := time.After(30 * time.Second)
		for {
			select {
			case v, ok := <-seen:
				if !ok {
					b.Fatal("the follower stopped")
				}
				if pos = v; pos >= head.Seq {
					return
				}
			case <-deadline:
				b.Fatalf("the follower has not read up to seq %d after 30 s", head.Seq)
			}
		}
	}
	caughtUp()

	// A block is many times waitBatch long, so the follower makes many
	// rounds while it follows.
	const block = 250
	var alone, followed []time.Duration
	var followedRounds int64
	following := true
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if i%block == 0 {
			b.StopTimer()
			if following {
				followedRounds += rounds.Load()
				caughtUp()
				if err := follower.Process.Signal(syscall.SIGSTOP); err != nil {
					b.Fatal(err)
				}
			} else {
				if err := follower.Process.Signal(syscall.SIGCONT); err != nil {
					b.Fatal(err)
				}
				caughtUp()
				followedRounds -= rounds.Load()
			}
			following = !following
			b.StartTimer()
		}
		t0 := time.Now()
		commit()
		d := time.Since(t0)
		if following {
			followed = append(followed, d)
		} else {
			alone = append(alone, d)
		}
	}
	b.StopTimer()
	if following {
		followedRounds += rounds.Load()
	}
	_ = follower.Process.Signal(syscall.SIGCONT)
	if len(alone) == 0 || len(followed) == 0 {
		return // too few iterations for both halves
	}
	am, fm := medianDuration(alone), medianDuration(followed)
	b.ReportMetric(float64(am.Microseconds()), "alone-µs/commit")
	b.ReportMetric(float64(fm.Microseconds()), "followed-µs/commit")
	b.ReportMetric(float64(fm)/float64(am), "followed/alone")
	b.ReportMetric(float64(meanDuration(followed))/float64(meanDuration(alone)), "mean-followed/alone")
	b.ReportMetric(float64(len(followed))/float64(max(followedRounds, 1)), "commits/round")
}

func medianDuration(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func meanDuration(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}
