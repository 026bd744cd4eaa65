package agent

import "context"

type waitHookKey struct{}

// WithWaitHook returns a context that, given to Chat.Send, makes the
// turn's stream call wait, in the stream's own goroutine, each time it
// has yielded every event it holds and is about to wait for the world's
// next (a commit, a text delta of the model call under way, a decision),
// or to read records (the blobs they name) for the next.
// A caller that pulls the stream one event at a time (iter.Pull2) and
// writes each to a socket can leave them in its buffer and flush in wait:
// once per batch of events that came together, never holding one back
// for the next. wait runs only inside a call to the pulled stream's next.
func WithWaitHook(ctx context.Context, wait func()) context.Context {
	return context.WithValue(ctx, waitHookKey{}, wait)
}

// waitHookOf returns the hook WithWaitHook put in ctx, or a no-op.
func waitHookOf(ctx context.Context) func() {
	if wait, ok := ctx.Value(waitHookKey{}).(func()); ok && wait != nil {
		return wait
	}
	return func() {}
}
