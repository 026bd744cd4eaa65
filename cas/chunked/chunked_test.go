package chunked

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cas/reflist"
)

// countingStore counts the bytes of the blobs it had not stored before.
type countingStore struct {
	*cas.Memory
	newBytes int
}

func (c *countingStore) Put(ctx context.Context, b []byte) (cas.Ref, error) {
	if ok, _ := c.Memory.Has(ctx, cas.Sum(b)); !ok {
		c.newBytes += len(b)
	}
	return c.Memory.Put(ctx, b)
}

func randomText(r *rand.Rand, n int) []byte {
	const letters = "abcdefghijklmnopqrstuvwxyz {}\":,\n"
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[r.IntN(len(letters))]
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, MinChunk, MinChunk + 1, AvgChunk, MaxChunk * 3, 200_000} {
		st := cas.NewMemory()
		data := randomText(r, n)
		ref, err := Put(ctx, st, data)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Get(ctx, st, ref)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%d bytes: round trip %v", n, err)
		}
		for _, l := range Split(data) {
			if l > MaxChunk || l == 0 {
				t.Fatalf("a chunk of %d bytes", l)
			}
		}
	}
}

// TestGrowingBlobsShareChunks: a blob that grows inside, as a chat's
// requests do (the input items grow; the tools after them stay), stores
// the bytes that are new and the chunks around them, however large it has
// grown: about the same for the 50th request as for the 2nd.
func TestGrowingBlobsShareChunks(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 4))
	st := &countingStore{Memory: cas.NewMemory()}
	var w Writer
	head := randomText(r, 100_000) // the tools and settings, then the input items
	var added []int
	for i := range 200 {
		head = append(head, randomText(r, 2_000)...) // a round's new items
		data := append(append([]byte{}, head...), "]}"...)
		before := st.newBytes
		ref, err := w.Put(ctx, st, data)
		if err != nil {
			t.Fatal(err)
		}
		added = append(added, st.newBytes-before)
		if i > 0 && added[i] > 2_000+2*MaxChunk+2*reflist.ChunkSize*80 {
			t.Fatalf("request %d (%d bytes, 2000 new) stored %d new bytes", i, len(data), added[i])
		}
		if got, err := Get(ctx, st, ref); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("request %d does not read back: %v", i, err)
		}
	}
	mean := func(xs []int) float64 {
		s := 0
		for _, x := range xs {
			s += x
		}
		return float64(s) / float64(len(xs))
	}
	if early, late := mean(added[1:41]), mean(added[160:200]); late > 1.3*early {
		t.Errorf("new bytes a request grew from %.0f (requests 1-40) to %.0f (160-199)", early, late)
	}
}

func TestGetErrors(t *testing.T) {
	ctx := context.Background()
	st := cas.NewMemory()
	data := randomText(rand.New(rand.NewPCG(5, 6)), 50_000)
	ref, _ := Put(ctx, st, data)
	var x Index
	cas.GetNode(ctx, st, ref, &x)
	lie := x
	lie.Size++
	lieRef, _ := cas.PutNode(ctx, st, lie)
	if _, err := Get(ctx, st, lieRef); err == nil {
		t.Error("a size that does not add up: no error")
	}
	one, _, _ := reflist.List{}.Append(cas.Sum([]byte("abc")))
	missing := Index{Size: 3, Chunks: one}
	missingRef, _ := cas.PutNode(ctx, st, missing)
	if _, err := Get(ctx, st, missingRef); err == nil {
		t.Error("a missing chunk: no error")
	}
	if _, err := Get(ctx, st, cas.Sum([]byte("nothing"))); err == nil {
		t.Error("a missing index: no error")
	}
}

func FuzzSplit(f *testing.F) {
	f.Add([]byte("hello"), uint16(3000))
	f.Fuzz(func(t *testing.T, seed []byte, n uint16) {
		data := bytes.Repeat(append(seed, byte(n)), int(n)%50_000/max(len(seed)+1, 1)+1)
		total := 0
		for _, l := range Split(data) {
			if l <= 0 || l > MaxChunk {
				t.Fatalf("chunk of %d", l)
			}
			total += l
		}
		if total != len(data) {
			t.Fatalf("chunks of %d bytes for %d", total, len(data))
		}
	})
}

func BenchmarkPut(b *testing.B) {
	ctx := context.Background()
	data := randomText(rand.New(rand.NewPCG(7, 8)), 1<<20)
	st := cas.NewMemory()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Put(ctx, st, data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(Split(data))), "chunks/MiB")
	_ = fmt.Sprint
}

// TestPutParts: a blob stored as parts reads back whole; the next blob,
// which extends it (its last part changed, now and then), stores only the
// parts after those it keeps when the store holds the first one's index,
// and every part when it does not.
func TestPutParts(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 4))
	var parts [][]byte
	var sums []cas.Ref
	add := func(n int) {
		for range n {
			b := randomText(r, 1+r.IntN(300))
			parts = append(parts, b)
			sums = append(sums, cas.Sum(b))
		}
	}
	st := &countingStore{Memory: cas.NewMemory()}
	var w Writer
	var base Stored
	for round := range 40 {
		keep := len(parts)
		add(1 + round%3)
		if round%5 == 4 {
			// The last part changes (as a request's last message does).
			parts[keep-1] = append([]byte("changed "), parts[keep-1]...)
			sums[keep-1] = cas.Sum(parts[keep-1])
			keep--
		}
		before := st.newBytes
		s, err := w.PutParts(ctx, st, base, keep, parts, sums)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Get(ctx, st, s.Ref)
		if err != nil || !bytes.Equal(got, bytes.Join(parts, nil)) {
			t.Fatalf("round %d: round trip %v", round, err)
		}
		newParts := 0
		for _, b := range parts[keep:] {
			newParts += len(b)
		}
		// The new parts, the index and at most one full chunk node of
		// the list (each under 400 bytes).
		if n := st.newBytes - before; round > 0 && n > newParts+1200 {
			t.Fatalf("round %d stored %d bytes for %d bytes of new parts", round, n, newParts)
		}
		base = s
	}
	// A store without the base's index gets every part.
	other := &countingStore{Memory: cas.NewMemory()}
	s, err := w.PutParts(ctx, other, base, len(parts), parts, sums)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Get(ctx, other, s.Ref); err != nil || !bytes.Equal(got, bytes.Join(parts, nil)) {
		t.Fatalf("fresh store: round trip %v", err)
	}
	if _, err := w.PutParts(ctx, other, base, 0, parts, sums[1:]); err == nil {
		t.Fatal("parts and sums of different lengths were taken")
	}
}
