package shell

import (
	"sync"
	"time"
)

// Pipeline stages run in goroutines of a small pool: a goroutine that
// ran a stage has grown its stack to what the interpreter needs, and a
// new one would grow its own again (most of the cost of a short stage).
// An idle goroutine waits workerIdle for more work, then ends.

const (
	workerIdle = 50 * time.Millisecond
	maxIdle    = 64
)

var workers struct {
	mu   sync.Mutex
	idle []chan func()
}

// goWork runs f in a goroutine of the pool.
func goWork(f func()) {
	workers.mu.Lock()
	if n := len(workers.idle); n > 0 {
		ch := workers.idle[n-1]
		workers.idle = workers.idle[:n-1]
		workers.mu.Unlock()
		ch <- f
		return
	}
	workers.mu.Unlock()
	go worker(f)
}

func worker(f func()) {
	ch := make(chan func())
	timer := time.NewTimer(workerIdle)
	defer timer.Stop()
	for {
		f()
		f = nil
		workers.mu.Lock()
		if len(workers.idle) >= maxIdle {
			workers.mu.Unlock()
			return
		}
		workers.idle = append(workers.idle, ch)
		workers.mu.Unlock()
		timer.Reset(workerIdle)
		select {
		case f = <-ch:
			continue
		case <-timer.C:
		}
		// idle too long: leave, unless someone took this worker meanwhile
		workers.mu.Lock()
		gone := true
		for i, c := range workers.idle {
			if c == ch {
				workers.idle = append(workers.idle[:i], workers.idle[i+1:]...)
				gone = false
				break
			}
		}
		workers.mu.Unlock()
		if !gone {
			return
		}
		f = <-ch // taken: its work is on the way
	}
}
