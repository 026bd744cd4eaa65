package coreutils

import (
	"context"
	"errors"
	"runtime"
	"time"
)

// jqHeapBound bounds how much a jq filter may grow the process's heap:
// "[range(1e9)]" builds its array inside gojq, where neither the stream
// bounds nor the input bound see it, and took 6.8 GB before the script's
// time limit ended it. A variable for the tests.
var jqHeapBound uint64 = 1 << 30

// errHeapBound is the cause of a context watchHeap cancelled.
var errHeapBound = errors.New("heap bound reached")

// heapWatchDelay is how long a computation runs before watchHeap starts
// sampling the heap: most end long before, and cost nothing more.
const heapWatchDelay = 10 * time.Millisecond

// watchHeap returns a context that is cancelled, with cause errHeapBound,
// once the process's live heap has grown by more than bound bytes since
// the watch began (heapWatchDelay after the call), and a func that stops
// watching. The heap is the process's, so
// other work growing it at the same time counts too; the bound is far
// above what a sandboxed computation needs.
func watchHeap(parent context.Context, bound uint64) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	stop := make(chan struct{})
	t := time.AfterFunc(heapWatchDelay, func() {
		// The base is taken once the watch starts, to keep the many
		// short computations free of it.
		base := heapBytes()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if heapBytes() > base+bound {
				cancel(errHeapBound)
				return
			}
			select {
			case <-tick.C:
			case <-stop:
				return
			case <-ctx.Done():
				return
			}
		}
	})
	return ctx, func() {
		t.Stop()
		close(stop)
		cancel(nil)
	}
}

// heapBytes is the memory occupied by live and not yet swept heap objects
// (runtime/metrics' /memory/classes/heap/objects:bytes). It reads
// runtime.MemStats rather than runtime/metrics, whose package init (a
// table of every GODEBUG setting) took 0.1 ms of every start of the
// binary; ReadMemStats stops the world for some microseconds, once per
// sample of a computation that runs past heapWatchDelay.
func heapBytes() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
