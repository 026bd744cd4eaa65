package blobecho

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/examples/internal/exampletest"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

var (
	first  = []byte("hello, blob echo")
	second = []byte("and once more, with \x00 bytes \xff that are not text")
)

func start(data []byte) string {
	return fmt.Sprintf(`{"Start": {"data": %q}}`, base64.StdEncoding.EncodeToString(data))
}

// TestBlobEcho is AgentOS's 02-blob-echo, twice: each Start stores its
// bytes with blob.put through the built-in blob adapter, reads them back
// with blob.get, and the reducer finds that they hash to the stored ref.
func TestBlobEcho(t *testing.T) {
	if err := gatePanics(t); err != nil {
		// The world would panic on its own goroutine and take the whole
		// test binary down; report the kernel bug instead.
		t.Fatalf("cannot run the world: %v", err)
	}
	ref := cas.Sum(second).String()
	exampletest.Case{
		World: "blob-echo", Dir: ".", Register: Register,
		Drive: func(t *testing.T, open func(world.Options) *world.World) {
			w := open(world.Options{})
			exampletest.Send(t, w, EventSchema, start(first))
			exampletest.WaitIdle(t, w)
			exampletest.Send(t, w, EventSchema, start(second))
		},
		Check: func(t *testing.T, m *world.Machine, recs []exampletest.Record) {
			want := fmt.Sprintf(`{"pc":{"$tag":"Done"},"error":null,"data_ok":true,"retrieved_size":%d,"stored_blob_ref":%q,"pending_blob_ref":%q,"retrieved_blob_ref":%q,"retrieved_blob_hash":%q}`,
				len(second), ref, ref, ref, ref)
			if got := exampletest.State(m, ModuleName, nil); got != want {
				t.Errorf("state = %s\nwant    %s", got, want)
			}
			var kinds []any
			for _, in := range exampletest.Select(recs, world.KindIntent) {
				kinds = append(kinds, in.Get("kind"), in.Get("params", "blob_ref"))
			}
			wantKinds := []any{
				"blob.put", cas.Sum(first).String(), "blob.get", cas.Sum(first).String(),
				"blob.put", ref, "blob.get", ref,
			}
			if fmt.Sprint(kinds) != fmt.Sprint(wantKinds) {
				t.Errorf("intents = %v; want %v", kinds, wantKinds)
			}
			var echoed [][]byte
			for _, ev := range exampletest.Select(recs, world.KindRaised) {
				if ev.Get("schema") == "sys/BlobGetResult@1" {
					b, _ := ev.Get("value", "receipt", "bytes").([]byte)
					echoed = append(echoed, b)
				}
			}
			if len(echoed) != 2 || !bytes.Equal(echoed[0], first) || !bytes.Equal(echoed[1], second) {
				t.Errorf("blob.get returned %q; want %q, %q", echoed, first, second)
			}
		},
	}.Run(t)
}

// gatePanics decides one blob.put as the world does and returns the panic
// it raises, if any.
func gatePanics(t *testing.T) (err error) {
	c, _ := exampletest.Load(t, ".", Register)
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("kernel bug: effects.Gate.Check panics on blob.put params (a record with a bytes field): %v", p)
		}
	}()
	d := effects.NewGate(c).Check(effects.Request{
		Kind: "blob.put", Grant: "blob_grant",
		Params: schema.Record("blob_ref", cas.Sum(first).String(), "bytes", first),
		Origin: effects.Origin{Kind: "reducer", Name: ModuleName},
	})
	if !d.Allowed {
		return fmt.Errorf("blob.put denied at %s: %s", d.Stage, d.Reason)
	}
	return nil
}

// TestGateTakesBytesParams keeps a fixed kernel bug fixed: effects'
// secret search compared field values with != (gate.go), which panicked at
// run time when the field held a []byte (or a list: []schema.Value), so
// deciding any blob.put (any effect whose params have a bytes or list
// field) panicked the world's goroutine instead of allowing it.
func TestGateTakesBytesParams(t *testing.T) {
	if err := gatePanics(t); err != nil {
		t.Error(err)
	}
}

// result builds a sys/Blob{Put,Get}Result@1 event as the world delivers it.
func result(arm, status, requested, got string, data []byte) schema.Value {
	receipt := schema.Record("blob_ref", got, "size", uint64(len(data)))
	req := schema.Record("blob_ref", requested)
	if arm == "GetResult" {
		receipt = receipt.With("bytes", data)
	} else {
		req = req.With("bytes", data)
	}
	kind := map[string]string{"PutResult": "blob.put", "GetResult": "blob.get"}[arm]
	return schema.Variant(arm, schema.Record(
		"intent_hash", cas.Sum([]byte(arm)).String(), "reducer", ModuleName, "effect_kind", kind, "adapter_id", "blob",
		"status", status, "requested", req, "receipt", receipt,
		"cost_cents", nil, "signature", []byte{}))
}

func TestSteps(t *testing.T) {
	c, _ := exampletest.Load(t, ".", Register)
	data := []byte("abc")
	ref, other := cas.Sum(data).String(), cas.Sum([]byte("xyz")).String()
	startEv := schema.Variant("Start", schema.Record("data", data))
	put := result("PutResult", "ok", ref, ref, data)
	get := result("GetResult", "ok", ref, ref, data)
	for _, tc := range []struct {
		name    string
		events  []schema.Value
		pc      string
		dataOK  any // nil, true or false
		effects []string
	}{
		{"start", []schema.Value{startEv}, Putting, nil, []string{"blob.put"}},
		{"put", []schema.Value{startEv, put}, Getting, nil, []string{"blob.get"}},
		{"echo", []schema.Value{startEv, put, get}, Done, true, nil},
		{"echo of other bytes", []schema.Value{startEv, put, result("GetResult", "ok", ref, ref, []byte("xyz"))}, Done, false, nil},
		{"echo under another ref", []schema.Value{startEv, put, result("GetResult", "ok", ref, other, data)}, Done, false, nil},
		{"put failed", []schema.Value{startEv, result("PutResult", "error", ref, ref, nil)}, Failed, nil, nil},
		{"get timed out", []schema.Value{startEv, put, result("GetResult", "timeout", ref, ref, nil)}, Failed, nil, nil},
		{"stale put", []schema.Value{startEv, result("PutResult", "ok", other, other, data)}, Putting, nil, nil},
		{"stale get", []schema.Value{startEv, put, result("GetResult", "ok", other, other, data)}, Getting, nil, nil},
		{"get before put", []schema.Value{startEv, get}, Putting, nil, nil},
		{"start while putting", []schema.Value{startEv, schema.Variant("Start", schema.Record("data", []byte("new")))}, Putting, nil, nil},
		{"start after done", []schema.Value{startEv, put, get, startEv}, Putting, nil, []string{"blob.put"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var state schema.Value
			var out reducer.Output
			for _, ev := range tc.events {
				state, out = exampletest.Step(t, c, Reducer{}, &reducer.Context{Module: ModuleName}, state, ev)
			}
			if pc := exampletest.Field(state, "pc", "$tag"); pc != tc.pc {
				t.Errorf("pc = %v; want %s (state %s)", pc, tc.pc, schema.String(state))
			}
			if ok := exampletest.Field(state, "data_ok"); ok != tc.dataOK {
				t.Errorf("data_ok = %v; want %v", ok, tc.dataOK)
			}
			var kinds []string
			for _, e := range out.Effects {
				kinds = append(kinds, e.Kind)
				if got := exampletest.Field(e.Params, "blob_ref"); got != ref {
					t.Errorf("%s of %v; want %s", e.Kind, got, ref)
				}
			}
			if fmt.Sprint(kinds) != fmt.Sprint(tc.effects) {
				t.Errorf("effects %v; want %v", kinds, tc.effects)
			}
		})
	}
}

func TestBadEvents(t *testing.T) {
	for _, ev := range []schema.Value{
		[]byte("Start"),
		schema.Variant("Stop", nil),
		schema.Variant("Start", "data"),
		schema.Variant("PutResult", uint64(1)),
		schema.Variant("GetResult", schema.Record("receipt", "x")),
		schema.Variant("Start", nil),
	} {
		if _, err := (Reducer{}).Step(&reducer.Context{}, nil, ev); !errors.Is(err, ErrBadEvent) {
			t.Errorf("Step(%s): %v; want ErrBadEvent", schema.String(ev), err)
		}
	}
}

func FuzzStep(f *testing.F) {
	data := []byte("abc")
	ref := cas.Sum(data).String()
	exampletest.FuzzReducer(f, ".", Register, ModuleName,
		[]string{start(data), resultJSON("PutResult", "ok", ref, data), resultJSON("GetResult", "ok", ref, data), start(second)},
		[]string{start(data), resultJSON("PutResult", "error", ref, data)},
	)
}

// resultJSON is result in AIR JSON (tagged form).
func resultJSON(arm, status, ref string, data []byte) string {
	put := arm == "PutResult"
	req := fmt.Sprintf(`{"blob_ref": %q}`, ref)
	rcpt := fmt.Sprintf(`{"blob_ref": %q, "size": %d, "bytes": %q}`, ref, len(data), base64.StdEncoding.EncodeToString(data))
	if put {
		req = fmt.Sprintf(`{"blob_ref": %q, "bytes": %q}`, ref, base64.StdEncoding.EncodeToString(data))
		rcpt = fmt.Sprintf(`{"blob_ref": %q, "size": %d}`, ref, len(data))
	}
	kind := map[bool]string{true: "blob.put", false: "blob.get"}[put]
	return fmt.Sprintf(`{%q: {"intent_hash": %q, "reducer": %q, "effect_kind": %q, "adapter_id": "blob", "status": %q,
		"requested": %s, "receipt": %s, "cost_cents": null, "signature": ""}}`, arm, cas.Sum([]byte(arm)).String(), ModuleName, kind, status, req, rcpt)
}
