package aggregator

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/examples/internal/exampletest"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// The three targets, their answers, and the order the server answers in:
// beta at once, gamma once the world has journaled beta's receipt, alpha
// once it has journaled gamma's. AgentOS's test delivered them in the same
// order (b 200, c 201, a 202).
var (
	statuses = map[string]int{"/alpha": 202, "/beta": 200, "/gamma": 201}
	after    = map[string]string{"/gamma": "/beta", "/alpha": "/gamma"}
)

func body(path string) string { return fmt.Sprintf(`{"source": %q, "items": [1, 2, 3]}`, path[1:]) }

// orderedServer holds each answer until the receipt it comes after is in
// the journal, so the receipts reach the world in a known order that is
// not the order the plan emitted the requests in. Its OnCommit watches the
// journal for intents and receipts.
type orderedServer struct {
	*httptest.Server
	mu       sync.Mutex
	paths    map[string]string        // intent hash → URL path
	received map[string]chan struct{} // URL path → closed when its receipt is journaled
	closed   map[string]bool
}

// receiptOf returns a channel closed once the receipt of the request for
// path is in the journal.
func (s *orderedServer) receiptOf(path string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.received[path]
}

func newOrderedServer(t *testing.T) *orderedServer {
	s := &orderedServer{paths: map[string]string{}, received: map[string]chan struct{}{}, closed: map[string]bool{}}
	for p := range statuses {
		s.received[p] = make(chan struct{})
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, ok := statuses[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if prev, ok := after[r.URL.Path]; ok {
			select {
			case <-s.receiptOf(prev):
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Second):
				t.Errorf("%s: the receipt of %s never came", r.URL.Path, prev)
			}
		}
		w.WriteHeader(status)
		fmt.Fprint(w, body(r.URL.Path))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *orderedServer) onCommit(recs []journal.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		v, err := schema.Decode(r.Payload)
		if err != nil {
			continue
		}
		intent, _ := exampletest.Field(v, "intent").(string)
		switch r.Kind {
		case world.KindIntent:
			raw, _ := exampletest.Field(v, "params", "url").(string)
			if u, err := url.Parse(raw); err == nil {
				s.paths[intent] = u.Path
			}
		case world.KindReceipt:
			if p := s.paths[intent]; s.received[p] != nil && !s.closed[p] {
				close(s.received[p])
				s.closed[p] = true
			}
		}
	}
}

func start(base, gammaBase string) string {
	return fmt.Sprintf(`{"Start": {"topic": "weather",
		"primary": {"name": "alpha", "url": %q, "method": "GET"},
		"secondary": {"name": "beta", "url": %q, "method": "GET"},
		"tertiary": {"name": "gamma", "url": %q, "method": "GET"}}}`,
		base+"/alpha", base+"/beta", gammaBase+"/gamma")
}

// TestAggregator is AgentOS's 04-aggregator: the plan emits three GETs in
// one step, their receipts come back out of order (beta, gamma, alpha),
// and the join reports the answers in slot order (alpha, beta, gamma).
func TestAggregator(t *testing.T) {
	exampletest.Case{
		World: "aggregator", Dir: ".", Register: Register,
		Drive: func(t *testing.T, open func(world.Options) *world.World) {
			srv := newOrderedServer(t)
			w := open(world.Options{OnCommit: srv.onCommit})
			exampletest.Send(t, w, EventSchema, start(srv.URL, srv.URL))
		},
		Check: func(t *testing.T, m *world.Machine, recs []exampletest.Record) {
			var answers []string
			v, _, _ := m.State(ModuleName, nil)
			if pc := exampletest.Field(v, "pc", "$tag"); pc != Done {
				t.Fatalf("pc = %v; want Done (state %s)", pc, schema.String(v))
			}
			list, _ := exampletest.Field(v, "last_responses").([]schema.Value)
			for _, r := range list {
				answers = append(answers, fmt.Sprint(exampletest.Field(r, "source"), " ", exampletest.Field(r, "status"), " ",
					exampletest.Field(r, "body_ref"), " ", exampletest.Field(r, "body_preview")))
			}
			var want []string
			for _, p := range []string{"/alpha", "/beta", "/gamma"} {
				want = append(want, fmt.Sprint(p[1:], " ", statuses[p], " ", cas.Sum([]byte(body(p))), " ", body(p)))
			}
			if strings.Join(answers, "\n") != strings.Join(want, "\n") {
				t.Errorf("last_responses:\n%s\nwant:\n%s", strings.Join(answers, "\n"), strings.Join(want, "\n"))
			}
			if topic := exampletest.Field(v, "current_topic"); topic != "weather" {
				t.Errorf("current_topic = %v", topic)
			}
			if targets, _ := exampletest.Field(v, "pending_targets").([]schema.Value); len(targets) != 0 {
				t.Errorf("pending_targets = %v; want none", targets)
			}
			// The three intents are journaled together, derived from one
			// input, in slot order; the receipts come back beta, gamma, alpha.
			paths := map[any]string{}
			var emitted, received []string
			lastInput := map[uint64]uint64{}
			var input uint64
			for _, r := range recs {
				if world.IsInput(r.Kind) {
					input = r.Seq
				}
				switch r.Kind {
				case world.KindIntent:
					u, _ := url.Parse(r.Get("params", "url").(string))
					paths[r.Get("intent")] = u.Path
					emitted = append(emitted, u.Path)
					lastInput[input]++
				case world.KindReceipt:
					received = append(received, paths[r.Get("intent")])
				}
			}
			if fmt.Sprint(emitted) != "[/alpha /beta /gamma]" || len(lastInput) != 1 {
				t.Errorf("intents %v derived from %d inputs; want /alpha /beta /gamma from one", emitted, len(lastInput))
			}
			if fmt.Sprint(received) != "[/beta /gamma /alpha]" {
				t.Errorf("receipts came in order %v; want /beta /gamma /alpha", received)
			}
			completes := 0
			for _, ev := range exampletest.Select(recs, world.KindRaised) {
				if ev.Get("value", "$tag") == "Complete" {
					completes++
				}
			}
			if completes != 1 {
				t.Errorf("%d Complete events; want 1", completes)
			}
		},
	}.Run(t)
}

// TestAggregatorRequestFails: when one of the three requests fails, the
// plan ends with an error naming its await step, and the aggregation is
// Failed; the other two answers are not waited for by anyone.
func TestAggregatorRequestFails(t *testing.T) {
	exampletest.Case{
		World: "aggregator", Dir: ".", Register: Register,
		Drive: func(t *testing.T, open func(world.Options) *world.World) {
			srv := newOrderedServer(t)
			dead := httptest.NewServer(http.NotFoundHandler())
			dead.Close()
			w := open(world.Options{OnCommit: srv.onCommit})
			exampletest.Send(t, w, EventSchema, start(srv.URL, dead.URL))
		},
		Check: func(t *testing.T, m *world.Machine, recs []exampletest.Record) {
			v, _, _ := m.State(ModuleName, nil)
			errText, _ := exampletest.Field(v, "error").(string)
			if exampletest.Field(v, "pc", "$tag") != Failed || !strings.Contains(errText, PlanName+" step await_c: effect_failed: http.request failed") {
				t.Errorf("state = %s; want Failed at step await_c", schema.String(v))
			}
		},
	}.Run(t)
}

func TestSteps(t *testing.T) {
	c, _ := exampletest.Load(t, ".", Register)
	store := cas.NewMemory()
	ref, err := store.Put(t.Context(), []byte("body of b"))
	if err != nil {
		t.Fatal(err)
	}
	startEv := start("http://127.0.0.1:1", "http://127.0.0.1:1")
	complete := func(id uint64, bRef string) string {
		return fmt.Sprintf(`{"Complete": {"request_id": %d, "topic": "weather", "responses": [
			{"source": "alpha", "status": 202, "body_ref": null},
			{"source": "beta", "status": 200, "body_ref": %q},
			{"source": "gamma", "status": 503, "body_ref": null}]}}`, id, bRef)
	}
	for _, tc := range []struct {
		name    string
		events  []string
		pc      string
		answers string
		raised  int
		errText string
	}{
		{"start", []string{startEv}, Running, "[]", 1, ""},
		{"complete", []string{startEv, complete(0, ref.String())}, Done,
			"[alpha 202 <nil> <nil> beta 200 " + ref.String() + " body of b gamma 503 <nil> <nil>]", 0, ""},
		{"body missing", []string{startEv, complete(0, cas.Sum([]byte("gone")).String())}, Done,
			"[alpha 202 <nil> <nil> beta 200 " + cas.Sum([]byte("gone")).String() + " <nil> gamma 503 <nil> <nil>]", 0, "beta: preview of"},
		{"complete of another request", []string{startEv, complete(4, ref.String())}, Running, "[]", 0, ""},
		{"start while running", []string{startEv, startEv}, Running, "[]", 0, ""},
		{"restart after done", []string{startEv, complete(0, ref.String()), startEv}, Running, "[]", 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var state schema.Value
			var out reducer.Output
			for _, js := range tc.events {
				state, out = exampletest.Step(t, c, Reducer{}, &reducer.Context{Module: ModuleName, CAS: store}, state, js)
			}
			if pc := exampletest.Field(state, "pc", "$tag"); pc != tc.pc {
				t.Errorf("pc = %v; want %s", pc, tc.pc)
			}
			var answers []string
			list, _ := exampletest.Field(state, "last_responses").([]schema.Value)
			for _, r := range list {
				answers = append(answers, fmt.Sprint(exampletest.Field(r, "source"), " ", exampletest.Field(r, "status"), " ",
					exampletest.Field(r, "body_ref"), " ", exampletest.Field(r, "body_preview")))
			}
			if got := "[" + strings.Join(answers, " ") + "]"; got != tc.answers {
				t.Errorf("answers = %s\nwant      %s", got, tc.answers)
			}
			if len(out.Events) != tc.raised {
				t.Errorf("raised %d events; want %d", len(out.Events), tc.raised)
			}
			errText, _ := exampletest.Field(state, "error").(string)
			if tc.errText == "" && errText != "" || !strings.Contains(errText, tc.errText) {
				t.Errorf("error = %q; want %q", errText, tc.errText)
			}
		})
	}
}

func TestBadEvents(t *testing.T) {
	for _, ev := range []schema.Value{
		"Start",
		schema.Variant("Go", nil),
		schema.Variant("Start", schema.Record("topic", uint64(3))),
		schema.Variant("Complete", schema.Record("responses", "none")),
		schema.Variant("PlanEnded", "x"),
		schema.Variant("Start", nil),
	} {
		if _, err := (Reducer{}).Step(&reducer.Context{}, nil, ev); !errors.Is(err, ErrBadEvent) {
			t.Errorf("Step(%s): %v; want ErrBadEvent", schema.String(ev), err)
		}
	}
}

func FuzzStep(f *testing.F) {
	startEv := start("http://127.0.0.1:1", "http://127.0.0.1:1")
	exampletest.FuzzReducer(f, ".", Register, ModuleName,
		[]string{startEv, `{"Complete": {"request_id": 0, "topic": "t", "responses": [{"source": "a", "status": 200, "body_ref": null}]}}`, startEv},
	)
}
