// Package chunked stores a blob as content-defined chunks and an index
// node naming them, so that blobs which share most of their bytes — the
// successive requests of a chat, each the one before with a few items
// more — share most of their chunks, and storing the next costs about the
// bytes that are new.
//
// Chunk boundaries depend on the bytes alone (a gear rolling hash, as
// FastCDC cuts them): a chunk ends where the hash of the last bytes has
// its low bits zero, between MinChunk and MaxChunk bytes from its start,
// AvgChunk bytes on average. An insertion shifts the boundaries near it
// only; the chunks before and after are the same blobs as before.
package chunked

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/zeebo/blake3"

	"github.com/demiurge-dev/demiurge/cas"
)

// Chunk sizes, in bytes.
const (
	MinChunk = 1 << 10
	AvgChunk = 4 << 10
	MaxChunk = 16 << 10
)

// Index is the node that names a chunked blob's chunks, the Go form of
// sys/BlobChunks@1.
type Index struct {
	// Size is the blob's length.
	Size uint64 `cbor:"size"`
	// Chunks name the chunks, in order; their bytes concatenated are the
	// blob. Never nil when encoded.
	Chunks []cas.Ref `cbor:"chunks"`
}

// MarshalCBOR encodes x with no chunks as an empty list, never null.
func (x Index) MarshalCBOR() ([]byte, error) {
	type plain Index
	if x.Chunks == nil {
		x.Chunks = []cas.Ref{}
	}
	return cas.MarshalBody(plain(x))
}

// gear is the rolling hash's table: 256 fixed pseudo-random words (BLAKE3
// of "demiurge chunked gear" and the byte), the same in every build.
var gear = func() (g [256]uint64) {
	for i := range g {
		sum := blake3.Sum256([]byte{'d', 'e', 'm', 'i', 'u', 'r', 'g', 'e', ' ', 'g', 'e', 'a', 'r', byte(i)})
		g[i] = binary.LittleEndian.Uint64(sum[:8])
	}
	return g
}()

// mask has log2(AvgChunk) bits set: a boundary where hash&mask == 0 comes
// every AvgChunk bytes on average (past MinChunk).
const mask = AvgChunk - 1

// Split returns the lengths of data's content-defined chunks, in order.
func Split(data []byte) []int {
	var out []int
	for len(data) > 0 {
		n := cut(data)
		out = append(out, n)
		data = data[n:]
	}
	return out
}

// cut returns the length of the first chunk of data.
func cut(data []byte) int {
	if len(data) <= MinChunk {
		return len(data)
	}
	end := min(len(data), MaxChunk)
	var h uint64
	for i := MinChunk; i < end; i++ {
		h = h<<1 + gear[data[i]]
		if h&(mask<<16) == 0 { // the hash's well-mixed high bits
			return i + 1
		}
	}
	return end
}

// Put stores data as chunks and an index node in p and returns the
// index's ref.
func Put(ctx context.Context, p cas.Putter, data []byte) (cas.Ref, error) {
	x := Index{Size: uint64(len(data))}
	for _, n := range Split(data) {
		r, err := p.Put(ctx, data[:n])
		if err != nil {
			return cas.Ref{}, fmt.Errorf("chunked: store a chunk: %w", err)
		}
		x.Chunks = append(x.Chunks, r)
		data = data[n:]
	}
	r, err := cas.PutNode(ctx, p, x)
	if err != nil {
		return cas.Ref{}, fmt.Errorf("chunked: store the index: %w", err)
	}
	return r, nil
}

// Get reads the blob whose index ref names from g. A missing chunk, or
// chunks whose lengths do not add up to the index's size, is an error.
func Get(ctx context.Context, g cas.Getter, ref cas.Ref) ([]byte, error) {
	var x Index
	if err := cas.GetNode(ctx, g, ref, &x); err != nil {
		return nil, fmt.Errorf("chunked: index %s: %w", ref.Short(), err)
	}
	if x.Size > 1<<40 {
		return nil, fmt.Errorf("chunked: index %s: size %d is implausible", ref.Short(), x.Size)
	}
	out := make([]byte, 0, x.Size)
	for i, r := range x.Chunks {
		b, err := g.Get(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("chunked: index %s chunk %d: %w", ref.Short(), i, err)
		}
		out = append(out, b...)
	}
	if uint64(len(out)) != x.Size {
		return nil, fmt.Errorf("chunked: index %s: its chunks hold %d bytes, it says %d", ref.Short(), len(out), x.Size)
	}
	return out, nil
}
