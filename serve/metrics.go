package serve

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/demiurge-dev/demiurge/agent"
)

// metrics are the server's Prometheus metrics, in a registry of its own
// (GET /metrics): requests, open streams, turns, tokens, cost, and the
// latency of the effects the agent runs (its tool calls).
type metrics struct {
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	streams    prometheus.Gauge
	started    prometheus.Counter
	turns      *prometheus.CounterVec
	tokens     *prometheus.CounterVec
	cost       prometheus.Counter
	modelCalls prometheus.Counter
	tools      *prometheus.HistogramVec
	limited    prometheus.Counter
	// worldsEvicted counts the worlds closed because nothing used them.
	worldsEvicted prometheus.Counter
	lag           prometheus.Histogram
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "demiurge_serve_requests_total", Help: "HTTP requests answered, by route pattern, method and status code.",
	}, []string{"route", "method", "code"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "demiurge_serve_request_duration_seconds", Help: "Time to answer a request (a stream: until it ends), by route pattern.",
		Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 15, 60, 300},
	}, []string{"route"})
	m.streams = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "demiurge_serve_streams_open", Help: "Event streams open to clients.",
	})
	m.started = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "demiurge_serve_turns_started_total", Help: "Turns begun by messages this server sent.",
	})
	m.turns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "demiurge_serve_turns_total", Help: "Turns run in this server that ended, by outcome.",
	}, []string{"outcome"})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "demiurge_serve_tokens_total", Help: "Model tokens the turns used, by kind: prompt, completion, cached (of prompt), reasoning (of completion).",
	}, []string{"kind"})
	m.cost = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "demiurge_serve_cost_microusd_total", Help: "What the turns' model calls cost, in millionths of a US dollar (calls without a price count 0).",
	})
	m.modelCalls = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "demiurge_serve_model_calls_total", Help: "Model calls the turns made.",
	})
	m.tools = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "demiurge_serve_tool_call_duration_seconds", Help: "Latency of the tool calls (effects) the turns ran, from the step that asked to the step that recorded the result, by tool and status.",
		Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 15, 60, 300},
	}, []string{"tool", "status"})
	m.limited = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "demiurge_serve_rate_limited_total", Help: "Requests refused by the per-token rate limit.",
	})
	m.worldsEvicted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "demiurge_serve_worlds_evicted_total", Help: "Worlds closed because nothing used them (Options.WorldIdle, Options.MaxWorlds); they open again on the next request.",
	})
	m.lag = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "demiurge_serve_event_lag_seconds", Help: "Time from a turn's event reaching the server (the stream that runs the turn yielding it) to its being written to a client's stream.",
		Buckets: []float64{.0001, .0005, .001, .005, .01, .05, .1, .5, 1, 5},
	})
	m.reg.MustRegister(m.requests, m.duration, m.streams, m.started, m.turns, m.tokens, m.cost, m.modelCalls, m.tools, m.limited, m.worldsEvicted, m.lag,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// handler serves the metrics in Prometheus's text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// request counts one answered request.
func (m *metrics) request(route, method string, code int, d time.Duration) {
	if route == "" {
		route = "none"
	}
	m.requests.WithLabelValues(route, method, strconv.Itoa(code)).Inc()
	m.duration.WithLabelValues(route).Observe(d.Seconds())
}

func (m *metrics) streamOpened() { m.streams.Inc() }
func (m *metrics) streamClosed() { m.streams.Dec() }
func (m *metrics) turnStarted()  { m.started.Inc() }

// observe counts what an event of a turn this server runs says.
func (m *metrics) observe(e agent.Event) {
	switch e := e.(type) {
	case agent.ModelCall:
		m.modelCalls.Inc()
		m.tokens.WithLabelValues("prompt").Add(float64(e.Usage.Prompt))
		m.tokens.WithLabelValues("completion").Add(float64(e.Usage.Completion))
		m.tokens.WithLabelValues("cached").Add(float64(e.Usage.Cached))
		m.tokens.WithLabelValues("reasoning").Add(float64(e.Usage.Reasoning))
		m.cost.Add(float64(e.CostMicroUSD))
	case agent.ToolCallFinished:
		if e.Duration > 0 {
			m.tools.WithLabelValues(e.Tool, e.Status).Observe(e.Duration.Seconds())
		}
	case agent.TurnEnd:
		if e.Outcome != agent.OutcomeAwaitingApproval {
			m.turns.WithLabelValues(string(e.Outcome)).Inc()
		}
	}
}
