package reflist

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
)

func refs(n int) []cas.Ref {
	out := make([]cas.Ref, n)
	for i := range out {
		out[i] = cas.Sum([]byte(fmt.Sprint(i)))
	}
	return out
}

func TestAppendAndSlice(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{0, 1, ChunkSize - 1, ChunkSize, ChunkSize + 1, 3*ChunkSize + 5, 200} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			st := cas.NewMemory()
			want := refs(n)
			var l List
			var cache Cache
			// Appended in uneven steps; every intermediate root stays valid.
			for i := 0; i < n; {
				k := min(1+i%7, n-i)
				next, nodes, err := l.Append(want[i : i+k]...)
				if err != nil {
					t.Fatal(err)
				}
				for _, b := range nodes {
					if _, err := st.Put(ctx, b); err != nil {
						t.Fatal(err)
					}
				}
				if len(next.Tail) >= ChunkSize {
					t.Fatalf("tail of %d", len(next.Tail))
				}
				l, i = next, i+k
			}
			if l.Len != uint64(n) {
				t.Fatalf("len %d", l.Len)
			}
			for _, c := range []*Cache{nil, &cache, &cache} {
				for _, r := range [][2]uint64{{0, uint64(n)}, {uint64(n) / 2, uint64(n)}, {uint64(n) / 3, uint64(n) / 2}, {uint64(n), uint64(n)}} {
					got, err := Slice(ctx, st, c, l, r[0], r[1])
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, want[r[0]:r[1]]) {
						t.Fatalf("slice %v differs", r)
					}
				}
			}
		})
	}
}

func TestAppendWritesBoundedBytes(t *testing.T) {
	var l List
	total := 0
	for i, r := range refs(10 * ChunkSize) {
		var nodes [][]byte
		var err error
		l, nodes, err = l.Append(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range nodes {
			total += len(b)
		}
		root, err := cas.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		if len(root) > 100+ChunkSize*80 { // a ref encodes as its text form, 74 bytes
			t.Fatalf("after %d appends the root is %d bytes", i+1, len(root))
		}
	}
	// Each ref costs its encoding (74 bytes) and a little, however long the list.
	if per := total / (10 * ChunkSize); per > 85 {
		t.Errorf("%d bytes of chunks per ref", per)
	}
}

func TestSliceErrors(t *testing.T) {
	ctx := context.Background()
	st := cas.NewMemory()
	l, nodes, _ := List{}.Append(refs(ChunkSize + 2)...)
	if _, err := Slice(ctx, st, nil, l, 0, l.Len); err == nil {
		t.Error("a missing chunk: no error")
	}
	st.Put(ctx, nodes[0])
	if _, err := Slice(ctx, st, nil, l, 0, l.Len+1); err == nil {
		t.Error("a slice past the end: no error")
	}
	bad := l
	bad.Len++
	if _, err := Slice(ctx, st, nil, bad, 0, 1); err == nil {
		t.Error("a root whose length does not fit: no error")
	}
	// A chunk that does not fit its place.
	other, onodes, _ := List{}.Append(refs(2 * ChunkSize)...)
	st.Put(ctx, onodes[0])
	st.Put(ctx, onodes[1])
	forged := List{Head: other.Head, Len: ChunkSize, Tail: []cas.Ref{}}
	if _, err := Slice(ctx, st, nil, forged, 0, ChunkSize); err == nil {
		t.Error("a chunk of the wrong place: no error")
	}
}

func FuzzSlice(f *testing.F) {
	f.Add(uint16(70), uint16(3), uint16(60))
	f.Fuzz(func(t *testing.T, n, from, to uint16) {
		n %= 300
		ctx := context.Background()
		st := cas.NewMemory()
		want := refs(int(n))
		l, nodes, err := List{}.Append(want...)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range nodes {
			st.Put(ctx, b)
		}
		got, err := Slice(ctx, st, nil, l, uint64(from), uint64(to))
		if from > to || to > n {
			if err == nil {
				t.Fatalf("slice [%d:%d] of %d: no error", from, to, n)
			}
			return
		}
		if err != nil || !slices.Equal(got, want[from:to]) {
			t.Fatalf("slice [%d:%d] of %d: %v", from, to, n, err)
		}
	})
}

func TestPrefix(t *testing.T) {
	ctx := context.Background()
	st := cas.NewMemory()
	all := refs(5*ChunkSize + 3)
	l, nodes, _ := List{}.Append(all...)
	for _, b := range nodes {
		st.Put(ctx, b)
	}
	for _, n := range []uint64{0, ChunkSize, 3 * ChunkSize, 5 * ChunkSize} {
		p, err := Prefix(ctx, st, nil, l, n)
		if err != nil {
			t.Fatal(err)
		}
		// The prefix, extended with the same refs, is the same list.
		back, _, err := p.Append(all[n:]...)
		if err != nil || back.Len != l.Len || *back.Head != *l.Head {
			t.Fatalf("prefix %d extended again: %+v; want %+v (%v)", n, back, l, err)
		}
	}
	if _, err := Prefix(ctx, st, nil, l, 7); err == nil {
		t.Error("a prefix that is not whole chunks: no error")
	}
}

// TestSince: a later root of a list gives the refs appended since, having
// read only the chunks sealed since; a list that does not begin with the
// earlier one's refs (another list, one shorter, one whose tail differs)
// gives none, and a chunk that does not fit is an error.
func TestSince(t *testing.T) {
	ctx := context.Background()
	st := cas.NewMemory()
	build := func(rs []cas.Ref) List {
		var l List
		for _, r := range rs {
			next, nodes, err := l.Append(r)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range nodes {
				if _, err := st.Put(ctx, b); err != nil {
					t.Fatal(err)
				}
			}
			l = next
		}
		return l
	}
	all := refs(100)
	lists := map[int]List{}
	for _, n := range []int{0, 1, 3, ChunkSize - 1, ChunkSize, ChunkSize + 1, 2*ChunkSize + 3, 50, 51, 56, 100} {
		lists[n] = build(all[:n])
	}
	for a, la := range lists {
		for b, lb := range lists {
			got, ok, err := Since(ctx, st, nil, la, lb)
			if err != nil {
				t.Fatalf("Since(%d, %d): %v", a, b, err)
			}
			if ok != (a <= b) || ok && !slices.Equal(got, all[a:b]) {
				t.Errorf("Since(%d, %d) = %d refs, %v; want %v", a, b, len(got), ok, a <= b)
			}
		}
	}
	// Another list of the same length and more: not an extension.
	other := slices.Clone(all)
	other[2] = cas.Sum([]byte("other"))
	for _, n := range []int{3, ChunkSize + 1, 51} {
		if _, ok, err := Since(ctx, st, nil, build(other[:n]), lists[100]); ok || err != nil {
			t.Errorf("a list that differs at ref 2 (of %d): ok %v, %v", n, ok, err)
		}
	}
	// A tail that differs from the refs next holds there.
	if _, ok, _ := Since(ctx, st, nil, build(append(slices.Clone(all[:ChunkSize+2]), other[2])), lists[50]); ok {
		t.Error("a tail that differs: ok")
	}
	// Only the chunks past the earlier list's last full one are read.
	counting := &countingGetter{g: st}
	if _, ok, err := Since(ctx, counting, nil, lists[50], lists[56]); !ok || err != nil || counting.n != 1 {
		t.Errorf("50 → 56: ok %v, %v, %d chunks read; want 1", ok, err, counting.n)
	}
	// A chunk missing from the store, and one in the wrong place.
	if _, _, err := Since(ctx, cas.NewMemory(), nil, lists[3], lists[51]); err == nil {
		t.Error("missing chunks: no error")
	}
	bad := lists[51]
	bad.Len += ChunkSize
	if _, _, err := Since(ctx, st, nil, lists[3], bad); err == nil {
		t.Error("a chunk out of place: no error")
	}
}

// countingGetter counts the blobs read through it.
type countingGetter struct {
	g cas.Getter
	n int
}

func (c *countingGetter) Get(ctx context.Context, r cas.Ref) ([]byte, error) {
	c.n++
	return c.g.Get(ctx, r)
}
