package effects

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/demiurge-dev/demiurge/cas"
)

// An EarlyAdapter starts its calls while the world is still making their
// intents durable. Until then it does only what reaches no one outside
// the process — reads the params' blobs, builds and encodes its request —
// and it calls WaitDurable before anything that does (sending the
// request). So its preparation overlaps the world's commit, which mostly
// waits for the disk, and the write-ahead rule holds all the same: nothing
// leaves the process for an intent that is not in the journal. The
// model's adapter is one.
type EarlyAdapter interface {
	Adapter
	// StartsEarly reports whether the adapter may be started before its
	// intent is durable: whether its every Run calls WaitDurable before
	// it reaches outside the process.
	StartsEarly() bool
}

// ErrNotDurable is returned (wrapped) by WaitDurable when the world failed
// to make the call's intent durable: the call must end without an effect.
var ErrNotDurable = errors.New("effects: the intent was not made durable")

// durability is the gate of a call started early: closed once the commit
// of its intent has ended, with ok saying whether the intent is durable.
type durability struct {
	done chan struct{}
	ok   bool
}

type durableKey struct{}

// WaitDurable waits until the intent of the call ctx belongs to is
// durable, and returns nil; or returns an error wrapping ErrNotDurable if
// the world failed to make it so, or ctx's error if ctx ends first. For a
// call that was not started early (or a ctx of no call) it returns nil at
// once. An EarlyAdapter calls it before anything that reaches outside the
// process.
func WaitDurable(ctx context.Context) error {
	d, _ := ctx.Value(durableKey{}).(*durability)
	if d == nil {
		return nil
	}
	select {
	case <-d.done:
	case <-ctx.Done():
		select {
		case <-d.done: // decided meanwhile (a failed commit also cancels ctx): that answer
		default:
			return ctx.Err()
		}
	}
	if !d.ok {
		return fmt.Errorf("%w (the world's commit failed)", ErrNotDurable)
	}
	return nil
}

// MayStartEarly reports whether any of intents has an EarlyAdapter that
// starts early: only those are worth offering to DispatchEarly.
func (d *Dispatcher) MayStartEarly(intents []*Intent) bool {
	for _, in := range intents {
		if startsEarly(d.adapters[in.Kind]) {
			return true
		}
	}
	return false
}

func startsEarly(a Adapter) (ok bool) {
	e, isEarly := a.(EarlyAdapter)
	if !isEarly {
		return false
	}
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return e.StartsEarly()
}

// DispatchEarly starts in before its intent is durable, as Dispatch would
// after, if its adapter is an EarlyAdapter that starts early; else it
// returns nil and the caller dispatches in once it is durable. pending
// reads the blobs that will be stored with the intent and are not in the
// store yet (the call's reads look there before the store); it may be nil.
//
// The caller must call the returned function once the commit of the intent
// has ended: with true when it is durable, and the call goes on past
// WaitDurable; with false when it is not, and the call is cancelled (its
// completion should be ignored).
func (d *Dispatcher) DispatchEarly(in *Intent, pending cas.Getter) (committed func(durable bool)) {
	if !startsEarly(d.adapters[in.Kind]) {
		return nil
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.attempts[in.Hash]++
	attempt := d.attempts[in.Hash]
	delete(d.cancelled, in.Hash) // wanted again: the same intent emitted anew
	d.wg.Add(1)
	d.mu.Unlock()
	ctx, committed := EarlyContext(d.ctx)
	go func() {
		// Releases the context; an outcome already given stands (and one
		// given later is ignored: the run is over).
		defer committed(false)
		d.runWith(ctx, in, attempt, pending)
	}()
	return committed
}

// EarlyContext returns a context derived from parent like the one a call
// started early runs with: WaitDurable on it waits until committed is
// called; committed(true) lets it return nil, committed(false) makes it
// fail with ErrNotDurable and cancels the context. Only the first call of
// committed counts. It is for running an EarlyAdapter outside a
// Dispatcher, and for testing one.
func EarlyContext(parent context.Context) (ctx context.Context, committed func(durable bool)) {
	gate := &durability{done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.WithValue(parent, durableKey{}, gate))
	var once sync.Once
	return ctx, func(durable bool) {
		once.Do(func() {
			gate.ok = durable
			close(gate.done)
		})
		if !durable {
			cancel()
		}
	}
}
