package introspect_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/toolcall"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/introspect"
	"github.com/demiurge-dev/demiurge/world"
	"github.com/demiurge-dev/demiurge/world/worldview"
)

// TestPlanRunsIntrospectEffects runs the probe plan in a world: it emits
// introspect.manifest, introspect.journal_head, introspect.reducer_state,
// introspect.list_cells and introspect.call (introspect_state through
// adapters/toolcall), and raises what it learnt back to a reducer. Every
// receipt must fit its schema (the world rejects those that do not) and
// the journal must replay.
func TestPlanRunsIntrospectEffects(t *testing.T) {
	p := newProbe(t)
	send(t, p.w, "probe/Add@1", `{"id": "a", "n": 2, "note": null}`)
	send(t, p.w, "probe/Add@1", `{"id": "b", "n": 3, "note": null}`)
	send(t, p.w, "probe/Ping@1", `{"id": "p"}`)
	if err := p.w.WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
	var receipts []*world.Input
	err := p.st.Journal().Read(t.Context(), "probe", 1, func(r journal.Record) error {
		switch r.Kind {
		case world.KindRejected, world.KindReducerError, world.KindDenied:
			v, _ := schema.Decode(r.Payload)
			t.Errorf("record %d is %s: %s", r.Seq, r.Kind, schema.String(v))
		case world.KindPlanEnded:
			v, _ := schema.Decode(r.Payload)
			if member(v, "status") != "ok" {
				t.Errorf("plan ended: %s", schema.String(v))
			}
		case world.KindReceipt:
			in, err := world.DecodeInput(r)
			if err != nil {
				return err
			}
			receipts = append(receipts, in)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(receipts) != 5 {
		t.Fatalf("%d receipts; want 5", len(receipts))
	}
	var headSeen uint64
	for _, in := range receipts {
		if in.Status != effects.StatusOK {
			t.Errorf("receipt %s: %s %s", in.AdapterID, in.Status, in.Error)
		}
		if m, ok := in.Payload.(*schema.Map); ok && m.Len() == 1 {
			headSeen = member(m, "meta", "journal_height").(uint64)
		}
	}
	// The plan raised Add{id: p, n: the height journal_head saw, note: the
	// introspect_state answer}.
	_, r := run(t, p.v, introspect.ToolState, `{"reducer": "probe/Sum@1", "key": "p"}`)
	out := decode(t, r.Stdout)
	if got := get(out, "state", "total"); got != float64(headSeen) || headSeen == 0 {
		t.Errorf("total %v; want the journal height the plan saw, %d", got, headSeen)
	}
	note, _ := get(out, "state", "notes", 0).(string)
	listing := decode(t, note)
	if got := jsonOf(t, []any{get(listing, "cells", 0, "key"), get(listing, "cells", 1, "key"), listing["count"]}); got != `["a","b",2]` {
		t.Errorf("the tool call's answer lists %s; want a, b: %s", got, note)
	}
	if _, err := world.Rerun(t.Context(), world.RerunOptions{Name: "probe", Catalog: p.cat, Reducers: p.reg, Storage: p.st, FromGenesis: true}); err != nil {
		t.Errorf("replay: %v", err)
	}
}

// TestToolCallAdapter runs the tools as introspect.call effects through
// adapters/toolcall: the receipt is a sys/ToolResponse@1.
func TestToolCallAdapter(t *testing.T) {
	_, v, _ := counterWorld(t)
	a := toolcall.New(introspect.Tools(v, nil)...)
	cat, err := schema.Load("testdata/probe", nil) // it lists sys/ToolResponse@1
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool, args string
		exit       int64
		errv       any
		stdout     string // a substring
		stderr     string // a substring
	}{
		{introspect.ToolState, `{"reducer": "counter/Counter@1", "consistency": "exact:7"}`, 0, nil,
			`"state":{"pc":{"$tag":"Counting"},"remaining":1}`, ""},
		{introspect.ToolJournalHead, ``, 0, nil, `"height":9`, ""},
		{introspect.ToolState, `{"reducer": 7}`, 1, "invalid_arguments", "", "arguments.reducer: got number, want string"},
		{introspect.ToolModule, `{"name": "x"}`, 1, "not_found", "", `unknown defmodule "x"`},
		{"introspect_nothing", `{}`, 127, "unknown_tool", "", "unknown tool introspect_nothing"},
	} {
		r := a.Run(t.Context(), &effects.Call{Intent: &effects.Intent{Kind: "introspect.call"},
			Params: schema.Record("tool", tc.tool, "arguments_json", tc.args)})
		if r.Status != effects.StatusOK {
			t.Fatalf("%s: receipt %+v", tc.tool, r)
		}
		norm, err := schema.Normalize(cat, schema.RefType("sys/ToolResponse@1"), r.Payload)
		if err != nil {
			t.Fatalf("%s: receipt does not fit sys/ToolResponse@1: %v", tc.tool, err)
		}
		code, _ := schema.AsInt64(member(norm, "exit_code"))
		stdout, _ := member(norm, "stdout").(string)
		stderr, _ := member(norm, "stderr").(string)
		if code != tc.exit || member(norm, "error") != tc.errv || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%s %s: exit %d, error %v, stdout %q, stderr %q", tc.tool, tc.args, code, member(norm, "error"), stdout, stderr)
		}
		if tc.exit == 0 && !json.Valid([]byte(stdout)) {
			t.Errorf("%s: stdout is not JSON: %s", tc.tool, stdout)
		}
	}
}

// TestConcurrentReads reads the counter's state while inputs commit: each
// read's state must be the one of the height it reports.
func TestConcurrentReads(t *testing.T) {
	w, v, _ := counterWorld(t)
	// After counterWorld the head is 9. Start{200} lands at 10 (State 11);
	// each Tick adds two records.
	send(t, w, "counter/Event@1", `{"Start": {"target": 200}}`)
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 100 {
			if _, err := w.SendJSON(t.Context(), "counter/Event@1", []byte(`"Tick"`)); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range 4 {
		wg.Go(func() {
			tl := toolNamed(t, v, introspect.ToolState)
			for range 100 {
				r := tl.Run(t.Context(), tools.Request{Arguments: []byte(`{"reducer": "counter/Counter@1"}`)}, nil)
				var out struct {
					State struct{ Remaining uint64 } `json:"state"`
					Meta  struct {
						Height uint64 `json:"journal_height"`
					} `json:"meta"`
				}
				if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
					t.Errorf("%v: %+v", err, r)
					return
				}
				if want := 200 - (out.Meta.Height-11)/2; out.State.Remaining != want || out.Meta.Height%2 == 0 {
					t.Errorf("at height %d the state says remaining %d; want %d", out.Meta.Height, out.State.Remaining, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestAtLeast waits for the head in a bubble whose clock is fake.
func TestAtLeast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, v, _ := counterWorld(t) // head 9
		state := toolNamed(t, v, introspect.ToolState)
		// A Start arrives after a second (records 10 and 11): at_least:11
		// waits for it.
		go func() {
			time.Sleep(time.Second)
			if _, err := w.SendJSON(context.Background(), "counter/Event@1", []byte(`{"Start": {"target": 2}}`)); err != nil {
				t.Error(err)
			}
		}()
		start := time.Now()
		r := state.Run(t.Context(), tools.Request{Arguments: []byte(`{"reducer": "counter/Counter@1", "consistency": "at_least:11"}`)}, nil)
		out := checkOutput(t, state, r)
		if got := get(out, "meta", "journal_height"); got != float64(11) {
			t.Errorf("at_least:11 answered at height %v", got)
		}
		if waited := time.Since(start); waited < time.Second || waited > time.Second+50*time.Millisecond {
			t.Errorf("waited %v; want about 1s", waited)
		}
		// Nothing more arrives: at_least:13 gives up after MaxWait.
		start = time.Now()
		r = state.Run(t.Context(), tools.Request{Arguments: []byte(`{"reducer": "counter/Counter@1", "consistency": "at_least:13"}`)}, nil)
		if r.ExitCode != 1 || r.Error != introspect.ErrorUnavailable ||
			!strings.Contains(r.Stderr, "at_least:13: the journal head is 11 and did not reach 13 within 5s") {
			t.Errorf("at_least:13: %+v", r)
		}
		if waited := time.Since(start); waited != introspect.DefaultMaxWait {
			t.Errorf("gave up after %v; want %v", waited, introspect.DefaultMaxWait)
		}
		// The call's own time limit ends the wait sooner: a timeout.
		r = state.Run(t.Context(), tools.Request{TimeoutMS: 200, Arguments: []byte(`{"reducer": "counter/Counter@1", "consistency": "at_least:13"}`)}, nil)
		if r.ExitCode != 124 || r.Error != introspect.ErrorTimeout || !strings.Contains(r.Stderr, "the journal head was 11 when the call ended") {
			t.Errorf("at_least:13 with a 200 ms limit: %+v", r)
		}
		// MaxWait < 0 fails at once.
		var noWait tools.Tool
		for _, tl := range introspect.Tools(v, &introspect.Options{MaxWait: -1}) {
			if tl.Info().Name == introspect.ToolManifest {
				noWait = tl
			}
		}
		start = time.Now()
		r = noWait.Run(t.Context(), tools.Request{Arguments: []byte(`{"consistency": "at_least:12"}`)}, nil)
		if r.Error != introspect.ErrorUnavailable || !strings.Contains(r.Stderr, "at_least:12: the journal head is 11") || time.Since(start) != 0 {
			t.Errorf("at_least:12 without waiting: %+v after %v", r, time.Since(start))
		}
		w.Close()
	})
}

func TestCancelled(t *testing.T) {
	_, v, _ := counterWorld(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := toolNamed(t, v, introspect.ToolJournalHead).Run(ctx, tools.Request{}, nil)
	if r.ExitCode != 130 || r.Error != introspect.ErrorCancelled {
		t.Errorf("cancelled call: %+v", r)
	}
}

// TestWorldViewBeforeAttach: reads made before the world is attached wait
// for it, until their ctx ends.
func TestWorldViewBeforeAttach(t *testing.T) {
	w, _, _ := counterWorld(t)
	v := worldview.New(w.Name(), w.Catalog(), w.Storage())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if _, err := v.Head(ctx); err == nil || !strings.Contains(err.Error(), "the world is not open yet") {
		t.Errorf("Head before Attach: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		h, err := v.Head(t.Context())
		if err == nil && h.Height != 9 {
			err = errors.New("wrong head")
		}
		got <- err
	}()
	v.Attach(w)
	if err := <-got; err != nil {
		t.Errorf("Head waiting for Attach: %v", err)
	}
	if h, err := worldview.Of(w).Head(t.Context()); err != nil || h.Manifest != w.Catalog().ManifestRef() {
		t.Errorf("worldview.Of(w).Head() = %+v, %v", h, err)
	}
}

// TestManifestHistory reopens a world with a changed manifest: exact reads
// before the change show the old manifest and its defs, read from CAS.
func TestManifestHistory(t *testing.T) {
	st := world.NewMemoryStorage()
	p := newProbe(t)
	oldCat := p.cat
	open := func(cat *schema.Catalog) *world.World {
		w, err := world.Open(t.Context(), world.Options{Name: "h", Catalog: cat, Reducers: p.reg, Storage: st,
			Now: stepClock(), Entropy: zeroEntropy{}, SnapshotEvery: -1})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	w := open(oldCat)
	send(t, w, "probe/Add@1", `{"id": "a", "n": 1, "note": null}`) // 2, 3
	w.Close()
	// The new manifest adds a schema.
	var srcs []schema.Source
	for _, s := range oldCat.Sources() {
		if strings.HasSuffix(s.Name, "manifest.air.json") {
			s.Data = []byte(strings.Replace(string(s.Data), `{"name": "probe/Key@1"},`, `{"name": "probe/Key@1"}, {"name": "probe/Extra@1"},`, 1))
		}
		srcs = append(srcs, s)
	}
	srcs = append(srcs, schema.Source{Name: "extra.air.json", Data: []byte(`{"$kind": "defschema", "name": "probe/Extra@1", "type": {"bool": {}}}`)})
	newCat, err := schema.LoadSources(srcs, nil)
	if err != nil {
		t.Fatal(err)
	}
	w = open(newCat) // 4: Manifest
	defer w.Close()
	send(t, w, "probe/Add@1", `{"id": "a", "n": 1, "note": null}`) // 5, 6
	v := worldview.Of(w)
	if oldCat.ManifestRef() == newCat.ManifestRef() {
		t.Fatal("the manifests are the same")
	}
	for _, tc := range []struct {
		args     string
		manifest string
		extra    bool
	}{
		{`{"consistency": "exact:3"}`, oldCat.ManifestRef().String(), false},
		{`{"consistency": "exact:4"}`, newCat.ManifestRef().String(), true},
		{`{}`, newCat.ManifestRef().String(), true},
	} {
		tl, r := run(t, v, introspect.ToolManifest, tc.args)
		out := checkOutput(t, tl, r)
		if out["manifest_hash"] != tc.manifest || get(out, "meta", "manifest_hash") != tc.manifest {
			t.Errorf("%s: manifest %v, meta %v; want %s", tc.args, out["manifest_hash"], get(out, "meta", "manifest_hash"), tc.manifest)
		}
		if got := get(out, "schemas", 1, "name") == "probe/Extra@1"; got != tc.extra {
			t.Errorf("%s: lists probe/Extra@1: %v; want %v", tc.args, got, tc.extra)
		}
	}
	_, r := run(t, v, introspect.ToolSchemas, `{"names": ["probe/Extra@1"], "consistency": "exact:3"}`)
	if r.Error != introspect.ErrorNotFound || !strings.Contains(r.Stderr, `unknown defschema "probe/Extra@1"`) {
		t.Errorf("probe/Extra@1 before it existed: %+v", r)
	}
	tl, r := run(t, v, introspect.ToolSchemas, `{"names": ["probe/Extra@1"], "consistency": "exact:4"}`)
	if out := checkOutput(t, tl, r); jsonOf(t, get(out, "schemas", 0, "type")) != `{"bool":{}}` {
		t.Errorf("probe/Extra@1 at 4: %s", r.Stdout)
	}
	tl, r = run(t, v, introspect.ToolState, `{"reducer": "probe/Sum@1", "key": "a", "consistency": "exact:3"}`)
	if out := checkOutput(t, tl, r); get(out, "meta", "manifest_hash") != oldCat.ManifestRef().String() || get(out, "state", "total") != float64(1) {
		t.Errorf("state at 3: %s", r.Stdout)
	}
}

// TestRunsInline: the introspect tools and effects run inside the world's
// step that asks for them, but for at_least:<h> above the head, which
// must wait for the world to move on.
func TestRunsInline(t *testing.T) {
	_, v, _ := counterWorld(t) // head 9
	tc := toolcall.New(introspect.Tools(v, nil)...)
	for _, c := range []struct {
		tool, args string
		want       bool
	}{
		{introspect.ToolState, `{"reducer": "counter/Counter@1"}`, true},
		{introspect.ToolState, `{"reducer": "counter/Counter@1", "consistency": "exact:3"}`, true},
		{introspect.ToolState, `{"reducer": "counter/Counter@1", "consistency": "at_least:9"}`, true},
		{introspect.ToolState, `{"reducer": "counter/Counter@1", "consistency": "at_least:10"}`, false},
		{introspect.ToolManifest, `{"consistency": "at_least:10"}`, false},
		{introspect.ToolState, `{not json`, true},
		{introspect.ToolState, `{"consistency": "sometime"}`, true},
		{"introspect_nothing", `{}`, true},
	} {
		call := &effects.Call{Intent: &effects.Intent{Kind: "introspect.call"}, Params: schema.Record("tool", c.tool, "arguments_json", c.args)}
		if got := tc.RunsInline(t.Context(), call); got != c.want {
			t.Errorf("toolcall %s %s: RunsInline %v; want %v", c.tool, c.args, got, c.want)
		}
	}
	head, ok := introspect.Adapters(v, nil)[introspect.EffectJournalHead].(effects.InlineAdapter)
	if !ok {
		t.Fatalf("the %s adapter is not an effects.InlineAdapter", introspect.EffectJournalHead)
	}
	for cons, want := range map[string]bool{"head": true, "at_least:9": true, "at_least:10": false} {
		if got := head.RunsInline(t.Context(), &effects.Call{Params: schema.Record("consistency", cons)}); got != want {
			t.Errorf("%s %s: RunsInline %v; want %v", introspect.EffectJournalHead, cons, got, want)
		}
	}
}

// TestPlanEffectsRunInline: the probe plan's five introspect effects run
// inside the step of the Ping that starts it, so the plan has ended when
// Send returns, and their reads match the journal as committed.
func TestPlanEffectsRunInline(t *testing.T) {
	t.Run("same storage", func(t *testing.T) { testPlanEffectsRunInline(t, newProbe(t)) })
	// A view made with the storage the world's wraps still recognises
	// the world's step (it once read through the world's lock instead,
	// which the step holds: a deadlock).
	t.Run("wrapped storage", func(t *testing.T) {
		testPlanEffectsRunInline(t, newProbeWith(t, func(st world.Storage) world.Storage { return wrapped{st} }))
	})
}

// wrapped is a Storage that is not the one it wraps.
type wrapped struct{ world.Storage }

func testPlanEffectsRunInline(t *testing.T, p *probe) {
	send(t, p.w, "probe/Add@1", `{"id": "a", "n": 2, "note": null}`)
	head := send(t, p.w, "probe/Ping@1", `{"id": "p"}`)
	var kinds []string
	var heights []uint64
	err := p.st.Journal().Read(t.Context(), "probe", 1, func(r journal.Record) error {
		kinds = append(kinds, r.Kind)
		if r.Kind == world.KindReceipt {
			in, err := world.DecodeInput(r)
			if err != nil {
				return err
			}
			if m, ok := in.Payload.(*schema.Map); ok && m.Len() == 1 {
				heights = append(heights, member(m, "meta", "journal_height").(uint64))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if kinds[len(kinds)-1] != world.KindState || !slices.Contains(kinds, world.KindPlanEnded) || head.Seq != uint64(len(kinds)) {
		t.Fatalf("after Send returned (head %d) the journal is %v; want the plan ended", head.Seq, kinds)
	}
	// journal_head ran right after its intent: the height it saw is the
	// intent's record.
	if len(heights) != 1 || kinds[heights[0]-1] != world.KindIntent {
		t.Errorf("journal_head saw heights %v in %v; want the seq of its intent", heights, kinds)
	}
}
