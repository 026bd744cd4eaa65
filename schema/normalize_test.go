package schema

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
)

// testTypes is a tiny resolver for tests.
type testTypes map[string]*Type

func (tt testTypes) SchemaType(name string) (*Type, bool) { t, ok := tt[name]; return t, ok }

func mustType(t *testing.T, js string) *Type {
	t.Helper()
	j, err := parseJSON([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	p := newProblems("")
	ty := parseType(j, p)
	if !p.empty() {
		t.Fatalf("type %s: %v", js, p.sorted())
	}
	return ty
}

func TestNormalizeJSON(t *testing.T) {
	types := testTypes{
		"demo/Role@1": mustType(t, `{"variant":{"User":{"unit":{}},"Assistant":{"unit":{}}}}`),
		"demo/Msg@1":  mustType(t, `{"record":{"role":{"ref":"demo/Role@1"},"text":{"option":{"text":{}}}}}`),
		"demo/Chat@1": mustType(t, `{"record":{"messages":{"list":{"ref":"demo/Msg@1"}}}}`),
		"demo/Pc@1":   mustType(t, `{"variant":{"Idle":{"unit":{}},"Go":{"record":{"n":{"nat":{}}}},"Maybe":{"option":{"nat":{}}}}}`),
	}
	tests := []struct {
		name, typ, in string
		want          string // ValueJSON of the result
		err           string
	}{
		{"nat sugar", `{"nat":{}}`, `3`, `3`, ""},
		{"nat tagged", `{"nat":{}}`, `{"nat":3}`, `3`, ""},
		{"nat numeric string", `{"nat":{}}`, `"42"`, `42`, ""},
		{"nat negative", `{"nat":{}}`, `-1`, ``, `$: want nat, got negative -1`},
		{"int negative", `{"int":{}}`, `{"int":-3}`, `-3`, ""},
		{"int float", `{"int":{}}`, `1.5`, ``, `$: want int, got 1.5: not an integer in range`},
		{"int too big", `{"int":{}}`, `18446744073709551615`, ``, `$: int 18446744073709551615 is out of range (max 9223372036854775807)`},
		{"nat max", `{"nat":{}}`, `18446744073709551615`, `18446744073709551615`, ""},
		{"dec sugar", `{"dec128":{}}`, `"0.20"`, `"0.2"`, ""},
		{"dec number", `{"dec128":{}}`, `2e-1`, `"0.2"`, ""},
		{"dec tagged", `{"dec128":{}}`, `{"dec128":"-12.500"}`, `"-12.5"`, ""},
		{"dec bad", `{"dec128":{}}`, `"1.2.3"`, ``, `$: "1.2.3" is not a dec128 decimal (digits must follow the point); want e.g. "0.2", "-12.50" or "1e-9"`},
		{"bytes", `{"bytes":{}}`, `"aGk="`, `{"$bytes":"aGk="}`, ""},
		{"bytes tagged", `{"bytes":{}}`, `{"bytes_b64":"aGk="}`, `{"$bytes":"aGk="}`, ""},
		{"text tagged", `{"text":{}}`, `{"text":"a"}`, `"a"`, ""},
		{"hash", `{"hash":{}}`, `"sha256:0000000000000000000000000000000000000000000000000000000000000000"`, `"sha256:0000000000000000000000000000000000000000000000000000000000000000"`, ""},
		{"hash bad", `{"hash":{}}`, `"md5:00"`, ``, `$: cas: invalid ref "md5:00": unknown algorithm "md5" (want blake3 or sha256)`},
		{"uuid", `{"uuid":{}}`, `"A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"`, `"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"`, ""},
		{"time rfc3339", `{"time":{}}`, `"1970-01-01T00:00:01Z"`, `1000000000`, ""},
		{"time tagged", `{"time":{}}`, `{"time_ns":5}`, `5`, ""},
		{"duration text", `{"duration":{}}`, `"1.5s"`, `1500000000`, ""},
		{"unit", `{"unit":{}}`, `null`, `null`, ""},
		{"unit object", `{"unit":{}}`, `{}`, `null`, ""},
		{"option none", `{"option":{"nat":{}}}`, `null`, `null`, ""},
		{"option tagged none", `{"option":{"nat":{}}}`, `{"null":{}}`, `null`, ""},
		{"option some", `{"option":{"nat":{}}}`, `7`, `7`, ""},
		{"record missing option", `{"ref":"demo/Msg@1"}`, `{"role":"User"}`, `{"role":{"$tag":"User"},"text":null}`, ""},
		{"record tagged", `{"ref":"demo/Msg@1"}`, `{"record":{"role":{"variant":{"tag":"Assistant"}},"text":{"text":"hi"}}}`, `{"role":{"$tag":"Assistant"},"text":"hi"}`, ""},
		{"record unknown field", `{"ref":"demo/Msg@1"}`, `{"role":"User","txt":"x"}`, ``, `$.txt: unknown field "txt" (want role|text)`},
		{"record missing field", `{"ref":"demo/Msg@1"}`, `{"text":"x"}`, ``, `$.role: missing field "role" of type demo/Role@1`},
		{"nested bad tag", `{"ref":"demo/Chat@1"}`, `{"messages":[{"role":"User"},{"role":"User"},{"role":"User"},{"role":"Bot"}]}`, ``, `$.messages[3].role: unknown variant tag "Bot" (want Assistant|User)`},
		{"variant sugar", `{"ref":"demo/Pc@1"}`, `{"Go":{"n":1}}`, `{"$tag":"Go","$value":{"n":1}}`, ""},
		{"variant canonical", `{"ref":"demo/Pc@1"}`, `{"$tag":"Go","$value":{"n":1}}`, `{"$tag":"Go","$value":{"n":1}}`, ""},
		{"variant unit string", `{"ref":"demo/Pc@1"}`, `"Idle"`, `{"$tag":"Idle"}`, ""},
		{"variant unit null", `{"ref":"demo/Pc@1"}`, `{"Idle":null}`, `{"$tag":"Idle"}`, ""},
		{"variant unit with $value null", `{"ref":"demo/Pc@1"}`, `{"$tag":"Idle","$value":null}`, `{"$tag":"Idle"}`, ""},
		{"variant unit with value", `{"ref":"demo/Pc@1"}`, `{"Idle":3}`, ``, `$: variant arm "Idle" is unit and takes no value, got a number`},
		{"variant option arm none", `{"ref":"demo/Pc@1"}`, `{"Maybe":null}`, `{"$tag":"Maybe","$value":null}`, ""},
		{"variant tagged", `{"ref":"demo/Pc@1"}`, `{"variant":{"tag":"Go","value":{"record":{"n":{"nat":2}}}}}`, `{"$tag":"Go","$value":{"n":2}}`, ""},
		{"variant needs value", `{"ref":"demo/Pc@1"}`, `"Go"`, ``, `$: variant arm "Go" needs a value of type record{n: nat}`},
		{"set sorted dedup", `{"set":{"text":{}}}`, `["b","a","b","aa"]`, `["a","b","aa"]`, ""},
		{"set tagged", `{"set":{"text":{}}}`, `{"set":[{"text":"x"}]}`, `["x"]`, ""},
		{"list", `{"list":{"nat":{}}}`, `[3,1,3]`, `[3,1,3]`, ""},
		{"list bad elem", `{"list":{"nat":{}}}`, `[3,"x"]`, ``, `$[1]: want nat, got "x": not an integer in range`},
		{"map text", `{"map":{"key":{"text":{}},"value":{"nat":{}}}}`, `{"b":1,"a":2}`, `{"a":2,"b":1}`, ""},
		{"map nat pairs", `{"map":{"key":{"nat":{}},"value":{"text":{}}}}`, `[[10,"x"],[2,"y"]]`, `[[2,"y"],[10,"x"]]`, ""},
		{"map nat object keys", `{"map":{"key":{"nat":{}},"value":{"text":{}}}}`, `{"10":"x"}`, `[[10,"x"]]`, ""},
		{"map tagged", `{"map":{"key":{"text":{}},"value":{"nat":{}}}}`, `{"map":[{"key":{"text":"k"},"value":{"nat":1}}]}`, `{"k":1}`, ""},
		{"map dup", `{"map":{"key":{"nat":{}},"value":{"text":{}}}}`, `[[1,"x"],[1,"y"]]`, ``, `$: duplicate map key 1`},
		{"record named like a tag", `{"record":{"text":{"text":{}}}}`, `{"text":"hi"}`, `{"text":"hi"}`, ""},
		{"bad json", `{"nat":{}}`, `{`, ``, `$: invalid JSON: line 1, column 2: unexpected end of JSON input`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ty := mustType(t, tc.typ)
			v, err := NormalizeJSON(types, ty, []byte(tc.in))
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v; want %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(ValueJSON(v)); got != tc.want {
				t.Fatalf("got %s; want %s", got, tc.want)
			}
			// Canonical values are fixed points: normalizing the decoded
			// encoding gives the same bytes, and the typed JSON rendering
			// reads back to the same value.
			enc, err := Encode(v)
			if err != nil {
				t.Fatal(err)
			}
			dec, err := Decode(enc)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Normalize(types, ty, dec)
			if err != nil {
				t.Fatalf("renormalize %x: %v", enc, err)
			}
			if enc2, _ := Encode(again); string(enc2) != string(enc) {
				t.Fatalf("not a fixed point: %x then %x", enc, enc2)
			}
			js, err := MarshalJSON(types, ty, v)
			if err != nil {
				t.Fatal(err)
			}
			back, err := NormalizeJSON(types, ty, js)
			if err != nil {
				t.Fatalf("read back %s: %v", js, err)
			}
			if !Equal(back, v) {
				t.Fatalf("read back %s = %s; want %s", js, ValueJSON(back), ValueJSON(v))
			}
		})
	}
}

func TestIntNatEqual(t *testing.T) {
	a, err := NormalizeJSON(nil, Primitive(KindInt), []byte(`{"int":200}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := NormalizeJSON(nil, Primitive(KindNat), []byte(`{"nat":200}`))
	if err != nil {
		t.Fatal(err)
	}
	if a != b || !Equal(a, b) {
		t.Fatalf("int 200 (%T) != nat 200 (%T)", a, b)
	}
}

func TestEncodeMatchesCBOR(t *testing.T) {
	v := Record("b", []Value{uint64(1), int64(-500), "x", []byte{1, 2}, nil, true}, "a", Variant("T", uint64(70000)), "ccc", Record())
	got, err := Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	want, err := cas.Marshal(map[string]any{
		"b":   []any{uint64(1), int64(-500), "x", []byte{1, 2}, nil, true},
		"a":   map[string]any{"$tag": "T", "$value": uint64(70000)},
		"ccc": map[string]any{},
	})
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(got) != hex.EncodeToString(want) {
		t.Fatalf("Encode = %x; cas.Marshal = %x", got, want)
	}
	dec, err := Decode(got)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Encode(dec)
	if string(again) != string(got) {
		t.Fatalf("decode/encode not stable:\n%x\n%x", got, again)
	}
}

// TestNormalizeKeepsNormalValues: a value already normal comes back as
// the same object (nothing is copied), a value with one thing to change
// comes back as a new value with the change, and the input is never
// modified.
func TestNormalizeKeepsNormalValues(t *testing.T) {
	ty := mustType(t, `{"record":{"a":{"nat":{}},"b":{"option":{"text":{}}},
		"l":{"list":{"record":{"h":{"hash":{}},"i":{"int":{}}}}},
		"v":{"variant":{"A":{"nat":{}},"B":{"unit":{}}}}}}`)
	ref := cas.Sum([]byte("x")).String()
	js := `{"a":1,"b":"t","l":[{"h":"` + ref + `","i":-2},{"h":"` + ref + `","i":3}],"v":{"A":7}}`
	v, err := NormalizeJSON(nil, ty, []byte(js))
	if err != nil {
		t.Fatal(err)
	}
	again, err := Normalize(nil, ty, v)
	if err != nil {
		t.Fatal(err)
	}
	if again.(*Map) != v.(*Map) {
		t.Errorf("Normalize of a normal value made a copy")
	}
	enc, _ := Encode(v)
	dec, _ := Decode(enc)
	fromDecode, err := Normalize(nil, ty, dec)
	if err != nil {
		t.Fatal(err)
	}
	if fromDecode.(*Map) != dec.(*Map) {
		t.Errorf("Normalize of a decoded normal value made a copy")
	}

	// One integer deep inside that is not canonical (int64 3 is nat 3):
	// the result is new, the input as it was.
	list, _ := v.(*Map).Get("l")
	second := list.([]Value)[1].(*Map)
	odd := &Map{entries: append([]MapEntry(nil), second.entries...)}
	for i := range odd.entries {
		if odd.entries[i].Key == "i" {
			odd.entries[i].Value = int64(3)
		}
	}
	in := v.(*Map).With("l", []Value{list.([]Value)[0], odd})
	before, _ := Encode(in)
	out, err := Normalize(nil, ty, in)
	if err != nil {
		t.Fatal(err)
	}
	if out.(*Map) == in {
		t.Errorf("Normalize returned its input although a value changed")
	}
	if got, _ := out.(*Map).Get("l"); same(got, list) || !same(got.([]Value)[0], list.([]Value)[0]) {
		t.Errorf("the list should be new and its unchanged element shared")
	}
	after, _ := Encode(in)
	if !bytes.Equal(before, after) {
		t.Errorf("Normalize modified its input")
	}
	if got, want := mustEncode(t, out), enc; !bytes.Equal(got, want) {
		t.Errorf("normalized = %x, want %x", got, want)
	}

	// A record missing an optional field gets it (as null): a new map.
	partial := v.(*Map).Without("b")
	out, err = Normalize(nil, ty, partial)
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := out.(*Map).Get("b"); !ok || b != nil {
		t.Errorf("the missing option field is %v, %v; want present and null", b, ok)
	}
	if partial.Len() != 3 {
		t.Errorf("Normalize modified its input: %d fields", partial.Len())
	}
}

func mustEncode(t *testing.T, v Value) []byte {
	t.Helper()
	b, err := Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWithEncoding: fn sees Encode's bytes; its error and the encoding's
// come back; Ref is the hash of the same bytes.
func TestWithEncoding(t *testing.T) {
	v := Record("a", uint64(1), "b", []Value{"x", int64(-2)})
	want := mustEncode(t, v)
	var got []byte
	if err := WithEncoding(v, func(b []byte) error { got = bytes.Clone(b); return nil }); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("WithEncoding gave %x, want %x", got, want)
	}
	if r, err := Ref(v); err != nil || r != cas.Sum(want) {
		t.Errorf("Ref = %v, %v; want %v", r, err, cas.Sum(want))
	}
	boom := errors.New("boom")
	if err := WithEncoding(v, func([]byte) error { return boom }); err != boom {
		t.Errorf("fn's error: got %v", err)
	}
	called := false
	if err := WithEncoding(Record("bad", "\xff"), func([]byte) error { called = true; return nil }); err == nil || called {
		t.Errorf("an unencodable value: err %v, fn called %v", err, called)
	}
}

// TestNormalizeNormalValueAllocates: normalizing a value that is already
// normal copies nothing and tracks no path, so it allocates little (the
// errors still name their paths: TestNormalizeJSON).
func TestNormalizeNormalValueAllocates(t *testing.T) {
	ty := mustType(t, `{"record":{"a":{"nat":{}},"l":{"list":{"record":{"h":{"text":{}},"v":{"variant":{"A":{"nat":{}},"B":{"unit":{}}}}}}}}}`)
	v, err := NormalizeJSON(nil, ty, []byte(`{"a":1,"l":[{"h":"x","v":{"A":2}},{"h":"y","v":"B"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := Normalize(nil, ty, v); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 {
		t.Errorf("Normalize of a normal value made %v allocations, want 0", allocs)
	}
}
