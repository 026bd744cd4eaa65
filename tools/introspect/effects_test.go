package introspect_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools/introspect"
	"github.com/demiurge-dev/demiurge/world"
)

// receiptOf runs an effect adapter with params given in AIR JSON,
// normalized against the effect's params schema as the world does.
func receiptOf(t *testing.T, v introspect.View, kind, params string) effects.Receipt {
	t.Helper()
	cat := v.Catalog()
	ef, ok := cat.EffectKind(kind)
	if !ok {
		t.Fatalf("no effect %s", kind)
	}
	p, err := schema.NormalizeJSON(cat, schema.RefType(ef.ParamsSchema), []byte(params))
	if err != nil {
		t.Fatalf("params %s: %v", params, err)
	}
	return call(t.Context(), introspect.Adapters(v, nil)[kind], kind, p)
}

// okPayload checks that a receipt is ok and that its payload is a
// canonical value of the effect's receipt schema, and returns it.
func okPayload(t *testing.T, v introspect.View, kind string, r effects.Receipt) *schema.Map {
	t.Helper()
	if r.Status != effects.StatusOK || r.AdapterID != "introspect" {
		t.Fatalf("%s: status %q, adapter %q, error %q", kind, r.Status, r.AdapterID, r.Error)
	}
	ef, _ := v.Catalog().EffectKind(kind)
	norm, err := schema.Normalize(v.Catalog(), schema.RefType(ef.ReceiptSchema), r.Payload)
	if err != nil {
		t.Fatalf("%s: receipt does not fit %s: %v", kind, ef.ReceiptSchema, err)
	}
	if !schema.Equal(norm, r.Payload) {
		t.Errorf("%s: receipt is not canonical:\n got %s\nnorm %s", kind, schema.String(r.Payload), schema.String(norm))
	}
	return r.Payload.(*schema.Map)
}

func member(v schema.Value, path ...string) schema.Value {
	for _, p := range path {
		m, _ := v.(*schema.Map)
		v, _ = m.Get(p)
	}
	return v
}

// stampAt returns the logical time of the input record at seq.
func stampAt(t *testing.T, v introspect.View, seq uint64) uint64 {
	t.Helper()
	var out uint64
	err := v.Journal().Read(t.Context(), v.Name(), seq, func(r journal.Record) error {
		in, err := world.DecodeInput(r)
		if err != nil {
			return err
		}
		out = in.Stamp.LogicalNowNS
		return errDone
	})
	if err != nil && err != errDone {
		t.Fatal(err)
	}
	return out
}

var errDone = context.Canceled

func TestEffectsOnCounter(t *testing.T) {
	_, v, heads := counterWorld(t)
	cat := v.Catalog()
	manifest := cat.ManifestRef().String()
	wantMeta := func(h uint64) string {
		return schema.String(introspect.ReadMeta{Height: h, Manifest: cat.ManifestRef()}.Value())
	}
	encode := func(js string) []byte {
		st, err := schema.NormalizeJSON(cat, schema.RefType("counter/State@1"), []byte(js))
		if err != nil {
			t.Fatal(err)
		}
		b, err := schema.Encode(st)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	p := okPayload(t, v, introspect.EffectManifest, receiptOf(t, v, introspect.EffectManifest, `{"consistency": "head"}`))
	node, _ := cat.Node(cat.ManifestRef())
	if got := member(p, "manifest").([]byte); !bytes.Equal(got, node) || cas.Sum(got).String() != manifest {
		t.Errorf("manifest bytes are not the manifest node")
	}
	if got := schema.String(member(p, "meta")); got != wantMeta(9) {
		t.Errorf("meta %s; want %s", got, wantMeta(9))
	}
	p = okPayload(t, v, introspect.EffectManifest, receiptOf(t, v, introspect.EffectManifest, `{"consistency": "exact:3"}`))
	if got := schema.String(member(p, "meta")); got != wantMeta(3) {
		t.Errorf("exact:3 meta %s", got)
	}

	for _, tc := range []struct {
		params string
		state  []byte // nil: none
		height uint64
	}{
		{`{"reducer": "counter/Counter@1", "key": null, "consistency": "head"}`, encode(`{"pc": "Done", "remaining": 0}`), 9},
		{`{"reducer": "counter/Counter@1", "key": null, "consistency": "exact:5"}`, encode(`{"pc": "Counting", "remaining": 2}`), 5},
		{`{"reducer": "counter/Counter@1", "key": null, "consistency": "exact:9"}`, encode(`{"pc": "Done", "remaining": 0}`), 9},
		{`{"reducer": "counter/Counter@1", "key": null, "consistency": "exact:2"}`, nil, 2},
		{`{"reducer": "counter/Counter@1", "key": null, "consistency": "at_least:4"}`, encode(`{"pc": "Done", "remaining": 0}`), 9},
		// AgentOS gives a reducer that is not keyed the empty key.
		{`{"reducer": "counter/Counter@1", "key": "", "consistency": "head"}`, encode(`{"pc": "Done", "remaining": 0}`), 9},
	} {
		p := okPayload(t, v, introspect.EffectReducerState, receiptOf(t, v, introspect.EffectReducerState, tc.params))
		got, _ := member(p, "state").([]byte)
		if !bytes.Equal(got, tc.state) {
			t.Errorf("%s: state %x; want %x", tc.params, got, tc.state)
		}
		if got := schema.String(member(p, "meta")); got != wantMeta(tc.height) {
			t.Errorf("%s: meta %s; want %s", tc.params, got, wantMeta(tc.height))
		}
	}

	p = okPayload(t, v, introspect.EffectJournalHead, receiptOf(t, v, introspect.EffectJournalHead, `{}`))
	if got := schema.String(member(p, "meta")); got != wantMeta(heads[len(heads)-1].Seq) {
		t.Errorf("journal head meta %s", got)
	}

	p = okPayload(t, v, introspect.EffectListCells, receiptOf(t, v, introspect.EffectListCells, `{"reducer": "counter/Counter@1"}`))
	cells := member(p, "cells").([]schema.Value)
	done := encode(`{"pc": "Done", "remaining": 0}`)
	want := schema.Record("key", []byte{}, "state_hash", cas.Sum(done).String(), "size", uint64(len(done)),
		"last_active_ns", stampAt(t, v, 8))
	if len(cells) != 1 || !schema.Equal(cells[0], want) {
		t.Errorf("cells %s; want [%s]", schema.String(cells), schema.String(want))
	}
}

func TestEffectsOnKeyedReducer(t *testing.T) {
	v := keyedRun(t)
	key := func(s string) []byte {
		b, err := schema.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	p := okPayload(t, v, introspect.EffectListCells, receiptOf(t, v, introspect.EffectListCells, `{"reducer": "probe/Sum@1"}`))
	cells := member(p, "cells").([]schema.Value)
	if len(cells) != 1 {
		t.Fatalf("cells %s; want the one of key a", schema.String(cells))
	}
	if got := member(cells[0], "key"); !bytes.Equal(got.([]byte), key("a")) {
		t.Errorf("key %x; want %x", got, key("a"))
	}
	if got, want := member(cells[0], "last_active_ns"), stampAt(t, v, 6); got != want {
		t.Errorf("last_active_ns %v; want %d, the stamp of the last Add to a", got, want)
	}
	if got := member(p, "meta", "journal_height"); got != uint64(9) {
		t.Errorf("meta height %v", got)
	}
	for _, tc := range []struct {
		params string
		total  any // nil: no state
	}{
		{`{"reducer": "probe/Sum@1", "key": "` + b64(key("a")) + `", "consistency": "head"}`, uint64(6)},
		{`{"reducer": "probe/Sum@1", "key": "` + b64(key("b")) + `", "consistency": "exact:5"}`, uint64(3)},
		{`{"reducer": "probe/Sum@1", "key": "` + b64(key("b")) + `", "consistency": "head"}`, nil},
		// The key without its self-describe prefix decodes too.
		{`{"reducer": "probe/Sum@1", "key": "` + b64(key("a")[3:]) + `", "consistency": "exact:3"}`, uint64(2)},
	} {
		p := okPayload(t, v, introspect.EffectReducerState, receiptOf(t, v, introspect.EffectReducerState, tc.params))
		b, _ := member(p, "state").([]byte)
		var total any
		if b != nil {
			st, err := schema.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			total = member(st, "total")
		}
		if total != tc.total {
			t.Errorf("%s: total %v; want %v", tc.params, total, tc.total)
		}
	}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func TestEffectErrors(t *testing.T) {
	v := keyedRun(t)
	nat, _ := schema.Encode(uint64(5))
	for _, tc := range []struct{ kind, params, msg string }{
		{introspect.EffectManifest, `{"consistency": "latest"}`, `introspect.manifest: bad consistency "latest": want "head", "exact:<height>" or "at_least:<height>"`},
		{introspect.EffectManifest, `{"consistency": "exact:10"}`, "introspect.manifest: exact:10 is above the journal head 9"},
		{introspect.EffectReducerState, `{"reducer": "probe/Nope@1", "key": null, "consistency": "head"}`,
			`introspect.reducer_state: unknown reducer "probe/Nope@1"; the world's reducers are: probe/Count@1, probe/Sum@1, sys/HttpPublish@1, sys/Workspace@1`},
		{introspect.EffectReducerState, `{"reducer": "probe/Sum@1", "key": null, "consistency": "head"}`,
			"reducer probe/Sum@1 is keyed by probe/Key@1: key needs the canonical CBOR of a key"},
		{introspect.EffectReducerState, `{"reducer": "probe/Sum@1", "key": "/w==", "consistency": "head"}`, "key is not canonical CBOR"},
		{introspect.EffectReducerState, `{"reducer": "probe/Sum@1", "key": "` + b64(nat) + `", "consistency": "head"}`, "the key does not fit probe/Key@1, the key schema of probe/Sum@1"},
		{introspect.EffectReducerState, `{"reducer": "probe/Count@1", "key": "` + b64(nat) + `", "consistency": "head"}`, "reducer probe/Count@1 is not keyed"},
		{introspect.EffectReducerState, `{"reducer": "probe/Sum@1", "key": "` + b64(nat) + `", "consistency": "exact"}`, "bad consistency"},
		{introspect.EffectListCells, `{"reducer": "sys/CapEnforceMcp@1"}`, "sys/CapEnforceMcp@1 is a pure module, not a reducer"},
	} {
		r := receiptOf(t, v, tc.kind, tc.params)
		if r.Status != effects.StatusError || r.AdapterID != "introspect" || !strings.Contains(r.Error, tc.msg) {
			t.Errorf("%s %s: status %q, adapter %q, error %q; want an error receipt containing %q", tc.kind, tc.params, r.Status, r.AdapterID, r.Error, tc.msg)
		}
	}
}
