package world_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
	"go.etcd.io/bbolt"
)

const crashEnv = "DEMIURGE_WORLD_CRASH_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashEnv); dir != "" {
		crashChild(dir)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// slowHTTP is fakeHTTP with a delay, so effects are in flight when the
// child is killed.
type slowHTTP struct{ fakeHTTP }

func (s *slowHTTP) Run(ctx context.Context, c *effects.Call) effects.Receipt {
	select {
	case <-time.After(time.Duration(rand.IntN(4000)) * time.Microsecond):
	case <-ctx.Done():
		return effects.Errorf("slow", "cancelled")
	}
	return s.fakeHTTP.Run(ctx, c)
}

func openBolt(t testing.TB, dir string) (world.Storage, func()) {
	db, err := bbolt.Open(filepath.Join(dir, "demiurge.db"), 0o600, &bbolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c, err := cas.NewBolt(db)
	if err != nil {
		t.Fatal(err)
	}
	j, err := journal.NewBolt(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := world.NewBoltStorage(c, j)
	if err != nil {
		t.Fatal(err)
	}
	return st, func() { j.Close(); c.Close(); db.Close() }
}

type fatalTB struct{ testing.TB }

// crashChild sends pings forever and prints each acknowledged head.
func crashChild(dir string) {
	st, closeFn := openBolt(fatalTB{}, dir)
	defer closeFn()
	reg := reducer.NewRegistry()
	reg.MustRegister("test/Tally@1", tally{})
	cat, err := schema.Load("testdata/pingpong", nil)
	if err != nil {
		panic(err)
	}
	w, err := world.Open(context.Background(), world.Options{Name: "pp", Catalog: cat, Reducers: reg, Storage: st,
		Adapters: map[string]effects.Adapter{"http.request": &slowHTTP{}}, SnapshotEvery: 7})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(3)
	}
	for i := 0; ; i++ {
		who := []string{"ann", "bob", "cy"}[i%3]
		h, err := w.SendJSON(context.Background(), "test/Ping@1", []byte(fmt.Sprintf(`{"who": %q, "url": "https://pong.test/%d"}`, who, i)))
		if err != nil {
			fmt.Println("send:", err)
			os.Exit(4)
		}
		fmt.Printf("acked %d\n", h.Seq)
	}
}

func (fatalTB) Fatal(args ...any) { panic(fmt.Sprint(args...)) }

// TestCrashRecovery kills a world with effects in flight at many points
// and checks, after each kill, that reopening loses and duplicates nothing:
// the journal verifies, every acknowledged record is there, intents
// without receipts are dispatched again, every plan ends exactly once,
// every intent gets exactly one receipt, and replay from genesis agrees
// with the recovered state.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes")
	}
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const kills = 12
	for k := range kills {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), crashEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		acked := make(chan uint64, 1<<16)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				var n uint64
				if _, err := fmt.Sscanf(sc.Text(), "acked %d", &n); err == nil {
					acked <- n
				} else {
					t.Errorf("child: %s", sc.Text())
				}
			}
			close(acked)
		}()
		time.Sleep(time.Duration(30+rand.IntN(150)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		var maxAcked uint64
		for n := range acked {
			maxAcked = max(maxAcked, n)
		}
		checkRecovered(t, dir, maxAcked, k)
	}
}

func checkRecovered(t *testing.T, dir string, maxAcked uint64, k int) {
	t.Helper()
	ctx := t.Context()
	st, closeFn := openBolt(t, dir)
	defer closeFn()
	head, err := journal.Verify(ctx, st.Journal(), "pp")
	if errors.Is(err, journal.ErrNotFound) && maxAcked == 0 {
		// Killed before the world's first commit (a slow start, under
		// -race): nothing was acknowledged, and nothing is lost.
		t.Logf("kill %d: before the first commit", k)
		return
	}
	if err != nil {
		t.Fatalf("kill %d: %v", k, err)
	}
	if head.Seq < maxAcked {
		t.Fatalf("kill %d: acknowledged seq %d but the journal ends at %d", k, maxAcked, head.Seq)
	}
	h := &fakeHTTP{}
	w, cat, reg := pingWorld(t, st, h)
	if err := w.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// Count plan starts/ends and intents/receipts.
	started, ended := map[string]int{}, map[string]int{}
	intents, receipts := map[string]int{}, map[string]int{}
	err = st.Journal().Read(ctx, "pp", 1, func(r journal.Record) error {
		v, _ := schema.Decode(r.Payload)
		m, _ := v.(*schema.Map)
		get := func(k string) string { x, _ := m.Get(k); return schema.String(x) }
		switch r.Kind {
		case world.KindPlanStarted:
			started[get("plan_id")]++
		case world.KindPlanEnded:
			ended[get("plan_id")]++
		case world.KindIntent:
			intents[get("intent")]++
		case world.KindReceipt:
			receipts[get("intent")]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for id, n := range started {
		if n != 1 || ended[id] != 1 {
			t.Fatalf("kill %d: plan %s started %d times and ended %d times", k, id, n, ended[id])
		}
	}
	for in, n := range intents {
		if n != 1 || receipts[in] != 1 {
			t.Fatalf("kill %d: intent %s recorded %d times with %d receipts", k, in, n, receipts[in])
		}
	}
	rep, err := world.Rerun(ctx, world.RerunOptions{Name: "pp", Catalog: cat, Reducers: reg, Storage: st, FromGenesis: true})
	if err != nil {
		t.Fatalf("kill %d: replay: %v", k, err)
	}
	var total, pongs uint64
	for _, c := range rep.Machine.Cells("test/Tally@1") {
		var s tallyState
		if err := reducer.ToGo(c.State, &s); err != nil {
			t.Fatal(err)
		}
		total += s.Pings
		pongs += s.Pongs
	}
	if total != pongs || uint64(len(started)) != total {
		t.Fatalf("kill %d: %d pings, %d pongs, %d plans", k, total, pongs, len(started))
	}
	t.Logf("kill %d: head %d (acked %d), %d pings, %d redispatched", k, head.Seq, maxAcked, total, h.calls.Load())
}
