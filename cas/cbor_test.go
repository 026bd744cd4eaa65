package cas_test

import (
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/demiurge-dev/demiurge/cas"
)

// decodeTests are the table for Unmarshal into any and the seeds of
// FuzzCBOR. in is hex; err empty means it decodes to want, and canon is
// the hex of Marshal(want) when it differs from in (non-canonical input).
var decodeTests = []struct {
	name  string
	in    string
	want  any
	canon string
	err   string
}{
	{name: "uint 0", in: "d9d9f700", want: uint64(0)},
	{name: "uint 23", in: "d9d9f717", want: uint64(23)},
	{name: "uint 24", in: "d9d9f71818", want: uint64(24)},
	{name: "uint max", in: "d9d9f71bffffffffffffffff", want: uint64(math.MaxUint64)},
	{name: "nint -1", in: "d9d9f720", want: int64(-1)},
	{name: "nint min int64", in: "d9d9f73b7fffffffffffffff", want: int64(math.MinInt64)},
	{name: "no prefix", in: "01", want: uint64(1), canon: "d9d9f701"},
	{name: "non-shortest int", in: "d9d9f71801", want: uint64(1), canon: "d9d9f701"},
	{name: "false true null", in: "d9d9f783f4f5f6", want: []any{false, true, nil}},
	{name: "text", in: "d9d9f76568656c6c6f", want: "hello"},
	{name: "utf-8 text", in: "d9d9f762c3a9", want: "é"},
	{name: "bytes", in: "d9d9f743010203", want: []byte{1, 2, 3}},
	{name: "empty bytes", in: "d9d9f740", want: []byte{}},
	{name: "empty array", in: "d9d9f780", want: []any{}},
	{name: "empty map", in: "d9d9f7a0", want: map[any]any{}},
	{name: "map sorted length first", in: "d9d9f7a262616201616101", want: map[any]any{"ab": uint64(1), "a": uint64(1)}, canon: "d9d9f7a261610162616201"},
	{name: "map int keys", in: "d9d9f7a2200001f5", want: map[any]any{int64(-1): uint64(0), uint64(1): true}, canon: "d9d9f7a201f52000"},
	{name: "map byte string key", in: "d9d9f7a1420102f6", want: map[any]any{cbor.ByteString("\x01\x02"): nil}},
	{name: "map null and bool keys", in: "d9d9f7a2f401f602", want: map[any]any{false: uint64(1), nil: uint64(2)}},
	{name: "nested", in: "d9d9f7a1616181a1616280", want: map[any]any{"a": []any{map[any]any{"b": []any{}}}}},

	{name: "empty input", in: "", err: "empty input"},
	{name: "prefix only", in: "d9d9f7", err: "empty input"},
	{name: "float16", in: "d9d9f7f93c00", err: "at byte 3: float not allowed"},
	{name: "float32", in: "d9d9f7fa3fc00000", err: "float not allowed"},
	{name: "float64", in: "d9d9f7fb3ff8000000000000", err: "float not allowed"},
	{name: "NaN", in: "d9d9f7f97e00", err: "float not allowed"},
	{name: "NaN payload", in: "fb7ff8000000000001", err: "at byte 0: float not allowed"},
	{name: "float in map", in: "d9d9f7a16178f93c00", err: "at byte 6: float not allowed"},
	{name: "undefined", in: "d9d9f7f7", err: "undefined (0xf7) not allowed"},
	{name: "simple 16", in: "d9d9f7f0", err: "simple value 16 not allowed"},
	{name: "simple 255", in: "d9d9f7f8ff", err: "simple value 255 not allowed"},
	{name: "bignum tag", in: "d9d9f7c249010000000000000000", err: "tag 2 not allowed"},
	{name: "date tag", in: "d9d9f7c11a514b67b0", err: "tag 1 not allowed"},
	{name: "double prefix", in: "d9d9f7d9d9f700", err: "at byte 3: tag 55799 not allowed"},
	{name: "nint below int64", in: "d9d9f73b8000000000000000", err: "below -2^63"},
	{name: "indefinite array", in: "d9d9f79f01ff", err: "indefinite-length item not allowed"},
	{name: "indefinite text", in: "d9d9f77f6161ff", err: "indefinite-length item not allowed"},
	{name: "lone break", in: "d9d9f7ff", err: "unexpected break"},
	{name: "reserved ai", in: "d9d9f71c", err: "reserved additional information 28"},
	{name: "truncated head", in: "d9d9f719ff", err: "unexpected end of input in item head"},
	{name: "truncated text", in: "d9d9f76568656c", err: "string of 5 bytes runs past the end of input (3 bytes left)"},
	{name: "huge text length", in: "d9d9f77bffffffffffffffff", err: "runs past the end of input"},
	{name: "truncated array", in: "d9d9f78301", err: "array of 3 items runs past the end of input (1 bytes left)"},
	{name: "huge map", in: "d9d9f7bbffffffffffffffff", err: "runs past the end of input"},
	{name: "truncated nested", in: "d9d9f7821801", err: "at byte 6: unexpected end of input"},
	{name: "invalid utf-8", in: "d9d9f762c328", err: "not valid UTF-8"},
	{name: "trailing bytes", in: "d9d9f70000", err: "at byte 4: 1 trailing bytes"},
	{name: "duplicate key", in: "d9d9f7a2616101616102", err: "duplicate map key"},
	{name: "duplicate key non-canonical", in: "d9d9f7a20101180101", err: "duplicate map key"},
	{name: "array map key", in: "d9d9f7a18001", err: "cas: decode CBOR"},
	{name: "too deep", in: "d9d9f7" + strings.Repeat("81", 129) + "00", err: "nested deeper than 128 levels"},
}

func TestUnmarshalAny(t *testing.T) {
	for _, tc := range decodeTests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := mustHex(t, tc.in)
			var got any
			err := cas.Unmarshal(in, &got)
			if tc.err != "" {
				if err == nil {
					t.Fatalf("Unmarshal(%s) = %#v; want error %q", tc.in, got, tc.err)
				}
				if !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "cas: decode CBOR: ") {
					t.Errorf("error = %q; want cas: decode CBOR: …%s…", err, tc.err)
				}
				if cerr := cas.CheckCanonical(in); cerr == nil {
					t.Errorf("CheckCanonical accepted undecodable %s", tc.in)
				}
				return
			}
			if err != nil {
				t.Fatalf("Unmarshal(%s): %v", tc.in, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Unmarshal(%s) = %#v; want %#v", tc.in, got, tc.want)
			}
			canon := tc.canon
			if canon == "" {
				canon = tc.in
			}
			b, err := cas.Marshal(got)
			if err != nil {
				t.Fatalf("Marshal(%#v): %v", got, err)
			}
			if h := hex.EncodeToString(b); h != canon {
				t.Errorf("Marshal = %s; want %s", h, canon)
			}
			cerr := cas.CheckCanonical(in)
			if canon == tc.in && cerr != nil {
				t.Errorf("CheckCanonical(%s): %v", tc.in, cerr)
			}
			if canon != tc.in && !errors.Is(cerr, cas.ErrNotCanonical) {
				t.Errorf("CheckCanonical(%s) = %v; want ErrNotCanonical", tc.in, cerr)
			}
		})
	}
}

func TestMarshalRejectsWhatUnmarshalRejects(t *testing.T) {
	type withFloat struct {
		T float64 `cbor:"temperature"`
	}
	tests := []struct {
		name string
		v    any
		err  string
	}{
		{"float64", 1.5, "float not allowed"},
		{"float32 in struct", withFloat{0.2}, "float not allowed"},
		{"integral float", 2.0, "float not allowed"},
		{"NaN", math.NaN(), "float not allowed"},
		{"invalid utf-8 string", "\xff", "not valid UTF-8"},
		{"tag", cbor.Tag{Number: 1, Content: 0}, "tag 1 not allowed"},
		{"raw tag bytes", cbor.RawMessage{0xc1, 0x00}, "tag 1 not allowed"},
		{"undefined", cbor.SimpleValue(23), "undefined"},
		{"channel", make(chan int), "cas: encode canonical CBOR"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cas.Marshal(tc.v)
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "cas: encode canonical CBOR: ") {
				t.Errorf("Marshal error = %v; want cas: encode canonical CBOR: …%s…", err, tc.err)
			}
			_, err = cas.MarshalBody(tc.v)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("MarshalBody error = %v; want …%s…", err, tc.err)
			}
		})
	}
}

func TestMarshalStruct(t *testing.T) {
	type point struct {
		Y     int64    `cbor:"y"`
		X     int64    `cbor:"x"`
		Label string   `cbor:"label"`
		Tags  []string `cbor:"tags"`
	}
	b, err := cas.Marshal(point{X: 1, Y: -2, Label: "p"})
	if err != nil {
		t.Fatal(err)
	}
	// Keys in canonical order (length first, then bytes): x, y, tags, label;
	// a nil slice is null.
	const want = "d9d9f7a46178016179216474616773f6656c6162656c6170"
	if h := hex.EncodeToString(b); h != want {
		t.Errorf("Marshal = %s; want %s", h, want)
	}
	body, err := cas.MarshalBody(point{X: 1, Y: -2, Label: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if string(b[3:]) != string(body) {
		t.Errorf("MarshalBody = %x; want Marshal without prefix %x", body, b[3:])
	}
	var p point
	if err := cas.Unmarshal(b, &p); err != nil || p.X != 1 || p.Y != -2 || p.Label != "p" || p.Tags != nil {
		t.Errorf("Unmarshal = %+v, %v", p, err)
	}
	if err := cas.Unmarshal(mustHex(t, "d9d9f7a16178fb3ff8000000000000"), &p); err == nil {
		t.Error("Unmarshal of a float into a struct succeeded; want an error")
	}
}

func TestMarshalMapOrderIndependent(t *testing.T) {
	m := map[string]any{}
	for i := range 100 {
		m[strings.Repeat("k", i%7)+string(rune('a'+i%26))+strings.Repeat("z", i/26)] = i
	}
	first, err := cas.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		again, err := cas.Marshal(m)
		if err != nil || string(again) != string(first) {
			t.Fatal("Marshal of the same map gave different bytes")
		}
	}
	if err := cas.CheckCanonical(first); err != nil {
		t.Error(err)
	}
}

func TestCheckCanonical(t *testing.T) {
	tests := []struct {
		name string
		in   string
		err  error
	}{
		{"canonical", "d9d9f7a2616101616202", nil},
		{"no prefix", "a2616101616202", cas.ErrNotCanonical},
		{"unsorted keys", "d9d9f7a2616201616101", cas.ErrNotCanonical},
		{"long int", "d9d9f71901f4", nil},
		{"non-shortest int", "d9d9f71900f4", cas.ErrNotCanonical},
		{"float", "d9d9f7f93c00", nil}, // decode error, checked below
	}
	for _, tc := range tests {
		err := cas.CheckCanonical(mustHex(t, tc.in))
		switch {
		case tc.name == "float":
			if err == nil || errors.Is(err, cas.ErrNotCanonical) || !strings.Contains(err.Error(), "float not allowed") {
				t.Errorf("%s: CheckCanonical = %v; want a decode error", tc.name, err)
			}
		case tc.err == nil && err != nil:
			t.Errorf("%s: CheckCanonical = %v; want nil", tc.name, err)
		case tc.err != nil && !errors.Is(err, tc.err):
			t.Errorf("%s: CheckCanonical = %v; want %v", tc.name, err, tc.err)
		}
	}
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex in test table: %v", err)
	}
	return b
}
