package fetch

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/examples/internal/exampletest"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

const body = `{"temperature": 21.5, "unit": "C", "note": "served by the test, on loopback, over plain HTTP"}`

// server serves body at /data.json and 404 elsewhere, counting requests.
func server(t *testing.T, calls *atomic.Int64) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/data.json" || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestFetchNotify is AgentOS's 03-fetch-notify: Start makes the reducer
// raise a request, the plan performs exactly one GET through the real
// http adapter against a server on loopback, and raises the outcome back
// to the reducer, which is Done with status 200 and the body's ref.
func TestFetchNotify(t *testing.T) {
	ref := cas.Sum([]byte(body)).String()
	var url string
	exampletest.Case{
		World: "fetch-notify", Dir: ".", Register: Register,
		Drive: func(t *testing.T, open func(world.Options) *world.World) {
			var calls atomic.Int64
			url = server(t, &calls).URL + "/data.json"
			w := open(world.Options{})
			exampletest.Send(t, w, EventSchema, fmt.Sprintf(`{"Start": {"url": %q, "method": "GET"}}`, url))
			exampletest.WaitIdle(t, w)
			if n := calls.Load(); n != 1 {
				t.Errorf("the server saw %d requests; want 1", n)
			}
		},
		Check: func(t *testing.T, m *world.Machine, recs []exampletest.Record) {
			want := fmt.Sprintf(`{"pc":{"$tag":"Done"},"error":null,"last_url":%q,"last_status":200,"last_body_ref":%q,"next_request_id":1,"pending_request":null,"last_body_preview":%q}`,
				url, ref, body[:80]+"…")
			if got := exampletest.State(m, ModuleName, nil); got != want {
				t.Errorf("state = %s\nwant    %s", got, want)
			}
			intents := exampletest.Select(recs, world.KindIntent)
			if len(intents) != 1 {
				t.Fatalf("%d intents; want exactly 1: %v", len(intents), intents)
			}
			in := intents[0]
			if in.Get("kind") != "http.request" || in.Get("grant") != "http_fetch" || in.Get("params", "url") != url ||
				in.Get("params", "method") != "GET" || in.Get("origin", "name") != PlanName {
				t.Errorf("intent = %s", in)
			}
			if len(m.RunningPlans()) != 0 {
				t.Errorf("%d plans still running", len(m.RunningPlans()))
			}
			var raised []string
			for _, ev := range exampletest.Select(recs, world.KindRaised) {
				raised = append(raised, fmt.Sprintf("%v %v %v", ev.Get("schema"), ev.Get("value", "$tag"),
					ev.Get("value", "$value", "status")), fmt.Sprint(ev.Get("value", "status")))
			}
			wantRaised := "[fetch/Request@1 <nil> <nil> <nil> fetch/Event@1 Complete 200 <nil>]"
			if fmt.Sprint(raised) != wantRaised {
				t.Errorf("raised %v; want %s", raised, wantRaised)
			}
		},
	}.Run(t)
}

// TestFetchFails: an HTTP error status is an outcome (Done with it); a
// request the cap refuses or that cannot connect fails its plan, and the
// sys/PlanEnded@1 routed to the reducer makes the fetch Failed with the
// plan's reason.
func TestFetchFails(t *testing.T) {
	for _, tc := range []struct {
		name   string
		url    func(srv *httptest.Server) string
		method string
		pc     string
		status any // last_status
		reason string
		calls  int64
	}{
		{"not found", func(s *httptest.Server) string { return s.URL + "/missing" }, "GET", Done, uint64(404), "", 1},
		{"host not granted", func(s *httptest.Server) string { return "http://localhost:1/data.json" }, "GET", Failed, nil,
			`fetch/fetch_plan@1 step get: effect_denied: http.request: cap fetch/http@1 (grant "http_fetch") refuses http.request: host "localhost" is not in the allowed hosts [127.0.0.1]`, 0},
		{"method not granted", func(s *httptest.Server) string { return s.URL + "/data.json" }, "POST", Failed, nil,
			`refuses http.request: method "POST" is not in the allowed methods [GET]`, 0},
		{"connection refused", func(s *httptest.Server) string {
			dead := httptest.NewServer(http.NotFoundHandler())
			dead.Close()
			return dead.URL + "/data.json"
		}, "GET", Failed, nil, `fetch/fetch_plan@1 step wait: effect_failed: http.request failed: http.request GET http://127.0.0.1:`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exampletest.Case{
				World: "fetch", Dir: ".", Register: Register,
				Drive: func(t *testing.T, open func(world.Options) *world.World) {
					var calls atomic.Int64
					url := tc.url(server(t, &calls))
					w := open(world.Options{})
					exampletest.Send(t, w, EventSchema, fmt.Sprintf(`{"Start": {"url": %q, "method": %q}}`, url, tc.method))
					exampletest.WaitIdle(t, w)
					if n := calls.Load(); n != tc.calls {
						t.Errorf("the server saw %d requests; want %d", n, tc.calls)
					}
				},
				Check: func(t *testing.T, m *world.Machine, recs []exampletest.Record) {
					v, _, _ := m.State(ModuleName, nil)
					if pc := exampletest.Field(v, "pc", "$tag"); pc != tc.pc {
						t.Errorf("pc = %v; want %s (state %s)", pc, tc.pc, schema.String(v))
					}
					if st := exampletest.Field(v, "last_status"); st != tc.status {
						t.Errorf("last_status = %v; want %v", st, tc.status)
					}
					errText, _ := exampletest.Field(v, "error").(string)
					if tc.reason == "" && errText != "" || !strings.Contains(errText, tc.reason) {
						t.Errorf("error = %q; want it to contain %q", errText, tc.reason)
					}
					if exampletest.Field(v, "pending_request") != nil {
						t.Errorf("a request is still pending: %s", schema.String(v))
					}
				},
			}.Run(t)
		})
	}
}

func TestSteps(t *testing.T) {
	c, _ := exampletest.Load(t, ".", Register)
	store := cas.NewMemory()
	bodyRef, err := store.Put(t.Context(), []byte("short body"))
	if err != nil {
		t.Fatal(err)
	}
	input := func(id uint64) []byte {
		b, err := schema.Encode(schema.Record("request_id", id, "url", "u", "method", "GET"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	start := `{"Start": {"url": "http://127.0.0.1/x", "method": "GET"}}`
	complete := func(id uint64, ref string) string {
		r := "null"
		if ref != "" {
			r = fmt.Sprintf("%q", ref)
		}
		return fmt.Sprintf(`{"Complete": {"request_id": %d, "status": 201, "body_ref": %s}}`, id, r)
	}
	ended := func(plan string, id uint64, failed bool) schema.Value {
		if !failed {
			return schema.Variant("PlanEnded", schema.Record("plan", plan, "plan_id", uint64(9), "status", "ok", "error", nil, "input", input(id)))
		}
		return schema.Variant("PlanEnded", schema.Record("plan", plan, "plan_id", uint64(9), "status", "error",
			"error", schema.Record("step", "get", "code", "effect_denied", "message", "no"), "input", input(id)))
	}
	for _, tc := range []struct {
		name   string
		events []any // JSON text or schema.Value
		want   string
		raised int // events raised by the last step
	}{
		{"start", []any{start}, `{"pc":{"$tag":"Fetching"},"error":null,"last_url":"http://127.0.0.1/x","last_status":null,"last_body_ref":null,"next_request_id":1,"pending_request":0,"last_body_preview":null}`, 1},
		{"complete", []any{start, complete(0, bodyRef.String())}, `{"pc":{"$tag":"Done"},"error":null,"last_url":"http://127.0.0.1/x","last_status":201,"last_body_ref":"` + bodyRef.String() + `","next_request_id":1,"pending_request":null,"last_body_preview":"short body"}`, 0},
		{"complete without body", []any{start, complete(0, "")}, `{"pc":{"$tag":"Done"},"error":null,"last_url":"http://127.0.0.1/x","last_status":201,"last_body_ref":null,"next_request_id":1,"pending_request":null,"last_body_preview":null}`, 0},
		{"body not in the CAS", []any{start, complete(0, cas.Sum([]byte("gone")).String())}, "", 0},
		{"complete of another request", []any{start, complete(5, "")}, `{"pc":{"$tag":"Fetching"},"error":null,"last_url":"http://127.0.0.1/x","last_status":null,"last_body_ref":null,"next_request_id":1,"pending_request":0,"last_body_preview":null}`, 0},
		{"start while fetching", []any{start, start}, `{"pc":{"$tag":"Fetching"},"error":null,"last_url":"http://127.0.0.1/x","last_status":null,"last_body_ref":null,"next_request_id":1,"pending_request":0,"last_body_preview":null}`, 0},
		{"second fetch", []any{start, complete(0, ""), start}, `{"pc":{"$tag":"Fetching"},"error":null,"last_url":"http://127.0.0.1/x","last_status":null,"last_body_ref":null,"next_request_id":2,"pending_request":1,"last_body_preview":null}`, 1},
		{"plan failed", []any{start, ended(PlanName, 0, true)}, `{"pc":{"$tag":"Failed"},"error":"fetch/fetch_plan@1 step get: effect_denied: no","last_url":"http://127.0.0.1/x","last_status":null,"last_body_ref":null,"next_request_id":1,"pending_request":null,"last_body_preview":null}`, 0},
		{"plan ended well", []any{start, complete(0, ""), ended(PlanName, 0, false)}, `{"pc":{"$tag":"Done"},"error":null,"last_url":"http://127.0.0.1/x","last_status":201,"last_body_ref":null,"next_request_id":1,"pending_request":null,"last_body_preview":null}`, 0},
		{"other plan failed", []any{start, ended("other/plan@1", 0, true)}, `{"pc":{"$tag":"Fetching"},"error":null,"last_url":"http://127.0.0.1/x","last_status":null,"last_body_ref":null,"next_request_id":1,"pending_request":0,"last_body_preview":null}`, 0},
		{"old request failed", []any{start, ended(PlanName, 3, true)}, `{"pc":{"$tag":"Fetching"},"error":null,"last_url":"http://127.0.0.1/x","last_status":null,"last_body_ref":null,"next_request_id":1,"pending_request":0,"last_body_preview":null}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var state schema.Value
			var out reducer.Output
			for _, e := range tc.events {
				state, out = exampletest.Step(t, c, Reducer{}, &reducer.Context{Module: ModuleName, CAS: store}, state, e)
			}
			got := string(schema.ValueJSON(state))
			if tc.want == "" {
				// The body is gone: Done, with an error saying so.
				if e, _ := exampletest.Field(state, "error").(string); exampletest.Field(state, "pc", "$tag") != Done || !strings.Contains(e, "not found") {
					t.Errorf("state = %s; want Done with a not-found error", got)
				}
			} else if got != tc.want {
				t.Errorf("state = %s\nwant    %s", got, tc.want)
			}
			if len(out.Events) != tc.raised {
				t.Fatalf("raised %d events; want %d", len(out.Events), tc.raised)
			}
			for _, e := range out.Events {
				if e.Schema != RequestSchema || len(out.Effects) != 0 {
					t.Errorf("raised %s and %d effects; want %s only", e.Schema, len(out.Effects), RequestSchema)
				}
			}
		})
	}
}

func TestBadEvents(t *testing.T) {
	for _, ev := range []schema.Value{
		uint64(1),
		schema.Variant("Stop", nil),
		schema.Variant("Start", "http://x"),
		schema.Variant("Complete", schema.Record("request_id", "one")),
		schema.Variant("PlanEnded", schema.Record("plan", uint64(1))),
		schema.Variant("Start", nil),
	} {
		if _, err := (Reducer{}).Step(&reducer.Context{}, nil, ev); !errors.Is(err, ErrBadEvent) {
			t.Errorf("Step(%s): %v; want ErrBadEvent", schema.String(ev), err)
		}
	}
}

func FuzzStep(f *testing.F) {
	start := `{"Start": {"url": "http://127.0.0.1/x", "method": "GET"}}`
	ref := cas.Sum([]byte("body")).String()
	exampletest.FuzzReducer(f, ".", Register, ModuleName,
		[]string{start, `{"Complete": {"request_id": 0, "status": 200, "body_ref": "` + ref + `"}}`, start},
		[]string{start, `{"PlanEnded": {"plan": "fetch/fetch_plan@1", "plan_id": 1, "status": "error",
			"error": {"step": "get", "code": "effect_denied", "message": "no"}, "input": "2dn3o2NrZXkA"}}`},
	)
}
