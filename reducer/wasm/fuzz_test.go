package wasm

import (
	"bytes"
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/demiurge-dev/demiurge/schema"
)

// FuzzDecodeOutput feeds bytes to the output envelope's decoder: an error
// or an envelope, never a panic; what it accepts, re-encoded, decodes to
// the same envelope.
func FuzzDecodeOutput(f *testing.F) {
	state, _ := schema.Encode(schema.Record("n", uint64(7)))
	f.Add(reencode(&Output{State: state}))
	f.Add(reencode(&Output{StateNull: true, Events: []OutEvent{{Schema: "a/B@1", Value: []byte{0x01}, Key: []byte{0x61, 0x6b}}},
		Effects: []OutEffect{{Kind: "timer.set", Params: []byte{0xa0}, CapSlot: "default", IdempotencyKey: []byte{1, 2}}}, Ann: []byte{0xf6}}))
	f.Add([]byte("hello"))
	f.Add([]byte{0xa1, 0x65, 's', 't', 'a', 't', 'e', 0x9f})
	f.Add([]byte{0xd9, 0xd9, 0xf7, 0xa1, 0x65, 's', 't', 'a', 't', 'e', 0xf6})
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := DecodeOutput(b)
		if err != nil {
			return
		}
		again, err := DecodeOutput(reencode(out))
		if err != nil {
			t.Fatalf("re-encoded envelope does not decode: %v", err)
		}
		if !bytes.Equal(reencode(again), reencode(out)) {
			t.Fatalf("round trip differs")
		}
		_, _ = convert(out) // the values may not be AIR values; it must not panic
	})
}

// reencode writes an output envelope as a module would.
func reencode(o *Output) []byte {
	b := appendHead(nil, 5, 4)
	b = appendText(b, "state")
	if o.StateNull {
		b = append(b, 0xf6)
	} else {
		b = appendBytes(b, o.State)
	}
	b = appendText(b, "domain_events")
	b = appendHead(b, 4, uint64(len(o.Events)))
	for _, e := range o.Events {
		n := uint64(2)
		if e.Key != nil {
			n++
		}
		b = appendHead(b, 5, n)
		b = appendText(b, "schema")
		b = appendText(b, e.Schema)
		b = appendText(b, "value")
		b = appendBytes(b, e.Value)
		if e.Key != nil {
			b = appendText(b, "key")
			b = appendBytes(b, e.Key)
		}
	}
	b = appendText(b, "effects")
	b = appendHead(b, 4, uint64(len(o.Effects)))
	for _, e := range o.Effects {
		b = appendHead(b, 5, 4)
		b = appendText(b, "kind")
		b = appendText(b, e.Kind)
		b = appendText(b, "params_cbor")
		b = appendBytes(b, e.Params)
		b = appendText(b, "cap_slot")
		if e.CapSlot == "" {
			b = append(b, 0xf6)
		} else {
			b = appendText(b, e.CapSlot)
		}
		b = appendText(b, "idempotency_key")
		if e.IdempotencyKey == nil {
			b = append(b, 0xf6)
		} else {
			b = appendBytes(b, e.IdempotencyKey)
		}
	}
	b = appendText(b, "ann")
	if o.Ann == nil {
		return append(b, 0xf6)
	}
	return appendBytes(b, o.Ann)
}

// FuzzInspect feeds bytes to the module reader: an error or an Info, never
// a panic; what it reads, instrumented, reads again with the same imports
// and exports (and the host's), and when wazero compiles the module it
// compiles the instrumented one too.
func FuzzInspect(f *testing.F) {
	for _, name := range []string{"echo", "leak", "leaktable", "wasi", "stub_retptr", "import", "startloop", "rust/counter", "traps", "fib", "depth"} {
		f.Add(readModule(f, name))
	}
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().WithCoreFeatures(api.CoreFeaturesV2))
	f.Cleanup(func() { _ = rt.Close(ctx) })
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := Inspect(b)
		if err != nil {
			return
		}
		instrumented := in.Instrument()
		again, err := Inspect(instrumented)
		if err != nil {
			t.Fatalf("the instrumented module does not read: %v", err)
		}
		added := len(in.MutableGlobals) + 4
		if in.start >= 0 {
			added++ // the start function, exported
		}
		if len(again.Imports) != len(in.Imports) || len(again.Exports) != len(in.Exports)+added || again.start >= 0 {
			t.Fatalf("instrumenting changed the imports or exports: %d/%d, %d/%d", len(again.Imports), len(in.Imports), len(again.Exports), len(in.Exports))
		}
		if c, err := compile(ctx, rt, b); err == nil {
			_ = c.Close(ctx)
			c, err := compile(ctx, rt, instrumented)
			if err != nil {
				t.Fatalf("wazero compiles the module but not as instrumented: %v", err)
			}
			_ = c.Close(ctx)
		}
	})
}
