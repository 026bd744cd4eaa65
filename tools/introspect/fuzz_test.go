package introspect_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/introspect"
)

// FuzzToolArguments calls the tools with any arguments on a keyed world:
// a call either succeeds with JSON that fits the tool's output schema, or
// fails with exit code 1 and a category that blames the arguments or the
// names in them, never "internal" (a panic or a bug).
func FuzzToolArguments(f *testing.F) {
	for _, tc := range toolErrorCases {
		f.Add(tc.tool, tc.args)
	}
	for _, s := range []struct{ tool, args string }{
		{introspect.ToolState, `{"reducer": "probe/Sum@1", "key": "a", "consistency": "exact:5"}`},
		{introspect.ToolState, `{"reducer": "probe/Sum@1", "key": {"text": "b"}}`},
		{introspect.ToolState, `{"reducer": "probe/Sum@1", "consistency": "at_least:3"}`},
		{introspect.ToolModule, `{"name": "probe/Sum@1", "consistency": "exact:2"}`},
		{introspect.ToolSchemas, `{"names": ["probe/SumEvent@1"], "expand_refs": true}`},
		{introspect.ToolManifest, `{"def": "probe/probe_plan@1", "include_builtin": true}`},
		{introspect.ToolJournalHead, `{}`},
	} {
		f.Add(s.tool, s.args)
	}
	v := keyedRun(f)
	byName := map[string]tools.Tool{}
	schemas := map[string]func(any) error{}
	for _, tl := range introspect.Tools(v, &introspect.Options{MaxWait: -1}) {
		name := tl.Info().Name
		byName[name] = tl
		schemas[name] = outputSchema(f, tl).Validate
	}
	f.Fuzz(func(t *testing.T, name, args string) {
		tl, ok := byName[name]
		if !ok {
			name = introspect.ToolState
			tl = byName[name]
		}
		// A call that hangs fails with its input, rather than stalling the
		// fuzzer.
		done := make(chan tools.Response, 1)
		go func() { done <- tl.Run(t.Context(), tools.Request{Arguments: json.RawMessage(args)}, nil) }()
		var r tools.Response
		select {
		case r = <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s %q did not return within 10s", name, args)
		}
		switch r.ExitCode {
		case 0:
			var doc any
			if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
				t.Fatalf("%s %s: stdout is not JSON: %v", name, args, err)
			}
			if err := schemas[name](jsonschemaValue(doc)); err != nil {
				t.Fatalf("%s %s: stdout does not fit the output schema: %v", name, args, err)
			}
		case 1:
			switch r.Error {
			case introspect.ErrorInvalidArguments, introspect.ErrorNotFound, introspect.ErrorUnavailable:
			default:
				t.Fatalf("%s %s: error %q: %s", name, args, r.Error, r.Stderr)
			}
			if r.Stderr == "" || r.Stdout != "" {
				t.Fatalf("%s %s: a failure with stdout %q and stderr %q", name, args, r.Stdout, r.Stderr)
			}
		default:
			t.Fatalf("%s %s: exit code %d: %+v", name, args, r.ExitCode, r)
		}
	})
}

// jsonschemaValue turns float64 numbers into json.Number, as the
// validator wants.
func jsonschemaValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonschemaValue(e)
		}
	case []any:
		for i, e := range x {
			x[i] = jsonschemaValue(e)
		}
	case float64:
		b, _ := json.Marshal(x)
		return json.Number(b)
	}
	return v
}

// FuzzReducerStateKey gives introspect.reducer_state any key bytes and
// consistency: the receipt is ok and fits its schema, or an error receipt
// that says why; the adapter never panics.
func FuzzReducerStateKey(f *testing.F) {
	a, _ := schema.Encode("a")
	nat, _ := schema.Encode(uint64(5))
	for _, seed := range []struct {
		reducer string
		key     []byte
		c       string
	}{
		{"probe/Sum@1", a, "head"},
		{"probe/Sum@1", a[3:], "exact:3"},
		{"probe/Sum@1", nat, "head"},
		{"probe/Sum@1", []byte{0xff}, "head"},
		{"probe/Count@1", nil, "at_least:2"},
		{"probe/Count@1", []byte{}, "exact:9"},
		{"probe/Nope@1", a, "head"},
	} {
		f.Add(seed.reducer, seed.key, seed.c)
	}
	v := keyedRun(f)
	adapter := introspect.Adapters(v, &introspect.Options{MaxWait: -1})[introspect.EffectReducerState]
	ef, _ := v.Catalog().EffectKind(introspect.EffectReducerState)
	f.Fuzz(func(t *testing.T, reducer string, key []byte, c string) {
		var k schema.Value
		if key != nil {
			k = key
		}
		r := call(t.Context(), adapter, introspect.EffectReducerState, schema.Record("reducer", reducer, "key", k, "consistency", c))
		switch r.Status {
		case effects.StatusOK:
			if _, err := schema.Normalize(v.Catalog(), schema.RefType(ef.ReceiptSchema), r.Payload); err != nil {
				t.Fatalf("receipt does not fit %s: %v", ef.ReceiptSchema, err)
			}
		case effects.StatusError:
			if r.Error == "" {
				t.Fatal("an error receipt without a message")
			}
		default:
			t.Fatalf("status %q", r.Status)
		}
	})
}
