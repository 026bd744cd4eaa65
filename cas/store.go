package cas

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// Errors returned by stores.
var (
	// ErrNotFound is returned when a store does not hold the requested blob.
	ErrNotFound = errors.New("cas: not found")
	// ErrCorrupt is returned (wrapped in a *CorruptError) when stored bytes
	// no longer hash to their ref, and (wrapped in a *BoltDamageError) when
	// the file a Bolt store lives in is damaged. Corrupt bytes are never
	// returned as good data.
	ErrCorrupt = errors.New("cas: corrupt blob")
	// ErrClosed is returned when a store is used after Close.
	ErrClosed = errors.New("cas: store closed")
	// ErrReadOnly is returned by Put on a store opened read-only.
	ErrReadOnly = errors.New("cas: store is read-only")
)

// notFound returns the error a store returns for a ref it does not hold.
func notFound(ref Ref) error {
	return fmt.Errorf("%w: %s", ErrNotFound, ref)
}

// CorruptError reports a blob whose bytes do not match its ref.
type CorruptError struct {
	Ref Ref   // the ref the blob is stored under
	Got Ref   // the hash of the bytes actually found
	Err error // optional detail
}

func (e *CorruptError) Error() string {
	s := fmt.Sprintf("cas: corrupt blob %s (bytes hash to %s)", e.Ref, e.Got)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// Getter is the minimal interface for retrieving a blob.
type Getter interface {
	// Get returns the bytes stored under ref. It returns an error wrapping
	// ErrNotFound if the store does not hold ref (a SHA256 ref is never
	// held), and a *CorruptError if the stored bytes do not hash to ref.
	// The caller may keep and modify the returned slice.
	Get(ctx context.Context, ref Ref) ([]byte, error)
}

// Putter is the minimal interface for storing a blob.
type Putter interface {
	// Put stores data and returns its ref, which Put computes itself
	// (BLAKE3 of data). Putting bytes already stored is cheap and returns
	// the same ref. Put does not keep data after it returns. A Put is
	// durable when it returns, unless the store documents otherwise.
	Put(ctx context.Context, data []byte) (Ref, error)
}

// Haser reports whether a blob is stored.
type Haser interface {
	// Has reports whether the store holds ref. It does not verify the bytes.
	Has(ctx context.Context, ref Ref) (bool, error)
}

// Statter reports a blob's size without reading it.
type Statter interface {
	// Stat returns the size in bytes of the blob stored under ref, or an
	// error wrapping ErrNotFound.
	Stat(ctx context.Context, ref Ref) (int64, error)
}

// Iterator walks every stored blob.
type Iterator interface {
	// Iterate calls fn for each stored blob, in ascending order of ref
	// digest bytes, with its ref and size. It stops at and returns the first
	// error fn returns. Blobs put during Iterate may or may not be visited.
	Iterate(ctx context.Context, fn func(ref Ref, size int64) error) error
}

// Store is a content-addressed blob store: every backend implements it.
type Store interface {
	Getter
	Putter
	Haser
	Statter
	Iterator
	io.Closer
}

// PutNode stores v as a node (its canonical CBOR, see Marshal) and returns
// the node's ref.
func PutNode(ctx context.Context, p Putter, v any) (Ref, error) {
	b, err := Marshal(v)
	if err != nil {
		return Ref{}, err
	}
	return p.Put(ctx, b)
}

// GetNode loads the node stored under ref and decodes it into v.
func GetNode(ctx context.Context, g Getter, ref Ref, v any) error {
	b, err := g.Get(ctx, ref)
	if err != nil {
		return err
	}
	if err := Unmarshal(b, v); err != nil {
		return fmt.Errorf("node %s: %w", ref, err)
	}
	return nil
}
