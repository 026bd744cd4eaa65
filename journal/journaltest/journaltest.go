// Package journaltest is the conformance suite every journal.Store passes.
package journaltest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
)

// Test runs the conformance suite against the stores newStore returns. It
// calls newStore once per subtest, for a fresh empty store, and closes the
// store when the subtest ends (a second Close must return nil).
func Test(t *testing.T, newStore func(t *testing.T) journal.Store) {
	open := func(t *testing.T) journal.Store {
		t.Helper()
		s := newStore(t)
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close at cleanup: %v", err)
			}
		})
		return s
	}
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s journal.Store)
	}{
		{"AppendReadHead", testAppendReadHead},
		{"ChainLinks", testChainLinks},
		{"Conflicts", testConflicts},
		{"EmptyAppend", testEmptyAppend},
		{"EmptyPayloadAndKinds", testEmptyPayloadAndKinds},
		{"InvalidInput", testInvalidInput},
		{"UnknownWorld", testUnknownWorld},
		{"ManyWorlds", testManyWorlds},
		{"ConcurrentWorlds", testConcurrentWorlds},
		{"ConcurrentSameWorld", testConcurrentSameWorld},
		{"LargePayloads", testLargePayloads},
		{"ReadFromMiddle", testReadFromMiddle},
		{"ReadStopsOnFnError", testReadStopsOnFnError},
		{"ReadDoesNotShare", testReadDoesNotShare},
		{"ReadCallsJournal", testReadCallsJournal},
		{"ReadWhileAppending", testReadWhileAppending},
		{"ContextCanceled", testContextCanceled},
		{"Closed", testClosed},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

// entries returns n entries whose kinds and payloads name their step and
// index, so a misplaced record shows.
func entries(step, n int) []journal.Entry {
	es := make([]journal.Entry, n)
	for i := range es {
		es[i] = journal.Entry{Kind: fmt.Sprintf("Kind%d", i%3), Payload: fmt.Appendf(nil, "step %d entry %d", step, i)}
	}
	return es
}

func mustAppend(t *testing.T, s journal.Store, world string, expect journal.Head, es []journal.Entry) journal.Head {
	t.Helper()
	h, err := s.Append(t.Context(), world, expect, es)
	if err != nil {
		t.Fatalf("Append(%s, %v, %d entries): %v", world, expect, len(es), err)
	}
	return h
}

func readAll(t *testing.T, s journal.Store, world string, from uint64) []journal.Record {
	t.Helper()
	var recs []journal.Record
	if err := s.Read(t.Context(), world, from, func(r journal.Record) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		t.Fatalf("Read(%s, from %d): %v", world, from, err)
	}
	return recs
}

func mustHead(t *testing.T, s journal.Store, world string) journal.Head {
	t.Helper()
	h, err := s.Head(t.Context(), world)
	if err != nil {
		t.Fatalf("Head(%s): %v", world, err)
	}
	return h
}

// checkRecords checks that recs are the records of want (all entries of the
// world in order) from seq from on.
func checkRecords(t *testing.T, recs []journal.Record, want []journal.Entry, from uint64) {
	t.Helper()
	if from == 0 {
		from = 1
	}
	wantN := len(want) - int(from-1)
	if wantN < 0 {
		wantN = 0
	}
	if len(recs) != wantN {
		t.Fatalf("read %d records from seq %d; want %d", len(recs), from, wantN)
	}
	for i, r := range recs {
		seq := from + uint64(i)
		e := want[seq-1]
		if r.Seq != seq || r.Kind != e.Kind || !bytes.Equal(r.Payload, e.Payload) {
			t.Fatalf("record %d: got seq %d kind %q payload %q; want seq %d kind %q payload %q",
				i, r.Seq, r.Kind, r.Payload, seq, e.Kind, e.Payload)
		}
	}
}

// verify runs journal.Verify and checks it returns want.
func verify(t *testing.T, s journal.Store, world string, want journal.Head) {
	t.Helper()
	h, err := journal.Verify(t.Context(), s, world)
	if err != nil {
		t.Fatalf("Verify(%s): %v", world, err)
	}
	if h != want {
		t.Fatalf("Verify(%s) = %v; want %v", world, h, want)
	}
}

func testAppendReadHead(t *testing.T, s journal.Store) {
	const w = "w1"
	if h := mustHead(t, s, w); h != (journal.Head{}) {
		t.Fatalf("Head of a new world = %v; want the zero Head", h)
	}
	var all []journal.Entry
	var head journal.Head
	for step := range 4 {
		es := entries(step, step+1)
		all = append(all, es...)
		h := mustAppend(t, s, w, head, es)
		if h.Seq != uint64(len(all)) {
			t.Fatalf("step %d: head seq %d; want %d", step, h.Seq, len(all))
		}
		if got := mustHead(t, s, w); got != h {
			t.Fatalf("step %d: Head = %v; Append returned %v", step, got, h)
		}
		head = h
	}
	recs := readAll(t, s, w, 0)
	checkRecords(t, recs, all, 1)
	if last := recs[len(recs)-1]; (journal.Head{Seq: last.Seq, Hash: last.Hash}) != head {
		t.Fatalf("last record %d %s is not the head %v", last.Seq, last.Hash, head)
	}
	checkRecords(t, readAll(t, s, w, 1), all, 1)
	verify(t, s, w, head)
	worlds, err := s.Worlds(t.Context())
	if err != nil || !slices.Equal(worlds, []string{w}) {
		t.Fatalf("Worlds() = %q, %v; want [%q]", worlds, err, w)
	}
}

func testChainLinks(t *testing.T, s journal.Store) {
	const w = "chain"
	h := mustAppend(t, s, w, journal.Head{}, entries(0, 3))
	mustAppend(t, s, w, h, entries(1, 2))
	recs := readAll(t, s, w, 1)
	prev := journal.Genesis(w)
	for _, r := range recs {
		if r.Prev != prev {
			t.Fatalf("record %d: prev %s; want %s", r.Seq, r.Prev, prev)
		}
		b, err := r.Encode()
		if err != nil {
			t.Fatalf("record %d: Encode: %v", r.Seq, err)
		}
		if cas.Sum(b) != r.Hash {
			t.Fatalf("record %d: Hash %s; its bytes hash to %s", r.Seq, r.Hash, cas.Sum(b))
		}
		dec, err := journal.DecodeRecord(b)
		if err != nil || dec.Seq != r.Seq || dec.Hash != r.Hash {
			t.Fatalf("record %d: DecodeRecord(Encode()) = %d %s, %v", r.Seq, dec.Seq, dec.Hash, err)
		}
		prev = r.Hash
	}
	// The same entries in another world make other hashes: the chain is bound to its world.
	h2 := mustAppend(t, s, "chain2", journal.Head{}, entries(0, 3))
	if h2.Hash == h.Hash {
		t.Fatalf("worlds chain and chain2 have the same head hash %s", h.Hash)
	}
}

func testConflicts(t *testing.T, s journal.Store) {
	const w = "w"
	h1 := mustAppend(t, s, w, journal.Head{}, entries(0, 2))
	h2 := mustAppend(t, s, w, h1, entries(1, 2))
	for _, tc := range []struct {
		name   string
		expect journal.Head
	}{
		{"empty head", journal.Head{}},
		{"stale head", h1},
		{"future seq", journal.Head{Seq: h2.Seq + 1, Hash: h2.Hash}},
		{"right seq, wrong hash", journal.Head{Seq: h2.Seq, Hash: h1.Hash}},
		{"right seq, zero hash", journal.Head{Seq: h2.Seq}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Append(t.Context(), w, tc.expect, entries(9, 1))
			if !errors.Is(err, journal.ErrConflict) {
				t.Fatalf("Append with %v: err %v; want ErrConflict", tc.expect, err)
			}
			var ce *journal.ConflictError
			if !errors.As(err, &ce) || ce.World != w || ce.Expect != tc.expect || ce.Actual != h2 {
				t.Fatalf("err = %#v; want *ConflictError{%s, %v, %v}", err, w, tc.expect, h2)
			}
			if !strings.Contains(err.Error(), "world "+w) {
				t.Errorf("error %q does not name the world", err)
			}
		})
	}
	if h := mustHead(t, s, w); h != h2 {
		t.Fatalf("after conflicts Head = %v; want %v", h, h2)
	}
	if _, err := s.Append(t.Context(), "fresh", h2, entries(0, 1)); !errors.Is(err, journal.ErrConflict) {
		t.Fatalf("Append to a new world with a non-zero head: %v; want ErrConflict", err)
	}
	verify(t, s, w, h2)
}

func testEmptyAppend(t *testing.T, s journal.Store) {
	for _, es := range [][]journal.Entry{nil, {}} {
		h, err := s.Append(t.Context(), "new", journal.Head{}, es)
		if err != nil || h != (journal.Head{}) {
			t.Fatalf("empty Append to a new world = %v, %v; want the zero Head", h, err)
		}
	}
	if worlds, err := s.Worlds(t.Context()); err != nil || len(worlds) != 0 {
		t.Fatalf("Worlds after empty appends = %q, %v; want none", worlds, err)
	}
	h1 := mustAppend(t, s, "w", journal.Head{}, entries(0, 2))
	if h := mustAppend(t, s, "w", h1, nil); h != h1 {
		t.Fatalf("empty Append = %v; want the head %v", h, h1)
	}
	if _, err := s.Append(t.Context(), "w", journal.Head{}, nil); !errors.Is(err, journal.ErrConflict) {
		t.Fatalf("empty Append with a stale head: %v; want ErrConflict", err)
	}
	h2 := mustAppend(t, s, "w", h1, entries(1, 1))
	if h2.Seq != 3 {
		t.Fatalf("head after empty appends: %v; want seq 3", h2)
	}
	verify(t, s, "w", h2)
}

func testEmptyPayloadAndKinds(t *testing.T, s journal.Store) {
	es := []journal.Entry{
		{Kind: "nil", Payload: nil},
		{Kind: "empty", Payload: []byte{}},
		{Kind: "ünïcødé ✓", Payload: []byte{0}},
		{Kind: strings.Repeat("k", journal.MaxKindLen), Payload: []byte{0xd9, 0xd9, 0xf7, 0xa0}},
	}
	h := mustAppend(t, s, "w", journal.Head{}, es)
	recs := readAll(t, s, "w", 1)
	checkRecords(t, recs, es, 1)
	for _, r := range recs[:2] {
		if len(r.Payload) != 0 {
			t.Fatalf("record %d: payload %q; want empty", r.Seq, r.Payload)
		}
	}
	verify(t, s, "w", h)
}

func testInvalidInput(t *testing.T, s journal.Store) {
	ctx := t.Context()
	for _, w := range []string{"", "a/b", ".hidden", "-x", "a b", "a\x00b", "ü", strings.Repeat("a", journal.MaxWorldLen+1)} {
		if _, err := s.Append(ctx, w, journal.Head{}, entries(0, 1)); !errors.Is(err, journal.ErrInvalidWorld) {
			t.Errorf("Append(%q): %v; want ErrInvalidWorld", w, err)
		}
		if _, err := s.Head(ctx, w); !errors.Is(err, journal.ErrInvalidWorld) {
			t.Errorf("Head(%q): %v; want ErrInvalidWorld", w, err)
		}
		if err := s.Read(ctx, w, 1, func(journal.Record) error { return nil }); !errors.Is(err, journal.ErrInvalidWorld) {
			t.Errorf("Read(%q): %v; want ErrInvalidWorld", w, err)
		}
	}
	for _, w := range []string{"a", "A-1", "world_2.v3", strings.Repeat("z", journal.MaxWorldLen)} {
		if err := journal.ValidateWorld(w); err != nil {
			t.Errorf("ValidateWorld(%q): %v; want nil", w, err)
		}
	}
	good := journal.Entry{Kind: "ok", Payload: []byte("x")}
	for _, tc := range []struct {
		name string
		bad  journal.Entry
	}{
		{"empty kind", journal.Entry{Kind: "", Payload: []byte("x")}},
		{"long kind", journal.Entry{Kind: strings.Repeat("k", journal.MaxKindLen+1)}},
		{"invalid UTF-8 kind", journal.Entry{Kind: "a\xffb"}},
		{"payload too large", journal.Entry{Kind: "big", Payload: make([]byte, journal.MaxPayloadSize+1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Append(ctx, "w", journal.Head{}, []journal.Entry{good, tc.bad})
			if !errors.Is(err, journal.ErrInvalidEntry) {
				t.Fatalf("Append: %v; want ErrInvalidEntry", err)
			}
			if h := mustHead(t, s, "w"); h != (journal.Head{}) {
				t.Fatalf("a rejected append wrote something: head %v", h)
			}
		})
	}
}

func testUnknownWorld(t *testing.T, s journal.Store) {
	mustAppend(t, s, "known", journal.Head{}, entries(0, 1))
	called := false
	if err := s.Read(t.Context(), "unknown", 1, func(journal.Record) error { called = true; return nil }); err != nil || called {
		t.Fatalf("Read of an unknown world: err %v, fn called %v; want nil, false", err, called)
	}
	if _, err := journal.Verify(t.Context(), s, "unknown"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("Verify of an unknown world: %v; want ErrNotFound", err)
	}
}

func testManyWorlds(t *testing.T, s journal.Store) {
	const n = 40
	var names []string
	heads := map[string]journal.Head{}
	for i := range n {
		names = append(names, fmt.Sprintf("world-%03d", (i*17)%n)) // appended out of order
	}
	for round := range 2 {
		for i, w := range names {
			heads[w] = mustAppend(t, s, w, heads[w], entries(round*1000+i, 1+i%3))
		}
	}
	got, err := s.Worlds(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(names))
	if !slices.Equal(got, want) {
		t.Fatalf("Worlds() = %q; want %q", got, want)
	}
	for i, w := range names {
		var want []journal.Entry
		for round := range 2 {
			want = append(want, entries(round*1000+i, 1+i%3)...)
		}
		checkRecords(t, readAll(t, s, w, 1), want, 1)
		verify(t, s, w, heads[w])
	}
}

func testConcurrentWorlds(t *testing.T, s journal.Store) {
	const writers, steps = 16, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := range writers {
		wg.Go(func() {
			w := fmt.Sprintf("cw%02d", g)
			var head journal.Head
			for step := range steps {
				h, err := s.Append(t.Context(), w, head, entries(step, 5))
				if err != nil {
					errs <- fmt.Errorf("%s step %d: %w", w, step, err)
					return
				}
				if h.Seq != head.Seq+5 {
					errs <- fmt.Errorf("%s step %d: head %v after %v", w, step, h, head)
					return
				}
				head = h
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for g := range writers {
		w := fmt.Sprintf("cw%02d", g)
		var want []journal.Entry
		for step := range steps {
			want = append(want, entries(step, 5)...)
		}
		recs := readAll(t, s, w, 1)
		checkRecords(t, recs, want, 1)
		last := recs[len(recs)-1]
		verify(t, s, w, journal.Head{Seq: last.Seq, Hash: last.Hash})
	}
}

func testConcurrentSameWorld(t *testing.T, s journal.Store) {
	const w, writers = "same", 8
	base := mustAppend(t, s, w, journal.Head{}, entries(0, 1))
	var wg sync.WaitGroup
	results := make([]error, writers)
	for g := range writers {
		wg.Go(func() {
			_, results[g] = s.Append(t.Context(), w, base, entries(g+1, 2))
		})
	}
	wg.Wait()
	wins := 0
	for g, err := range results {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, journal.ErrConflict):
			t.Errorf("writer %d: %v; want nil or ErrConflict", g, err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d writers appended with the same expected head; want exactly 1", wins)
	}
	h := mustHead(t, s, w)
	if h.Seq != 3 {
		t.Fatalf("head %v; want seq 3", h)
	}
	verify(t, s, w, h)
}

func testLargePayloads(t *testing.T, s journal.Store) {
	var es []journal.Entry
	for i, size := range []int{1 << 10, 64 << 10, 1 << 20, 4<<20 + 3, journal.MaxPayloadSize} {
		p := make([]byte, size)
		for k := range p {
			p[k] = byte(k*7 + i)
		}
		es = append(es, journal.Entry{Kind: "Big", Payload: p})
	}
	h := mustAppend(t, s, "big", journal.Head{}, es[:3])
	h = mustAppend(t, s, "big", h, es[3:])
	checkRecords(t, readAll(t, s, "big", 1), es, 1)
	checkRecords(t, readAll(t, s, "big", 4), es, 4)
	verify(t, s, "big", h)
}

func testReadFromMiddle(t *testing.T, s journal.Store) {
	const w = "mid"
	var all []journal.Entry
	var head journal.Head
	for step := range 30 {
		es := entries(step, 1+step*3%41) // over 600 records: several read chunks
		all = append(all, es...)
		head = mustAppend(t, s, w, head, es)
	}
	n := uint64(len(all))
	for _, from := range []uint64{0, 1, 2, 5, n / 2, n - 1, n, n + 1, n + 100} {
		recs := readAll(t, s, w, from)
		checkRecords(t, recs, all, from)
		if from > 1 && from <= n && recs[0].Prev != readAll(t, s, w, from-1)[0].Hash {
			t.Fatalf("from %d: prev of the first record does not name record %d", from, from-1)
		}
	}
	verify(t, s, w, head)
}

func testReadStopsOnFnError(t *testing.T, s journal.Store) {
	var head journal.Head
	for step := range 10 {
		head = mustAppend(t, s, "w", head, entries(step, 100))
	}
	stop := errors.New("stop here")
	calls := 0
	err := s.Read(t.Context(), "w", 1, func(r journal.Record) error {
		calls++
		if r.Seq == 700 {
			return stop
		}
		return nil
	})
	if err != stop || calls != 700 {
		t.Fatalf("Read returned %v after %d calls; want the fn's error after 700", err, calls)
	}
}

func testReadDoesNotShare(t *testing.T, s journal.Store) {
	h := mustAppend(t, s, "w", journal.Head{}, entries(0, 3))
	for _, r := range readAll(t, s, "w", 1) {
		for i := range r.Payload {
			r.Payload[i] ^= 0xff
		}
	}
	checkRecords(t, readAll(t, s, "w", 1), entries(0, 3), 1)
	verify(t, s, "w", h)
}

func testReadCallsJournal(t *testing.T, s journal.Store) {
	// fn may append (to another world and its own) and read while Read runs.
	var head journal.Head
	for step := range 3 {
		head = mustAppend(t, s, "src", head, entries(step, 300))
	}
	var copyHead journal.Head
	var batch []journal.Entry
	n := 0
	err := s.Read(t.Context(), "src", 1, func(r journal.Record) error {
		n++
		batch = append(batch, journal.Entry{Kind: r.Kind, Payload: r.Payload})
		if len(batch) < 100 && r.Seq != head.Seq {
			return nil
		}
		h, err := s.Append(t.Context(), "dst", copyHead, batch)
		copyHead, batch = h, nil
		if err != nil {
			return err
		}
		if r.Seq == 450 { // a record appended to src now may or may not be read
			head, err = s.Append(t.Context(), "src", head, entries(9, 1))
		}
		return err
	})
	if err != nil {
		t.Fatalf("Read with appends in fn: %v", err)
	}
	if uint64(n) < head.Seq-1 || copyHead.Seq != uint64(n) {
		t.Fatalf("read %d records, copied %d; want %d or %d", n, copyHead.Seq, head.Seq-1, head.Seq)
	}
	verify(t, s, "dst", copyHead)
}

func testContextCanceled(t *testing.T, s journal.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Append(ctx, "w", journal.Head{}, entries(0, 1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with a canceled context: %v; want context.Canceled", err)
	}
	if h := mustHead(t, s, "w"); h != (journal.Head{}) {
		t.Fatalf("a canceled append wrote something: head %v", h)
	}
	var head journal.Head
	for step := range 4 {
		head = mustAppend(t, s, "w", head, entries(step, 250))
	}
	if err := s.Read(ctx, "w", 1, func(journal.Record) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Read with a canceled context: %v; want context.Canceled", err)
	}
	ctx2, cancel2 := context.WithCancel(t.Context())
	defer cancel2()
	calls := 0
	err := s.Read(ctx2, "w", 1, func(r journal.Record) error {
		calls++
		if r.Seq == 10 {
			cancel2()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || calls != 10 {
		t.Fatalf("Read canceled in fn at seq 10: err %v after %d calls; want context.Canceled after 10", err, calls)
	}
	if _, err := s.Head(ctx, "w"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Head with a canceled context: %v; want context.Canceled", err)
	}
	if _, err := s.Worlds(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Worlds with a canceled context: %v; want context.Canceled", err)
	}
	verify(t, s, "w", head)
}

func testClosed(t *testing.T, s journal.Store) {
	ctx := t.Context()
	h := mustAppend(t, s, "w", journal.Head{}, entries(0, 1))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := s.Append(ctx, "w", h, entries(1, 1)); !errors.Is(err, journal.ErrClosed) {
		t.Errorf("Append after Close: %v; want ErrClosed", err)
	}
	if err := s.Read(ctx, "w", 1, func(journal.Record) error { return nil }); !errors.Is(err, journal.ErrClosed) {
		t.Errorf("Read after Close: %v; want ErrClosed", err)
	}
	if _, err := s.Head(ctx, "w"); !errors.Is(err, journal.ErrClosed) {
		t.Errorf("Head after Close: %v; want ErrClosed", err)
	}
	if _, err := s.Worlds(ctx); !errors.Is(err, journal.ErrClosed) {
		t.Errorf("Worlds after Close: %v; want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v; want nil", err)
	}
}

func testReadWhileAppending(t *testing.T, s journal.Store) {
	// Every Read during appends sees a contiguous, verified run of records.
	ctx := t.Context()
	done := make(chan struct{})
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				var last uint64
				err := s.Read(ctx, "w", uint64(1+r*50), func(rec journal.Record) error {
					if last != 0 && rec.Seq != last+1 {
						return fmt.Errorf("seq %d after %d", rec.Seq, last)
					}
					last = rec.Seq
					return nil
				})
				if err != nil {
					t.Errorf("Read during appends: %v", err)
					return
				}
			}
		})
	}
	var head journal.Head
	for step := range 100 {
		es := make([]journal.Entry, 5)
		for i := range es {
			es[i] = journal.Entry{Kind: "K", Payload: bytes.Repeat([]byte{byte(step)}, 700)}
		}
		head = mustAppend(t, s, "w", head, es)
	}
	close(done)
	wg.Wait()
	verify(t, s, "w", head)
}
