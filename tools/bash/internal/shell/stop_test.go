package shell

import (
	"context"
	"errors"
	"testing"

	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// TestNoCommandAfterCancel: once the run's context has ended, the shell
// starts no further command, even before the goroutine that
// context.AfterFunc starts to stop the run has been scheduled. A tool
// that returns at once when its context is done must not let a loop spin
// (and its calls be traced) until then: how many would depend on the
// scheduler.
func TestNoCommandAfterCancel(t *testing.T) {
	for i := range 50 {
		ctx, cancel := context.WithCancel(context.Background())
		calls, late := 0, 0
		r := New(Config{FS: vfs.New(vfs.Options{}),
			Exec: func(ctx context.Context, c *Command) (int, bool) {
				if c.Args[0] != "tick" {
					return 0, false
				}
				calls++
				if ctx.Err() != nil {
					late++
				}
				if calls == 3 {
					cancel() // as a deadline ending during the third call
				}
				return 1, true
			}})
		res := r.Run(ctx, "while true; do tick; done")
		if calls != 3 || late != 0 {
			t.Fatalf("run %d: %d calls, %d of them after the cancel; want 3 and none", i, calls, late)
		}
		if !errors.Is(res.Err, context.Canceled) {
			t.Fatalf("run %d: Err = %v; want context.Canceled", i, res.Err)
		}
	}
}
