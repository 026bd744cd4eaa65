package world_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/builtin"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// keyedEcho is the reducer of testdata/keyedecho: a keyed blob echo. Start
// stores its data with blob.put; the put's receipt (sys/BlobPutResult@1)
// asks for it back with blob.get; the get's receipt (sys/BlobGetResult@1)
// keeps what came back. The manifest routes both receipts to the reducer
// without a key_field: each must come back to the cell that emitted its
// effect, which the reducer checks against the refs it asked for.
type keyedEcho struct{}

type echoState struct {
	Data   []byte   `cbor:"data"`
	Stored *cas.Ref `cbor:"stored"`
	Echoed []byte   `cbor:"echoed"`
}

type blobResult struct {
	Status    string `cbor:"status"`
	Requested struct {
		BlobRef cas.Ref `cbor:"blob_ref"`
	} `cbor:"requested"`
	Receipt struct {
		BlobRef cas.Ref `cbor:"blob_ref"`
		Bytes   []byte  `cbor:"bytes"`
	} `cbor:"receipt"`
}

func (keyedEcho) Step(c *reducer.Context, state, event schema.Value) (reducer.Output, error) {
	var st echoState
	if err := reducer.StateToGo(state, &st); err != nil {
		return reducer.Output{}, err
	}
	tag, v, _ := event.(*schema.Map).VariantTag()
	switch tag {
	case "Start":
		var start struct {
			Key  string `cbor:"key"`
			Data []byte `cbor:"data"`
		}
		if err := reducer.ToGo(v, &start); err != nil {
			return reducer.Output{}, err
		}
		st = echoState{Data: start.Data}
		params := schema.Record("blob_ref", cas.Sum(start.Data).String(), "bytes", start.Data)
		out, err := reducer.FromGo(st)
		return reducer.Output{State: out, Effects: []reducer.Effect{{Kind: "blob.put", Params: params}}}, err
	case "PutResult", "GetResult":
		var r blobResult
		if err := reducer.ToGo(v, &r); err != nil {
			return reducer.Output{}, err
		}
		// A receipt for another cell's blob would show here.
		want := cas.Sum(st.Data)
		if r.Status != "ok" || r.Requested.BlobRef != want || r.Receipt.BlobRef != want {
			return reducer.Output{}, fmt.Errorf("cell %v: %s for blob %s (status %s); this cell stores %s", c.Key, tag, r.Requested.BlobRef.Short(), r.Status, want.Short())
		}
		var effs []reducer.Effect
		if tag == "PutResult" {
			st.Stored = &r.Receipt.BlobRef
			effs = append(effs, reducer.Effect{Kind: "blob.get", Params: schema.Record("blob_ref", want.String())})
		} else {
			st.Echoed = r.Receipt.Bytes
		}
		out, err := reducer.FromGo(st)
		return reducer.Output{State: out, Effects: effs}, err
	}
	return reducer.Output{}, fmt.Errorf("unexpected event %s", schema.String(event))
}

// TestReceiptRoutesWithoutKeyField: testdata/keyedecho routes
// sys/BlobPutResult@1 and sys/BlobGetResult@1 to a keyed reducer without a
// key_field, as AgentOS's own demiurge app does. It validates, and each
// receipt reaches the cell that emitted its effect: two cells echo at once,
// each gets its own blob back, no reducer error, and replay agrees.
func TestReceiptRoutesWithoutKeyField(t *testing.T) {
	ctx := t.Context()
	reg := reducer.NewRegistry()
	reg.MustRegister("echo/Echo@1", keyedEcho{})
	cat, err := schema.Load("testdata/keyedecho", &schema.LoadOptions{Reducers: reg.Names()})
	if err != nil {
		t.Fatalf("load:\n%v", err)
	}
	for _, w := range cat.Warnings {
		t.Errorf("warning: %v", w)
	}
	st := world.NewMemoryStorage()
	w, err := world.Open(ctx, world.Options{Name: "echo", Catalog: cat, Reducers: reg, Storage: st,
		Adapters: map[string]effects.Adapter{"blob.put": effects.AdapterFunc(builtin.BlobPut), "blob.get": effects.AdapterFunc(builtin.BlobGet)},
		Now:      fixedClock(1_700_000_000_000_000_000), Entropy: zeroReader{}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	data := map[string]string{"a": "alpha", "b": "beta"}
	for _, k := range []string{"a", "b"} {
		ev := fmt.Sprintf(`{"Start": {"key": %q, "data": %q}}`, k, base64.StdEncoding.EncodeToString([]byte(data[k])))
		if _, err := w.SendJSON(ctx, "echo/Event@1", []byte(ev)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	for k, want := range data {
		v, _, ok := w.State("echo/Echo@1", k)
		if !ok {
			t.Fatalf("no cell %s", k)
		}
		var got echoState
		if err := reducer.ToGo(v, &got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Echoed, []byte(want)) || got.Stored == nil || *got.Stored != cas.Sum([]byte(want)) {
			t.Errorf("cell %s: %s; want %q stored and echoed", k, schema.String(v), want)
		}
	}
	if ks := kinds(t, st, "echo"); strings.Contains(ks, world.KindReducerError) || strings.Count(ks, world.KindReceipt) != 4 {
		t.Errorf("journal: %s; want 4 receipts, no reducer error", ks)
	}
	w.Close()
	if _, err := world.Rerun(ctx, world.RerunOptions{Name: "echo", Catalog: cat, Reducers: reg, Storage: st, FromGenesis: true}); err != nil {
		t.Errorf("replay: %v", err)
	}
}
