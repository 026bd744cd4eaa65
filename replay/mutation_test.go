package replay_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/replay"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// hub is the reducer of testdata/mut, with switches that change its
// behaviour the ways replay must catch.
type hub struct {
	countBy     uint64 // state change
	swapNotes   bool   // reordering
	mapNotes    bool   // iterating a Go map
	readClock   bool   // reading the clock
	skipFetch   bool   // a missing effect (the plan is not triggered)
	extraFetch  bool   // an extra effect
	changeEvent bool   // a changed event
	fail        bool   // a step that fails
}

type hubState struct {
	Count uint64  `cbor:"count"`
	Done  uint64  `cbor:"done"`
	Stamp *uint64 `cbor:"stamp"`
}

func (h hub) Step(c *reducer.Context, state, event schema.Value) (reducer.Output, error) {
	var st hubState
	if state != nil {
		if err := reducer.ToGo(state, &st); err != nil {
			return reducer.Output{}, err
		}
	}
	tag, v, _ := event.(*schema.Map).VariantTag()
	nv, _ := v.(*schema.Map).Get("n")
	n := nv.(uint64)
	var out reducer.Output
	switch tag {
	case "Go":
		if h.fail {
			return out, errors.New("the hub refuses to go")
		}
		st.Count += max(h.countBy, 1)
		if h.readClock {
			now := uint64(time.Now().UnixNano())
			st.Stamp = &now
		}
		notes := []string{"a", "b"}
		if h.swapNotes {
			notes = []string{"b", "a"}
		}
		if h.mapNotes {
			notes = nil
			for k := range map[string]bool{"a": true, "b": true, "c": true, "d": true, "e": true, "f": true, "g": true, "h": true} {
				notes = append(notes, k)
			}
		}
		for _, t := range notes {
			text := t
			if h.changeEvent {
				text += "!"
			}
			out.Events = append(out.Events, reducer.Event{Schema: "mut/Note@1", Value: schema.Record("text", text)})
		}
		if !h.skipFetch {
			out.Events = append(out.Events, reducer.Event{Schema: "mut/Fetch@1", Value: schema.Record("n", n)})
		}
		if h.extraFetch {
			out.Events = append(out.Events, reducer.Event{Schema: "mut/Fetch@1", Value: schema.Record("n", n+1000)})
		}
	case "Done":
		st.Done++
	}
	s, err := reducer.FromGo(st)
	out.State = s
	return out, err
}

func okHTTP(ctx context.Context, c *effects.Call) effects.Receipt {
	return effects.OK("fake", schema.Record("status", uint64(200), "headers", schema.NewMap(), "body_ref", nil,
		"timings", schema.Record("start_ns", uint64(1), "end_ns", uint64(2)), "adapter_id", "fake"))
}

// record runs the mut world for a few events and exports it as a bundle.
func record(t *testing.T, airDir string, h hub, snapshotEvery int) string {
	t.Helper()
	ctx := t.Context()
	reg := reducer.NewRegistry()
	reg.MustRegister("mut/Hub@1", h)
	cat, err := schema.Load(airDir, &schema.LoadOptions{Reducers: reg.Names()})
	if err != nil {
		t.Fatal(err)
	}
	st := world.NewMemoryStorage()
	clock := time.Unix(1_700_000_000, 0)
	w, err := world.Open(ctx, world.Options{Name: "mut", Catalog: cat, Reducers: reg, Storage: st,
		Adapters: map[string]effects.Adapter{"http.request": effects.AdapterFunc(okHTTP)},
		Now:      func() time.Time { clock = clock.Add(time.Millisecond); return clock }, SnapshotEvery: snapshotEvery})
	if err != nil {
		t.Fatal(err)
	}
	for n := range 3 {
		if _, err := w.SendJSON(ctx, "mut/Event@1", []byte(fmt.Sprintf(`{"Go": {"n": %d}}`, n))); err != nil {
			t.Fatal(err)
		}
		if err := w.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	dir := filepath.Join(t.TempDir(), "bundle")
	if _, err := replay.Export(ctx, st.Journal(), st.CAS(), "mut", cat.Sources(), cat.ModuleFiles(), dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// mutateAIR copies testdata/mut with replacements in defs.air.json: old
// and new may hold several pairs separated by "|".
func mutateAIR(t *testing.T, old, new string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"manifest.air.json", "defs.air.json"} {
		b, err := os.ReadFile(filepath.Join("testdata/mut", f))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if f == "defs.air.json" && old != "" {
			olds, news := strings.Split(old, "|"), strings.Split(new, "|")
			for i := range olds {
				if !strings.Contains(s, olds[i]) {
					t.Fatalf("mutation %q not found", olds[i])
				}
				s = strings.Replace(s, olds[i], news[i], 1)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestReplayCatchesMutations records a session, then replays it with code
// changed in each way a replayer must notice.
func TestReplayCatchesMutations(t *testing.T) {
	bundleDir := record(t, "testdata/mut", hub{}, 0)
	b, err := replay.Read(bundleDir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		h        hub
		old, new string // AIR mutation
		kind     string // the kind of record where replay must diverge
		runs     int    // replays to try (nondeterminism may need several)
	}{
		{name: "unchanged", kind: ""},
		{name: "changed effect parameter", old: `"method": "GET"`, new: `"method": "POST"`, kind: world.KindIntent},
		{name: "changed reducer state", h: hub{countBy: 2}, kind: world.KindState},
		{name: "changed event", h: hub{changeEvent: true}, kind: world.KindRaised},
		{name: "changed plan result", old: `{"record": {"status": {"op": "get"`, new: `{"record": {"status": {"op": "add", "args": [{"nat": 1}, {"op": "get"`, kind: world.KindPlanEnded},
		{name: "extra effect", old: `"steps": [`, new: `"steps": [{"id": "get2", "op": "emit_effect", "kind": "http.request", "cap": "web", "params": {"method": "GET", "url": "https://api.test/other", "headers": {}, "body_ref": null}, "bind": {"effect_id_as": "req2"}},`, kind: world.KindIntent},
		{name: "missing effect", old: `"steps": [|"edges": [`, new: `"steps": [{"id": "pre", "op": "assign", "expr": {"nat": 1}, "bind": {"as": "pre"}},|"edges": [{"from": "pre", "to": "get", "when": {"bool": false}},`, kind: world.KindIntent},
		{name: "missing event", h: hub{skipFetch: true}, kind: world.KindRaised},
		{name: "extra event", h: hub{extraFetch: true}, kind: world.KindRaised},
		{name: "reordering", h: hub{swapNotes: true}, kind: world.KindRaised},
		{name: "map iterated in random order", h: hub{mapNotes: true}, kind: world.KindRaised, runs: 20},
		{name: "reducer reading the clock", h: hub{readClock: true}, kind: world.KindState},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.new, `"op": "add", "args": [{"nat": 1}, {"op": "get"`) {
				tc.new += `, "args": [{"ref": "@var:resp"}, {"text": "status"}]}]}}}}`
				tc.old += `, "args": [{"ref": "@var:resp"}, {"text": "status"}]}}}}`
			}
			air := mutateAIR(t, tc.old, tc.new)
			reg := reducer.NewRegistry()
			reg.MustRegister("mut/Hub@1", tc.h)
			mb := *b
			srcs, err := os.ReadDir(air)
			if err != nil {
				t.Fatal(err)
			}
			mb.Sources = nil
			for _, e := range srcs {
				data, _ := os.ReadFile(filepath.Join(air, e.Name()))
				mb.Sources = append(mb.Sources, schema.Source{Name: e.Name(), Data: data})
			}
			if tc.kind == world.KindRaised && tc.h.mapNotes {
				// A recording made with the map-iterating reducer must
				// differ from some replay of it.
				mb2, err := replay.Read(record(t, "testdata/mut", tc.h, 0))
				if err != nil {
					t.Fatal(err)
				}
				mb = *mb2
			}
			runs := max(tc.runs, 1)
			var err2 error
			for range runs {
				// Under the bundle's AIR, which a case may have changed.
				if _, err2 = replay.ReplayBundleUnder(t.Context(), &mb, reg); err2 != nil {
					break
				}
			}
			if tc.kind == "" {
				if err2 != nil {
					t.Fatalf("an unchanged replay diverges:\n%s", replay.Describe(err2))
				}
				return
			}
			var d *world.DivergenceError
			if !errors.As(err2, &d) {
				t.Fatalf("replay did not diverge (err %v)", err2)
			}
			var kinds []string
			if d.Journal != nil {
				kinds = append(kinds, d.Journal.Kind)
			}
			if d.Derived != nil {
				kinds = append(kinds, d.Derived.Kind)
			}
			desc := replay.Describe(err2)
			if !strings.Contains(" "+strings.Join(kinds, " ")+" ", " "+tc.kind+" ") || !strings.Contains(desc, fmt.Sprintf("seq %d", d.Seq)) {
				t.Fatalf("diverged at %v records; want one of them %s:\n%s", kinds, tc.kind, desc)
			}
			t.Logf("%s", desc)
		})
	}
}

// TestDescribeStateDivergence: a replayed reducer that derives another
// state is shown as the states' difference, field by field and as a diff
// of their JSON, not as two hashes.
func TestDescribeStateDivergence(t *testing.T) {
	b, err := replay.Read(record(t, "testdata/mut", hub{}, 0))
	if err != nil {
		t.Fatal(err)
	}
	reg := reducer.NewRegistry()
	reg.MustRegister("mut/Hub@1", hub{countBy: 2, readClock: true})
	_, err = replay.ReplayBundle(t.Context(), b, reg, true)
	if err == nil {
		t.Fatal("a changed reducer replays")
	}
	got := replay.Describe(err)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^replay diverges: world mut, seq \d+, journal record State, derived record State$`),
		regexp.MustCompile(`(?m)^the state of mut/Hub@1 differs at 2 paths:\n  count: 1 → 2\n  stamp: null → \d+\n`),
		regexp.MustCompile(`(?m)^--- journal state blake3:[0-9a-f]{12}\n\+\+\+ replayed state blake3:[0-9a-f]{12}\n@@ -1,5 \+1,5 @@\n \{\n   "done": 0,\n-  "count": 1,\n-  "stamp": null\n\+  "count": 2,\n\+  "stamp": \d+\n \}$`),
	} {
		if !want.MatchString(got) {
			t.Errorf("the report does not match %s:\n%s", want, got)
		}
	}
}

// TestTamperedBundle: a changed input in a bundle's journal breaks its
// hash chain; Read says where.
func TestTamperedBundle(t *testing.T) {
	dir := record(t, "testdata/mut", hub{}, 0)
	path := filepath.Join(dir, "journal.cbor")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(data), `mut/Event@1`)
	data[i+4] = 'X' // mut/Xvent@1 in the first DomainEvent
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = replay.Read(dir)
	if err == nil || !strings.Contains(err.Error(), "hash chain broken at seq 3") {
		t.Fatalf("err = %v; want a broken chain at seq 3", err)
	}
}

// TestBundleRoundTrip exports, reads, imports and replays a session with
// snapshots, from genesis and from the newest snapshot.
func TestBundleRoundTrip(t *testing.T) {
	dir := record(t, "testdata/mut", hub{}, 2)
	b, err := replay.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	reg := reducer.NewRegistry()
	reg.MustRegister("mut/Hub@1", hub{})
	g, err := replay.ReplayBundle(t.Context(), b, reg, true)
	if err != nil {
		t.Fatal(replay.Describe(err))
	}
	s, err := replay.ReplayBundle(t.Context(), b, reg, false)
	if err != nil {
		t.Fatal(replay.Describe(err))
	}
	if !s.Snapshot.Valid() || s.FromSeq <= 1 {
		t.Fatalf("replay did not start from a snapshot (from seq %d)", s.FromSeq)
	}
	gv, _, _ := g.Machine.State("mut/Hub@1", nil)
	sv, _, _ := s.Machine.State("mut/Hub@1", nil)
	if !schema.Equal(gv, sv) || string(schema.ValueJSON(gv)) != `{"done":3,"count":3,"stamp":null}` {
		t.Fatalf("from genesis %s, from snapshot %s", schema.ValueJSON(gv), schema.ValueJSON(sv))
	}
	st := world.NewMemoryStorage()
	if err := replay.Import(t.Context(), b, st.Journal(), st.CAS()); err != nil {
		t.Fatal(err)
	}
	puts := &countingPutter{Putter: st.CAS()}
	if err := replay.Import(t.Context(), b, st.Journal(), puts); err == nil {
		t.Fatal("importing a world twice was allowed")
	} else if !strings.Contains(err.Error(), "world mut already has") || !strings.Contains(err.Error(), "into another store") {
		t.Errorf("importing a world twice: %v; want what it is and what to do", err)
	}
	if puts.n != 0 {
		t.Errorf("a refused import put %d blobs; want none", puts.n)
	}
	h, _ := journal.Verify(t.Context(), st.Journal(), "mut")
	if h.Seq != b.Manifest.Head {
		t.Fatalf("imported head %d; want %d", h.Seq, b.Manifest.Head)
	}
}

// TestRebaseRefusesNewFailures: -update re-derives a session with changed
// code, unless the change makes the session fail where the recording did
// not; then the bundle is left as it was.
func TestRebaseRefusesNewFailures(t *testing.T) {
	ctx := t.Context()
	dir := record(t, "testdata/mut", hub{}, 0)
	before, err := os.ReadFile(filepath.Join(dir, "journal.cbor"))
	if err != nil {
		t.Fatal(err)
	}
	rebase := func(h hub) error {
		reg := reducer.NewRegistry()
		reg.MustRegister("mut/Hub@1", h)
		b, err := replay.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		return replay.Rebase(ctx, b, reg)
	}
	err = rebase(hub{fail: true})
	if err == nil || !strings.Contains(err.Error(), "has a ReducerError the recording does not") || !strings.Contains(err.Error(), "record the session again") {
		t.Fatalf("rebase with a failing reducer: %v; want it refused", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "journal.cbor")); string(after) != string(before) {
		t.Fatal("a refused rebase changed the bundle")
	}
	if err := rebase(hub{countBy: 2}); err != nil {
		t.Fatalf("rebase with a changed state: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "journal.cbor")); string(after) == string(before) {
		t.Fatal("the rebase did not rewrite the journal")
	}
}

// countingPutter counts the blobs put through it.
type countingPutter struct {
	cas.Putter
	n int
}

func (p *countingPutter) Put(ctx context.Context, b []byte) (cas.Ref, error) {
	p.n++
	return p.Putter.Put(ctx, b)
}
