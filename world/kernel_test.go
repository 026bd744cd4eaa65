package world_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// tally counts pings and pongs per name.
type tally struct{}

type tallyState struct {
	Pings      uint64 `cbor:"pings"`
	Pongs      uint64 `cbor:"pongs"`
	LastStatus *int64 `cbor:"last_status"`
}

func (tally) Step(c *reducer.Context, state, event schema.Value) (reducer.Output, error) {
	var st tallyState
	if state != nil {
		if err := reducer.ToGo(state, &st); err != nil {
			return reducer.Output{}, err
		}
	}
	tag, v, _ := event.(*schema.Map).VariantTag()
	switch tag {
	case "Ping":
		st.Pings++
	case "Pong":
		st.Pongs++
		s, _ := v.(*schema.Map).Get("status")
		n, _ := schema.AsInt64(s)
		st.LastStatus = &n
	}
	out, err := reducer.FromGo(st)
	return reducer.Output{State: out}, err
}

// fakeHTTP answers http.request with a status from the URL's path.
type fakeHTTP struct{ calls atomic.Int64 }

func (f *fakeHTTP) Run(ctx context.Context, c *effects.Call) effects.Receipt {
	f.calls.Add(1)
	m := c.Params.(*schema.Map)
	u, _ := m.Get("url")
	status := int64(200)
	if strings.HasSuffix(u.(string), "/teapot") {
		status = 418
	}
	if strings.HasSuffix(u.(string), "/fail") {
		return effects.Errorf("fake", "connection refused")
	}
	return effects.OK("fake", schema.Record("status", schema.Int(status), "headers", schema.NewMap(), "body_ref", nil,
		"timings", schema.Record("start_ns", uint64(1), "end_ns", uint64(2)), "adapter_id", "fake"))
}

// pingWorld opens the pingpong world with h running its http.request
// effects.
func pingWorld(t *testing.T, st world.Storage, h effects.Adapter) (*world.World, *schema.Catalog, *reducer.Registry) {
	t.Helper()
	reg := reducer.NewRegistry()
	reg.MustRegister("test/Tally@1", tally{})
	cat, err := schema.Load("testdata/pingpong", &schema.LoadOptions{Reducers: reg.Names()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := world.Open(t.Context(), world.Options{
		Name: "pp", Catalog: cat, Reducers: reg, Storage: st,
		Adapters: map[string]effects.Adapter{"http.request": h},
		Now:      fixedClock(1_700_000_000_000_000_000), Entropy: zeroReader{},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, cat, reg
}

func kinds(t *testing.T, st world.Storage, name string) string {
	t.Helper()
	var ks []string
	err := st.Journal().Read(t.Context(), name, 1, func(r journal.Record) error {
		ks = append(ks, r.Kind)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(ks, " ")
}

func TestPlanEffectRoundTrip(t *testing.T) {
	ctx := t.Context()
	st := world.NewMemoryStorage()
	h := &fakeHTTP{}
	w, cat, reg := pingWorld(t, st, h)
	for _, who := range []string{"ann", "bob"} {
		path := "/ok"
		if who == "bob" {
			path = "/teapot"
		}
		js := fmt.Sprintf(`{"who": %q, "url": "https://pong.test%s"}`, who, path)
		if _, err := w.SendJSON(ctx, "test/Ping@1", []byte(js)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	for who, want := range map[string]string{
		"ann": `{"pings":1,"pongs":1,"last_status":200}`,
		"bob": `{"pings":1,"pongs":1,"last_status":418}`,
	} {
		var got string
		w.View(func(m *world.Machine) {
			v, _, _ := m.State("test/Tally@1", who)
			got = string(schema.ValueJSON(v))
		})
		if got != want {
			t.Errorf("%s: %s; want %s", who, got, want)
		}
	}
	if n := h.calls.Load(); n != 2 {
		t.Errorf("%d http calls; want 2", n)
	}
	w.Close()
	if _, err := world.Rerun(ctx, world.RerunOptions{Name: "pp", Catalog: cat, Reducers: reg, Storage: st, FromGenesis: true}); err != nil {
		t.Fatalf("replay: %v", err)
	}
	// Each ping: the event, the cell state, the plan start and its intent;
	// then the receipt, the pong event, the plan end and the cell state.
	// Receipts may come before or after the second ping.
	got := strings.Fields(kinds(t, st, "pp"))
	count := map[string]int{}
	for _, k := range got {
		count[k]++
	}
	want := map[string]int{"Manifest": 1, "DomainEvent": 2, "State": 4, "PlanStarted": 2, "Intent": 2, "Receipt": 2, "Event": 2, "PlanEnded": 2}
	if fmt.Sprint(count) != fmt.Sprint(want) {
		t.Fatalf("journal kinds %v: counts %v; want %v", got, count, want)
	}
	if strings.Join(got[:5], " ") != "Manifest DomainEvent State PlanStarted Intent" {
		t.Fatalf("journal starts %v", got[:5])
	}
}

// TestDeniedAndFailedEffects: a host outside the grant is denied by the
// cap, which ends the plan with an error naming the step; a failed effect
// ends it too; the world goes on.
func TestDeniedAndFailedEffects(t *testing.T) {
	ctx := t.Context()
	st := world.NewMemoryStorage()
	h := &fakeHTTP{}
	w, cat, reg := pingWorld(t, st, h)
	for _, url := range []string{"https://evil.test/", "https://pong.test/fail"} {
		if _, err := w.SendJSON(ctx, "test/Ping@1", []byte(fmt.Sprintf(`{"who": "x", "url": %q}`, url))); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	var ended []string
	err := st.Journal().Read(ctx, "pp", 1, func(r journal.Record) error {
		if r.Kind == world.KindPlanEnded || r.Kind == world.KindDenied {
			v, _ := schema.Decode(r.Payload)
			ended = append(ended, r.Kind+" "+string(schema.ValueJSON(v)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`Denied {"kind":"http.request","grant":"web","stage":"cap","origin":{"kind":"plan","name":"test/pinger@1","step":"call","plan_id":1},"reason":"cap sys/http.out@1 (grant \"web\") refuses http.request: host \"evil.test\" is not in the allowed hosts [pong.test]"}`,
		`PlanEnded {"plan":"test/pinger@1","error":{"code":"effect_denied","step":"call","message":"http.request: cap sys/http.out@1 (grant \"web\") refuses http.request: host \"evil.test\" is not in the allowed hosts [pong.test]"},"status":"error","plan_id":1}`,
		`PlanEnded {"plan":"test/pinger@1","error":{"code":"effect_failed","step":"wait","message":"http.request failed: connection refused"},"status":"error","plan_id":2}`,
	}
	if strings.Join(ended, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(ended, "\n"), strings.Join(want, "\n"))
	}
	w.Close()
	if _, err := world.Rerun(ctx, world.RerunOptions{Name: "pp", Catalog: cat, Reducers: reg, Storage: st, FromGenesis: true}); err != nil {
		t.Fatalf("replay: %v", err)
	}
}

// echo is a reducer that answers every event with another one to itself:
// a loop.
type echo struct{}

func (echo) Step(c *reducer.Context, state, event schema.Value) (reducer.Output, error) {
	who, _ := schema.FieldPath(event, "$value.who").(string)
	ev := schema.Variant("Pong", schema.Record("who", who, "status", schema.Int(1)))
	return reducer.Output{State: state, Events: []reducer.Event{{Schema: "test/Event@1", Value: ev}}}, nil
}

// TestLoopingReducerStops: a reducer that answers its own events would
// spin for ever inside one input; the world stops it at MaxDerived with an
// error that says what happened, and keeps its journal as it was.
func TestLoopingReducerStops(t *testing.T) {
	ctx := t.Context()
	st := world.NewMemoryStorage()
	reg := reducer.NewRegistry()
	reg.MustRegister("test/Tally@1", echo{})
	cat, err := schema.Load("testdata/pingpong", &schema.LoadOptions{Reducers: reg.Names()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := world.Open(ctx, world.Options{Name: "loop", Catalog: cat, Reducers: reg, Storage: st})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	before := w.Head()
	_, err = w.SendJSON(ctx, "test/Event@1", []byte(`{"$tag": "Pong", "$value": {"who": "ann", "status": 1}}`))
	if err == nil || !strings.Contains(err.Error(), "derived 100000 events and plan runs without settling") || !strings.Contains(err.Error(), "a reducer or plan loops") {
		t.Fatalf("Send to a looping reducer: %v; want the loop error", err)
	}
	if h, _ := st.Journal().Head(ctx, "loop"); h != before {
		t.Fatalf("journal head moved from %v to %v", before, h)
	}
}
