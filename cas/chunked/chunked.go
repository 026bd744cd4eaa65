// Package chunked stores a blob as content-defined chunks and an index
// node naming them, so that blobs which share most of their bytes — the
// successive requests of a chat, each the one before with a few items
// more — share most of their chunks, and storing the next costs about the
// bytes that are new.
//
// Chunk boundaries depend on the bytes alone (a gear rolling hash, as
// FastCDC cuts them): a chunk ends where the hash of the last bytes has
// its high bits zero, between MinChunk and MaxChunk bytes from its start,
// AvgChunk bytes on average. An insertion shifts the boundaries near it
// only; the chunks before and after are the same blobs as before.
//
// The index lists the chunks as a reflist, so that the index of a blob
// that extends an earlier one (a chat's next request, whose growing part
// comes last) shares that one's chunk nodes: a Writer remembers the
// indexes it wrote lately, and builds on the one whose chunks the new
// blob begins with. Storing the next request of a chat then costs its new
// bytes, the chunk they end, and a small root, however long the chat.
package chunked

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/zeebo/blake3"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cas/reflist"
)

// Chunk sizes, in bytes.
const (
	MinChunk = 512
	AvgChunk = 2 << 10
	MaxChunk = 8 << 10
)

// Index is the node that names a chunked blob's chunks, the Go form of
// sys/BlobChunks@1.
type Index struct {
	// Size is the blob's length.
	Size uint64 `cbor:"size"`
	// Chunks name the chunks, in order; their bytes concatenated are the
	// blob.
	Chunks reflist.List `cbor:"chunks"`
}

// gear is the rolling hash's table: 256 fixed pseudo-random words (BLAKE3
// of "demiurge chunked gear" and the byte), the same in every build. It is
// made on first use: its 256 hashes cost every start of the binary ~0.05
// ms, most of which never chunk a blob.
var gear = sync.OnceValue(func() *[256]uint64 {
	var g [256]uint64
	for i := range g {
		sum := blake3.Sum256([]byte{'d', 'e', 'm', 'i', 'u', 'r', 'g', 'e', ' ', 'g', 'e', 'a', 'r', byte(i)})
		g[i] = binary.LittleEndian.Uint64(sum[:8])
	}
	return &g
})

// mask has log2(AvgChunk) bits set: a boundary where hash&mask == 0 comes
// every AvgChunk bytes on average (past MinChunk).
const mask = AvgChunk - 1

// Split returns the lengths of data's content-defined chunks, in order.
func Split(data []byte) []int {
	var out []int
	g := gear()
	for len(data) > 0 {
		n := cut(g, data)
		out = append(out, n)
		data = data[n:]
	}
	return out
}

// cut returns the length of the first chunk of data, by the gear table g.
func cut(g *[256]uint64, data []byte) int {
	if len(data) <= MinChunk {
		return len(data)
	}
	end := min(len(data), MaxChunk)
	var h uint64
	for i := MinChunk; i < end; i++ {
		h = h<<1 + g[data[i]]
		if h&(mask<<16) == 0 { // the hash's well-mixed high bits
			return i + 1
		}
	}
	return end
}

// Writer stores chunked blobs, remembering the indexes it wrote lately so
// that a blob which begins with one's chunks shares its index's chunk
// nodes. It is safe for concurrent use; the zero Writer is ready.
type Writer struct {
	mu     sync.Mutex
	recent map[cas.Ref]recentIndex // by the blob's first chunk
	lists  reflist.Cache
	// tip is the last Chunks PutAfter returned: the next call that builds
	// on it may extend its lists in place, from floor on (the blobs before
	// it whose lists it extended in place still use those below floor).
	tip   *Chunks
	floor int
}

// recentIndex is an index a Writer wrote: its chunks, and their list.
type recentIndex struct {
	chunks []cas.Ref
	list   reflist.List
}

// recentSize bounds a Writer's memory of indexes (one per chat, say).
const recentSize = 256

// Put stores data as chunks and an index node in p and returns the
// index's ref.
func (w *Writer) Put(ctx context.Context, p Store, data []byte) (cas.Ref, error) {
	r, _, err := w.put(ctx, p, data)
	return r, err
}

// put is Put, returning also what PutAfter remembers of the blob: data
// is cut and hashed once.
func (w *Writer) put(ctx context.Context, p Store, data []byte) (cas.Ref, *Chunks, error) {
	size := uint64(len(data))
	var refs []cas.Ref
	var ends []int
	var chunks [][]byte
	at := 0
	for _, n := range Split(data) {
		refs = append(refs, cas.Sum(data[:n]))
		chunks = append(chunks, data[:n])
		data = data[n:]
		at += n
		ends = append(ends, at)
	}
	// The chunks the blob shares with the last one that began the same
	// way are stored already (if the store still has them): only the
	// others are put, so that a chat's next request hands its store its
	// new bytes, not all of them again.
	var prev recentIndex
	if len(refs) > 0 {
		w.mu.Lock()
		prev = w.recent[refs[0]]
		w.mu.Unlock()
	}
	has, _ := p.(interface {
		Has(context.Context, cas.Ref) (bool, error)
	})
	for i, r := range refs {
		if i < len(prev.chunks) && prev.chunks[i] == r && has != nil {
			if ok, err := has.Has(ctx, r); err == nil && ok {
				continue
			}
		}
		if _, err := p.Put(ctx, chunks[i]); err != nil {
			return cas.Ref{}, nil, fmt.Errorf("chunked: store a chunk: %w", err)
		}
	}
	// Build on the last index of a blob that began the same way.
	var list reflist.List
	if len(refs) > 0 {
		if prev.chunks != nil {
			same := 0
			for same < len(refs) && same < len(prev.chunks) && refs[same] == prev.chunks[same] {
				same++
			}
			whole := uint64(same) / reflist.ChunkSize * reflist.ChunkSize
			if base, err := reflist.Prefix(ctx, p, &w.lists, prev.list, min(whole, prev.list.Len-uint64(len(prev.list.Tail)))); err == nil {
				list = base
			}
		}
	}
	list, nodes, err := list.Append(refs[list.Len:]...)
	if err != nil {
		return cas.Ref{}, nil, err
	}
	for _, b := range nodes {
		if _, err := p.Put(ctx, b); err != nil {
			return cas.Ref{}, nil, fmt.Errorf("chunked: store the index: %w", err)
		}
	}
	r, err := cas.PutNode(ctx, p, Index{Size: size, Chunks: list})
	if err != nil {
		return cas.Ref{}, nil, fmt.Errorf("chunked: store the index: %w", err)
	}
	if len(refs) > 0 {
		w.mu.Lock()
		if w.recent == nil || len(w.recent) >= recentSize {
			w.recent = map[cas.Ref]recentIndex{}
		}
		// A copy: PutAfter may extend the Chunks returned in place,
		// writing over their refs past what it keeps.
		w.recent[refs[0]] = recentIndex{chunks: slices.Clone(refs), list: list}
		w.mu.Unlock()
	}
	return r, &Chunks{Ends: ends, Refs: refs, List: list, Index: r}, nil
}

// Store is what a Writer writes to: it reads the chunk nodes of indexes
// it builds on.
type Store interface {
	cas.Getter
	cas.Putter
}

// Put stores data as chunks and an index node in p, sharing nothing with
// earlier indexes, and returns the index's ref.
func Put(ctx context.Context, p Store, data []byte) (cas.Ref, error) {
	return new(Writer).Put(ctx, p, data)
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
	refs, err := reflist.Slice(ctx, g, nil, x.Chunks, 0, x.Chunks.Len)
	if err != nil {
		return nil, fmt.Errorf("chunked: index %s: %w", ref.Short(), err)
	}
	out := make([]byte, 0, x.Size)
	for i, r := range refs {
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

// Chunks is what PutAfter remembers of a blob it stored, for the next
// blob that begins with its bytes: where its chunks end, their refs, its
// index node and the index's list.
type Chunks struct {
	Ends  []int
	Refs  []cas.Ref
	List  reflist.List
	Index cas.Ref
	// valid, once set, is how many of Ends and Refs are still this blob's:
	// a later call extended its lists in place from valid-1 on.
	valid atomic.Int64
}

// PutAfter stores the bytes of src as Put does and returns the same index
// ref, given that their first same bytes are those of the blob prev describes (what
// an earlier PutAfter into p returned): the chunks of prev that lie in
// those bytes, all but its last (which ended where that blob did, not
// where its bytes said), are not cut, hashed or stored again, and its
// index's chunk nodes are shared, so that storing a chat's next request
// costs about its new bytes however long the chat. prev is trusted only
// if p holds its index node (and so its chunks, stored before it); a nil
// prev, or one p does not hold, stores data whole. It returns what to pass
// to the next call.
func (w *Writer) PutAfter(ctx context.Context, p Store, prev *Chunks, src Source, same int) (cas.Ref, *Chunks, error) {
	size := src.Len()
	keep := 0 // prev's chunks kept
	if prev != nil && same > 0 && len(prev.Refs) > 1 {
		n := len(prev.Refs)
		if v := int(prev.valid.Load()); v > 0 {
			n = v
		}
		if has, ok := p.(interface {
			Has(context.Context, cas.Ref) (bool, error)
		}); ok {
			if held, err := has.Has(ctx, prev.Index); err == nil && held {
				// The chunks that end within the shared bytes (Ends
				// ascends): found by halving, not walked, a chat's
				// request having thousands.
				lim := min(same, size)
				keep = sort.Search(n-1, func(i int) bool { return prev.Ends[i] > lim })
			}
		}
	}
	if keep == 0 {
		return w.putWhole(ctx, p, src.From(0))
	}
	start := prev.Ends[keep-1]
	// The lists of prev, extended in place past what it kept when no
	// later call has (a chat's requests come one after the other), else
	// copied. In place, what prev held past keep is written over: prev
	// says so (valid), and a later call that builds on it keeps less.
	ends, refs := prev.Ends[:keep], prev.Refs[:keep]
	w.mu.Lock()
	inPlace := w.tip == prev && keep >= w.floor
	if inPlace {
		w.tip = nil
		prev.valid.Store(int64(keep + 1))
	}
	w.mu.Unlock()
	if !inPlace {
		ends = append(make([]int, 0, 2*keep+(size-start)/MinChunk+1), ends...)
		refs = append(make([]cas.Ref, 0, cap(ends)), refs...)
	}
	g := gear()
	for rest := src.From(start); len(rest) > 0; {
		n := cut(g, rest)
		r, err := p.Put(ctx, rest[:n])
		if err != nil {
			return cas.Ref{}, nil, fmt.Errorf("chunked: store a chunk: %w", err)
		}
		start += n
		ends, refs = append(ends, start), append(refs, r)
		rest = rest[n:]
	}
	whole := uint64(keep) / reflist.ChunkSize * reflist.ChunkSize
	list, err := reflist.Prefix(ctx, p, &w.lists, prev.List, min(whole, prev.List.Len-uint64(len(prev.List.Tail))))
	if err != nil {
		list = reflist.List{}
	}
	list, nodes, err := list.Append(refs[list.Len:]...)
	if err != nil {
		return cas.Ref{}, nil, err
	}
	for _, b := range nodes {
		if _, err := p.Put(ctx, b); err != nil {
			return cas.Ref{}, nil, fmt.Errorf("chunked: store the index: %w", err)
		}
	}
	r, err := cas.PutNode(ctx, p, Index{Size: uint64(size), Chunks: list})
	if err != nil {
		return cas.Ref{}, nil, fmt.Errorf("chunked: store the index: %w", err)
	}
	next := &Chunks{Ends: ends, Refs: refs, List: list, Index: r}
	w.mu.Lock()
	w.tip, w.floor = next, 0
	if inPlace {
		w.floor = keep
	}
	w.mu.Unlock()
	return r, next, nil
}

// Source is a blob PutAfter stores, read from an offset on, so that a
// blob made of parts need not be joined for the bytes that are not new.
type Source interface {
	// Len is the blob's length.
	Len() int
	// From returns the blob's bytes from off to its end.
	From(off int) []byte
}

// Bytes is a Source of the bytes themselves.
type Bytes []byte

// Len is len(b).
func (b Bytes) Len() int { return len(b) }

// From returns b[off:].
func (b Bytes) From(off int) []byte { return b[off:] }

// putWhole is Put, returning what PutAfter remembers. The next call that
// builds on it may extend its lists in place (a chat's first request
// stored whole, then its next ones).
func (w *Writer) putWhole(ctx context.Context, p Store, data []byte) (cas.Ref, *Chunks, error) {
	r, c, err := w.put(ctx, p, data)
	if err != nil {
		return cas.Ref{}, nil, err
	}
	w.mu.Lock()
	w.tip, w.floor = c, 0
	w.mu.Unlock()
	return r, c, nil
}
