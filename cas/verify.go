package cas

import (
	"context"
	"errors"
	"fmt"
)

// VerifyStore is what Verify needs: a store it can walk and read.
type VerifyStore interface {
	Iterator
	Getter
}

// Verify walks every blob of s, in Iterate's order, reads it back and
// checks that its bytes still hash to its ref. For each blob that does not
// (Get returns an error wrapping ErrCorrupt), or that Iterate listed but
// Get no longer finds, it calls fn, if fn is not nil, with the ref and the
// error, and goes on.
//
// It returns how many blobs it checked and how many were bad. err is nil
// when the whole store was walked, whatever bad is; it is the error that
// stopped the walk otherwise (ctx cancelled, an I/O error, a store that
// cannot be iterated), and checked and bad then count what was seen
// before it.
func Verify(ctx context.Context, s VerifyStore, fn func(ref Ref, err error)) (checked, bad int, err error) {
	err = s.Iterate(ctx, func(ref Ref, _ int64) error {
		_, err := s.Get(ctx, ref)
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("cas: verify %s: %w", ref, err)
		}
		checked++
		if err != nil {
			bad++
			if fn != nil {
				fn(ref, err)
			}
		}
		return nil
	})
	return checked, bad, err
}
