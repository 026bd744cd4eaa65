package world_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/examples/counter"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// counterNamed opens the counter world name in st.
func counterNamed(t *testing.T, st world.Storage, name string) *world.World {
	t.Helper()
	cat, reg := counterAIR(t)
	w, err := world.Open(t.Context(), world.Options{
		Name: name, Catalog: cat, Reducers: reg, Storage: st,
		Now: fixedClock(1_700_000_000_000_000_000), Entropy: zeroReader{}, SnapshotEvery: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func counterAIR(t *testing.T) (*schema.Catalog, *reducer.Registry) {
	t.Helper()
	cat, err := schema.Load("../examples/counter", nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := reducer.NewRegistry()
	counter.Register(reg)
	return cat, reg
}

func sendAll(t *testing.T, w *world.World, events ...string) {
	t.Helper()
	for _, js := range events {
		if _, err := w.SendJSON(t.Context(), "counter/Event@1", []byte(js)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func records(t *testing.T, st world.Storage, name string) []journal.Record {
	t.Helper()
	var out []journal.Record
	if err := st.Journal().Read(t.Context(), name, 1, func(r journal.Record) error {
		out = append(out, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// rerun replays world name from genesis and from its newest snapshot.
func rerun(t *testing.T, st world.Storage, name string) error {
	t.Helper()
	cat, reg := counterAIR(t)
	for _, genesis := range []bool{true, false} {
		if _, err := world.Rerun(t.Context(), world.RerunOptions{Name: name, Catalog: cat, Reducers: reg, Storage: st, FromGenesis: genesis}); err != nil {
			return err
		}
	}
	return nil
}

// TestFork: a fork keeps the first records of its world byte for byte,
// goes on with inputs of its own, and both worlds replay; a fork of the
// fork too.
func TestFork(t *testing.T) {
	st := world.NewMemoryStorage()
	w := counterNamed(t, st, "c1")
	// 1 Manifest; 2-3 Start and its state; 4-5 Tick; … (a snapshot after
	// every third input).
	sendAll(t, w, `{"Start": {"target": 5}}`, `"Tick"`, `"Tick"`, `"Tick"`)
	src := records(t, st, "c1")
	cat, reg := counterAIR(t)
	head, err := world.Fork(t.Context(), world.ForkOptions{From: "c1", Name: "c2", At: 5, Reducers: reg, Storage: st})
	if err != nil {
		t.Fatal(err)
	}
	if head.Seq != 6 {
		t.Fatalf("the fork's head is %v; want seq 6, the Fork record", head)
	}
	fork := records(t, st, "c2")
	for i, r := range fork[:5] {
		if r.Kind != src[i].Kind || !bytes.Equal(r.Payload, src[i].Payload) {
			t.Fatalf("record %d: the fork has %s %x; the source %s %x", r.Seq, r.Kind, r.Payload, src[i].Kind, src[i].Payload)
		}
	}
	o, err := world.DecodeFork(fork[5])
	if err != nil || o.From != "c1" || o.At != 5 || o.Hash != src[4].Hash || o.Seq != 6 {
		t.Fatalf("the Fork record is %+v (%v); want c1 at 5, %s", o, err, src[4].Hash)
	}

	// The fork goes on its own way: another target.
	w2 := counterNamed(t, st, "c2")
	if got, want := state(t, w2, counter.ModuleName), `{"pc":{"$tag":"Counting"},"remaining":4}`; got != want {
		t.Fatalf("the fork starts from %s; want %s", got, want)
	}
	sendAll(t, w2, `{"Start": {"target": 1}}`, `"Tick"`)
	if got, want := state(t, w2, counter.ModuleName), `{"pc":{"$tag":"Done"},"remaining":0}`; got != want {
		t.Fatalf("the fork ends at %s; want %s", got, want)
	}
	if got, want := state(t, w, counter.ModuleName), `{"pc":{"$tag":"Counting"},"remaining":2}`; got != want {
		t.Fatalf("the source ends at %s; want %s", got, want)
	}
	w2.Close()
	for _, n := range []string{"c1", "c2"} {
		if err := rerun(t, st, n); err != nil {
			t.Fatalf("world %s does not replay: %v", n, err)
		}
	}

	// A fork of the fork, after its Fork record: both origins check.
	c2 := records(t, st, "c2")
	if _, err := world.Fork(t.Context(), world.ForkOptions{From: "c2", Name: "c3", At: 8, Catalog: cat, Reducers: reg, Storage: st}); err != nil {
		t.Fatal(err)
	}
	c3 := records(t, st, "c3")
	if len(c3) != 9 || c3[5].Kind != world.KindFork || c3[8].Kind != world.KindFork {
		t.Fatalf("c3 has %d records; want 8 of c2's and a Fork record", len(c3))
	}
	if o, _ := world.DecodeFork(c3[8]); o.From != "c2" || o.At != 8 || o.Hash != c2[7].Hash {
		t.Fatalf("c3's Fork record is %+v", o)
	}
	if err := rerun(t, st, "c3"); err != nil {
		t.Fatalf("the fork of the fork does not replay: %v", err)
	}
}

// TestForkRefused: a seq outside the world or inside a step, a world that
// exists, the same name: each refused, saying what to do, nothing written.
func TestForkRefused(t *testing.T) {
	st := world.NewMemoryStorage()
	w := counterNamed(t, st, "c1")
	sendAll(t, w, `{"Start": {"target": 5}}`, `"Tick"`)
	_, reg := counterAIR(t)
	if _, err := world.Fork(t.Context(), world.ForkOptions{From: "c1", Name: "taken", At: 1, Reducers: reg, Storage: st}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		from, to string
		at       uint64
		want     string
	}{
		{"seq 0", "c1", "new", 0, "fork world c1 at seq 0: it has records 1 to 5; fork at one of them"},
		{"past the head", "c1", "new", 9, "fork world c1 at seq 9: it has records 1 to 5; fork at one of them"},
		{"inside a step", "c1", "new", 2, "fork world c1 at seq 2: world c1: seq 2 is inside a step: the DomainEvent at seq 2 and what it derived (seqs 2 to 3) were written together, and a world is whole only between steps; cut at seq 1 or 3"},
		{"an existing world", "c1", "taken", 3, "fork into world taken: world: the world already exists: it has 2 records; fork into a new name"},
		{"the same name", "c1", "c1", 3, "fork world c1: give the new world another name"},
		{"no such world", "nobody", "new", 1, "fork world nobody: it has no records"},
		{"a bad name", "c1", "a/../b", 3, "invalid world name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := world.Fork(t.Context(), world.ForkOptions{From: tc.from, Name: tc.to, At: tc.at, Reducers: reg, Storage: st})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v; want %q", err, tc.want)
			}
			if tc.to == "new" {
				if h, _ := st.Journal().Head(t.Context(), "new"); h.Seq != 0 {
					t.Errorf("a refused fork wrote %d records", h.Seq)
				}
			}
		})
	}
	var mid *world.MidStepError
	_, err := world.Fork(t.Context(), world.ForkOptions{From: "c1", Name: "new", At: 4, Reducers: reg, Storage: st})
	if !errors.As(err, &mid) || mid.From != 4 || mid.To != 5 || mid.Input != world.KindEvent {
		t.Errorf("err %v; want a MidStepError for the step at seqs 4 to 5", err)
	}
}

// TestForkForged: a Fork record that does not name the records before it
// (another world, another seq) is a divergence.
func TestForkForged(t *testing.T) {
	st := world.NewMemoryStorage()
	w := counterNamed(t, st, "c1")
	sendAll(t, w, `{"Start": {"target": 5}}`, `"Tick"`)
	src := records(t, st, "c1")
	for _, tc := range []struct {
		name    string
		payload schema.Value
		want    string
	}{
		{"another world", schema.Record("world", "c9", "seq", uint64(3), "hash", src[2].Hash.String()),
			"replay diverges at seq 4 (Fork): the records before the Fork record are not world c9's first 3 records"},
		{"another seq", schema.Record("world", "c1", "seq", uint64(2), "hash", src[1].Hash.String()),
			"replay diverges at seq 4 (Fork): the Fork record says the fork kept world c1's first 2 records, but 3 records precede it"},
		{"another hash", schema.Record("world", "c1", "seq", uint64(3), "hash", src[1].Hash.String()),
			"the records before the Fork record are not world c1's first 3 records: chained from its genesis they end at " + src[2].Hash.Short()},
		{"no hash", schema.Record("world", "c1", "seq", uint64(3)), "record 4 (Fork): want {world, seq, hash}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.ReplaceAll(tc.name, " ", "-")
			entries := []journal.Entry{}
			for _, r := range src[:3] {
				entries = append(entries, journal.Entry{Kind: r.Kind, Payload: r.Payload})
			}
			p, err := schema.Encode(tc.payload)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Journal().Append(t.Context(), name, journal.Head{}, append(entries, journal.Entry{Kind: world.KindFork, Payload: p})); err != nil {
				t.Fatal(err)
			}
			if err := rerun(t, st, name); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v; want %q", err, tc.want)
			}
		})
	}
}
