package cas_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
)

const (
	hexA = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	hexB = "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262" // BLAKE3("")
)

// parseRefTests are the table for ParseRef and the seeds of FuzzParseRef.
// An empty err means the input parses and String gives it back.
var parseRefTests = []struct {
	name string
	in   string
	err  string
}{
	{"blake3", "blake3:" + hexA, ""},
	{"sha256", "sha256:" + hexA, ""},
	{"blake3 of empty", "blake3:" + hexB, ""},
	{"empty", "", `cas: invalid ref: empty string, want blake3:<64 hex>`},
	{"missing colon", "blake3" + hexA, `cas: invalid ref "blake3` + hexA + `": want blake3:<64 hex>`},
	{"bare hex", hexA, `cas: invalid ref "` + hexA + `": want blake3:<64 hex>`},
	{"unknown prefix", "md5:" + hexA, `cas: invalid ref "md5:` + hexA + `": unknown algorithm "md5" (want blake3 or sha256)`},
	{"uppercase prefix", "BLAKE3:" + hexA, `unknown algorithm "BLAKE3" (want blake3 or sha256)`},
	{"empty prefix", ":" + hexA, `unknown algorithm "" (want blake3 or sha256)`},
	{"uppercase hex", "blake3:" + strings.ToUpper(hexA), `digest must be lowercase hex, found "A" at digit 11`},
	{"non-hex digit", "blake3:" + hexA[:63] + "g", `digest must be lowercase hex, found "g" at digit 64`},
	{"non-ascii digit", "blake3:" + "\xc3" + hexA[:63], `digest must be lowercase hex, found "\xc3" at digit 1`},
	{"short", "blake3:" + hexA[:63], `digest has 63 hex digits, want 64`},
	{"long", "blake3:" + hexA + "0", `digest has 65 hex digits, want 64`},
	{"no digest", "blake3:", `cas: invalid ref "blake3:": digest has 0 hex digits, want 64`},
	{"two colons", "blake3:" + hexA[:30] + ":" + hexA[:33], `digest must be lowercase hex, found ":" at digit 31`},
	{"space", " blake3:" + hexA, `unknown algorithm " blake3"`},
	{"trailing newline", "blake3:" + hexA + "\n", `digest has 65 hex digits, want 64`},
	{"long input is clipped", "blake3:" + strings.Repeat("0", 200), `…": digest has 200 hex digits, want 64`},
}

func TestParseRef(t *testing.T) {
	for _, tc := range parseRefTests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := cas.ParseRef(tc.in)
			if tc.err != "" {
				if err == nil {
					t.Fatalf("ParseRef(%q) = %v; want error %q", tc.in, r, tc.err)
				}
				if !errors.Is(err, cas.ErrInvalidRef) {
					t.Errorf("error %v does not wrap ErrInvalidRef", err)
				}
				if !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error = %q; want it to contain %q", err, tc.err)
				}
				if r.Valid() {
					t.Errorf("failed ParseRef returned a valid ref %v", r)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseRef(%q): %v", tc.in, err)
			}
			if !r.Valid() {
				t.Errorf("ParseRef(%q) is not Valid", tc.in)
			}
			if got := r.String(); got != tc.in {
				t.Errorf("String() = %q; want %q", got, tc.in)
			}
			algo, _, _ := strings.Cut(tc.in, ":")
			if got := r.Algo().String(); got != algo {
				t.Errorf("Algo() = %q; want %q", got, algo)
			}
			d := r.Digest()
			if got := hex.EncodeToString(d[:]); got != tc.in[len(algo)+1:] {
				t.Errorf("Digest() = %s; want %s", got, tc.in[len(algo)+1:])
			}
			if got, want := r.Short(), tc.in[:len(algo)+1+12]; got != want {
				t.Errorf("Short() = %q; want %q", got, want)
			}
		})
	}
}

func TestSumMatchesKnownDigest(t *testing.T) {
	// BLAKE3 of the empty input, from the BLAKE3 reference test vectors.
	if got, want := cas.Sum(nil).String(), "blake3:"+hexB; got != want {
		t.Errorf("Sum(nil) = %s; want %s", got, want)
	}
	if got := cas.Sum([]byte("a")); got == cas.Sum([]byte("b")) || got.Algo() != cas.BLAKE3 {
		t.Errorf("Sum(a) = %v: want a BLAKE3 ref different from Sum(b)", got)
	}
}

func TestZeroRef(t *testing.T) {
	var z cas.Ref
	if z.Valid() {
		t.Error("zero Ref is Valid")
	}
	if got := z.String(); got != "invalid" {
		t.Errorf("zero String() = %q; want %q", got, "invalid")
	}
	if got := z.Short(); got != "invalid" {
		t.Errorf("zero Short() = %q; want %q", got, "invalid")
	}
	if z.Algo() != cas.AlgoNone || z.Algo().String() != "none" {
		t.Errorf("zero Algo() = %v", z.Algo())
	}
	if _, err := z.MarshalText(); !errors.Is(err, cas.ErrInvalidRef) {
		t.Errorf("zero MarshalText error = %v; want ErrInvalidRef", err)
	}
	if _, err := json.Marshal(z); !errors.Is(err, cas.ErrInvalidRef) {
		t.Errorf("json.Marshal(zero) error = %v; want ErrInvalidRef", err)
	}
	if _, err := cas.Marshal(z); !errors.Is(err, cas.ErrInvalidRef) {
		t.Errorf("cas.Marshal(zero) error = %v; want ErrInvalidRef", err)
	}
	if got := cas.RefFromDigest(cas.AlgoNone, [cas.Size]byte{1}); got.Valid() {
		t.Errorf("RefFromDigest(AlgoNone) = %v; want the zero Ref", got)
	}
	if got := cas.RefFromDigest(cas.Algo(9), [cas.Size]byte{1}); got != z {
		t.Errorf("RefFromDigest(9) = %v; want the zero Ref", got)
	}
}

func TestRefFromDigest(t *testing.T) {
	r := cas.Sum([]byte("hello"))
	if got := cas.RefFromDigest(cas.BLAKE3, r.Digest()); got != r {
		t.Errorf("RefFromDigest(BLAKE3, digest) = %v; want %v", got, r)
	}
	s := cas.RefFromDigest(cas.SHA256, r.Digest())
	if s == r || s.Algo() != cas.SHA256 || s.Digest() != r.Digest() {
		t.Errorf("RefFromDigest(SHA256, digest) = %v: want a distinct sha256 ref with the same digest", s)
	}
}

func TestRefMapKey(t *testing.T) {
	m := map[cas.Ref]int{}
	a1 := cas.MustParseRef("blake3:" + hexA)
	a2 := cas.MustParseRef("blake3:" + hexA)
	s := cas.MustParseRef("sha256:" + hexA)
	m[a1]++
	m[a2]++
	m[s]++
	m[cas.Sum(nil)]++
	if len(m) != 3 || m[a1] != 2 || m[s] != 1 {
		t.Errorf("map = %v; want blake3:%s twice, its sha256 twin and Sum(nil) once", m, hexA[:8])
	}
	if a1 != a2 || a1 == s {
		t.Error("== does not compare algorithm and digest")
	}
}

func TestRefJSON(t *testing.T) {
	type doc struct {
		Ref  cas.Ref   `json:"ref"`
		Refs []cas.Ref `json:"refs"`
	}
	in := doc{Ref: cas.Sum([]byte("x")), Refs: []cas.Ref{cas.MustParseRef("sha256:" + hexA)}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ref":"` + in.Ref.String() + `","refs":["sha256:` + hexA + `"]}`
	if string(b) != want {
		t.Errorf("json = %s; want %s", b, want)
	}
	var out doc
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.Ref != in.Ref || len(out.Refs) != 1 || out.Refs[0] != in.Refs[0] {
		t.Errorf("round trip = %+v; want %+v", out, in)
	}
	err = json.Unmarshal([]byte(`{"ref":"blake3:ABC"}`), &out)
	if !errors.Is(err, cas.ErrInvalidRef) {
		t.Errorf("bad ref in JSON: error = %v; want ErrInvalidRef", err)
	}
}

func TestRefCBOR(t *testing.T) {
	r := cas.Sum([]byte("x"))
	b, err := cas.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	// A ref is a CBOR text string (major type 3, 71 bytes: 0x78 0x47).
	want := append([]byte{0xd9, 0xd9, 0xf7, 0x78, 0x47}, r.String()...)
	if !bytes.Equal(b, want) {
		t.Errorf("Marshal(ref) = %x; want %x", b, want)
	}
	var got cas.Ref
	if err := cas.Unmarshal(b, &got); err != nil || got != r {
		t.Errorf("Unmarshal = %v, %v; want %v", got, err, r)
	}
	// Decoding into any gives the text form.
	var s any
	if err := cas.Unmarshal(b, &s); err != nil || s != r.String() {
		t.Errorf("Unmarshal into any = %#v, %v; want %q", s, err, r.String())
	}

	type node struct {
		Name string    `cbor:"name"`
		Ref  cas.Ref   `cbor:"ref"`
		Refs []cas.Ref `cbor:"refs"`
	}
	in := node{Name: "n", Ref: r, Refs: []cas.Ref{cas.MustParseRef("sha256:" + hexA), r}}
	nb, err := cas.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := cas.CheckCanonical(nb); err != nil {
		t.Errorf("CheckCanonical: %v", err)
	}
	var out node
	if err := cas.Unmarshal(nb, &out); err != nil {
		t.Fatal(err)
	}
	if out.Name != in.Name || out.Ref != in.Ref || len(out.Refs) != 2 || out.Refs[0] != in.Refs[0] || out.Refs[1] != in.Refs[1] {
		t.Errorf("round trip = %+v; want %+v", out, in)
	}

	bad := []struct {
		name string
		v    any
	}{
		{"not a ref", "blake3:xyz"},
		{"byte string", []byte("blake3:" + hexA)},
		{"integer", 7},
	}
	for _, tc := range bad {
		b, err := cas.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		var r cas.Ref
		if err := cas.Unmarshal(b, &r); !errors.Is(err, cas.ErrInvalidRef) {
			t.Errorf("%s: Unmarshal into Ref error = %v; want ErrInvalidRef", tc.name, err)
		}
	}
}

func TestMustParseRefPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustParseRef(\"nope\") did not panic")
		}
	}()
	cas.MustParseRef("nope")
}
