package chaincomp

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/examples/internal/exampletest"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// answers are the test services' replies, by path.
var answers = map[string]struct {
	status int
	body   string
}{
	"/charge":          {201, `{"charge_id": "ch_1"}`},
	"/charge-declined": {402, "card declined"},
	"/reserve":         {503, "out of stock: sku-42"},
	"/reserve-ok":      {200, `{"reserved": true}`},
	"/notify":          {204, ""},
	"/refund":          {202, `{"refund_id": "re_1"}`},
}

// services is the payment, stock and mail services on loopback; it
// records every request as "path order-id idempotency-key".
type services struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newServices(t *testing.T) *services {
	s := &services{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := answers[r.URL.Path]
		if !ok || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		key := r.Header.Get("Idempotency-Key")
		if key != "" {
			key = "key"
		}
		s.mu.Lock()
		s.seen = append(s.seen, strings.TrimSpace(fmt.Sprintf("%s %s %s", r.URL.Path, r.Header.Get("X-Order-Id"), key)))
		s.mu.Unlock()
		w.WriteHeader(a.status)
		fmt.Fprint(w, a.body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *services) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

func startJSON(base string, paths map[string]string) string {
	target := func(step string) string {
		u := base + paths[step]
		if strings.HasPrefix(paths[step], "http") {
			u = paths[step]
		}
		return fmt.Sprintf(`{"name": %q, "method": "POST", "url": %q}`, step, u)
	}
	return fmt.Sprintf(`{"Start": {"order_id": "o-1", "customer_id": "c-7", "amount_cents": 1999, "sku": "sku-42",
		"charge": %s, "reserve": %s, "notify": %s, "refund": %s}}`,
		target("charge"), target("reserve"), target("notify"), target("refund"))
}

// outcome describes the end of a saga in a few comparable words.
func outcome(m *world.Machine) string {
	v, _, _ := m.State(ModuleName, nil)
	s := exampletest.Field(v, "saga")
	return fmt.Sprintf("%v charge=%v reserve=%v notify=%v refund=%v error=%v",
		exampletest.Field(v, "phase", "$tag"), exampletest.Field(s, "charge_status"), exampletest.Field(s, "reserve_status"),
		exampletest.Field(s, "notify_status"), exampletest.Field(s, "refund_status"), exampletest.Field(s, "last_error"))
}

// flow lists the saga's journaled intents (URL paths) and the outcome
// events the plans raised (arms).
func flow(recs []exampletest.Record) (intents, raised []string) {
	for _, r := range recs {
		switch r.Kind {
		case world.KindIntent:
			u, _ := url.Parse(r.Get("params", "url").(string))
			intents = append(intents, u.Path)
		case world.KindRaised:
			if r.Get("schema") == EventSchema {
				raised = append(raised, fmt.Sprint(r.Get("value", "$tag")))
			}
		}
	}
	return intents, raised
}

func TestChainComp(t *testing.T) {
	for _, tc := range []struct {
		name     string
		paths    map[string]string
		outcome  string
		intents  string
		raised   string
		requests string
	}{
		{
			// AgentOS's 05-chain-comp: charge 201, reserve 503, the guard
			// status ≥ 400 takes the failure branch, refund 202: Refunded.
			// The success branch (two steps, guarded only on its first edge)
			// is skipped whole: no ReserveCompleted is raised.
			name:     "compensation",
			paths:    map[string]string{"charge": "/charge", "reserve": "/reserve", "notify": "/notify", "refund": "/refund"},
			outcome:  "Refunded charge=201 reserve=503 notify=<nil> refund=202 error=could not reserve sku-42 for order o-1 (status 503): out of stock: sku-42",
			intents:  "[/charge /reserve /refund]",
			raised:   "[ChargeCompleted ReserveFailed RefundCompleted]",
			requests: "[/charge o-1 key /reserve o-1 /refund o-1 key]",
		},
		{
			name:     "happy path",
			paths:    map[string]string{"charge": "/charge", "reserve": "/reserve-ok", "notify": "/notify", "refund": "/refund"},
			outcome:  "Completed charge=201 reserve=200 notify=204 refund=<nil> error=<nil>",
			intents:  "[/charge /reserve-ok /notify]",
			raised:   "[ChargeCompleted ReserveCompleted NotifyCompleted]",
			requests: "[/charge o-1 key /reserve-ok o-1 /notify o-1]",
		},
		{
			name:     "charge declined",
			paths:    map[string]string{"charge": "/charge-declined", "reserve": "/reserve", "notify": "/notify", "refund": "/refund"},
			outcome:  "Failed charge=402 reserve=<nil> notify=<nil> refund=<nil> error=the charge was refused with status 402: card declined",
			intents:  "[/charge-declined]",
			raised:   "[ChargeCompleted]",
			requests: "[/charge-declined o-1 key]",
		},
		{
			// The refund goes to a host the grant does not allow: the cap
			// refuses it, the refund plan fails, and its sys/PlanEnded@1
			// fails the saga with the reason.
			name:     "refund refused",
			paths:    map[string]string{"charge": "/charge", "reserve": "/reserve", "notify": "/notify", "refund": "http://localhost:9/refund"},
			outcome:  `Failed charge=201 reserve=503 notify=<nil> refund=<nil> error=chaincomp/refund_plan@1 step refund: effect_denied: http.request: cap chaincomp/http@1 (grant "http_chain") refuses http.request: host "localhost" is not in the allowed hosts [127.0.0.1]`,
			intents:  "[/charge /reserve]",
			raised:   "[ChargeCompleted ReserveFailed]",
			requests: "[/charge o-1 key /reserve o-1]",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exampletest.Case{
				World: "chain-comp", Dir: ".", Register: Register,
				Drive: func(t *testing.T, open func(world.Options) *world.World) {
					srv := newServices(t)
					w := open(world.Options{})
					exampletest.Send(t, w, EventSchema, startJSON(srv.URL, tc.paths))
					exampletest.WaitIdle(t, w)
					if got := fmt.Sprint(srv.requests()); got != tc.requests {
						t.Errorf("the services saw %s; want %s", got, tc.requests)
					}
				},
				Check: func(t *testing.T, m *world.Machine, recs []exampletest.Record) {
					if got := outcome(m); got != tc.outcome {
						t.Errorf("outcome:\n got %s\nwant %s", got, tc.outcome)
					}
					intents, raised := flow(recs)
					if fmt.Sprint(intents) != tc.intents {
						t.Errorf("intents %v; want %s", intents, tc.intents)
					}
					if fmt.Sprint(raised) != tc.raised {
						t.Errorf("plans raised %v; want %s", raised, tc.raised)
					}
					if n := len(m.RunningPlans()); n != 0 {
						t.Errorf("%d plans still running", n)
					}
				},
			}.Run(t)
		})
	}
}

// TestIdempotencyKeys: the charge and the refund of one order carry
// different idempotency keys, and the same order charged in another world
// gets the same key (the key is the hash of {order_id, step}).
func TestIdempotencyKeys(t *testing.T) {
	paths := map[string]string{"charge": "/charge", "reserve": "/reserve", "notify": "/notify", "refund": "/refund"}
	var runs [][]any
	exampletest.Case{
		World: "chain-comp", Dir: ".", Register: Register,
		Drive: func(t *testing.T, open func(world.Options) *world.World) {
			srv := newServices(t)
			w := open(world.Options{})
			exampletest.Send(t, w, EventSchema, startJSON(srv.URL, paths))
		},
		Check: func(t *testing.T, m *world.Machine, recs []exampletest.Record) {
			var keys []any
			for _, in := range exampletest.Select(recs, world.KindIntent) {
				keys = append(keys, in.Get("key"))
			}
			runs = append(runs, keys)
		},
	}.Run(t)
	for _, keys := range runs {
		if len(keys) != 3 || keys[0] == nil || keys[1] != nil || keys[2] == nil || fmt.Sprint(keys[0]) == fmt.Sprint(keys[2]) {
			t.Fatalf("keys of charge, reserve, refund = %x; want two distinct keys around none", keys)
		}
		if fmt.Sprint(keys) != fmt.Sprint(runs[0]) {
			t.Errorf("keys differ between runs: %x and %x", keys, runs[0])
		}
	}
}

func TestSteps(t *testing.T) {
	c, _ := exampletest.Load(t, ".", Register)
	store := cas.NewMemory()
	ref, err := store.Put(t.Context(), []byte("no stock"))
	if err != nil {
		t.Fatal(err)
	}
	start := startJSON("http://127.0.0.1:1", map[string]string{"charge": "/c", "reserve": "/r", "notify": "/n", "refund": "/f"})
	out := func(arm string, id uint64, status int, note string) string {
		n := "null"
		if note != "" {
			n = fmt.Sprintf("%q", note)
		}
		return fmt.Sprintf(`{%q: {"request_id": %d, "status": %d, "body_ref": %q, "note": %s}}`, arm, id, status, ref, n)
	}
	failedPlan := func(plan string, id uint64) schema.Value {
		in, _ := schema.Encode(schema.Record("request_id", id))
		return schema.Variant("PlanEnded", schema.Record("plan", plan, "plan_id", uint64(1), "status", "error",
			"error", schema.Record("step", "x", "code", "effect_failed", "message", "down"), "input", in))
	}
	for _, tc := range []struct {
		name   string
		events []any
		phase  string
		raised string
	}{
		{"start", []any{start}, Charging, "[chaincomp/ChargeRequested@1]"},
		{"charged", []any{start, out("ChargeCompleted", 0, 201, "")}, Reserving, "[chaincomp/ReserveRequested@1]"},
		{"declined", []any{start, out("ChargeCompleted", 0, 402, "")}, Failed, "[]"},
		{"reserved", []any{start, out("ChargeCompleted", 0, 201, ""), out("ReserveCompleted", 0, 200, "ok")}, Notifying, "[chaincomp/NotifyRequested@1]"},
		{"reserve failed", []any{start, out("ChargeCompleted", 0, 201, ""), out("ReserveFailed", 0, 503, "nope")}, Refunding, "[chaincomp/RefundRequested@1]"},
		{"refunded", []any{start, out("ChargeCompleted", 0, 201, ""), out("ReserveFailed", 0, 503, ""), out("RefundCompleted", 0, 202, "")}, Refunded, "[]"},
		{"completed", []any{start, out("ChargeCompleted", 0, 201, ""), out("ReserveCompleted", 0, 200, ""), out("NotifyCompleted", 0, 204, "")}, Completed, "[]"},
		{"outcome of another saga", []any{start, out("ChargeCompleted", 3, 201, "")}, Charging, "[]"},
		{"outcome out of phase", []any{start, out("RefundCompleted", 0, 202, "")}, Charging, "[]"},
		{"start while charging", []any{start, start}, Charging, "[]"},
		{"next saga", []any{start, out("ChargeCompleted", 0, 402, ""), start}, Charging, "[chaincomp/ChargeRequested@1]"},
		{"plan failed", []any{start, failedPlan(ChargePlan, 0)}, Failed, "[]"},
		{"other step's plan failed", []any{start, failedPlan(RefundPlan, 0)}, Charging, "[]"},
		{"old saga's plan failed", []any{start, failedPlan(ChargePlan, 5)}, Charging, "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var state schema.Value
			var o reducer.Output
			for _, e := range tc.events {
				state, o = exampletest.Step(t, c, Reducer{}, &reducer.Context{Module: ModuleName, CAS: store}, state, e)
				for _, r := range o.Events {
					rt, _ := c.SchemaType(r.Schema)
					if _, err := schema.Normalize(c, rt, r.Value); err != nil {
						t.Fatalf("raised %s does not fit: %v", r.Schema, err)
					}
				}
			}
			if ph := exampletest.Field(state, "phase", "$tag"); ph != tc.phase {
				t.Errorf("phase = %v; want %s (state %s)", ph, tc.phase, schema.String(state))
			}
			var raised []string
			for _, r := range o.Events {
				raised = append(raised, r.Schema)
			}
			if fmt.Sprint(raised) != tc.raised && !(tc.raised == "[]" && len(raised) == 0) {
				t.Errorf("raised %v; want %s", raised, tc.raised)
			}
		})
	}
}

func TestBadEvents(t *testing.T) {
	for _, ev := range []schema.Value{
		true,
		schema.Variant("Cancel", nil),
		schema.Variant("Start", schema.Record("order_id", uint64(3))),
		schema.Variant("ReserveFailed", "503"),
		schema.Variant("PlanEnded", uint64(1)),
		schema.Variant("Start", nil),
	} {
		if _, err := (Reducer{}).Step(&reducer.Context{}, nil, ev); !errors.Is(err, ErrBadEvent) {
			t.Errorf("Step(%s): %v; want ErrBadEvent", schema.String(ev), err)
		}
	}
}

func FuzzStep(f *testing.F) {
	start := startJSON("http://127.0.0.1:1", map[string]string{"charge": "/c", "reserve": "/r", "notify": "/n", "refund": "/f"})
	out := func(arm string, status int) string {
		return fmt.Sprintf(`{%q: {"request_id": 0, "status": %d, "body_ref": null, "note": "n"}}`, arm, status)
	}
	exampletest.FuzzReducer(f, ".", Register, ModuleName,
		[]string{start, out("ChargeCompleted", 201), out("ReserveFailed", 503), out("RefundCompleted", 202), start},
		[]string{start, out("ChargeCompleted", 201), out("ReserveCompleted", 200), out("NotifyCompleted", 204)},
		[]string{start, out("ChargeCompleted", 402)},
	)
}
