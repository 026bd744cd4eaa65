package timer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/builtin"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/examples/internal/exampletest"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// TestHelloTimer is AgentOS's 01-hello-timer: Start{deliver_at_ns: 1e6}
// sets one timer through the built-in timer adapter; its receipt comes
// back as Fired and the timer is Done with the key it was set with. The
// world's clock starts at 0 and the timer adapter's sleep moves it, so the
// timer fires at exactly 1e6.
func TestHelloTimer(t *testing.T) {
	exampletest.Case{
		World: "hello-timer", Dir: ".", Register: Register,
		Drive: func(t *testing.T, open func(world.Options) *world.World) {
			clock := exampletest.NewClock(time.Unix(0, 0))
			w := open(world.Options{Now: clock.Now, Dispatch: effects.DispatcherOptions{Sleep: clock.Sleep}})
			exampletest.Send(t, w, EventSchema, `{"Start": {"deliver_at_ns": 1000000, "key": "hello"}}`)
			exampletest.WaitIdle(t, w)
			if got := clock.Sleeps(); len(got) != 1 || got[0].UnixNano() != 1_000_000 {
				t.Errorf("the timer adapter slept until %v; want once until 1000000 ns", got)
			}
		},
		Check: func(t *testing.T, m *world.Machine, recs []exampletest.Record) {
			want := `{"pc":{"$tag":"Done"},"key":"hello","error":null,"fired_key":"hello","deadline_ns":1000000,"fired_at_ns":1000000}`
			if got := exampletest.State(m, ModuleName, nil); got != want {
				t.Errorf("state = %s\nwant    %s", got, want)
			}
			intents := exampletest.Select(recs, world.KindIntent)
			if len(intents) != 1 {
				t.Fatalf("%d intents; want 1: %v", len(intents), intents)
			}
			in := intents[0]
			if in.Get("kind") != "timer.set" || in.Get("grant") != "timer_grant" || in.Get("params", "deliver_at_ns") != uint64(1_000_000) {
				t.Errorf("intent = %s; want timer.set under timer_grant at 1000000", in)
			}
			receipts := exampletest.Select(recs, world.KindReceipt)
			if len(receipts) != 1 || receipts[0].Get("status") != "ok" {
				t.Errorf("receipts = %v; want one ok", receipts)
			}
			fired := exampletest.Select(recs, world.KindRaised)
			if len(fired) != 1 || fired[0].Get("schema") != "sys/TimerFired@1" {
				t.Errorf("derived events = %v; want one sys/TimerFired@1", fired)
			}
		},
	}.Run(t)
}

// TestTimerFails: a timer whose adapter reports an error still comes back
// to the reducer, with status "error", and the timer is Failed.
func TestTimerFails(t *testing.T) {
	failing := builtin.Adapters(nil)
	failing["timer.set"] = effects.AdapterFunc(func(ctx context.Context, c *effects.Call) effects.Receipt {
		return effects.Errorf("timer", "timer.set: the clock broke")
	})
	exampletest.Case{
		World: "broken-timer", Dir: ".", Register: Register,
		Drive: func(t *testing.T, open func(world.Options) *world.World) {
			w := open(world.Options{Adapters: failing})
			exampletest.Send(t, w, EventSchema, `{"Start": {"deliver_at_ns": 5, "key": null}}`)
		},
		Check: func(t *testing.T, m *world.Machine, recs []exampletest.Record) {
			want := `{"pc":{"$tag":"Failed"},"key":null,"error":"timer.set ended with status \"error\"","fired_key":null,"deadline_ns":5,"fired_at_ns":null}`
			if got := exampletest.State(m, ModuleName, nil); got != want {
				t.Errorf("state = %s\nwant    %s", got, want)
			}
		},
	}.Run(t)
}

// step runs the reducer on an event given in AIR JSON, normalized as the
// world normalizes it.
func step(t *testing.T, c *schema.Catalog, state schema.Value, js string) reducer.Output {
	t.Helper()
	typ, _ := c.SchemaType(EventSchema)
	ev, err := schema.NormalizeJSON(c, typ, []byte(js))
	if err != nil {
		t.Fatalf("normalize %s: %v", js, err)
	}
	out, err := Reducer{}.Step(&reducer.Context{Module: ModuleName, EventSchema: EventSchema}, state, ev)
	if err != nil {
		t.Fatalf("Step(%s): %v", js, err)
	}
	st, _ := c.SchemaType("timer/State@1")
	if _, err := schema.Normalize(c, st, out.State); out.State != nil && err != nil {
		t.Fatalf("state after %s does not fit timer/State@1: %v", js, err)
	}
	return out
}

func fired(deliverAt uint64, key string, status string) string {
	k := `null`
	if key != "" {
		k = `"` + key + `"`
	}
	return `{"Fired": {"intent_hash": "blake3:0000000000000000000000000000000000000000000000000000000000000000",
		"reducer": "timer/Timer@1", "effect_kind": "timer.set", "adapter_id": "timer", "status": "` + status + `",
		"requested": {"deliver_at_ns": ` + schema.String(deliverAt) + `, "key": ` + k + `},
		"receipt": {"delivered_at_ns": ` + schema.String(deliverAt+3) + `, "key": ` + k + `},
		"cost_cents": null, "signature": ""}}`
}

func TestSteps(t *testing.T) {
	c, _ := exampletest.Load(t, ".", Register)
	start := `{"Start": {"deliver_at_ns": 100, "key": "a"}}`
	for _, tc := range []struct {
		name    string
		events  []string
		want    string
		effects int // effects of the last step
	}{
		{"start", []string{start}, `{"pc":{"$tag":"Waiting"},"key":"a","error":null,"fired_key":null,"deadline_ns":100,"fired_at_ns":null}`, 1},
		{"fired", []string{start, fired(100, "a", "ok")}, `{"pc":{"$tag":"Done"},"key":"a","error":null,"fired_key":"a","deadline_ns":100,"fired_at_ns":103}`, 0},
		{"start while waiting", []string{start, `{"Start": {"deliver_at_ns": 7, "key": "b"}}`}, `{"pc":{"$tag":"Waiting"},"key":"a","error":null,"fired_key":null,"deadline_ns":100,"fired_at_ns":null}`, 0},
		{"stale deadline", []string{start, fired(99, "a", "ok")}, `{"pc":{"$tag":"Waiting"},"key":"a","error":null,"fired_key":null,"deadline_ns":100,"fired_at_ns":null}`, 0},
		{"stale key", []string{start, fired(100, "b", "ok")}, `{"pc":{"$tag":"Waiting"},"key":"a","error":null,"fired_key":null,"deadline_ns":100,"fired_at_ns":null}`, 0},
		{"fired before start", []string{fired(100, "a", "ok")}, `<none>`, 0},
		{"timeout", []string{start, fired(100, "a", "timeout")}, `{"pc":{"$tag":"Failed"},"key":"a","error":"timer.set ended with status \"timeout\"","fired_key":null,"deadline_ns":100,"fired_at_ns":null}`, 0},
		{"restart after done", []string{start, fired(100, "a", "ok"), `{"Start": {"deliver_at_ns": 200, "key": null}}`}, `{"pc":{"$tag":"Waiting"},"key":null,"error":null,"fired_key":null,"deadline_ns":200,"fired_at_ns":null}`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var state schema.Value
			var out reducer.Output
			for _, js := range tc.events {
				out = step(t, c, state, js)
				state = out.State
			}
			got := "<none>"
			if state != nil {
				st, _ := c.SchemaType("timer/State@1")
				norm, _ := schema.Normalize(c, st, state)
				got = string(schema.ValueJSON(norm))
			}
			if got != tc.want {
				t.Errorf("state = %s\nwant    %s", got, tc.want)
			}
			if len(out.Effects) != tc.effects {
				t.Errorf("last step emitted %d effects; want %d", len(out.Effects), tc.effects)
			}
			for _, e := range out.Effects {
				if e.Kind != "timer.set" || e.CapSlot != "" {
					t.Errorf("effect %s (slot %q); want timer.set on the default slot", e.Kind, e.CapSlot)
				}
			}
		})
	}
}

func TestBadEvents(t *testing.T) {
	for _, ev := range []schema.Value{
		"Start",
		schema.Record("deliver_at_ns", uint64(1)),
		schema.Variant("Stop", nil),
		schema.Variant("Start", "soon"),
		schema.Variant("Fired", uint64(3)),
		schema.Variant("Start", nil),
	} {
		if _, err := (Reducer{}).Step(&reducer.Context{}, nil, ev); !errors.Is(err, ErrBadEvent) {
			t.Errorf("Step(%s): %v; want ErrBadEvent", schema.String(ev), err)
		}
	}
}

func FuzzStep(f *testing.F) {
	exampletest.FuzzReducer(f, ".", Register, ModuleName,
		[]string{`{"Start": {"deliver_at_ns": 100, "key": "a"}}`, fired(100, "a", "ok"), `{"Start": {"deliver_at_ns": 7, "key": null}}`},
		[]string{`{"Start": {"deliver_at_ns": 100, "key": "a"}}`, fired(100, "a", "error")},
	)
}

// TestTimerSurvivesReopen closes the world while its timer is pending and
// reopens the bbolt store: the world dispatches the pending timer.set
// again, and this time it fires.
func TestTimerSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	cat, reg := exampletest.Load(t, ".", Register)
	open := func(clock *exampletest.Clock, sleep func(ctx context.Context, t time.Time) error) (*world.World, func()) {
		s, err := store.Open(dir, &store.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		st, err := world.NewBoltStorage(s.CAS(), s.Journal())
		if err != nil {
			t.Fatal(err)
		}
		w, err := world.Open(t.Context(), world.Options{Name: "reopen", Catalog: cat, Reducers: reg, Storage: st,
			Adapters: builtin.Adapters(nil), Now: clock.Now, Dispatch: effects.DispatcherOptions{Sleep: sleep}})
		if err != nil {
			t.Fatal(err)
		}
		return w, func() { w.Close(); s.Close() }
	}
	asleep := make(chan struct{})
	w, closeAll := open(exampletest.NewClock(time.Unix(0, 0)), func(ctx context.Context, _ time.Time) error {
		close(asleep)
		<-ctx.Done() // the timer never fires in this life
		return ctx.Err()
	})
	exampletest.Send(t, w, EventSchema, `{"Start": {"deliver_at_ns": 1000000, "key": "later"}}`)
	<-asleep
	var pc any
	w.View(func(m *world.Machine) {
		v, _, _ := m.State(ModuleName, nil)
		pc = exampletest.Field(v, "pc", "$tag")
		if n := len(m.Pending()); n != 1 {
			t.Errorf("%d pending intents before the reopen; want 1", n)
		}
	})
	if pc != Waiting {
		t.Fatalf("pc = %v before the reopen; want Waiting", pc)
	}
	closeAll()

	clock := exampletest.NewClock(time.Unix(0, 0))
	w, closeAll = open(clock, clock.Sleep)
	defer closeAll()
	exampletest.WaitIdle(t, w)
	w.View(func(m *world.Machine) {
		want := `{"pc":{"$tag":"Done"},"key":"later","error":null,"fired_key":"later","deadline_ns":1000000,"fired_at_ns":1000000}`
		if got := exampletest.State(m, ModuleName, nil); got != want {
			t.Errorf("state after the reopen = %s\nwant %s", got, want)
		}
	})
}
