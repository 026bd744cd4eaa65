package effects

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/schema"
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

// faultyStore answers every read with err.
type faultyStore struct {
	cas.Store
	err error
}

func (f faultyStore) Get(ctx context.Context, r cas.Ref) ([]byte, error) { return nil, f.err }
func (f faultyStore) Has(ctx context.Context, r cas.Ref) (bool, error)   { return false, f.err }
func (f faultyStore) Stat(ctx context.Context, r cas.Ref) (int64, error) { return 0, f.err }
func (f faultyStore) Iterate(ctx context.Context, fn func(cas.Ref, int64) error) error {
	return f.err
}

// TestStagingNotesStorageFaults: a read of the store that finds it damaged
// (an error wrapping cas.ErrCorrupt) is noted, whichever read it is, and
// only the first; a blob that is not there is no fault.
func TestStagingNotesStorageFaults(t *testing.T) {
	ctx := context.Background()
	damage := &cas.BoltDamageError{Path: "x.db", Page: 3, Detail: "bbolt: page 3 zeroed"}
	corrupt := &cas.CorruptError{Ref: cas.Sum([]byte("a")), Got: cas.Sum([]byte("b"))}
	for _, tc := range []struct {
		name string
		err  error
		read func(s *staging) error
		want error
	}{
		{"get damaged", damage, func(s *staging) error { _, err := s.Get(ctx, cas.Sum(nil)); return err }, damage},
		{"get corrupt", corrupt, func(s *staging) error { _, err := s.Get(ctx, cas.Sum(nil)); return err }, corrupt},
		{"has", damage, func(s *staging) error { _, err := s.Has(ctx, cas.Sum(nil)); return err }, damage},
		{"stat", damage, func(s *staging) error { _, err := s.Stat(ctx, cas.Sum(nil)); return err }, damage},
		{"iterate", damage, func(s *staging) error { return s.Iterate(ctx, nil) }, damage},
		{"not found", cas.ErrNotFound, func(s *staging) error { _, err := s.Get(ctx, cas.Sum(nil)); return err }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStaging(faultyStore{Store: cas.NewMemory(), err: tc.err})
			if err := tc.read(s); !errors.Is(err, tc.err) {
				t.Fatalf("the read returned %v; want %v", err, tc.err)
			}
			_ = tc.read(s)
			if got := s.storageFault(); got != tc.want {
				t.Errorf("storageFault() = %v; want %v", got, tc.want)
			}
		})
	}
}

// TestDispatchReportsStorageFault: the completion of an effect whose
// adapter met a damaged store carries the fault, with the receipt the
// adapter made of it.
func TestDispatchReportsStorageFault(t *testing.T) {
	damage := &cas.BoltDamageError{Path: "x.db", Page: 3, Detail: "bbolt: page 3 zeroed"}
	out := make(chan Completion, 1)
	a := AdapterFunc(func(ctx context.Context, c *Call) Receipt {
		if _, err := c.CAS.Get(ctx, cas.Sum([]byte("tools"))); err != nil {
			return Errorf("fake", "the model could not be reached: %v", err)
		}
		return OK("fake", nil)
	})
	cat, err := schema.LoadSources([]schema.Source{{Name: "m.air.json", Data: []byte(`{"$kind": "manifest", "air_version": "1",
		"schemas": [], "modules": [], "plans": [], "effects": [], "caps": [], "policies": []}`)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := NewDispatcher(cat, faultyStore{Store: cas.NewMemory(), err: damage}, map[string]Adapter{"x.do": a}, out, DispatcherOptions{})
	defer d.Close()
	d.Dispatch(&Intent{Kind: "x.do", Hash: cas.Sum([]byte("intent"))})
	c := <-out
	if c.Fault != damage || c.Receipt.Status != StatusError {
		t.Errorf("completion: fault %v, receipt %+v; want the damage and the adapter's error receipt", c.Fault, c.Receipt)
	}
}
