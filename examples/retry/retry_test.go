package retry

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/examples/internal/exampletest"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// flaky answers the n-th request (from 1) with statuses(n), and records
// the x-request-id and Idempotency-Key headers of each.
type flaky struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newFlaky(t *testing.T, statuses func(n int) int) *flaky {
	f := &flaky{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.seen = append(f.seen, r.Header.Get("X-Request-Id")+" "+r.Header.Get("Idempotency-Key"))
		n := len(f.seen)
		f.mu.Unlock()
		w.WriteHeader(statuses(n))
		fmt.Fprintf(w, "attempt %d", n)
	}))
	t.Cleanup(f.Close)
	return f
}

// requests returns how many requests came and whether each had the
// request id and a distinct idempotency key.
func (f *flaky) requests(t *testing.T, reqID string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	keys := map[string]bool{}
	for _, s := range f.seen {
		id, key, _ := strings.Cut(s, " ")
		if id != reqID || key == "" || keys[key] {
			t.Errorf("request %q: want x-request-id %s and a fresh idempotency key", s, reqID)
		}
		keys[key] = true
	}
	return len(f.seen)
}

type scenario struct {
	name     string
	statuses func(n int) int // nil: the URL refuses connections
	start    string          // Start's fields after req_id and url
	clock    time.Time
	pc       string
	attempt  uint64
	timers   []uint64 // deliver_at_ns of the backoff timers
	status   any      // last_status
	errText  string   // in last_error
	requests int
}

func (sc scenario) run(t *testing.T) {
	exampletest.Case{
		World: "retry", Dir: ".", Register: Register,
		Drive: func(t *testing.T, open func(world.Options) *world.World) {
			clock := exampletest.NewClock(sc.clock)
			var srv *flaky
			url := "http://127.0.0.1:1/work"
			if sc.statuses != nil {
				srv = newFlaky(t, sc.statuses)
				url = srv.URL + "/work"
			} else {
				dead := httptest.NewServer(http.NotFoundHandler())
				dead.Close()
				url = dead.URL + "/work"
			}
			w := open(world.Options{Now: clock.Now, Dispatch: effects.DispatcherOptions{Sleep: clock.Sleep}})
			exampletest.Send(t, w, EventSchema, fmt.Sprintf(`{"Start": {"req_id": "req-123", "url": %q, %s}}`, url, sc.start))
			exampletest.WaitIdle(t, w)
			var slept []uint64
			for _, s := range clock.Sleeps() {
				slept = append(slept, uint64(s.UnixNano()))
			}
			if fmt.Sprint(slept) != fmt.Sprint(sc.timers) {
				t.Errorf("the timer adapter slept until %v; want %v", slept, sc.timers)
			}
			if srv != nil {
				if n := srv.requests(t, "req-123"); n != sc.requests {
					t.Errorf("the server saw %d requests; want %d", n, sc.requests)
				}
			}
		},
		Check: func(t *testing.T, m *world.Machine, recs []exampletest.Record) {
			v, _, _ := m.State(ModuleName, nil)
			var timers []uint64
			l, _ := exampletest.Field(v, "timers").([]schema.Value)
			for _, x := range l {
				timers = append(timers, x.(uint64))
			}
			errText, _ := exampletest.Field(v, "last_error").(string)
			if exampletest.Field(v, "pc", "$tag") != sc.pc || exampletest.Field(v, "attempt") != sc.attempt ||
				fmt.Sprint(timers) != fmt.Sprint(sc.timers) || exampletest.Field(v, "last_status") != sc.status ||
				!strings.Contains(errText, sc.errText) || sc.errText == "" && errText != "" {
				t.Errorf("state = %s\nwant pc %s, attempt %d, timers %v, last_status %v, last_error with %q",
					schema.String(v), sc.pc, sc.attempt, sc.timers, sc.status, sc.errText)
			}
			var kinds []string
			for _, in := range exampletest.Select(recs, world.KindIntent) {
				kinds = append(kinds, fmt.Sprint(in.Get("kind")))
			}
			want := strings.TrimSuffix(strings.Repeat("http.request timer.set ", len(sc.timers))+"http.request", " ")
			if strings.Join(kinds, " ") != want {
				t.Errorf("intents %v; want %s", kinds, want)
			}
		},
	}.Run(t)
}

// TestRetryBackoff is AgentOS's 08-retry-backoff: max 3 attempts, base
// 10 ms, now 1e6; every attempt fails with a transient error, so the
// reducer backs off with timers at 11e6 and 21e6 ns and ends Failed after
// attempt 3.
func TestRetryBackoff(t *testing.T) {
	scenario{
		statuses: func(int) int { return http.StatusServiceUnavailable },
		start:    `"max_attempts": 3, "base_delay_ms": 10, "now_ns": 1000000`,
		clock:    time.Unix(0, 0),
		pc:       Failed, attempt: 3, timers: []uint64{11_000_000, 21_000_000}, status: uint64(503),
		errText: "answered with an error status", requests: 3,
	}.run(t)
}

func TestRetryOutcomes(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	anchor := uint64(t0.UnixNano())
	for _, sc := range []scenario{
		{
			// The second attempt succeeds. Without now_ns the backoff is
			// anchored at the world's logical time when Start came in.
			name:     "second attempt succeeds",
			statuses: func(n int) int { return map[bool]int{true: 502, false: 200}[n == 1] },
			start:    `"max_attempts": 5, "base_delay_ms": 250, "now_ns": null`,
			clock:    t0, pc: Done, attempt: 2, timers: []uint64{anchor + 250_000_000}, status: uint64(200), requests: 2,
		},
		{
			name:     "backoff doubles",
			statuses: func(n int) int { return map[bool]int{true: 500, false: 204}[n < 4] },
			start:    `"max_attempts": 4, "base_delay_ms": 100, "now_ns": null`,
			clock:    t0, pc: Done, attempt: 4,
			timers: []uint64{anchor + 100_000_000, anchor + 200_000_000, anchor + 400_000_000}, status: uint64(204), requests: 4,
		},
		{
			name:     "permanent error",
			statuses: func(int) int { return http.StatusNotFound },
			start:    `"max_attempts": 3, "base_delay_ms": 10, "now_ns": 0`,
			clock:    t0, pc: Failed, attempt: 1, status: uint64(404), errText: "answered with an error status", requests: 1,
		},
		{
			// Connections are refused: each attempt's plan fails, which the
			// reducer hears as sys/PlanEnded@1 and treats as transient.
			name:  "connection refused",
			start: `"max_attempts": 2, "base_delay_ms": 1, "now_ns": 5`,
			clock: time.Unix(0, 0), pc: Failed, attempt: 2, timers: []uint64{1_000_005},
			errText: "retry/work_plan@1 step wait: effect_failed: http.request failed",
		},
	} {
		t.Run(sc.name, sc.run)
	}
}

func TestBackoff(t *testing.T) {
	for _, tc := range []struct{ base, attempt, want uint64 }{
		{10, 1, 10_000_000},
		{10, 2, 20_000_000},
		{10, 3, 40_000_000},
		{1, 64, math.MaxUint64},             // 2^63 ms overflows in ns
		{1, 200, math.MaxUint64},            // the shift is capped, the product saturates
		{math.MaxUint64, 1, math.MaxUint64}, // ms to ns overflows
		{1 << 40, 30, math.MaxUint64},       // ms overflows
		{5, 11, 5 * 1024 * 1_000_000},
	} {
		if got := backoffNS(tc.base, tc.attempt); got != tc.want {
			t.Errorf("backoffNS(%d, %d) = %d; want %d", tc.base, tc.attempt, got, tc.want)
		}
	}
}

func TestSteps(t *testing.T) {
	c, _ := exampletest.Load(t, ".", Register)
	start := `{"Start": {"req_id": "r", "url": "http://127.0.0.1/w", "max_attempts": 2, "base_delay_ms": 10, "now_ns": 100}}`
	errEv := func(attempt int, transient bool) string {
		return fmt.Sprintf(`{"Err": {"req_id": "r", "attempt": %d, "transient": %v, "status": 503, "message": "busy"}}`, attempt, transient)
	}
	timer := func(at uint64, key, status string) schema.Value {
		p := schema.Record("deliver_at_ns", at, "key", key)
		return schema.Variant("Timer", schema.Record("intent_hash", cas.Sum(nil).String(), "reducer", ModuleName,
			"effect_kind", "timer.set", "adapter_id", "timer", "status", status, "requested", p,
			"receipt", schema.Record("delivered_at_ns", at, "key", key), "cost_cents", nil, "signature", []byte{}))
	}
	planFailed := func(attempt uint64) schema.Value {
		in, _ := schema.Encode(schema.Record("req_id", "r", "url", "u", "attempt", attempt))
		return schema.Variant("PlanEnded", schema.Record("plan", PlanName, "plan_id", uint64(2), "status", "error",
			"error", schema.Record("step", "wait", "code", "effect_failed", "message", "refused"), "input", in))
	}
	for _, tc := range []struct {
		name    string
		events  []any
		pc      string
		attempt uint64
		out     string // what the last step emitted
	}{
		{"start", []any{start}, Working, 1, "[retry/WorkRequested@1]"},
		{"ok", []any{start, `{"Ok": {"req_id": "r", "attempt": 1, "status": 200}}`}, Done, 1, "[]"},
		{"transient", []any{start, errEv(1, true)}, BackingOff, 1, "[timer.set 10000100]"},
		{"permanent", []any{start, errEv(1, false)}, Failed, 1, "[]"},
		{"timer", []any{start, errEv(1, true), timer(10_000_100, "r", "ok")}, Working, 2, "[retry/WorkRequested@1]"},
		{"last attempt", []any{start, errEv(1, true), timer(10_000_100, "r", "ok"), errEv(2, true)}, Failed, 2, "[]"},
		{"timer failed", []any{start, errEv(1, true), timer(10_000_100, "r", "error")}, Failed, 1, "[]"},
		{"stale timer", []any{start, errEv(1, true), timer(99, "r", "ok")}, BackingOff, 1, "[]"},
		{"foreign timer", []any{start, errEv(1, true), timer(10_000_100, "q", "ok")}, BackingOff, 1, "[]"},
		{"err of another attempt", []any{start, errEv(2, true)}, Working, 1, "[]"},
		{"ok of another request", []any{start, `{"Ok": {"req_id": "q", "attempt": 1, "status": 200}}`}, Working, 1, "[]"},
		{"plan failed", []any{start, planFailed(1)}, BackingOff, 1, "[timer.set 10000100]"},
		{"old plan failed", []any{start, planFailed(7)}, Working, 1, "[]"},
		{"start while working", []any{start, start}, Working, 1, "[]"},
		{"zero attempts means one", []any{strings.Replace(start, `"max_attempts": 2`, `"max_attempts": 0`, 1), errEv(1, true)}, Failed, 1, "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var state schema.Value
			var out reducer.Output
			for _, e := range tc.events {
				state, out = exampletest.Step(t, c, Reducer{}, &reducer.Context{Module: ModuleName}, state, e)
			}
			if pc, n := exampletest.Field(state, "pc", "$tag"), exampletest.Field(state, "attempt"); pc != tc.pc || n != tc.attempt {
				t.Errorf("pc %v attempt %v; want %s %d (state %s)", pc, n, tc.pc, tc.attempt, schema.String(state))
			}
			var got []string
			for _, e := range out.Events {
				got = append(got, e.Schema)
			}
			for _, e := range out.Effects {
				got = append(got, fmt.Sprint(e.Kind, " ", exampletest.Field(e.Params, "deliver_at_ns")))
			}
			if fmt.Sprint(got) != tc.out {
				t.Errorf("emitted %v; want %s", got, tc.out)
			}
		})
	}
}

func TestBadEvents(t *testing.T) {
	for _, ev := range []schema.Value{
		uint64(8),
		schema.Variant("Retry", nil),
		schema.Variant("Start", "now"),
		schema.Variant("Err", schema.Record("attempt", "one")),
		schema.Variant("Timer", uint64(1)),
		schema.Variant("PlanEnded", []byte{1}),
		schema.Variant("Ok", nil),
	} {
		if _, err := (Reducer{}).Step(&reducer.Context{}, nil, ev); !errors.Is(err, ErrBadEvent) {
			t.Errorf("Step(%s): %v; want ErrBadEvent", schema.String(ev), err)
		}
	}
}

func FuzzStep(f *testing.F) {
	start := `{"Start": {"req_id": "r", "url": "http://127.0.0.1/w", "max_attempts": 3, "base_delay_ms": 10, "now_ns": 100}}`
	timer := `{"Timer": {"intent_hash": "` + cas.Sum(nil).String() + `", "reducer": "retry/Retry@1", "effect_kind": "timer.set",
		"adapter_id": "timer", "status": "ok", "requested": {"deliver_at_ns": 10000100, "key": "r"},
		"receipt": {"delivered_at_ns": 10000100, "key": "r"}, "cost_cents": null, "signature": ""}}`
	exampletest.FuzzReducer(f, ".", Register, ModuleName,
		[]string{start, `{"Err": {"req_id": "r", "attempt": 1, "transient": true, "status": 503, "message": "m"}}`, timer,
			`{"Ok": {"req_id": "r", "attempt": 2, "status": 200}}`},
	)
}
