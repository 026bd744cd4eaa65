package wasm

import (
	"sync"
	"time"
)

// watchdog keeps the wall-clock backstop of the steps that run: it sets
// the stop global of an instance whose step is past its backstop, which the
// module reads each time it refuels (see Info.Instrument), so the running
// code traps within fuelPeriod instructions and the step fails with
// ErrDeadline. (wazero's own way, closing the module when a call's context
// is done, starts a goroutine on every call, which costs more than a small
// step.) One goroutine serves a host: it looks every watchTick while steps
// run, and sleeps once none has run for a while, so a step costs two locks
// and a clock read, where a context with a deadline would cost a timer and
// a goroutine's wake-up. A backstop is kept to within a tick.
type watchdog struct {
	mu      sync.Mutex
	running map[*instance]struct{}
	wake    chan struct{}
	done    chan struct{}
	started bool
	parked  bool // the goroutine waits for wake
}

// watchTick is how often the watchdog looks at the running steps; it parks
// after parkAfter ticks without one.
const (
	watchTick = 10 * time.Millisecond
	parkAfter = 100
)

// start marks in as running a step that must end within d.
func (w *watchdog) start(in *instance, d time.Duration) {
	in.wmu.Lock()
	in.deadline, in.expired = time.Now().Add(d), false
	in.wmu.Unlock()
	w.mu.Lock()
	if !w.started {
		w.running, w.wake, w.done, w.started = map[*instance]struct{}{}, make(chan struct{}, 1), make(chan struct{}), true
		go w.loop()
	}
	w.running[in] = struct{}{}
	wake := w.parked
	w.parked = false
	w.mu.Unlock()
	if wake {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// stop marks in's step as ended and reports whether the watchdog ended it.
func (w *watchdog) stop(in *instance) bool {
	w.mu.Lock()
	delete(w.running, in)
	w.mu.Unlock()
	in.wmu.Lock()
	defer in.wmu.Unlock()
	in.deadline = time.Time{}
	return in.expired
}

func (w *watchdog) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		close(w.done)
		w.started = false
	}
}

func (w *watchdog) loop() {
	w.mu.Lock()
	done, wake := w.done, w.wake
	w.mu.Unlock()
	ticker := time.NewTicker(watchTick)
	defer ticker.Stop()
	idle := 0
	for {
		select {
		case <-done:
			return
		case <-ticker.C:
		}
		now := time.Now()
		w.mu.Lock()
		for in := range w.running {
			in.wmu.Lock()
			if !in.deadline.IsZero() && !now.Before(in.deadline) {
				in.expired, in.deadline = true, time.Time{}
				in.stop.Set(1)
			}
			in.wmu.Unlock()
		}
		if len(w.running) == 0 {
			idle++
		} else {
			idle = 0
		}
		park := idle >= parkAfter
		w.parked = park
		w.mu.Unlock()
		if park {
			ticker.Stop()
			select {
			case <-done:
				return
			case <-wake:
			}
			idle = 0
			ticker.Reset(watchTick)
		}
	}
}
