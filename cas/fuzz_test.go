package cas_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
)

// FuzzParseRef checks that ParseRef never panics and that what it accepts
// is exactly what String prints: one text form per ref.
func FuzzParseRef(f *testing.F) {
	for _, tc := range parseRefTests {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := cas.ParseRef(s)
		if err != nil {
			if !errors.Is(err, cas.ErrInvalidRef) {
				t.Fatalf("ParseRef(%q) error %v does not wrap ErrInvalidRef", s, err)
			}
			if r.Valid() {
				t.Fatalf("ParseRef(%q) failed but returned valid %v", s, r)
			}
			return
		}
		if !r.Valid() {
			t.Fatalf("ParseRef(%q) = invalid ref without error", s)
		}
		if got := r.String(); got != s {
			t.Fatalf("ParseRef(%q).String() = %q", s, got)
		}
		again, err := cas.ParseRef(r.String())
		if err != nil || again != r {
			t.Fatalf("ParseRef(String()) = %v, %v; want %v", again, err, r)
		}
	})
}

// FuzzCBOR checks that Unmarshal and CheckCanonical never panic, and that
// whatever decodes re-encodes to canonical bytes that decode to an equal
// value and re-encode identically.
func FuzzCBOR(f *testing.F) {
	for _, tc := range decodeTests {
		b, err := hex.DecodeString(tc.in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, v := range agentOSVectors {
		b, err := hex.DecodeString(v.cborHex)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[3:])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		canonErr := cas.CheckCanonical(data)
		var v any
		if err := cas.Unmarshal(data, &v); err != nil {
			if canonErr == nil {
				t.Fatalf("CheckCanonical accepted %x which does not decode: %v", data, err)
			}
			return
		}
		b1, err := cas.Marshal(v)
		if err != nil {
			t.Fatalf("Marshal of decoded %#v (from %x): %v", v, data, err)
		}
		var v2 any
		if err := cas.Unmarshal(b1, &v2); err != nil {
			t.Fatalf("re-decode of %x (from %x): %v", b1, data, err)
		}
		if !reflect.DeepEqual(v, v2) {
			t.Fatalf("failed to round trip %x:\nfirst  %#v\nsecond %#v", data, v, v2)
		}
		b2, err := cas.Marshal(v2)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b1, b2) {
			t.Fatalf("canonical form not stable for %x: %x then %x", data, b1, b2)
		}
		if err := cas.CheckCanonical(b1); err != nil {
			t.Fatalf("CheckCanonical(Marshal(v)) = %v for %x", err, b1)
		}
		if canonErr == nil && !bytes.Equal(data, b1) {
			t.Fatalf("CheckCanonical accepted %x but its canonical form is %x", data, b1)
		}
		if canonErr != nil && !errors.Is(canonErr, cas.ErrNotCanonical) {
			t.Fatalf("CheckCanonical(%x) = %v: a decodable item can only be not canonical", data, canonErr)
		}
	})
}
