package chatv1

import "context"

// bgctx is the context of CAS reads: a reducer step is not cancellable
// (reads from the world's store are local and bounded).
func bgctx() context.Context { return context.Background() }
