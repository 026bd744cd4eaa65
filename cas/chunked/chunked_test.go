package chunked

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
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

// TestPutAfter stores a growing blob as a chat's requests grow (the
// bytes before the end kept, new ones added): each index is the one Put
// makes of the same bytes, and each call stores about the new bytes.
func TestPutAfter(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	st := &countingStore{Memory: cas.NewMemory()}
	var w Writer
	var prev *Chunks
	data := randomText(r, 3000)
	for round := range 40 {
		same := len(data) - 2 // the closing "]}" changes
		if round == 0 {
			same = 0
		}
		data = append(data[:same:same], append(randomText(r, 1500), ']', '}')...)
		ref, next, err := w.PutAfter(t.Context(), st, prev, Bytes(data), same)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Put(t.Context(), &countingStore{Memory: cas.NewMemory()}, data)
		if err != nil {
			t.Fatal(err)
		}
		if ref != want {
			t.Fatalf("round %d: index %s; Put makes %s", round, ref.Short(), want.Short())
		}
		got, err := Get(t.Context(), st, ref)
		if err != nil || string(got) != string(data) {
			t.Fatalf("round %d: read back %d bytes, %v", round, len(got), err)
		}
		if round > 0 && st.newBytes > 1500+2*MaxChunk+1024 {
			t.Errorf("round %d stored %d new bytes for 1,500 new ones", round, st.newBytes)
		}
		st.newBytes = 0
		prev = next
	}
	// A prev the store does not hold is not trusted.
	other := &countingStore{Memory: cas.NewMemory()}
	ref, _, err := w.PutAfter(t.Context(), other, prev, Bytes(data), len(data)-2)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Get(t.Context(), other, ref); err != nil || string(got) != string(data) {
		t.Fatalf("into another store: %d bytes, %v", len(got), err)
	}
}

// TestPutAfterAnyBase: blobs built on any earlier one, kept from any
// point (a request whose last messages change, a retry that builds on an
// older request), each stored with PutAfter on that one: every index is
// the one Put makes, whichever lists were extended in place before,
// including those of a blob stored whole.
func TestPutAfterAnyBase(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	st := &countingStore{Memory: cas.NewMemory()}
	var w Writer
	type stored struct {
		data   []byte
		chunks *Chunks
	}
	var all []stored
	for round := range 300 {
		var base stored
		if len(all) > 0 {
			base = all[len(all)-1]
			if r.IntN(3) == 0 {
				base = all[max(len(all)-1-r.IntN(4), 0)] // a recent one, not the last
			}
			if r.IntN(8) == 0 {
				// Stored whole (a chat's first request after a restart):
				// Put builds on the index the Writer remembers of a blob
				// that began the same way, and the next calls extend this
				// one's lists in place.
				base.chunks = nil
			}
		}
		same := 0
		if n := len(base.data); n > 0 {
			same = n - r.IntN(min(n, 4000)) // the end changes, sometimes far back
		}
		data := append(slices.Clip(base.data[:same]), randomText(r, 1000+r.IntN(4000))...)
		ref, next, err := w.PutAfter(t.Context(), st, base.chunks, Bytes(data), same)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Put(t.Context(), &countingStore{Memory: cas.NewMemory()}, data)
		if err != nil {
			t.Fatal(err)
		}
		if ref != want {
			t.Fatalf("round %d (built on %d bytes, %d kept): index %s; Put makes %s", round, len(base.data), same, ref.Short(), want.Short())
		}
		all = append(all, stored{data, next})
	}
}
