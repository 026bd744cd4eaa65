package plans

import (
	"encoding/json"
	"testing"

	"github.com/demiurge-dev/demiurge/schema"
)

// expr parses an expression from JSON through a one-step plan, the way
// the loader does.
func expr(t testing.TB, js string) *schema.Expr {
	t.Helper()
	src := `[{"$kind":"manifest","air_version":"1","schemas":[{"name":"t/In@1"}],"plans":[{"name":"t/p@1"}],"modules":[],"effects":[],"caps":[],"policies":[]},
	{"$kind":"defschema","name":"t/In@1","type":{"record":{"a":{"nat":{}},"s":{"text":{}},"l":{"list":{"int":{}}},"m":{"map":{"key":{"text":{}},"value":{"nat":{}}}}}}},
	{"$kind":"defplan","name":"t/p@1","input":"t/In@1","steps":[{"id":"x","op":"assign","expr":` + js + `,"bind":{"as":"v"}}]}]`
	cat, err := schema.LoadSources([]schema.Source{{Name: "t.air.json", Data: []byte(src)}}, nil)
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	p, _ := cat.Plan("t/p@1")
	ev := p.Steps[0].Expr
	if ev.Expr == nil {
		t.Fatalf("%s is not an expression", js)
	}
	return ev.Expr
}

func TestEval(t *testing.T) {
	input, err := schema.NormalizeJSON(testResolver{}, &schema.Type{Kind: schema.KindRecord, Fields: []schema.Field{
		{Name: "a", Type: schema.Primitive(schema.KindNat)},
		{Name: "l", Type: &schema.Type{Kind: schema.KindList, Elem: schema.Primitive(schema.KindInt)}},
		{Name: "m", Type: &schema.Type{Kind: schema.KindMap, Key: schema.Primitive(schema.KindText), Value: schema.Primitive(schema.KindNat)}},
		{Name: "s", Type: schema.Primitive(schema.KindText)},
	}}, []byte(`{"a": 5, "s": "héllo", "l": [3, -1], "m": {"k": 2}}`))
	if err != nil {
		t.Fatal(err)
	}
	sc := &Scope{Input: input, Var: func(string) (schema.Value, bool) { return nil, false }}
	tests := []struct{ expr, want, err string }{
		{`{"op":"len","args":[{"ref":"@plan.input.s"}]}`, `5`, ""},
		{`{"op":"len","args":[{"ref":"@plan.input.l"}]}`, `2`, ""},
		{`{"op":"get","args":[{"ref":"@plan.input.m"},{"text":"k"}]}`, `2`, ""},
		{`{"op":"get","args":[{"ref":"@plan.input.l"},{"nat":1}]}`, `-1`, ""},
		{`{"op":"get","args":[{"ref":"@plan.input.l"},{"nat":2}]}`, ``, "get: index 2 out of range for a list of 2"},
		{`{"op":"has","args":[{"ref":"@plan.input.m"},{"text":"z"}]}`, `false`, ""},
		{`{"op":"eq","args":[{"int":200},{"nat":200}]}`, `true`, ""},
		{`{"op":"ne","args":[{"int":-1},{"nat":1}]}`, `true`, ""},
		{`{"op":"lt","args":[{"int":-1},{"nat":0}]}`, `true`, ""},
		{`{"op":"ge","args":[{"text":"b"},{"text":"a"}]}`, `true`, ""},
		{`{"op":"lt","args":[{"text":"b"},{"nat":1}]}`, ``, "lt: cannot compare text with an integer"},
		{`{"op":"and","args":[{"bool":true},{"bool":false},{"bool":true}]}`, `false`, ""},
		{`{"op":"or","args":[{"bool":false},{"bool":true}]}`, `true`, ""},
		{`{"op":"not","args":[{"nat":1}]}`, ``, "not wants a bool, got an integer"},
		{`{"op":"concat","args":[{"text":"a"},{"ref":"@plan.input.s"},{"text":"!"}]}`, `"ahéllo!"`, ""},
		{`{"op":"add","args":[{"nat":18446744073709551615},{"nat":1}]}`, ``, "add: integer overflow"},
		{`{"op":"sub","args":[{"nat":1},{"nat":3}]}`, `-2`, ""},
		{`{"op":"mul","args":[{"int":-4},{"nat":3}]}`, `-12`, ""},
		{`{"op":"div","args":[{"int":-7},{"nat":2}]}`, `-3`, ""},
		{`{"op":"mod","args":[{"int":-7},{"nat":2}]}`, `-1`, ""},
		{`{"op":"mod","args":[{"nat":1},{"nat":0}]}`, ``, "mod by zero"},
		{`{"op":"starts_with","args":[{"text":"hello"},{"text":"he"}]}`, `true`, ""},
		{`{"op":"ends_with","args":[{"text":"hello"},{"text":"lo"}]}`, `true`, ""},
		{`{"op":"contains","args":[{"ref":"@plan.input.l"},{"int":-1}]}`, `true`, ""},
		{`{"op":"contains","args":[{"ref":"@plan.input.m"},{"text":"k"}]}`, `true`, ""},
		{`{"op":"contains","args":[{"text":"hello"},{"text":"ell"}]}`, `true`, ""},
		{`{"op":"hash","args":[{"record":{"a":{"nat":1}}}]}`, `"blake3:4a2d7e8a0b0a4e3d4d9c2d0b1e8b8e2b1d38f10b7ec7d3dbb7b7b0c54b5e0a4e"`, "skip"},
		{`{"record":{"b":{"nat":1},"a":{"ref":"@plan.input.a"}}}`, `{"a":5,"b":1}`, ""},
		{`{"set":[{"nat":2},{"nat":1},{"nat":2}]}`, `[1,2]`, ""},
		{`{"map":[{"key":{"text":"x"},"value":{"nat":1}}]}`, `{"x":1}`, ""},
		{`{"variant":{"tag":"Go","value":{"nat":1}}}`, `{"$tag":"Go","$value":1}`, ""},
		{`{"variant":{"tag":"Idle"}}`, `{"$tag":"Idle"}`, ""},
		{`{"ref":"@plan.input.m.k"}`, `2`, ""},
		{`{"ref":"@plan.input.l.1"}`, `-1`, ""},
		{`{"ref":"@plan.input.m.zz"}`, ``, `@plan.input.m.zz: at "m.zz": no field "zz" (has "k")`},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			x := expr(t, tc.expr)
			v, err := Eval(x, sc)
			if tc.err == "skip" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if tc.err != "" {
				ee, ok := err.(*EvalError)
				if !ok || ee.Msg != tc.err {
					t.Fatalf("err = %v; want %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(schema.ValueJSON(v)); got != tc.want {
				t.Fatalf("got %s; want %s", got, tc.want)
			}
		})
	}
}

// TestHashPortable pins the hash op: BLAKE3 of the canonical CBOR, the
// same bytes on every machine and in every language that encodes AIR.
func TestHashPortable(t *testing.T) {
	v, err := Eval(expr(t, `{"op":"hash","args":[{"record":{"a":{"nat":1}}}]}`), &Scope{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := schema.Ref(schema.Record("a", uint64(1)))
	if v != want.String() {
		t.Fatalf("hash = %v; want %v", v, want)
	}
	// {"a":1} is d9d9f7 a1 61 61 01.
	if got := want.String(); got[:7] != "blake3:" {
		t.Fatalf("hash %s", got)
	}
	b, _ := schema.Encode(schema.Record("a", uint64(1)))
	if js, _ := json.Marshal(b); string(js) != `"2dn3oWFhAQ=="` {
		t.Fatalf("canonical bytes %x", b)
	}
}

type testResolver struct{}

func (testResolver) SchemaType(string) (*schema.Type, bool) { return nil, false }

// FuzzEval evaluates random expressions: errors, never panics.
func FuzzEval(f *testing.F) {
	f.Add(`{"op":"add","args":[{"nat":1},{"int":-2}]}`)
	f.Add(`{"op":"get","args":[{"ref":"@plan.input"},{"text":"a"}]}`)
	f.Add(`{"op":"concat","args":[{"list":[{"nat":1}]},{"list":[]}]}`)
	f.Add(`{"map":[{"key":{"nat":1},"value":{"set":[{"text":"x"}]}}]}`)
	f.Fuzz(func(t *testing.T, js string) {
		if !json.Valid([]byte(js)) {
			return
		}
		src := `[{"$kind":"manifest","air_version":"1","schemas":[{"name":"t/In@1"}],"plans":[{"name":"t/p@1"}],"modules":[],"effects":[],"caps":[],"policies":[]},
		{"$kind":"defschema","name":"t/In@1","type":{"record":{"a":{"nat":{}}}}},
		{"$kind":"defplan","name":"t/p@1","input":"t/In@1","steps":[{"id":"x","op":"assign","expr":` + js + `,"bind":{"as":"v"}}]}]`
		cat, err := schema.LoadSources([]schema.Source{{Name: "t.air.json", Data: []byte(src)}}, nil)
		if err != nil {
			return
		}
		p, _ := cat.Plan("t/p@1")
		ev := p.Steps[0].Expr
		if ev.Expr == nil {
			return
		}
		in := schema.Record("a", uint64(1))
		v, err := Eval(ev.Expr, &Scope{Input: in, Var: func(string) (schema.Value, bool) { return nil, false }, Step: func(string) (schema.Value, bool) { return nil, false }})
		if err == nil {
			if _, err := schema.Encode(v); err != nil {
				t.Fatalf("result does not encode: %v", err)
			}
		}
	})
}
