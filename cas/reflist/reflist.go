// Package reflist keeps an append-only list of refs in a content-addressed
// store as a chain of fixed-size chunks, so that a list of any length has
// a small root and appending to it writes a bounded number of bytes.
//
// A List is the root: the ref of the last full chunk (nil while there is
// none), the refs appended since (at most ChunkSize), and the length. A
// chunk is a node {items, prev, len}: ChunkSize refs, the ref of the chunk
// before it, and the length of the list up to and including it. Appending
// fills the tail; when it holds ChunkSize refs it becomes a chunk node,
// which the caller stores (Append returns it), and the tail starts again.
// Reading walks back from the last chunk as far as it must.
//
// Lists are values: Append returns a new List and never changes the chunks
// an older List names, so every root ever written still reads back the
// same.
package reflist

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/demiurge-dev/demiurge/cas"
)

// ChunkSize is how many refs a chunk holds.
const ChunkSize = 8

// List is the root of a list of refs, the Go form of sys/RefList@1. The
// zero List is the empty list.
type List struct {
	// Head names the last full chunk node, nil while there is none.
	Head *cas.Ref `cbor:"head"`
	// Tail holds the refs after the last full chunk, fewer than
	// ChunkSize. Never nil when encoded.
	Tail []cas.Ref `cbor:"tail"`
	// Len is the number of refs in the list.
	Len uint64 `cbor:"len"`
}

// Chunk is a chunk node, the Go form of sys/RefChunk@1.
type Chunk struct {
	Items []cas.Ref `cbor:"items"`
	Prev  *cas.Ref  `cbor:"prev"`
	// Len is the number of refs of the list up to and including Items.
	Len uint64 `cbor:"len"`
}

// MarshalCBOR encodes l with an empty Tail as an empty list, never null.
func (l List) MarshalCBOR() ([]byte, error) {
	type plain List
	if l.Tail == nil {
		l.Tail = []cas.Ref{}
	}
	return cas.MarshalBody(plain(l))
}

// Valid checks the root's own invariants: a tail shorter than ChunkSize,
// and a length that fits it.
func (l List) Valid() error {
	if len(l.Tail) >= ChunkSize {
		return fmt.Errorf("reflist: tail of %d refs; a tail holds fewer than %d", len(l.Tail), ChunkSize)
	}
	full := l.Len - uint64(len(l.Tail))
	if l.Len < uint64(len(l.Tail)) || full%ChunkSize != 0 || (full == 0) != (l.Head == nil) {
		return fmt.Errorf("reflist: length %d does not fit a tail of %d and head %v", l.Len, len(l.Tail), l.Head)
	}
	return nil
}

// Append returns l with refs appended, and the encoded chunk nodes the
// caller must store (in order) for the new list to read back: one for
// every ChunkSize refs the tail fills.
func (l List) Append(refs ...cas.Ref) (List, [][]byte, error) {
	out := List{Head: l.Head, Tail: append([]cas.Ref(nil), l.Tail...), Len: l.Len}
	var nodes [][]byte
	for _, r := range refs {
		out.Tail = append(out.Tail, r)
		out.Len++
		if len(out.Tail) < ChunkSize {
			continue
		}
		b, err := cas.Marshal(Chunk{Items: out.Tail, Prev: out.Head, Len: out.Len})
		if err != nil {
			return l, nil, fmt.Errorf("reflist: encode chunk: %w", err)
		}
		h := cas.Sum(b)
		out.Head, out.Tail = &h, []cas.Ref{}
		nodes = append(nodes, b)
	}
	return out, nodes, nil
}

// Cache keeps decoded chunks by ref (chunks never change); it is safe for
// concurrent use, and a nil *Cache caches nothing.
type Cache struct {
	mu sync.Mutex
	m  map[cas.Ref]*Chunk
}

// cacheSize bounds a Cache: a simple bound, started over when reached.
const cacheSize = 4096

func (c *Cache) get(r cas.Ref) (*Chunk, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.m[r]
	return ch, ok
}

func (c *Cache) put(r cas.Ref, ch *Chunk) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= cacheSize {
		c.m = map[cas.Ref]*Chunk{}
	}
	c.m[r] = ch
}

// Slice returns the refs l[from:to] (to = l.Len for the end), reading the
// chunks it needs from g (through cache, which may be nil). A chunk that
// is missing, does not decode or does not fit its place in the list is an
// error that names it.
func Slice(ctx context.Context, g cas.Getter, cache *Cache, l List, from, to uint64) ([]cas.Ref, error) {
	if err := l.Valid(); err != nil {
		return nil, err
	}
	if to > l.Len || from > to {
		return nil, fmt.Errorf("reflist: slice [%d:%d] of a list of %d", from, to, l.Len)
	}
	out := make([]cas.Ref, to-from)
	// The tail holds l[l.Len-len(Tail):].
	base := l.Len - uint64(len(l.Tail))
	for i, r := range l.Tail {
		if at := base + uint64(i); at >= from && at < to {
			out[at-from] = r
		}
	}
	head, end := l.Head, base // the chunk ending at end
	for head != nil && end > from {
		ch, ok := cache.get(*head)
		if !ok {
			ch = new(Chunk)
			if err := cas.GetNode(ctx, g, *head, ch); err != nil {
				return nil, fmt.Errorf("reflist: chunk %s: %w", head.Short(), err)
			}
			cache.put(*head, ch)
		}
		if ch.Len != end || len(ch.Items) != ChunkSize || (ch.Prev == nil) != (end == ChunkSize) {
			return nil, fmt.Errorf("reflist: chunk %s says it ends at %d with %d refs; the list has it end at %d", head.Short(), ch.Len, len(ch.Items), end)
		}
		start := end - ChunkSize
		for i, r := range ch.Items {
			if at := start + uint64(i); at >= from && at < to {
				out[at-from] = r
			}
		}
		head, end = ch.Prev, start
	}
	return out, nil
}

// Prefix returns the list of the first n refs of l, n a multiple of
// ChunkSize: its last chunk is one of l's, found by walking back from l's
// last (through cache). Lists that share a prefix so share its chunks.
func Prefix(ctx context.Context, g cas.Getter, cache *Cache, l List, n uint64) (List, error) {
	if n%ChunkSize != 0 || n > l.Len-uint64(len(l.Tail)) {
		return List{}, fmt.Errorf("reflist: a prefix of %d refs of a list with %d in full chunks", n, l.Len-uint64(len(l.Tail)))
	}
	head, end := l.Head, l.Len-uint64(len(l.Tail))
	for head != nil && end > n {
		ch, ok := cache.get(*head)
		if !ok {
			ch = new(Chunk)
			if err := cas.GetNode(ctx, g, *head, ch); err != nil {
				return List{}, fmt.Errorf("reflist: chunk %s: %w", head.Short(), err)
			}
			cache.put(*head, ch)
		}
		if ch.Len != end {
			return List{}, fmt.Errorf("reflist: chunk %s says it ends at %d; the list has it end at %d", head.Short(), ch.Len, end)
		}
		head, end = ch.Prev, end-ChunkSize
	}
	return List{Head: head, Tail: []cas.Ref{}, Len: n}, nil
}

// Since returns the refs of next after its first prev.Len, when next
// begins with the refs of prev: a later root of the list prev was, or of
// one that shares its refs. It reads only the chunks next has past prev's
// last full chunk, so that a reader that kept prev's refs reads what was
// appended since, not the list. ok is false (and the refs nil) when next
// does not begin with prev's refs; a chunk of next that is missing, does
// not decode or does not fit its place is an error that names it.
//
// A chunk's ref is the hash of its refs and of the chunk before it, so a
// chunk both lists name holds the same refs in each, and all before it.
func Since(ctx context.Context, g cas.Getter, cache *Cache, prev, next List) (refs []cas.Ref, ok bool, err error) {
	if err := next.Valid(); err != nil {
		return nil, false, err
	}
	if prev.Valid() != nil || next.Len < prev.Len {
		return nil, false, nil
	}
	prevBase := prev.Len - uint64(len(prev.Tail))
	nextBase := next.Len - uint64(len(next.Tail))
	var chunks []*Chunk // next's chunks past prevBase, newest first
	head, end := next.Head, nextBase
	for end > prevBase {
		ch, ok := cache.get(*head)
		if !ok {
			ch = new(Chunk)
			if err := cas.GetNode(ctx, g, *head, ch); err != nil {
				return nil, false, fmt.Errorf("reflist: chunk %s: %w", head.Short(), err)
			}
			cache.put(*head, ch)
		}
		if ch.Len != end || len(ch.Items) != ChunkSize || (ch.Prev == nil) != (end == ChunkSize) {
			return nil, false, fmt.Errorf("reflist: chunk %s says it ends at %d with %d refs; the list has it end at %d", head.Short(), ch.Len, len(ch.Items), end)
		}
		chunks = append(chunks, ch)
		head, end = ch.Prev, end-ChunkSize
	}
	// head names next's chunk that ends where prev's last full one does.
	if (head == nil) != (prev.Head == nil) || head != nil && *head != *prev.Head {
		return nil, false, nil
	}
	after := make([]cas.Ref, 0, next.Len-prevBase)
	for i := len(chunks) - 1; i >= 0; i-- {
		after = append(after, chunks[i].Items...)
	}
	after = append(after, next.Tail...)
	if !slices.Equal(after[:len(prev.Tail)], prev.Tail) {
		return nil, false, nil
	}
	return after[len(prev.Tail):], true, nil
}
