package cas

import (
	"bytes"
	"context"
	"slices"
	"sync"
)

// Memory is a Store that keeps blobs in memory. It is safe for concurrent
// use. Put copies the bytes in and Get copies them out, so callers may
// reuse their slices; Get re-hashes like every backend. Nothing survives
// Close or the process.
type Memory struct {
	mu     sync.RWMutex
	blobs  map[Ref][]byte
	closed bool
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{blobs: make(map[Ref][]byte)}
}

var _ Store = (*Memory)(nil)

// Put stores a copy of data and returns its ref. Putting bytes already
// stored does not copy them again.
func (m *Memory) Put(ctx context.Context, data []byte) (Ref, error) {
	if err := ctx.Err(); err != nil {
		return Ref{}, err
	}
	ref := Sum(data)
	m.mu.RLock()
	_, ok := m.blobs[ref]
	closed := m.closed
	m.mu.RUnlock()
	if closed {
		return Ref{}, ErrClosed
	}
	if ok {
		return ref, nil
	}
	b := bytes.Clone(data)
	if b == nil {
		b = []byte{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Ref{}, ErrClosed
	}
	if _, ok := m.blobs[ref]; !ok {
		m.blobs[ref] = b
	}
	return ref, nil
}

// Get returns a copy of the bytes stored under ref, after checking that
// they still hash to ref.
func (m *Memory) Get(ctx context.Context, ref Ref) ([]byte, error) {
	b, ok, err := m.lookup(ctx, ref)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, notFound(ref)
	}
	// The stored slice is never modified in place, so it can be copied
	// and hashed outside the lock.
	out := bytes.Clone(b)
	if out == nil {
		out = []byte{}
	}
	if got := Sum(out); got != ref {
		return nil, &CorruptError{Ref: ref, Got: got}
	}
	return out, nil
}

// Has reports whether the store holds ref.
func (m *Memory) Has(ctx context.Context, ref Ref) (bool, error) {
	_, ok, err := m.lookup(ctx, ref)
	return ok, err
}

// Stat returns the size of the blob stored under ref.
func (m *Memory) Stat(ctx context.Context, ref Ref) (int64, error) {
	b, ok, err := m.lookup(ctx, ref)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, notFound(ref)
	}
	return int64(len(b)), nil
}

// lookup returns the stored slice (never to be modified) and whether ref
// is held.
func (m *Memory) lookup(ctx context.Context, ref Ref) ([]byte, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, false, ErrClosed
	}
	b, ok := m.blobs[ref]
	return b, ok, nil
}

// Iterate calls fn for every blob in ascending order of ref digest. It
// walks a snapshot of the refs taken when it starts, without holding a
// lock while fn runs, so fn may use the store.
func (m *Memory) Iterate(ctx context.Context, fn func(ref Ref, size int64) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	type entry struct {
		ref  Ref
		size int64
	}
	m.mu.RLock()
	if m.closed {
		m.mu.RUnlock()
		return ErrClosed
	}
	entries := make([]entry, 0, len(m.blobs))
	for ref, b := range m.blobs {
		entries = append(entries, entry{ref, int64(len(b))})
	}
	m.mu.RUnlock()
	slices.SortFunc(entries, func(a, b entry) int {
		return bytes.Compare(a.ref.digest[:], b.ref.digest[:])
	})
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(e.ref, e.size); err != nil {
			return err
		}
	}
	return nil
}

// Len returns the number of blobs stored.
func (m *Memory) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.blobs)
}

// Close drops every blob. Later calls return ErrClosed; closing again is a
// no-op.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.blobs = nil
	return nil
}
