package workspace

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
)

// TestCachingStoreAgrees runs the same random operations on a plain store
// and on caching stores (one so small it evicts all the time): the roots,
// listings and reads agree, and old roots stay readable and unchanged.
func TestCachingStoreAgrees(t *testing.T) {
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(1, 2))
	stores := []Store{cas.NewMemory(), NewCachingStore(cas.NewMemory(), 2), NewCachingStore(cas.NewMemory(), 0)}
	roots := make([]cas.Ref, len(stores))
	for i, s := range stores {
		roots[i] = build(t, s)
	}
	var history []cas.Ref
	var dumps []string
	for step := range 300 {
		p := fmt.Sprintf("d%d/e%d/f%d", rng.IntN(3), rng.IntN(3), rng.IntN(4))
		op := rng.IntN(4)
		for i, s := range stores {
			var err error
			var nr cas.Ref
			switch op {
			case 0, 1:
				nr, _, err = WriteBytes(ctx, s, roots[i], p, fmt.Appendf(nil, "step %d", step), 0)
			case 2:
				nr, _, err = Remove(ctx, s, roots[i], p[:2], true)
			case 3:
				nr, _, err = EditFile(ctx, s, roots[i], p, "step", "STEP", true)
			}
			if err == nil {
				roots[i] = nr
			}
			if i > 0 && roots[i] != roots[0] {
				t.Fatalf("step %d: store %d has root %s, the plain store %s", step, i, roots[i], roots[0])
			}
		}
		history = append(history, roots[0])
		dumps = append(dumps, dump(t, stores[0], roots[0]))
	}
	for i, s := range stores {
		for j, r := range history {
			if got := dump(t, s, r); got != dumps[j] {
				t.Fatalf("store %d, root %d changed:\n%s\nwant\n%s", i, j, got, dumps[j])
			}
		}
	}
	if n := stores[1].(*CachingStore).Len(); n > 2 {
		t.Errorf("a cache of 2 holds %d nodes", n)
	}
}
