package world

import (
	"context"
	"fmt"
	"sync"

	"github.com/demiurge-dev/demiurge/cas"
)

// overlay is the CAS a running world's machine reads: the store, plus the
// blobs of the batch being applied, which commit with its records. (An
// adapter's blobs arrive with its receipt and are stored in the same
// transaction; a reducer that reads them while the receipt is applied must
// find them.)
type overlay struct {
	base cas.Getter

	mu      sync.RWMutex
	pending map[cas.Ref][]byte
}

func (o *overlay) Get(ctx context.Context, r cas.Ref) ([]byte, error) {
	if b, ok := o.staged(r); ok {
		return b, nil
	}
	return o.base.Get(ctx, r)
}

// staged returns a copy of the staged blob r, if it is staged.
func (o *overlay) staged(r cas.Ref) ([]byte, bool) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	b, ok := o.pending[r]
	if !ok {
		return nil, false
	}
	return append([]byte(nil), b...), true
}

// stage makes blobs readable until clear.
func (o *overlay) stage(blobs [][]byte) {
	if len(blobs) == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.pending == nil {
		o.pending = map[cas.Ref][]byte{}
	}
	for _, b := range blobs {
		o.pending[cas.Sum(b)] = b
	}
}

func (o *overlay) clear() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pending = nil
}

// unstored returns a Getter of the staged blobs alone: those a commit
// under way will store (see effects.Dispatcher.DispatchEarly). Past clear
// it finds nothing, and the store has them.
func (o *overlay) unstored() cas.Getter { return unstoredGetter{o} }

type unstoredGetter struct{ o *overlay }

func (g unstoredGetter) Get(_ context.Context, r cas.Ref) ([]byte, error) {
	if b, ok := g.o.staged(r); ok {
		return b, nil
	}
	return nil, fmt.Errorf("%w: %s", cas.ErrNotFound, r)
}
