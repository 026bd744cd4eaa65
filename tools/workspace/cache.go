package workspace

import (
	"container/list"
	"context"
	"sync"

	"github.com/demiurge-dev/demiurge/cas"
)

// treeSource is an optional ability of a cas.Getter: it returns decoded
// tree nodes, which it may share between callers (they must not modify
// them).
type treeSource interface {
	tree(ctx context.Context, ref cas.Ref) (*Tree, error)
}

// treeSink is an optional ability of a cas.Putter: it stores a tree node
// and keeps it decoded.
type treeSink interface {
	putTree(ctx context.Context, t *Tree) (cas.Ref, error)
}

// getTree is GetTree without the copy: the tree may be shared and must not
// be modified.
func getTree(ctx context.Context, g cas.Getter, ref cas.Ref) (*Tree, error) {
	if ts, ok := g.(treeSource); ok {
		return ts.tree(ctx, ref)
	}
	return GetTree(ctx, g, ref)
}

// DefaultTreeCache is the number of decoded tree nodes a Service keeps.
const DefaultTreeCache = 4096

// CachingStore is a Store that keeps the most recently used decoded tree
// nodes, so that walking a tree again does not decode its nodes again. The
// tree operations of this package use the cache when given a
// CachingStore. It is safe for concurrent use.
type CachingStore struct {
	Store
	mu    sync.Mutex
	max   int
	order *list.List // of cas.Ref, most recent first
	nodes map[cas.Ref]cachedTree
}

type cachedTree struct {
	t    *Tree
	elem *list.Element
}

// NewCachingStore returns s with a cache of up to n decoded tree nodes
// (DefaultTreeCache if n ≤ 0).
func NewCachingStore(s Store, n int) *CachingStore {
	if n <= 0 {
		n = DefaultTreeCache
	}
	return &CachingStore{Store: s, max: n, order: list.New(), nodes: map[cas.Ref]cachedTree{}}
}

func (c *CachingStore) tree(ctx context.Context, ref cas.Ref) (*Tree, error) {
	c.mu.Lock()
	if ct, ok := c.nodes[ref]; ok {
		c.order.MoveToFront(ct.elem)
		c.mu.Unlock()
		return ct.t, nil
	}
	c.mu.Unlock()
	t, err := GetTree(ctx, c.Store, ref)
	if err != nil {
		return nil, err
	}
	c.add(ref, t)
	return t, nil
}

func (c *CachingStore) putTree(ctx context.Context, t *Tree) (cas.Ref, error) {
	b, err := t.Encode()
	if err != nil {
		return cas.Ref{}, err
	}
	ref, err := c.Put(ctx, b)
	if err != nil {
		return cas.Ref{}, err
	}
	c.add(ref, t.clone())
	return ref, nil
}

// add caches t under ref; the caller holds no lock.
func (c *CachingStore) add(ref cas.Ref, t *Tree) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ct, ok := c.nodes[ref]; ok {
		c.order.MoveToFront(ct.elem)
		return
	}
	c.nodes[ref] = cachedTree{t: t, elem: c.order.PushFront(ref)}
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.nodes, last.Value.(cas.Ref))
	}
}

// Len returns the number of cached nodes.
func (c *CachingStore) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.nodes)
}
