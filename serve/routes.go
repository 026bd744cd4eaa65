package serve

import (
	"fmt"
	"net/http"
	"runtime/debug"
	"time"
)

// route is one route of the API: its pattern (net/http's ServeMux) and
// handler. public routes need no token (health checks).
type route struct {
	pattern string
	handler func(*Server) http.HandlerFunc
	public  bool
}

// routeTable is every route the server answers: docs/openapi.json
// describes each, and a test holds them to it.
var routeTable = []route{
	{"GET /healthz", func(s *Server) http.HandlerFunc { return s.handleHealth }, true},
	{"GET /readyz", func(s *Server) http.HandlerFunc { return s.handleReady }, true},
	{"GET /metrics", func(s *Server) http.HandlerFunc { return s.metrics.handler().ServeHTTP }, false},

	{"GET /v1/worlds", func(s *Server) http.HandlerFunc { return s.handleWorlds }, false},
	{"POST /v1/worlds", func(s *Server) http.HandlerFunc { return s.handleCreateWorld }, false},
	{"GET /v1/worlds/{world}", func(s *Server) http.HandlerFunc { return s.handleWorld }, false},
	{"POST /v1/worlds/{world}/fork", func(s *Server) http.HandlerFunc { return s.handleFork }, false},
	{"GET /v1/worlds/{world}/trace", func(s *Server) http.HandlerFunc { return s.handleTrace }, false},
	{"GET /v1/worlds/{world}/state", func(s *Server) http.HandlerFunc { return s.handleState }, false},
	{"GET /v1/worlds/{world}/chats", func(s *Server) http.HandlerFunc { return s.handleChats }, false},
	{"POST /v1/worlds/{world}/chats", func(s *Server) http.HandlerFunc { return s.handleCreateChat }, false},
	{"GET /v1/worlds/{world}/chats/{chat}", func(s *Server) http.HandlerFunc { return s.handleChat }, false},
	{"GET /v1/worlds/{world}/chats/{chat}/state", func(s *Server) http.HandlerFunc { return s.handleState }, false},
	{"POST /v1/worlds/{world}/chats/{chat}/messages", func(s *Server) http.HandlerFunc { return s.handleSend }, false},
	{"GET /v1/worlds/{world}/chats/{chat}/events", func(s *Server) http.HandlerFunc { return s.handleChatEvents }, false},
	{"GET /v1/worlds/{world}/chats/{chat}/turns/{turn}/events", func(s *Server) http.HandlerFunc { return s.handleTurnEvents }, false},
	{"GET /v1/worlds/{world}/chats/{chat}/approvals", func(s *Server) http.HandlerFunc { return s.handlePending }, false},
	{"POST /v1/worlds/{world}/chats/{chat}/approvals/{call}", func(s *Server) http.HandlerFunc { return s.handleDecide }, false},
	{"POST /v1/worlds/{world}/chats/{chat}/stop", func(s *Server) http.HandlerFunc { return s.handleStop }, false},

	{"GET /v1/models", func(s *Server) http.HandlerFunc { return s.handleModels }, false},
	{"GET /v1/models/{model}", func(s *Server) http.HandlerFunc { return s.handleModel }, false},
	{"POST /v1/responses", func(s *Server) http.HandlerFunc { return s.handleResponses }, false},
	{"GET /v1/responses/{id}", func(s *Server) http.HandlerFunc { return s.handleGetResponse }, false},
	{"POST /v1/chat/completions", func(s *Server) http.HandlerFunc { return s.handleChatCompletions }, false},
}

// routes returns the server's handler: the routes behind the checks
// every request passes.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	public := map[string]bool{}
	for _, rt := range routeTable {
		mux.HandleFunc(rt.pattern, rt.handler(s))
		public[rt.pattern] = rt.public
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, notFound("no_route", fmt.Sprintf("no route %s %s (docs/api.md lists them)", r.Method, r.URL.Path)))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rw := &recorder{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("handler panicked", "method", r.Method, "route", r.Pattern, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				if !rw.wrote {
					writeError(rw, serverError(fmt.Errorf("the server failed answering this request (its log says why)")))
				}
			}
			d := time.Since(start)
			s.metrics.request(r.Pattern, r.Method, rw.status, d)
			attrs := []any{"method", r.Method, "path", r.URL.Path, "route", r.Pattern, "status", rw.status, "bytes", rw.bytes,
				"duration_ms", float64(d.Microseconds()) / 1000, "remote", r.RemoteAddr, "proto", r.Proto}
			if t := callerOf(r).token; t != nil {
				attrs = append(attrs, "token", t.ID)
			}
			s.log.Info("request", attrs...)
		}()
		_, pattern := mux.Handler(r)
		r.Pattern = pattern
		if !s.hostAllowed(r) {
			writeError(rw, &apiError{Status: http.StatusForbidden, Type: typePerm, Code: "host_not_allowed",
				Message: fmt.Sprintf("Host %q: a server without tokens answers requests to a loopback host only (localhost, 127.0.0.1, [::1])", r.Host)})
			return
		}
		if s.cors(rw, r) {
			return
		}
		if public[pattern] {
			mux.ServeHTTP(rw, r)
			return
		}
		var err error
		if r, err = s.authenticate(r); err != nil {
			writeError(rw, err)
			return
		}
		if ok, wait := s.limits.allow(rateKey(r)); !ok {
			s.metrics.limited.Inc()
			rw.Header().Set("Retry-After", retryAfter(wait))
			writeError(rw, &apiError{Status: http.StatusTooManyRequests, Type: typeRateLimit, Code: "rate_limit_exceeded",
				Message: fmt.Sprintf("too many requests: try again in %s", wait.Round(time.Millisecond))})
			return
		}
		r.Body = http.MaxBytesReader(rw, r.Body, s.opts.MaxBody)
		mux.ServeHTTP(rw, r)
	})
}

// recorder notes a response's status and size for the access log and
// the metrics.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	wrote  bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection (flushes,
// write deadlines).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// handleHealth answers that the process serves.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleReady answers whether the server takes work: not while it shuts
// down, nor when its store does not answer.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	draining := s.draining
	s.mu.Unlock()
	if draining {
		writeError(w, errDraining)
		return
	}
	if _, err := s.journalStore().Head(r.Context(), s.opts.World); err != nil {
		writeError(w, &apiError{Status: http.StatusServiceUnavailable, Type: typeBusy, Code: "store_unavailable", Message: "the store does not answer: " + err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
