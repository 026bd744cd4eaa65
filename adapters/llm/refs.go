package llm

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cas/reflist"
)

// A chat names its transcript as a reflist (Params.Transcript), a new root
// each round: the same list, a few refs longer. Reading the whole list each
// call would cost the chat's length; instead the refs a call read are kept
// (trChains), by the list's last full chunk, and the next call of the same
// transcript finds them by walking back from its own list's last chunk
// (as far as maxWalk chunks: the rounds since) and reads only the refs
// appended since (reflist.Since). Its refs extend the kept ones in place
// (an arena), so that a call that builds on the last request of its
// transcript sees at once that their refs are the same (sameRefs).

// trChain is what is kept of a transcript a call read: its view, its
// list, and the refs it named.
type trChain struct {
	from   uint64
	prefix []cas.Ref
	list   reflist.List
	refs   []cas.Ref
	refsA  *arena[cas.Ref]
}

// trChains keeps the transcripts recent calls read, by their list's last
// full chunk. It is bounded.
type trChains struct {
	mu sync.Mutex
	m  map[cas.Ref]*trChain
}

// maxWalk is how many chunks back from a list's last one a call looks for
// a transcript it read before: past it (more than about 8×maxWalk refs
// appended since) the list is read whole.
const maxWalk = 64

func (c *trChains) get(head cas.Ref) *trChain {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[head]
}

func (c *trChains) put(head cas.Ref, tc *trChain) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= chainsSize {
		c.m = map[cas.Ref]*trChain{}
	}
	c.m[head] = tc
}

// transcriptRefs returns the message blobs p names: p.MessageRefs, then
// those of p.Transcript. The refs of a transcript whose list extends one a
// call read before are that call's, extended by the refs appended since;
// the others are read whole.
func (g *Generator) transcriptRefs(ctx context.Context, blobs Blobs, p Params) ([]cas.Ref, error) {
	t := p.Transcript
	if t == nil {
		return p.MessageRefs, nil
	}
	if len(p.MessageRefs) > 0 || t.To != nil || len(t.Suffix) > 0 || t.Refs.Head == nil {
		// A view the chat does not grow round by round (a compaction's),
		// or a list too short to have a chunk: read whole.
		more, err := t.refs(ctx, blobs, &g.chunks)
		if err != nil {
			return nil, err
		}
		if len(p.MessageRefs) == 0 {
			return more, nil
		}
		return append(slices.Clip(p.MessageRefs), more...), nil
	}
	if refs, ok, err := g.refsSince(ctx, blobs, t); ok || err != nil {
		return refs, err
	}
	more, err := t.refs(ctx, blobs, &g.chunks)
	if err != nil {
		return nil, err
	}
	// Kept with room to grow, for the next call to extend in place.
	refs := make([]cas.Ref, len(more), len(more)+len(more)/2+16)
	copy(refs, more)
	a := &arena[cas.Ref]{}
	a.release(refs)
	g.transcripts.put(*t.Refs.Head, &trChain{from: t.From, prefix: t.Prefix, list: t.Refs, refs: refs, refsA: a})
	return refs, nil
}

// refsSince returns the refs of t by those of a transcript read before
// whose list t's extends, if it finds one within maxWalk chunks of t's
// last.
func (g *Generator) refsSince(ctx context.Context, blobs Blobs, t *Transcript) ([]cas.Ref, bool, error) {
	h := *t.Refs.Head
	for range maxWalk {
		if tc := g.transcripts.get(h); tc != nil && tc.from == t.From && slices.Equal(tc.prefix, t.Prefix) {
			more, ok, err := reflist.Since(ctx, blobs, &g.chunks, tc.list, t.Refs)
			if err != nil {
				return nil, false, fmt.Errorf("%w: transcript: %w", ErrInvalidParams, err)
			}
			if !ok {
				return nil, false, nil
			}
			refs, a := extend(tc.refsA, tc.refs, len(tc.refs))
			refs = append(refs, more...)
			a.release(refs)
			g.transcripts.put(*t.Refs.Head, &trChain{from: t.From, prefix: t.Prefix, list: t.Refs, refs: refs, refsA: a})
			return refs, true, nil
		}
		var ch reflist.Chunk
		if err := cas.GetNode(ctx, blobs, h, &ch); err != nil || ch.Prev == nil {
			return nil, false, nil // read whole, which says what is wrong
		}
		h = *ch.Prev
	}
	return nil, false, nil
}

// sameRefs is how many of refs' first refs are prev's: all of prev's when
// refs extends them in place (the same array), else as many as are equal.
func sameRefs(prev, refs []cas.Ref) int {
	if n := len(prev); n > 0 && n <= len(refs) && &prev[0] == &refs[0] {
		return n
	}
	same := 0
	for same < len(refs) && same < len(prev) && refs[same] == prev[same] {
		same++
	}
	return same
}
