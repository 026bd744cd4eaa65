package retry

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/examples/internal/exampletest"
	"github.com/demiurge-dev/demiurge/world"
)

// TestWASMJournal runs the retry's scenarios with the Go reducer and with
// the AssemblyScript module beside the manifest
// (modules/retry/Retry@1-<sha256>.wasm, built from
// examples/wasm/assembly/retry.ts): the journals are the same bytes. One
// server serves both runs, so the URLs (and the answers) are the same.
func TestWASMJournal(t *testing.T) {
	var n atomic.Int64
	var statuses func(int) int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Date"] = nil // the same bytes in both runs
		w.WriteHeader(statuses(int(n.Add(1))))
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(srv.Close)
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	for _, sc := range []struct {
		name, url, start, pc string
		statuses             func(int) int
	}{
		{"backoff until failed", srv.URL + "/work", `"max_attempts": 3, "base_delay_ms": 10, "now_ns": 1000000`, Failed,
			func(int) int { return http.StatusServiceUnavailable }},
		{"second attempt works", srv.URL + "/work", `"max_attempts": 5, "base_delay_ms": 7, "now_ns": null`, Done,
			func(n int) int { return map[bool]int{true: 503, false: 200}[n == 1] }},
		{"permanent error", srv.URL + "/work", `"max_attempts": 5, "base_delay_ms": 1, "now_ns": 5`, Failed,
			func(int) int { return http.StatusNotFound }},
		{"the plan fails", dead.URL + "/work", `"max_attempts": 2, "base_delay_ms": 1, "now_ns": null`, Failed, nil},
	} {
		t.Run(sc.name, func(t *testing.T) {
			statuses = sc.statuses
			exampletest.SameJournal(t, exampletest.Case{
				World: "retry", Dir: ".", Register: Register,
				Drive: func(t *testing.T, open func(world.Options) *world.World) {
					n.Store(0)
					clock := exampletest.NewClock(time.Unix(0, 123))
					w := open(world.Options{Now: clock.Now, Dispatch: effects.DispatcherOptions{Sleep: clock.Sleep}})
					exampletest.Send(t, w, EventSchema, fmt.Sprintf(`{"Start": {"req_id": "req-9", "url": %q, %s}}`, sc.url, sc.start))
					exampletest.WaitIdle(t, w)
				},
				Check: func(t *testing.T, m *world.Machine, recs []exampletest.Record) {
					v, _, _ := m.State(ModuleName, nil)
					if got := exampletest.Field(v, "pc", "$tag"); got != sc.pc {
						t.Errorf("pc = %v; want %s (state %s)", got, sc.pc, exampletest.State(m, ModuleName, nil))
					}
				},
			})
		})
	}
}
