package effects

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
)

func TestStagingKeepsBlobsOutOfTheStoreUntilTaken(t *testing.T) {
	ctx := context.Background()
	base := cas.NewMemory()
	old, err := base.Put(ctx, []byte("already stored"))
	if err != nil {
		t.Fatal(err)
	}
	s := newStaging(base)
	a, err := s.Put(ctx, []byte("first"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.Put(ctx, []byte("second"))
	if _, err := s.Put(ctx, []byte("first")); err != nil { // a repeat is kept once
		t.Fatal(err)
	}
	if a != cas.Sum([]byte("first")) {
		t.Fatalf("Put returned %s, want the blob's hash", a.Short())
	}
	if ok, _ := base.Has(ctx, a); ok {
		t.Fatal("a staged blob reached the store before the receipt")
	}
	for _, r := range []cas.Ref{a, b, old} {
		if ok, err := s.Has(ctx, r); !ok || err != nil {
			t.Errorf("Has(%s) = %v, %v; the adapter must see its own and stored blobs", r.Short(), ok, err)
		}
	}
	got, err := s.Get(ctx, a)
	if err != nil || string(got) != "first" {
		t.Fatalf("Get staged = %q, %v", got, err)
	}
	got[0] = 'X' // the caller's copy, not the staged blob
	if n, err := s.Stat(ctx, a); n != 5 || err != nil {
		t.Errorf("Stat staged = %d, %v", n, err)
	}
	if got, _ := s.Get(ctx, old); string(got) != "already stored" {
		t.Errorf("Get stored = %q", got)
	}
	blobs := s.take()
	if len(blobs) != 2 || !bytes.Equal(blobs[0], []byte("first")) || !bytes.Equal(blobs[1], []byte("second")) {
		t.Fatalf("take = %q, want [first second] in put order", blobs)
	}
}

func TestStagingPutHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := newStaging(cas.NewMemory())
	if _, err := s.Put(ctx, []byte("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put on a done context = %v, want context.Canceled", err)
	}
	if len(s.take()) != 0 {
		t.Fatal("a refused Put was staged")
	}
}

// TestStagingReadsUnstoredBlobs: a call started early reads the blobs that
// its intent's commit will store, from unstored, before the store has
// them; what is in neither is not found.
func TestStagingReadsUnstoredBlobs(t *testing.T) {
	ctx := context.Background()
	base := cas.NewMemory()
	unstored := cas.NewMemory()
	u, _ := unstored.Put(ctx, []byte("in the commit under way"))
	s := newStaging(base)
	s.unstored = unstored
	if got, err := s.Get(ctx, u); err != nil || string(got) != "in the commit under way" {
		t.Errorf("Get = %q, %v", got, err)
	}
	if ok, err := s.Has(ctx, u); !ok || err != nil {
		t.Errorf("Has = %v, %v", ok, err)
	}
	if n, err := s.Stat(ctx, u); n != 23 || err != nil {
		t.Errorf("Stat = %d, %v", n, err)
	}
	missing := cas.Sum([]byte("nowhere"))
	if _, err := s.Get(ctx, missing); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("Get(missing) = %v; want ErrNotFound", err)
	}
	if len(s.take()) != 0 {
		t.Error("unstored blobs are the world's, not the call's")
	}
}
