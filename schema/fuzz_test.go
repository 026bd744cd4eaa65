package schema

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/rogpeppe/go-internal/txtar"
)

// FuzzDecode feeds random bytes to the value decoder: errors, never
// panics; what decodes re-encodes canonically and decodes to the same value.
func FuzzDecode(f *testing.F) {
	for _, v := range []Value{nil, true, uint64(1), int64(-1), "x", []byte{1}, []Value{"a", uint64(2)},
		Record("a", uint64(1), "bb", Variant("T", nil)), Variant("Go", Record("n", uint64(3)))} {
		b, _ := Encode(v)
		f.Add(b)
	}
	f.Add([]byte{0xd9, 0xd9, 0xf7, 0xa2, 0x61, 0x61, 0x01, 0x61, 0x61, 0x02})
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data)
		if err != nil {
			return
		}
		enc, err := Encode(v)
		if err != nil {
			t.Fatalf("decoded value does not encode: %v", err)
		}
		v2, err := Decode(enc)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		enc2, err := Encode(v2)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding not stable: %x vs %x (%v)", enc, enc2, err)
		}
	})
}

// fuzzTypes are the types FuzzNormalizeJSON reads random JSON through.
var fuzzTypes = []string{
	`{"nat":{}}`, `{"int":{}}`, `{"dec128":{}}`, `{"bytes":{}}`, `{"time":{}}`, `{"duration":{}}`,
	`{"hash":{}}`, `{"uuid":{}}`, `{"option":{"text":{}}}`, `{"set":{"int":{}}}`,
	`{"map":{"key":{"nat":{}},"value":{"list":{"text":{}}}}}`,
	`{"record":{"a":{"nat":{}},"b":{"option":{"variant":{"X":{"unit":{}},"Y":{"set":{"text":{}}}}}}}}`,
	`{"variant":{"Idle":{"unit":{}},"Go":{"record":{"n":{"map":{"key":{"text":{}},"value":{"dec128":{}}}}}},"Maybe":{"option":{"nat":{}}}}}`,
}

// FuzzNormalizeJSON reads random JSON through several types: errors, never
// panics; a result is a fixed point of normalization and survives its own
// JSON rendering.
func FuzzNormalizeJSON(f *testing.F) {
	seeds := []string{`3`, `"0.20"`, `{"nat":3}`, `null`, `{"null":{}}`, `[1,2,2]`, `[[1,["a"]]]`,
		`{"a":1}`, `{"a":1,"b":{"Y":["q","p"]}}`, `{"$tag":"Go","$value":{"n":{"k":"1e3"}}}`, `"Idle"`,
		`{"variant":{"tag":"Maybe","value":{"nat":1}}}`, `"1970-01-01T00:00:00Z"`, `"1h"`}
	for i := range fuzzTypes {
		for _, s := range seeds {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		j, err := parseJSON([]byte(fuzzTypes[int(which)%len(fuzzTypes)]))
		if err != nil {
			t.Fatal(err)
		}
		ty := parseType(j, newProblems(""))
		v, err := NormalizeJSON(nil, ty, data)
		if err != nil {
			return
		}
		enc, err := Encode(v)
		if err != nil {
			t.Fatalf("normalized value does not encode: %v", err)
		}
		dec, err := Decode(enc)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Normalize(nil, ty, dec)
		if err != nil {
			t.Fatalf("renormalize: %v", err)
		}
		if enc2, _ := Encode(again); !bytes.Equal(enc, enc2) {
			t.Fatalf("not a fixed point: %x vs %x", enc, enc2)
		}
		// Normalizing the normal value itself changes nothing either (it
		// is returned as it is, or copied).
		if same, err := Normalize(nil, ty, v); err != nil {
			t.Fatalf("renormalize the normal value: %v", err)
		} else if enc3, _ := Encode(same); !bytes.Equal(enc, enc3) {
			t.Fatalf("the normal value is not a fixed point: %x vs %x", enc, enc3)
		}
		js, err := MarshalJSON(nil, ty, v)
		if err != nil {
			t.Fatal(err)
		}
		back, err := NormalizeJSON(nil, ty, js)
		if err != nil || !Equal(back, v) {
			t.Fatalf("rendering %s does not read back: %v", js, err)
		}
	})
}

// FuzzLoad feeds random bytes to the loader as a manifest file beside a
// valid one: errors, never panics.
func FuzzLoad(f *testing.F) {
	archives, _ := filepath.Glob("testdata/load/*.txtar")
	for _, a := range archives {
		ar, err := txtar.ParseFile(a)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range ar.Files {
			if filepath.Ext(file.Name) == ".json" {
				f.Add(file.Data)
			}
		}
	}
	// AgentOS's own AIR files too, when the tests have them.
	var examples []string
	if dir := os.Getenv(AgentOSEnv); dir != "" {
		examples, _ = filepath.Glob(filepath.Join(dir, "examples", "*", "*.air.json"))
	}
	for _, e := range examples {
		if data, err := os.ReadFile(e); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := LoadSources([]Source{{Name: "fuzz.air.json", Data: data}}, &LoadOptions{Reducers: []string{"demo/R@1"}})
		if err == nil && !c.ManifestRef().Valid() {
			t.Fatal("a loaded catalog has no manifest ref")
		}
	})
}

// FuzzDecodeMatchesReference checks the fast decoder against decoding with
// fxamacker/cbor: both accept the same inputs and give equal values.
func FuzzDecodeMatchesReference(f *testing.F) {
	for _, v := range []Value{nil, true, uint64(1 << 40), int64(-1 << 40), "x", []byte{1}, []Value{"a", uint64(2)},
		Record("a", uint64(1), "bb", Variant("T", nil)), NewMap(MapEntry{Key: uint64(3), Value: "c"}, MapEntry{Key: uint64(1), Value: "a"})} {
		b, _ := Encode(v)
		f.Add(b)
	}
	f.Add([]byte{0xa2, 0x61, 0x62, 0x01, 0x61, 0x61, 0x02}) // unsorted keys
	f.Add([]byte{0xa2, 0x61, 0x61, 0x01, 0x61, 0x61, 0x02}) // duplicate keys
	f.Add([]byte{0xf9, 0x3c, 0x00})                         // a float
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, err1 := Decode(data)
		ref, err2 := refDecode(data)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("fast: %v; reference: %v", err1, err2)
		}
		if err1 == nil && !Equal(fast, ref) {
			t.Fatalf("fast %s; reference %s", String(fast), String(ref))
		}
	})
}

// FuzzParseJSON: parseJSON errors, never panics, and an error's place is
// in the document: a line it has, a column at most one past that line's
// end.
func FuzzParseJSON(f *testing.F) {
	for _, tc := range jsonErrorTests {
		f.Add([]byte(tc.in))
	}
	f.Add([]byte(`{"a": [1, "x", {"b": null}], "c": true}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := parseJSON(data)
		if err == nil {
			return
		}
		je, ok := errors.AsType[*jsonError](err)
		if !ok {
			t.Fatalf("error %v (%T); want a *jsonError", err, err)
		}
		lines := bytes.Split(data, []byte("\n"))
		if je.Line < 1 || je.Line > len(lines) {
			t.Fatalf("%v: the document has %d lines", je, len(lines))
		}
		if n := utf8.RuneCount(lines[je.Line-1]); je.Col < 1 || je.Col > n+1 {
			t.Fatalf("%v: line %d has %d characters", je, je.Line, n)
		}
	})
}
