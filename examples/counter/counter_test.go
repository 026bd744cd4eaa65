package counter

import (
	"bytes"
	"errors"
	"testing"

	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
)

// loadWorld loads the example's AIR, with the counter registered.
func loadWorld(t *testing.T) *schema.Catalog {
	t.Helper()
	r := reducer.NewRegistry()
	Register(r)
	c, err := schema.Load(".", &schema.LoadOptions{Reducers: r.Names()})
	if err != nil {
		t.Fatalf("load the example's AIR:\n%v", err)
	}
	if len(c.Warnings) > 0 {
		t.Errorf("warnings:\n%v", c.Warnings)
	}
	return c
}

// event normalizes an event given in AIR JSON (either lens) against
// counter/Event@1, as the world does at ingress.
func event(t *testing.T, c *schema.Catalog, js string) schema.Value {
	t.Helper()
	typ, ok := c.SchemaType("counter/Event@1")
	if !ok {
		t.Fatal("counter/Event@1 is not in the catalog")
	}
	v, err := schema.NormalizeJSON(c, typ, []byte(js))
	if err != nil {
		t.Fatalf("normalize event %s: %v", js, err)
	}
	return v
}

// run steps the reducer over events from a fresh cell and returns the
// final state, checking that every state fits counter/State@1.
func run(t *testing.T, c *schema.Catalog, events ...string) schema.Value {
	t.Helper()
	stateType, _ := c.SchemaType("counter/State@1")
	var state schema.Value
	for _, js := range events {
		out, err := Reducer{}.Step(&reducer.Context{Module: ModuleName, EventSchema: "counter/Event@1"}, state, event(t, c, js))
		if err != nil {
			t.Fatalf("Step(%s): %v", js, err)
		}
		if len(out.Events) != 0 || len(out.Effects) != 0 {
			t.Errorf("Step(%s) emitted %v, %v; want nothing", js, out.Events, out.Effects)
		}
		norm, err := schema.Normalize(c, stateType, out.State)
		if err != nil {
			t.Fatalf("state after %s does not fit counter/State@1: %v", js, err)
		}
		if !schema.Equal(norm, out.State) {
			t.Errorf("state after %s is not canonical: %s, normalized %s", js, schema.String(out.State), schema.String(norm))
		}
		state = out.State
	}
	return state
}

func want(pc string, remaining uint64) schema.Value {
	return schema.Record("pc", schema.Variant(pc, nil), "remaining", remaining)
}

func TestCountdown(t *testing.T) {
	c := loadWorld(t)
	tick := `{"$tag": "Tick"}`
	for _, tc := range []struct {
		name   string
		events []string
		want   schema.Value
	}{
		{"start 3, tick 3", []string{`{"Start": {"target": 3}}`, tick, tick, tick}, want(Done, 0)},
		{"tagged lens", []string{`{"variant": {"tag": "Start", "value": {"record": {"target": {"nat": 3}}}}}`, tick, tick, tick}, want(Done, 0)},
		{"start only", []string{`{"Start": {"target": 3}}`}, want(Counting, 3)},
		{"two ticks", []string{`{"Start": {"target": 3}}`, tick, tick}, want(Counting, 1)},
		{"tick after done", []string{`{"Start": {"target": 1}}`, tick, tick, tick}, want(Done, 0)},
		{"tick before start", []string{tick}, want(Idle, 0)},
		{"start 0", []string{`{"Start": {"target": 0}}`}, want(Done, 0)},
		{"restart", []string{`{"Start": {"target": 2}}`, tick, `{"Start": {"target": 5}}`, tick}, want(Counting, 4)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := run(t, c, tc.events...)
			if !schema.Equal(got, tc.want) {
				t.Errorf("state = %s; want %s", schema.String(got), schema.String(tc.want))
			}
		})
	}
}

// TestDeterministic steps the same events twice and compares the
// canonical bytes of every state.
func TestDeterministic(t *testing.T) {
	c := loadWorld(t)
	events := []string{`{"Start": {"target": 4}}`, `"Tick"`, `"Tick"`, `{"Start": {"target": 2}}`, `"Tick"`, `"Tick"`, `"Tick"`}
	trace := func() [][]byte {
		var out [][]byte
		var state schema.Value
		for _, js := range events {
			o, err := Reducer{}.Step(&reducer.Context{}, state, event(t, c, js))
			if err != nil {
				t.Fatal(err)
			}
			b, err := schema.Encode(o.State)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
			state = o.State
		}
		return out
	}
	a, b := trace(), trace()
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Errorf("step %d: %x then %x", i, a[i], b[i])
		}
	}
}

func TestBadInput(t *testing.T) {
	counting := schema.Record("pc", schema.Variant(Counting, nil), "remaining", uint64(2))
	for _, tc := range []struct {
		name         string
		state, event schema.Value
		wantErr      error // nil: any error
		ok           bool  // no error at all
	}{
		{"not a variant", nil, "Tick", ErrBadEvent, false},
		{"record without tag", nil, schema.Record("target", uint64(1)), ErrBadEvent, false},
		{"unknown tag", nil, schema.Variant("Stop", nil), ErrBadEvent, false},
		{"start without record", nil, schema.Variant("Start", uint64(3)), ErrBadEvent, false},
		{"start without target", nil, schema.Variant("Start", schema.Record("n", uint64(3))), ErrBadEvent, false},
		{"negative target", nil, schema.Variant("Start", schema.Record("target", schema.Int(-1))), ErrBadEvent, false},
		{"state of another type", "garbage", schema.Variant("Tick", nil), nil, false},
		{"ok with state", counting, schema.Variant("Tick", nil), nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Reducer{}.Step(&reducer.Context{}, tc.state, tc.event)
			switch {
			case tc.ok:
				if err != nil {
					t.Errorf("Step: %v", err)
				}
			case tc.wantErr == nil:
				if err == nil {
					t.Error("Step succeeded; want an error")
				}
			case !errors.Is(err, tc.wantErr):
				t.Errorf("Step: %v; want %v", err, tc.wantErr)
			}
		})
	}
}

func TestRegister(t *testing.T) {
	r := reducer.NewRegistry()
	Register(r)
	if _, ok := r.Lookup(ModuleName); !ok {
		t.Fatalf("%s is not registered", ModuleName)
	}
	if err := r.Register(ModuleName, Reducer{}); !errors.Is(err, reducer.ErrDuplicate) {
		t.Errorf("second Register: %v; want ErrDuplicate", err)
	}
}
