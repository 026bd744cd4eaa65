package shell

import "sort"

// indexed is a bash indexed array: sparse, its elements kept sorted by
// index (bash's are a linked list; scripts mostly append, which is O(1)
// here, and look up by index, O(log n)).
type indexed struct {
	elems []element
}

type element struct {
	idx int64
	val string
}

func (a *indexed) len() int { return len(a.elems) }

// find returns the position of idx and whether it is set.
func (a *indexed) find(idx int64) (int, bool) {
	n := len(a.elems)
	if n > 0 && a.elems[n-1].idx < idx {
		return n, false
	}
	i := sort.Search(n, func(i int) bool { return a.elems[i].idx >= idx })
	return i, i < n && a.elems[i].idx == idx
}

func (a *indexed) get(idx int64) (string, bool) {
	i, ok := a.find(idx)
	if !ok {
		return "", false
	}
	return a.elems[i].val, true
}

// set sets element idx and returns the value it replaced ("" if none).
func (a *indexed) set(idx int64, v string) (old string, existed bool) {
	i, ok := a.find(idx)
	if ok {
		old = a.elems[i].val
		a.elems[i].val = v
		return old, true
	}
	if i == len(a.elems) {
		a.elems = append(a.elems, element{idx, v})
		return "", false
	}
	a.elems = append(a.elems, element{})
	copy(a.elems[i+1:], a.elems[i:])
	a.elems[i] = element{idx, v}
	return "", false
}

func (a *indexed) unset(idx int64) (old string, existed bool) {
	i, ok := a.find(idx)
	if !ok {
		return "", false
	}
	old = a.elems[i].val
	a.elems = append(a.elems[:i], a.elems[i+1:]...)
	return old, true
}

// maxIndex is the highest index set, -1 for an empty array.
func (a *indexed) maxIndex() int64 {
	if len(a.elems) == 0 {
		return -1
	}
	return a.elems[len(a.elems)-1].idx
}

func (a *indexed) values() []string {
	out := make([]string, len(a.elems))
	for i, e := range a.elems {
		out[i] = e.val
	}
	return out
}

func (a *indexed) clone() *indexed {
	return &indexed{elems: append([]element(nil), a.elems...)}
}

// size is the bytes the array holds, for the memory budget.
func (a *indexed) size() int64 {
	n := int64(0)
	for _, e := range a.elems {
		n += int64(len(e.val)) + elemOverhead
	}
	return n
}

// elemOverhead is what one element costs besides its bytes (index,
// string header, slice slot), for the memory budget.
const elemOverhead = 32

// assoc is a bash associative array. Its keys iterate in the order of
// bash's own hash table (hashlib.c: FNV-1 hashes, 1024 buckets that grow
// fourfold past two entries a bucket, new entries first in their
// bucket), so that ${!m[@]} lists keys as bash does.
type assoc struct {
	buckets []*assocEntry
	n       int
	index   map[string]*assocEntry
}

type assocEntry struct {
	key, val string
	hash     uint32
	next     *assocEntry
}

const assocBuckets = 1024

func newAssoc() *assoc {
	return &assoc{index: map[string]*assocEntry{}}
}

// bashHash is hash_string of bash's hashlib.c: FNV-1 over the key's bytes
// as signed chars.
func bashHash(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h *= 16777619
		h ^= uint32(int32(int8(s[i])))
	}
	return h
}

func (m *assoc) len() int { return m.n }

func (m *assoc) get(k string) (string, bool) {
	e, ok := m.index[k]
	if !ok {
		return "", false
	}
	return e.val, true
}

func (m *assoc) set(k, v string) (old string, existed bool) {
	if e, ok := m.index[k]; ok {
		old = e.val
		e.val = v
		return old, true
	}
	if m.buckets == nil {
		m.buckets = make([]*assocEntry, assocBuckets)
	}
	if m.n >= len(m.buckets)*2 {
		m.rehash(len(m.buckets) * 4)
	}
	h := bashHash(k)
	b := h & uint32(len(m.buckets)-1)
	e := &assocEntry{key: k, val: v, hash: h, next: m.buckets[b]}
	m.buckets[b] = e
	m.index[k] = e
	m.n++
	return "", false
}

func (m *assoc) rehash(size int) {
	old := m.buckets
	m.buckets = make([]*assocEntry, size)
	for _, e := range old {
		for e != nil {
			next := e.next
			b := e.hash & uint32(size-1)
			e.next = m.buckets[b]
			m.buckets[b] = e
			e = next
		}
	}
}

func (m *assoc) unset(k string) (old string, existed bool) {
	e, ok := m.index[k]
	if !ok {
		return "", false
	}
	delete(m.index, k)
	b := e.hash & uint32(len(m.buckets)-1)
	for p := &m.buckets[b]; *p != nil; p = &(*p).next {
		if *p == e {
			*p = e.next
			break
		}
	}
	m.n--
	return e.val, true
}

// each calls f with every key and value in bash's order.
func (m *assoc) each(f func(k, v string)) {
	for _, e := range m.buckets {
		for ; e != nil; e = e.next {
			f(e.key, e.val)
		}
	}
}

func (m *assoc) keys() []string {
	out := make([]string, 0, m.n)
	m.each(func(k, _ string) { out = append(out, k) })
	return out
}

func (m *assoc) values() []string {
	out := make([]string, 0, m.n)
	m.each(func(_, v string) { out = append(out, v) })
	return out
}

// clone copies the table with the same bucket order.
func (m *assoc) clone() *assoc {
	c := &assoc{n: m.n, index: make(map[string]*assocEntry, len(m.index))}
	if m.buckets == nil {
		return c
	}
	c.buckets = make([]*assocEntry, len(m.buckets))
	for i, e := range m.buckets {
		p := &c.buckets[i]
		for ; e != nil; e = e.next {
			ne := &assocEntry{key: e.key, val: e.val, hash: e.hash}
			*p = ne
			p = &ne.next
			c.index[ne.key] = ne
		}
	}
	return c
}

func (m *assoc) size() int64 {
	n := int64(0)
	for k, e := range m.index {
		n += int64(len(k)+len(e.val)) + 2*elemOverhead
	}
	return n
}
