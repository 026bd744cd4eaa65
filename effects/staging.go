package effects

import (
	"context"
	"errors"
	"sync"

	"github.com/demiurge-dev/demiurge/cas"
)

// staging is the CAS an adapter writes to: Put keeps a blob in memory and
// returns its ref at once; the world stores the blobs in the same
// transaction as the receipt that refers to them. So an adapter's blobs
// cost no fsync of their own, and after a crash a receipt is either
// durable with its blobs or lost with them (and the intent runs again).
type staging struct {
	base cas.Store
	// unstored, if not nil, reads blobs that will be stored with the
	// call's intent and are not in base yet (a call started early).
	unstored cas.Getter

	mu    sync.Mutex
	blobs map[cas.Ref][]byte
	order []cas.Ref
	fault error // the first read of base that found the store damaged
}

// note keeps err if it is the first fault of the store met (an error
// wrapping cas.ErrCorrupt: a blob that does not hash to its ref, a damaged
// page of the file), and returns err.
func (s *staging) note(err error) error {
	if err != nil && errors.Is(err, cas.ErrCorrupt) {
		s.mu.Lock()
		if s.fault == nil {
			s.fault = err
		}
		s.mu.Unlock()
	}
	return err
}

// storageFault returns the first fault of the store a read met, or nil.
func (s *staging) storageFault() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fault
}

func newStaging(base cas.Store) *staging {
	return &staging{base: base, blobs: map[cas.Ref][]byte{}}
}

func (s *staging) Put(ctx context.Context, data []byte) (cas.Ref, error) {
	if err := ctx.Err(); err != nil {
		return cas.Ref{}, err
	}
	r := cas.Sum(data)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.blobs[r]; !ok {
		s.blobs[r] = append([]byte(nil), data...)
		s.order = append(s.order, r)
	}
	return r, nil
}

func (s *staging) pending(r cas.Ref) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.blobs[r]
	return b, ok
}

func (s *staging) Get(ctx context.Context, r cas.Ref) ([]byte, error) {
	if b, ok := s.pending(r); ok {
		return append([]byte(nil), b...), nil
	}
	if b, ok := s.unstoredBlob(ctx, r); ok {
		return b, nil
	}
	b, err := s.base.Get(ctx, r)
	return b, s.note(err)
}

func (s *staging) Has(ctx context.Context, r cas.Ref) (bool, error) {
	if _, ok := s.pending(r); ok {
		return true, nil
	}
	if _, ok := s.unstoredBlob(ctx, r); ok {
		return true, nil
	}
	ok, err := s.base.Has(ctx, r)
	return ok, s.note(err)
}

func (s *staging) Stat(ctx context.Context, r cas.Ref) (int64, error) {
	if b, ok := s.pending(r); ok {
		return int64(len(b)), nil
	}
	if b, ok := s.unstoredBlob(ctx, r); ok {
		return int64(len(b)), nil
	}
	n, err := s.base.Stat(ctx, r)
	return n, s.note(err)
}

// unstoredBlob reads r from the blobs not yet stored, if there are any.
func (s *staging) unstoredBlob(ctx context.Context, r cas.Ref) ([]byte, bool) {
	if s.unstored == nil {
		return nil, false
	}
	b, err := s.unstored.Get(ctx, r)
	return b, err == nil
}

// Iterate walks the base store; staged blobs are not visited.
func (s *staging) Iterate(ctx context.Context, fn func(cas.Ref, int64) error) error {
	return s.note(s.base.Iterate(ctx, fn))
}

// Close does nothing: the base store belongs to the world.
func (s *staging) Close() error { return nil }

// take returns the staged blobs in the order they were put.
func (s *staging) take() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]byte, 0, len(s.order))
	for _, r := range s.order {
		out = append(out, s.blobs[r])
	}
	return out
}
