package cli

import (
	"context"
	"errors"
	"sync"
)

// errTerminated is the cause of a command's context when SIGTERM ends it
// (kill, a service manager stopping it). Unlike Ctrl-C it is not routed:
// a turn run waits for is stopped as Ctrl-C stops it, and the command
// ends with exitTerminated.
var errTerminated = errors.New("terminated (SIGTERM)")

// exitTerminated is the exit code of a command SIGTERM ended (128 +
// SIGTERM, as shells report it).
const exitTerminated = 143

// interrupts routes Ctrl-C (SIGINT): to the handler a command set, as
// run does to stop a turn and not the program, else to cancelling the
// command's context.
type interrupts struct {
	mu      sync.Mutex
	handler func()
	cancel  func()
}

// fire handles one interrupt.
func (i *interrupts) fire() {
	i.mu.Lock()
	h := i.handler
	i.mu.Unlock()
	if h != nil {
		h()
		return
	}
	i.cancel()
}

// handle makes h the handler of interrupts until the returned function
// restores the one before. On a nil *interrupts (no signals: tests) it
// does nothing.
func (i *interrupts) handle(h func()) (restore func()) {
	if i == nil {
		return func() {}
	}
	i.mu.Lock()
	prev := i.handler
	i.handler = h
	i.mu.Unlock()
	return func() {
		i.mu.Lock()
		i.handler = prev
		i.mu.Unlock()
	}
}

// quit cancels the command's context, as an unhandled interrupt does.
func (i *interrupts) quit() {
	if i != nil {
		i.cancel()
	}
}

// endedBy is what a command whose context is done returns: errTerminated
// when SIGTERM ended it, nil otherwise (the user quit).
func endedBy(ctx context.Context) error {
	if ctx.Err() != nil && errors.Is(context.Cause(ctx), errTerminated) {
		return errTerminated
	}
	return nil
}
