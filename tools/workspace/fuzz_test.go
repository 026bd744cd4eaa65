package workspace

import (
	"bytes"
	"context"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/schema"
)

// FuzzDecodeTree decodes arbitrary nodes: no panic; a node that decodes
// re-encodes to canonical bytes that decode to the same tree.
func FuzzDecodeTree(f *testing.F) {
	s := cas.NewMemory()
	ctx := context.Background()
	build(f, s, "a/b", "x", "c", "", "é", "y")
	_ = s.Iterate(ctx, func(ref cas.Ref, _ int64) error {
		b, _ := s.Get(ctx, ref)
		f.Add(b)
		return nil
	})
	f.Add(emptyTreeBytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := DecodeTree(b)
		if err != nil {
			return
		}
		enc, err := tr.Encode()
		if err != nil {
			t.Fatalf("a decoded tree does not encode: %v", err)
		}
		if err := cas.CheckCanonical(enc); err != nil {
			t.Fatalf("encoding is not canonical: %v", err)
		}
		if want, err := schema.Encode(tr.Value()); err != nil || !bytes.Equal(enc, want) {
			t.Fatalf("Encode differs from schema.Encode of the value: %v", err)
		}
		again, err := DecodeTree(enc)
		if err != nil {
			t.Fatalf("re-encoded tree does not decode: %v", err)
		}
		enc2, _ := again.Encode()
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip changed the bytes")
		}
	})
}
