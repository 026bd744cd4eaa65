// Package castest is the conformance suite every cas.Store backend runs.
//
// A backend's test calls Test (or TestOpt, to also check corruption
// detection and persistence) with a function that returns a fresh, empty
// store:
//
//	func TestMemory(t *testing.T) {
//		castest.Test(t, func(t *testing.T) cas.Store { return cas.NewMemory() })
//	}
package castest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
)

// Options extend the suite with checks that need the backend's help.
type Options struct {
	// Corrupt changes the bytes stored under ref in s (behind the store's
	// back) so that they no longer hash to ref. Nil skips the corruption
	// tests.
	Corrupt func(t *testing.T, s cas.Store, ref cas.Ref)
	// Reopen closes s and returns the same store opened again, for
	// backends that persist. Nil skips the persistence test.
	Reopen func(t *testing.T, s cas.Store) cas.Store
	// Blobs is how many blobs the iteration test puts; 0 means 1500,
	// enough to cross a backend's internal batch sizes.
	Blobs int
}

// Test runs the conformance suite without the checks that need Options.
// newStore must return a new, empty store each time it is called; the
// suite closes every store it gets.
func Test(t *testing.T, newStore func(t *testing.T) cas.Store) {
	TestOpt(t, newStore, Options{})
}

// TestOpt runs the conformance suite on stores made by newStore (which
// must return a new, empty store each call), with the extra checks opts
// enables. The suite closes every store it gets.
func TestOpt(t *testing.T, newStore func(t *testing.T) cas.Store, opts Options) {
	if opts.Blobs == 0 {
		opts.Blobs = 1500
	}
	st := &suite{newStore: newStore, opts: opts}
	t.Run("Empty", st.empty)
	t.Run("PutGet", st.putGet)
	t.Run("Idempotent", st.idempotent)
	t.Run("Iterate", st.iterate)
	t.Run("IterateWhileWriting", st.iterateWhileWriting)
	t.Run("NotFound", st.notFound)
	t.Run("Nodes", st.nodes)
	t.Run("Concurrent", st.concurrent)
	t.Run("Closed", st.closed)
	t.Run("ContextCancelled", st.cancelled)
	t.Run("Verify", st.verifyHealthy)
	t.Run("Corrupt", st.corrupt)
	t.Run("Reopen", st.reopen)
}

type suite struct {
	newStore func(t *testing.T) cas.Store
	opts     Options
}

// store returns a fresh store that is verified (every blob re-read and
// re-hashed) and closed when the test ends.
func (st *suite) store(t *testing.T, verify bool) cas.Store {
	t.Helper()
	s := st.newStore(t)
	if s == nil {
		t.Fatal("newStore returned nil")
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if verify {
		t.Cleanup(func() {
			checked, bad, err := cas.Verify(context.Background(), s, func(ref cas.Ref, err error) {
				t.Errorf("cleanup verify: %s: %v", ref, err)
			})
			if err != nil && !errors.Is(err, cas.ErrClosed) {
				t.Errorf("cleanup verify after %d blobs (%d bad): %v", checked, bad, err)
			}
		})
	}
	return s
}

// blob returns n deterministic pseudo-random bytes, different for each seed.
func blob(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

func mustPut(t *testing.T, s cas.Store, data []byte) cas.Ref {
	t.Helper()
	ref, err := s.Put(t.Context(), data)
	if err != nil {
		t.Fatalf("Put(%d bytes): %v", len(data), err)
	}
	if want := cas.Sum(data); ref != want {
		t.Fatalf("Put(%d bytes) = %v; want BLAKE3 of the bytes %v", len(data), ref, want)
	}
	return ref
}

func checkBlob(t *testing.T, s cas.Store, ref cas.Ref, want []byte) {
	t.Helper()
	ctx := t.Context()
	got, err := s.Get(ctx, ref)
	if err != nil {
		t.Fatalf("Get(%s): %v", ref.Short(), err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%s) = %d bytes %.16x…; want %d bytes %.16x…", ref.Short(), len(got), got, len(want), want)
	}
	if got == nil {
		t.Errorf("Get(%s) of an empty blob returned nil; want an empty non-nil slice", ref.Short())
	}
	has, err := s.Has(ctx, ref)
	if err != nil || !has {
		t.Errorf("Has(%s) = %v, %v; want true", ref.Short(), has, err)
	}
	size, err := s.Stat(ctx, ref)
	if err != nil || size != int64(len(want)) {
		t.Errorf("Stat(%s) = %d, %v; want %d", ref.Short(), size, err, len(want))
	}
}

func (st *suite) empty(t *testing.T) {
	s := st.store(t, true)
	ctx := t.Context()
	n := 0
	if err := s.Iterate(ctx, func(cas.Ref, int64) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("Iterate on an empty store visited %d blobs, err %v; want 0, nil", n, err)
	}
	checkMissing(t, s, cas.Sum([]byte("nothing")))
	checkMissing(t, s, cas.Sum(nil))
}

func (st *suite) putGet(t *testing.T) {
	s := st.store(t, true)
	ctx := t.Context()
	tests := []struct {
		name string
		data []byte
	}{
		{"nil", nil},
		{"empty", []byte{}},
		{"one byte", []byte{0}},
		{"text", []byte("hello, world\n")},
		{"1 KiB", blob(1, 1<<10)},
		{"64 KiB", blob(2, 64<<10)},
		{"3 MiB + 1", blob(3, 3<<20+1)},
	}
	for _, tc := range tests {
		ref := mustPut(t, s, tc.data)
		checkBlob(t, s, ref, tc.data)
	}

	// Put does not keep the caller's slice; Get's result is the caller's.
	data := []byte("mutable input")
	ref := mustPut(t, s, data)
	data[0] = 'M'
	got, err := s.Get(ctx, ref)
	if err != nil || string(got) != "mutable input" {
		t.Fatalf("after changing the slice given to Put: Get = %q, %v; want %q", got, err, "mutable input")
	}
	got[0] = 'X'
	checkBlob(t, s, ref, []byte("mutable input"))
}

func (st *suite) idempotent(t *testing.T) {
	s := st.store(t, true)
	ctx := t.Context()
	data := blob(4, 5000)
	first := mustPut(t, s, data)
	for range 3 {
		if again := mustPut(t, s, bytes.Clone(data)); again != first {
			t.Fatalf("second Put = %v; want %v", again, first)
		}
	}
	mustPut(t, s, nil)
	mustPut(t, s, []byte{})
	var refs []cas.Ref
	if err := s.Iterate(ctx, func(ref cas.Ref, _ int64) error { refs = append(refs, ref); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(refs) != 2 {
		t.Errorf("after putting the same bytes 4 times and the empty blob twice, Iterate visits %v; want 2 blobs", refs)
	}
	checkBlob(t, s, first, data)
}

func (st *suite) iterate(t *testing.T) {
	s := st.store(t, true)
	ctx := t.Context()
	want := map[cas.Ref]int64{}
	for i := range st.opts.Blobs {
		data := blob(uint64(1000+i), i%97)
		want[mustPut(t, s, data)] = int64(len(data))
	}
	var got []cas.Ref
	err := s.Iterate(ctx, func(ref cas.Ref, size int64) error {
		if w, ok := want[ref]; !ok {
			t.Errorf("Iterate visits %s, which was never put", ref.Short())
		} else if size != w {
			t.Errorf("Iterate gives %s size %d; want %d", ref.Short(), size, w)
		}
		got = append(got, ref)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("Iterate visited %d blobs; want %d", len(got), len(want))
	}
	if !slices.IsSortedFunc(got, compareRefs) {
		t.Error("Iterate order is not ascending by digest")
	}
	if len(slices.CompactFunc(slices.Clone(got), func(a, b cas.Ref) bool { return a == b })) != len(got) {
		t.Error("Iterate visits a blob twice")
	}

	// An error from fn stops the walk and is returned as is.
	stop := errors.New("stop here")
	n := 0
	err = s.Iterate(ctx, func(cas.Ref, int64) error {
		n++
		if n == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 3 {
		t.Errorf("Iterate with fn failing at the 3rd blob: %d calls, err %v; want 3, %v", n, err, stop)
	}

	// fn may use the store.
	n = 0
	err = s.Iterate(ctx, func(ref cas.Ref, size int64) error {
		n++
		b, err := s.Get(ctx, ref)
		if err != nil {
			return err
		}
		if int64(len(b)) != size {
			return fmt.Errorf("Get(%s) has %d bytes, Iterate said %d", ref.Short(), len(b), size)
		}
		_, err = s.Put(ctx, b)
		return err
	})
	if err != nil || n != len(want) {
		t.Errorf("Iterate with Get and Put inside fn: %d calls, err %v; want %d, nil", n, err, len(want))
	}
}

func compareRefs(a, b cas.Ref) int {
	da, db := a.Digest(), b.Digest()
	return bytes.Compare(da[:], db[:])
}

// iterateWhileWriting walks the store while other goroutines put and read:
// no deadlock, no error, and every blob put before the walk is visited.
func (st *suite) iterateWhileWriting(t *testing.T) {
	s := st.store(t, true)
	ctx := t.Context()
	before := map[cas.Ref]bool{}
	for i := range 200 {
		before[mustPut(t, s, blob(uint64(5000+i), 100))] = true
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				ref, err := s.Put(ctx, blob(uint64(10000*(w+1)+i), 64))
				if err != nil {
					t.Errorf("concurrent Put: %v", err)
					return
				}
				if _, err := s.Get(ctx, ref); err != nil {
					t.Errorf("concurrent Get: %v", err)
					return
				}
			}
		})
	}
	for range 3 {
		seen := 0
		err := s.Iterate(ctx, func(ref cas.Ref, _ int64) error {
			if before[ref] {
				seen++
			}
			_, err := s.Has(ctx, ref)
			return err
		})
		if err != nil {
			t.Errorf("Iterate during writes: %v", err)
		}
		if seen != len(before) {
			t.Errorf("Iterate during writes visited %d of the %d blobs put before it", seen, len(before))
		}
	}
	close(done)
	wg.Wait()
}

func checkMissing(t *testing.T, s cas.Store, ref cas.Ref) {
	t.Helper()
	ctx := t.Context()
	b, err := s.Get(ctx, ref)
	if !errors.Is(err, cas.ErrNotFound) || b != nil {
		t.Errorf("Get(missing %s) = %d bytes, %v; want nil, ErrNotFound", ref.Short(), len(b), err)
	} else if ref.Valid() && !strings.Contains(err.Error(), ref.String()) {
		t.Errorf("Get(missing %s) error %q does not name the ref", ref.Short(), err)
	}
	if size, err := s.Stat(ctx, ref); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("Stat(missing %s) = %d, %v; want ErrNotFound", ref.Short(), size, err)
	}
	if has, err := s.Has(ctx, ref); has || err != nil {
		t.Errorf("Has(missing %s) = %v, %v; want false, nil", ref.Short(), has, err)
	}
}

func (st *suite) notFound(t *testing.T) {
	s := st.store(t, true)
	data := []byte("present")
	ref := mustPut(t, s, data)
	checkMissing(t, s, cas.Sum([]byte("absent")))
	// The same digest under sha256: is another name, never stored.
	checkMissing(t, s, cas.RefFromDigest(cas.SHA256, ref.Digest()))
	checkMissing(t, s, cas.Ref{})
	checkBlob(t, s, ref, data)
}

func (st *suite) nodes(t *testing.T) {
	s := st.store(t, true)
	ctx := t.Context()
	type node struct {
		Kind  string            `cbor:"$kind"`
		Name  string            `cbor:"name"`
		Parts []cas.Ref         `cbor:"parts"`
		Attrs map[string]uint64 `cbor:"attrs"`
	}
	part := mustPut(t, s, []byte("part"))
	in := node{Kind: "test", Name: "n", Parts: []cas.Ref{part}, Attrs: map[string]uint64{"b": 2, "a": 1}}
	ref, err := cas.PutNode(ctx, s, in)
	if err != nil {
		t.Fatal(err)
	}
	wantRef, wantBytes, err := cas.NodeRef(in)
	if err != nil {
		t.Fatal(err)
	}
	if ref != wantRef {
		t.Errorf("PutNode = %v; want NodeRef %v", ref, wantRef)
	}
	checkBlob(t, s, ref, wantBytes)
	var out node
	if err := cas.GetNode(ctx, s, ref, &out); err != nil {
		t.Fatal(err)
	}
	if out.Kind != in.Kind || out.Name != in.Name || !slices.Equal(out.Parts, in.Parts) || len(out.Attrs) != 2 || out.Attrs["a"] != 1 {
		t.Errorf("GetNode = %+v; want %+v", out, in)
	}
	// A raw blob that is not CBOR fails to decode, naming the ref.
	err = cas.GetNode(ctx, s, part, &out)
	if err == nil || !strings.Contains(err.Error(), part.String()) {
		t.Errorf("GetNode of a raw blob: %v; want a decode error naming %s", err, part)
	}
	if err := cas.GetNode(ctx, s, cas.Sum([]byte("absent")), &out); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("GetNode(missing) = %v; want ErrNotFound", err)
	}
	if _, err := cas.PutNode(ctx, s, 1.5); err == nil {
		t.Error("PutNode(1.5) succeeded; floats are not AIR values")
	}
}

func (st *suite) concurrent(t *testing.T) {
	s := st.store(t, true)
	ctx := t.Context()
	const workers, perWorker = 8, 40
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				// Every other blob is shared by all workers, racing the same put.
				seed := uint64(w*perWorker + i)
				if i%2 == 0 {
					seed = uint64(i)
				}
				data := blob(20000+seed, 1+int(seed%7)*300)
				ref, err := s.Put(ctx, data)
				if err != nil {
					t.Errorf("Put: %v", err)
					return
				}
				got, err := s.Get(ctx, ref)
				if err != nil || !bytes.Equal(got, data) {
					t.Errorf("Get(%s) right after Put: %d bytes, %v", ref.Short(), len(got), err)
					return
				}
				if has, err := s.Has(ctx, ref); !has || err != nil {
					t.Errorf("Has(%s) = %v, %v", ref.Short(), has, err)
				}
				if i%10 == 0 {
					if err := s.Iterate(ctx, func(cas.Ref, int64) error { return nil }); err != nil {
						t.Errorf("Iterate: %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
	n := 0
	if err := s.Iterate(ctx, func(cas.Ref, int64) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if want := workers*perWorker/2 + perWorker/2; n != want {
		t.Errorf("after concurrent puts the store holds %d blobs; want %d", n, want)
	}
}

func (st *suite) closed(t *testing.T) {
	s := st.newStore(t)
	ctx := t.Context()
	ref := mustPut(t, s, []byte("before close"))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := s.Put(ctx, []byte("after")); !errors.Is(err, cas.ErrClosed) {
		t.Errorf("Put after Close: %v; want ErrClosed", err)
	}
	if _, err := s.Get(ctx, ref); !errors.Is(err, cas.ErrClosed) {
		t.Errorf("Get after Close: %v; want ErrClosed", err)
	}
	if _, err := s.Has(ctx, ref); !errors.Is(err, cas.ErrClosed) {
		t.Errorf("Has after Close: %v; want ErrClosed", err)
	}
	if _, err := s.Stat(ctx, ref); !errors.Is(err, cas.ErrClosed) {
		t.Errorf("Stat after Close: %v; want ErrClosed", err)
	}
	if err := s.Iterate(ctx, func(cas.Ref, int64) error { return nil }); !errors.Is(err, cas.ErrClosed) {
		t.Errorf("Iterate after Close: %v; want ErrClosed", err)
	}
	if _, err := cas.PutNode(ctx, s, "node"); !errors.Is(err, cas.ErrClosed) {
		t.Errorf("PutNode after Close: %v; want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v; want nil", err)
	}
}

func (st *suite) cancelled(t *testing.T) {
	s := st.store(t, true)
	ref := mustPut(t, s, []byte("x"))
	for i := range 10 {
		mustPut(t, s, blob(uint64(30000+i), 10))
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Put(ctx, []byte("y")); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a cancelled context: %v; want context.Canceled", err)
	}
	if has, _ := s.Has(t.Context(), cas.Sum([]byte("y"))); has {
		t.Error("Put with a cancelled context stored the blob")
	}
	if _, err := s.Get(ctx, ref); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled context: %v; want context.Canceled", err)
	}
	if _, err := s.Has(ctx, ref); !errors.Is(err, context.Canceled) {
		t.Errorf("Has with a cancelled context: %v; want context.Canceled", err)
	}
	if _, err := s.Stat(ctx, ref); !errors.Is(err, context.Canceled) {
		t.Errorf("Stat with a cancelled context: %v; want context.Canceled", err)
	}
	if err := s.Iterate(ctx, func(cas.Ref, int64) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("Iterate with a cancelled context: %v; want context.Canceled", err)
	}
	// Cancelling during a walk stops it.
	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	n := 0
	err := s.Iterate(ctx, func(cas.Ref, int64) error {
		n++
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) || n != 1 {
		t.Errorf("Iterate cancelled in the first call: %d calls, %v; want 1, context.Canceled", n, err)
	}
	if _, _, err := cas.Verify(ctx, s, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Verify with a cancelled context: %v; want context.Canceled", err)
	}
}

func (st *suite) verifyHealthy(t *testing.T) {
	s := st.store(t, false)
	for i := range 20 {
		mustPut(t, s, blob(uint64(40000+i), i*100))
	}
	checked, bad, err := cas.Verify(t.Context(), s, func(ref cas.Ref, err error) {
		t.Errorf("Verify reports %s on a healthy store: %v", ref.Short(), err)
	})
	if checked != 20 || bad != 0 || err != nil {
		t.Errorf("Verify = %d checked, %d bad, %v; want 20, 0, nil", checked, bad, err)
	}
}

func (st *suite) corrupt(t *testing.T) {
	if st.opts.Corrupt == nil {
		t.Skip("no Options.Corrupt for this backend")
	}
	s := st.store(t, false)
	ctx := t.Context()
	var refs []cas.Ref
	for i := range 10 {
		refs = append(refs, mustPut(t, s, blob(uint64(50000+i), 1000)))
	}
	empty := mustPut(t, s, nil)
	// A large blob, which a backend may keep apart from small ones (the
	// Bolt store keeps blobs of 16 KiB and more in a bucket each).
	large := mustPut(t, s, blob(60000, 64<<10))
	node, err := cas.PutNode(ctx, s, map[string]string{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	bad := map[cas.Ref]bool{refs[3]: true, empty: true, node: true, large: true}
	for ref := range bad {
		st.opts.Corrupt(t, s, ref)
	}
	for ref := range bad {
		b, err := s.Get(ctx, ref)
		if b != nil {
			t.Errorf("Get(corrupt %s) returned %d bytes; want none", ref.Short(), len(b))
		}
		var ce *cas.CorruptError
		if !errors.As(err, &ce) || !errors.Is(err, cas.ErrCorrupt) {
			t.Fatalf("Get(corrupt %s) error = %v; want a *cas.CorruptError", ref.Short(), err)
		}
		if ce.Ref != ref || ce.Got == ref || !ce.Got.Valid() {
			t.Errorf("CorruptError{Ref: %v, Got: %v}; want Ref %v and the hash of the bytes found", ce.Ref, ce.Got, ref)
		}
		if want := "cas: corrupt blob " + ref.String(); !strings.HasPrefix(err.Error(), want) {
			t.Errorf("error %q; want it to start with %q", err, want)
		}
		if has, err := s.Has(ctx, ref); !has || err != nil {
			t.Errorf("Has(corrupt %s) = %v, %v; want true: Has does not read the bytes", ref.Short(), has, err)
		}
	}
	var out map[string]string
	if err := cas.GetNode(ctx, s, node, &out); !errors.Is(err, cas.ErrCorrupt) {
		t.Errorf("GetNode(corrupt) = %v; want ErrCorrupt", err)
	}
	for _, ref := range refs {
		if !bad[ref] {
			if _, err := s.Get(ctx, ref); err != nil {
				t.Errorf("Get(healthy %s) next to corrupt blobs: %v", ref.Short(), err)
			}
		}
	}
	reported := map[cas.Ref]bool{}
	checked, nbad, err := cas.Verify(ctx, s, func(ref cas.Ref, err error) {
		if !errors.Is(err, cas.ErrCorrupt) {
			t.Errorf("Verify reports %s with %v; want ErrCorrupt", ref.Short(), err)
		}
		reported[ref] = true
	})
	if err != nil || checked != len(refs)+3 || nbad != len(bad) {
		t.Errorf("Verify = %d checked, %d bad, %v; want %d, %d, nil", checked, nbad, err, len(refs)+3, len(bad))
	}
	for ref := range bad {
		if !reported[ref] {
			t.Errorf("Verify did not report corrupt %s", ref.Short())
		}
	}
}

func (st *suite) reopen(t *testing.T) {
	if st.opts.Reopen == nil {
		t.Skip("no Options.Reopen for this backend")
	}
	s := st.newStore(t)
	want := map[cas.Ref][]byte{}
	for i := range 50 {
		data := blob(uint64(60000+i), i*37)
		want[mustPut(t, s, data)] = data
	}
	big := blob(60100, 2<<20)
	want[mustPut(t, s, big)] = big
	s = st.opts.Reopen(t, s)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	for ref, data := range want {
		checkBlob(t, s, ref, data)
	}
	n := 0
	if err := s.Iterate(t.Context(), func(cas.Ref, int64) error { n++; return nil }); err != nil || n != len(want) {
		t.Errorf("after reopening, Iterate visits %d blobs, %v; want %d", n, err, len(want))
	}
	checked, bad, err := cas.Verify(t.Context(), s, nil)
	if checked != len(want) || bad != 0 || err != nil {
		t.Errorf("Verify after reopening = %d, %d, %v; want %d, 0, nil", checked, bad, err, len(want))
	}
}
