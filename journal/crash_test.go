package journal

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"go.etcd.io/bbolt"
)

// crashChildEnv switches the test binary into the crash child: it appends
// to the journal file named by the variable until it is killed.
const crashChildEnv = "DEMIURGE_JOURNAL_CRASH_CHILD"

const (
	crashWorlds    = 4 // worlds the child appends to concurrently
	crashStepSize  = 5 // entries per append
	crashKillCount = 20
)

// bucketExtra holds the data crash children write with AppendWith, as the
// world writes CAS blobs in the same transaction as a step's records.
var bucketExtra = []byte("crash-extra")

// crashPayload is the deterministic payload of record seq of world, so the
// parent can check that no record is torn or misplaced.
func crashPayload(world string, seq uint64) []byte {
	n := 200 + int(seq*37%800)
	p := make([]byte, 0, n)
	p = fmt.Appendf(p, "%s/%d:", world, seq)
	for len(p) < n {
		p = append(p, byte('a'+seq%26))
	}
	return p
}

// extraKey is the AppendWith data of the step ending at seq.
func extraKey(world string, seq uint64) []byte { return fmt.Appendf(nil, "%s/%d", world, seq) }

// TestCrashChild is the child process of TestCrash; it does nothing in a
// normal test run.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		t.Skip("the child process of TestCrash")
	}
	if err := runCrashChild(path); err != nil {
		fmt.Fprintf(os.Stdout, "error %v\n", err)
		os.Exit(3)
	}
}

// runCrashChild appends crashStepSize-entry steps to crashWorlds worlds
// concurrently and prints "ack WORLD SEQ HASH" after each acknowledged
// append, until it is killed (or 60 s pass).
func runCrashChild(path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	j, err := OpenBolt(path, &BoltOptions{Timeout: 10 * time.Second})
	if err != nil {
		return err
	}
	var out sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, crashWorlds)
	for g := range crashWorlds {
		world := fmt.Sprintf("crash%d", g)
		wg.Go(func() {
			head, err := j.Head(ctx, world)
			if err != nil {
				errs <- err
				return
			}
			for ctx.Err() == nil {
				es := make([]Entry, crashStepSize)
				for i := range es {
					seq := head.Seq + 1 + uint64(i)
					es[i] = Entry{Kind: "Step", Payload: crashPayload(world, seq)}
				}
				last := head.Seq + crashStepSize
				head, err = j.AppendWith(ctx, world, head, es, func(tx *bbolt.Tx) error {
					if g%2 == 1 {
						return nil // odd worlds use plain appends
					}
					b, err := tx.CreateBucketIfNotExists(bucketExtra)
					if err != nil {
						return err
					}
					return b.Put(extraKey(world, last), []byte("blob"))
				})
				if err != nil {
					errs <- err
					return
				}
				out.Lock()
				fmt.Fprintf(os.Stdout, "ack %s %d %s\n", world, head.Seq, head.Hash)
				out.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// TestCrash kills a child process that appends to a journal with SIGKILL at
// many moments, reopens the journal each time and checks that it verifies,
// that every acknowledged append is there, and that no step is torn.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: kills and restarts a child process 20 times")
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "crash.db")
	acked := map[string]Head{} // the newest acknowledged head of each world
	for kill := range crashKillCount {
		// Spread the kill points: some during start-up and recovery, most
		// after a varying number of acknowledged appends, at varying delays.
		waitAcks := (kill * 7) % 41
		delay := time.Duration((kill*13)%17) * time.Millisecond
		if kill%5 == 0 {
			waitAcks, delay = 0, time.Duration(kill)*time.Millisecond
		}
		n := crashOnce(t, path, waitAcks, delay, acked)
		checkAfterCrash(t, path, acked)
		t.Logf("kill %d: after %d acks (waited for %d, then %v)", kill, n, waitAcks, delay)
	}
	total := uint64(0)
	for _, h := range acked {
		total += h.Seq
	}
	if total == 0 {
		t.Fatal("the child never acknowledged an append")
	}
}

// crashOnce runs the child, kills it after waitAcks acknowledgements and
// delay, and records the acknowledged heads in acked. It returns how many
// acknowledgements it read.
func crashOnce(t *testing.T, path string, waitAcks int, delay time.Duration, acked map[string]Head) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	n := 0
	var problems []string
	record := func(line string) {
		f := strings.Fields(line)
		if len(f) == 4 && f[0] == "ack" {
			seq, err1 := strconv.ParseUint(f[2], 10, 64)
			hash, err2 := cas.ParseRef(f[3])
			if err1 == nil && err2 == nil {
				if seq > acked[f[1]].Seq {
					acked[f[1]] = Head{Seq: seq, Hash: hash}
				}
				n++
				return
			}
		}
		if line != "" && !strings.HasPrefix(line, "PASS") && !strings.HasPrefix(line, "ok") {
			problems = append(problems, line) // a torn last line is expected
		}
	}
	timeout := time.After(20 * time.Second)
wait:
	for n < waitAcks {
		select {
		case line, ok := <-lines:
			if !ok {
				break wait
			}
			record(line)
		case <-timeout:
			_ = cmd.Process.Kill()
			t.Fatalf("child acknowledged only %d appends in 20 s", n)
		}
	}
	time.Sleep(delay)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill child: %v", err)
	}
	for line := range lines {
		record(line)
	}
	_, _ = io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die of SIGKILL: %v\nstderr:\n%s", err, stderr.String())
	}
	if len(problems) > 1 {
		t.Fatalf("child printed unexpected lines: %q\nstderr:\n%s", problems, stderr.String())
	}
	return n
}

// checkAfterCrash reopens the journal and checks it against what the child
// acknowledged.
func checkAfterCrash(t *testing.T, path string, acked map[string]Head) {
	t.Helper()
	ctx := t.Context()
	if _, err := os.Stat(path); os.IsNotExist(err) {
		if len(acked) > 0 {
			t.Fatal("journal file gone after acknowledged appends")
		}
		return
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("reopen after crash: %v", err)
	}
	defer db.Close()
	j, err := NewBolt(db, nil)
	if err != nil {
		t.Fatalf("reopen after crash: %v", err)
	}
	defer j.Close()
	worlds, err := j.Worlds(ctx)
	if err != nil {
		t.Fatalf("Worlds after crash: %v", err)
	}
	for _, w := range worlds {
		head, err := Verify(ctx, j, w)
		if err != nil {
			t.Fatalf("Verify after crash: %v", err)
		}
		if head.Seq%crashStepSize != 0 {
			t.Fatalf("world %s: head seq %d is not a whole number of %d-entry appends: a torn append", w, head.Seq, crashStepSize)
		}
		if a := acked[w]; head.Seq < a.Seq {
			t.Fatalf("world %s: head %v is behind the acknowledged %v: an acknowledged append was lost", w, head, a)
		}
		err = j.Read(ctx, w, 1, func(r Record) error {
			if want := crashPayload(w, r.Seq); !bytes.Equal(r.Payload, want) {
				return fmt.Errorf("world %s: record %d holds %.40q…, want %.40q…", w, r.Seq, r.Payload, want)
			}
			if a := acked[w]; r.Seq == a.Seq && r.Hash != a.Hash {
				return fmt.Errorf("world %s: record %d hashes to %s, the child acknowledged %s", w, r.Seq, r.Hash, a.Hash)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		checkExtra(t, db, w, head.Seq)
	}
	for w, a := range acked {
		if h, err := j.Head(ctx, w); err != nil || h.Seq < a.Seq {
			t.Fatalf("world %s: head %v, %v; acknowledged %v", w, h, err, a)
		}
	}
}

// checkExtra checks that the data AppendWith wrote is there for exactly
// the committed steps of an even world.
func checkExtra(t *testing.T, db *bbolt.DB, world string, headSeq uint64) {
	t.Helper()
	if world[len(world)-1]%2 == 1 {
		return // odd worlds: plain appends
	}
	_ = db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketExtra)
		for seq := uint64(crashStepSize); seq <= headSeq+crashStepSize; seq += crashStepSize {
			has := b != nil && b.Get(extraKey(world, seq)) != nil
			if has != (seq <= headSeq) {
				t.Fatalf("world %s: AppendWith data of the step ending at %d present=%v, but the head is %d", world, seq, has, headSeq)
			}
		}
		return nil
	})
}
