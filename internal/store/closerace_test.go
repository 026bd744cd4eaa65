package store

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestCloseWhileAsked: a store that closes while other processes ask its
// socket who holds it (as every command that finds the store locked
// does) ends without a race between a request that begins and the close
// that waits for the requests under way (run it with -race; it found one).
func TestCloseWhileAsked(t *testing.T) {
	for range 20 {
		dir := t.TempDir()
		s, err := Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for ctx.Err() == nil {
					r, err := dialWriter(ctx, dir)
					if err != nil {
						return // closed: the socket is gone
					}
					r.close()
				}
			})
		}
		time.Sleep(2 * time.Millisecond)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		cancel()
		wg.Wait()
	}
}
