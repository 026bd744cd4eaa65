package cluster_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cluster"
	"github.com/demiurge-dev/demiurge/internal/pgtest"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
)

// TestRemoteSyncConcurrent: a Remote that many goroutines read at once
// (the streams of a server's chats, each waiting on its own turn) hands
// each record to OnCommit once, in journal order, and its head never
// goes back.
func TestRemoteSyncConcurrent(t *testing.T) {
	s := openStore(t, pgtest.URL(t))
	cat := loadBench(t)
	startWorker(t, s, "A", time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	var seqs []uint64
	r, err := cluster.Attach(ctx, cluster.RemoteOptions{Store: s, Name: "w", Catalog: cat, Reducers: reducer.NewRegistry(),
		OnCommit: func(recs []journal.Record) {
			mu.Lock()
			defer mu.Unlock()
			for _, rec := range recs {
				seqs = append(seqs, rec.Seq)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	var back uint64 // a head seen to go back
	for range 8 {
		readers.Go(func() {
			var last uint64
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := r.Sync(ctx); err != nil {
					t.Error(err)
					return
				}
				if h := r.Head().Seq; h < last {
					mu.Lock()
					back = h
					mu.Unlock()
				} else {
					last = h
				}
			}
		})
	}
	for n := range 20 {
		if _, err := r.SendJSON(ctx, "bench/Start@1", []byte(`{"n": `+string(rune('0'+n%10))+`}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	close(stop)
	readers.Wait()
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if back != 0 {
		t.Errorf("the head went back to %d", back)
	}
	for i, seq := range seqs {
		if want := seqs[0] + uint64(i); seq != want {
			t.Fatalf("OnCommit's records %d: seq %d; want %d (each once, in order): %v", i, seq, want, seqs)
		}
	}
	if h := r.Head().Seq; len(seqs) == 0 || seqs[len(seqs)-1] != h {
		t.Errorf("OnCommit saw up to %v; the head is %d", seqs, h)
	}
}
