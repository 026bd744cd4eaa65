package world

import (
	"bytes"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/schema"
)

// TestEncodeRec checks that encodeRec gives the bytes of building the
// record with rec and encoding it, which is what it replaces.
func TestEncodeRec(t *testing.T) {
	ref := cas.Sum([]byte("x"))
	tests := []struct {
		name string
		kv   []any
	}{
		{"empty", nil},
		{"state", []any{"reducer", "counter/Counter@1", "key", nil, "state", ref}},
		{"state keyed", []any{"reducer", "r", "key", schema.Record("id", uint64(7)), "state", ref}},
		{"deleted", []any{"reducer", "r", "key", "k"}},
		{"empty values left out", []any{"a", "", "b", nil, "c", []byte(nil), "d", []byte{}, "e", schema.Value(nil)}},
		{"key order", []any{"zz", uint64(1), "a", int64(-2), "bb", true, "b", false, "payload", []byte{1, 2}, "aa", "x"}},
		{"nested", []any{"origin", rec("plan", "p", "plan_id", uint64(1000)), "value", []schema.Value{uint64(1), "two", nil}}},
		{"long key and text", []any{"a_field_name_longer_than_twenty_four", "é" + string(make([]byte, 300)), "n", uint64(1) << 40}},
		{"intent", []any{"intent", ref, "kind", "bench.noop", "params", schema.Record("i", uint64(0), "n", uint64(1)), "grant", "noop",
			"origin", rec("kind", "plan", "name", "bench/sequential@1", "plan_id", uint64(3), "step", "e0"), "key", nil,
			"decision", rec("enforcer", "", "policy", "bench/allow@1").With("rule", uint64(0))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := encodeRec(tc.kv...)
			if err != nil {
				t.Fatal(err)
			}
			viaMap := append([]any(nil), tc.kv...)
			for i, v := range viaMap {
				if r, ok := v.(cas.Ref); ok {
					viaMap[i] = r.String()
				}
			}
			want, err := schema.Encode(rec(viaMap...))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("encodeRec = %x; want %x", got, want)
			}
		})
	}
	if _, err := encodeRec("ref", cas.Ref{}); err == nil {
		t.Error("encodeRec of a zero ref: no error")
	}
}
