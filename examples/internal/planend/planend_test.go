package planend

import (
	"testing"

	"github.com/demiurge-dev/demiurge/schema"
)

func TestDecode(t *testing.T) {
	input, err := schema.Encode(schema.Record("request_id", uint64(7), "url", "http://x"))
	if err != nil {
		t.Fatal(err)
	}
	failed := schema.Record("plan", "demo/p@1", "plan_id", uint64(3), "status", "error",
		"error", schema.Record("step", "get", "code", "effect_failed", "message", "boom"), "input", input)
	e, err := Decode(failed)
	if err != nil {
		t.Fatal(err)
	}
	if !e.Failed() || e.Reason() != "demo/p@1 step get: effect_failed: boom" {
		t.Errorf("Failed %v, Reason %q", e.Failed(), e.Reason())
	}
	var in struct {
		RequestID uint64 `cbor:"request_id"`
	}
	if err := e.DecodeInput(&in); err != nil || in.RequestID != 7 {
		t.Errorf("DecodeInput: %+v, %v", in, err)
	}
	ok, err := Decode(schema.Record("plan", "demo/p@1", "plan_id", uint64(4), "status", "ok", "error", nil, "input", input))
	if err != nil || ok.Failed() || ok.Reason() != "" {
		t.Errorf("ok plan: %+v, %v", ok, err)
	}
	if _, err := Decode("nope"); err == nil {
		t.Error("Decode of a text succeeded")
	}
	if err := (Event{Plan: "p", Input: []byte{0xff}}).DecodeInput(&in); err == nil {
		t.Error("DecodeInput of bad CBOR succeeded")
	}
}
