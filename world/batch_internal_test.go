package world

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/examples/counter"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
)

// failingEntropy gives n reads, then fails.
type failingEntropy struct{ n int }

func (f *failingEntropy) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("entropy source gone")
	}
	f.n--
	clear(p)
	return len(p), nil
}

// TestStampFailureMidBatchBreaksTheWorld: when the second input of a batch
// cannot be stamped, the first has already moved the machine on and will
// never be committed, so the world must stop (and reopen from its journal)
// rather than commit later records at the wrong height.
func TestStampFailureMidBatchBreaksTheWorld(t *testing.T) {
	ctx := t.Context()
	cat, err := schema.Load("../examples/counter", nil)
	if err != nil {
		t.Fatal(err)
	}
	st := NewMemoryStorage()
	w, err := Open(ctx, Options{Name: "c1", Catalog: cat, Reducers: reducer.NewRegistry(), Storage: st,
		Entropy: &failingEntropy{n: 1}, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	head := w.Head()
	tick := func() *Input {
		return &Input{Kind: KindEvent, Schema: "counter/Event@1", Value: schema.Variant("Tick", nil)}
	}
	if _, err := w.applyBatch(ctx, []*Input{tick(), tick()}, nil); err == nil {
		t.Fatal("a batch whose second input could not be stamped committed")
	}
	if w.Err() == nil {
		t.Fatal("the world goes on with a machine ahead of its journal")
	}
	if w.Head() != head {
		t.Fatalf("the head moved: %v, then %v", head, w.Head())
	}
	// A failure on the first input changes nothing: the world goes on.
	w2, err := Open(ctx, Options{Name: "c2", Catalog: cat, Reducers: reducer.NewRegistry(), Storage: st,
		Entropy: &failingEntropy{n: 0}, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if _, err := w2.applyBatch(ctx, []*Input{tick()}, nil); err == nil || w2.Err() != nil {
		t.Fatalf("first input unstampable: err %v, world err %v; want an error and a world that goes on", err, w2.Err())
	}
}

// TestStepBlobsReadableInTheBatch: what a step writes (a cell's new state)
// is readable through a running world's CAS before the batch commits, as
// it is in replay, where it is already stored.
func TestStepBlobsReadableInTheBatch(t *testing.T) {
	ctx := t.Context()
	cat, err := schema.Load("../examples/counter", nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := reducer.NewRegistry()
	counter.Register(reg)
	st := NewMemoryStorage()
	ov := &overlay{base: st.CAS()}
	m := NewMachine(cat, reg, ov)
	start := schema.Variant("Start", schema.Record("target", uint64(2)))
	step, err := m.Apply(ctx, &Input{Kind: KindEvent, Schema: "counter/Event@1", Value: start})
	if err != nil {
		t.Fatal(err)
	}
	if len(step.Blobs) == 0 {
		t.Fatal("the step wrote no blob")
	}
	for _, b := range step.Blobs {
		r := cas.Sum(b)
		if ok, _ := st.CAS().Has(ctx, r); ok {
			t.Fatalf("blob %s is stored already; the test shows nothing", r.Short())
		}
		if got, err := ov.Get(ctx, r); err != nil || !bytes.Equal(got, b) {
			t.Errorf("blob %s of the step is not readable before the commit: %v", r.Short(), err)
		}
	}
}

func TestDecodeState(t *testing.T) {
	ref := cas.Sum([]byte("state"))
	enc := func(v schema.Value) []byte {
		b, err := schema.Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	sr, err := DecodeState(journal.Record{Seq: 3, Kind: KindState, Payload: enc(rec("reducer", "a/A@1", "key", "k1", "state", ref.String()))})
	if err != nil || sr.Reducer != "a/A@1" || sr.Key != "k1" || sr.State != ref {
		t.Errorf("keyed = %+v, %v", sr, err)
	}
	sr, err = DecodeState(journal.Record{Seq: 4, Kind: KindState, Payload: enc(rec("reducer", "a/A@1", "key", "k1"))})
	if err != nil || sr.State.Valid() {
		t.Errorf("deleted = %+v, %v; want no state", sr, err)
	}
	for _, bad := range []journal.Record{
		{Seq: 5, Kind: KindRaised, Payload: enc(rec("reducer", "a/A@1"))},
		{Seq: 6, Kind: KindState, Payload: []byte{0xff}},
		{Seq: 7, Kind: KindState, Payload: enc(rec("reducer", "a/A@1", "state", "blake3:nothex"))},
	} {
		if _, err := DecodeState(bad); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("record %d", bad.Seq)) {
			t.Errorf("record %d: err %v; want one naming the record", bad.Seq, err)
		}
	}
}

// FuzzDecodeRecord: the decoders of journal records return errors, never
// panic, whatever the payload.
func FuzzDecodeRecord(f *testing.F) {
	ref := cas.Sum([]byte("x")).String()
	for _, v := range []schema.Value{
		rec("reducer", "a/A@1", "key", "k", "state", ref),
		rec("manifest", ref),
		rec("schema", "a/E@1", "value", uint64(1), "stamp", rec("now", uint64(1), "logical", uint64(1), "height", uint64(0))),
		rec("intent", ref, "status", "ok", "stamp", rec()),
	} {
		b, _ := schema.Encode(v)
		for _, k := range []string{KindState, KindManifest, KindEvent, KindReceipt} {
			f.Add(k, b)
		}
	}
	f.Fuzz(func(t *testing.T, kind string, payload []byte) {
		r := journal.Record{Seq: 1, Kind: kind, Payload: payload}
		_, _ = DecodeInput(r)
		_, _ = DecodeState(r)
	})
}

// FuzzRestoreMachine: a snapshot node that is not what a world wrote is an
// error, never a panic.
func FuzzRestoreMachine(f *testing.F) {
	cat, err := schema.Load("../examples/counter", nil)
	if err != nil {
		f.Fatal(err)
	}
	reg := reducer.NewRegistry()
	counter.Register(reg)
	st := NewMemoryStorage()
	m := NewMachine(cat, reg, st.CAS())
	if _, err := m.Apply(f.Context(), &Input{Kind: KindManifest, Manifest: cat.ManifestRef()}); err != nil {
		f.Fatal(err)
	}
	if _, err := m.Apply(f.Context(), &Input{Kind: KindEvent, Schema: "counter/Event@1", Value: schema.Variant("Start", schema.Record("target", uint64(2))),
		Stamp: reducer.Stamp{JournalHeight: m.Height()}}); err != nil {
		f.Fatal(err)
	}
	_, snap, err := m.Snapshot()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(snap)
	f.Fuzz(func(t *testing.T, b []byte) {
		store := cas.NewMemory()
		ref, err := store.Put(t.Context(), b)
		if err != nil {
			return
		}
		_, _ = RestoreMachine(t.Context(), cat, reg, store, ref)
	})
}
