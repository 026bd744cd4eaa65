package llmtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/internal/readall"
)

// API names the protocol a request used.
const (
	APIResponses = "responses"
	APIChat      = "chat"
	// APIAnthropic is Anthropic's Messages API (POST …/v1/messages).
	APIAnthropic = "anthropic"
	// APIGemini is the Gemini API (POST
	// …/v1beta/models/MODEL:generateContent or :streamGenerateContent).
	APIGemini = "gemini"
)

// Request is one request the server received.
type Request struct {
	// Seq is the request's position in arrival order, from 0.
	Seq    int
	Method string
	Path   string
	// Query is the URL's raw query ("api-version=2024-10-21").
	Query string
	// API is APIResponses, APIChat, or "" for a path the server does not
	// serve.
	API    string
	Header http.Header
	// Body is the request body, byte for byte.
	Body []byte
	// Stream reports whether the request asked for a stream.
	Stream bool
	// Model is the request's "model".
	Model string
}

// JSON returns Body decoded, or nil if it is not a JSON object. It
// decodes Body at every call.
func (r Request) JSON() map[string]any {
	var m map[string]any
	if json.Unmarshal(r.Body, &m) != nil {
		return nil
	}
	return m
}

// Server is a running fake model server on loopback. Close it when done.
type Server struct {
	// URL is the base URL to configure an OpenAI client with, such as
	// "http://127.0.0.1:41234/v1"; requests go to URL+"/responses" and
	// URL+"/chat/completions".
	URL string
	// Root is the base URL to configure an Anthropic or Gemini client
	// with, such as "http://127.0.0.1:41234": requests go to
	// Root+"/v1/messages" and Root+"/v1beta/models/…".
	Root string

	srv *httptest.Server
	fn  func(Request) Turn

	cache promptCache

	mu       sync.Mutex
	requests []Request
	turns    []Turn
	served   int
	paused   []map[string]any // the content of the Anthropic answer last paused (pause_turn)
}

// NewServer starts a server that answers requests with the turns of s, in
// order. A request after the last turn is answered with HTTP 400 and an
// error of type "llmtest_script_exhausted".
func NewServer(s Script) *Server {
	srv := &Server{turns: append([]Turn(nil), s.Turns...)}
	srv.start()
	return srv
}

// NewServerFunc starts a server that answers each request with the turn fn
// returns for it. fn may be called concurrently.
func NewServerFunc(fn func(Request) Turn) *Server {
	srv := &Server{fn: fn}
	srv.start()
	return srv
}

func (s *Server) start() {
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.srv.URL + "/v1"
	s.Root = s.srv.URL
}

// Close shuts the server down, dropping open connections.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Requests returns the requests received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	copy(out, s.requests)
	return out
}

// Served returns how many turns have been answered (script or callback).
func (s *Server) Served() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served
}

// Remaining returns how many script turns are left (0 for a callback server).
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(len(s.turns)-s.served, 0)
}

// maxRequest is the largest request body read.
const maxRequest = 32 << 20

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := readall.Sized(io.LimitReader(r.Body, maxRequest), min(r.ContentLength, maxRequest))
	if err != nil {
		writeError(w, http.StatusBadRequest, ErrorBody{Message: "could not read the request body: " + err.Error(), Type: "invalid_request_error"}, nil)
		return
	}
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	switch {
	case strings.HasSuffix(r.URL.Path, "/responses"):
		req.API = APIResponses
	case strings.HasSuffix(r.URL.Path, "/chat/completions"):
		req.API = APIChat
	case strings.HasSuffix(r.URL.Path, "/v1/messages"):
		req.API = APIAnthropic
	case strings.Contains(r.URL.Path, "/models/") && (strings.HasSuffix(r.URL.Path, ":generateContent") || strings.HasSuffix(r.URL.Path, ":streamGenerateContent")):
		req.API = APIGemini
	}
	// The top level only: a handler that wants the whole body decoded
	// calls Request.JSON.
	var raw map[string]json.RawMessage
	if json.Unmarshal(body, &raw) == nil && raw != nil {
		_ = json.Unmarshal(raw["stream"], &req.Stream)
		_ = json.Unmarshal(raw["model"], &req.Model)
	}
	if req.API == APIGemini {
		// The model and the stream are the URL's.
		m := r.URL.Path[strings.LastIndex(r.URL.Path, "/models/")+len("/models/"):]
		m, method, _ := strings.Cut(m, ":")
		req.Model, req.Stream = m, method == "streamGenerateContent"
	}
	s.mu.Lock()
	req.Seq = len(s.requests)
	s.requests = append(s.requests, req)
	s.mu.Unlock()

	switch {
	case req.API == "":
		writeError(w, http.StatusNotFound, ErrorBody{Message: fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), Type: "invalid_request_error"}, nil)
		return
	case r.Method != http.MethodPost:
		writeError(w, http.StatusMethodNotAllowed, ErrorBody{Message: "Method not allowed: use POST", Type: "invalid_request_error"}, nil)
		return
	case raw == nil:
		writeError(w, http.StatusBadRequest, ErrorBody{Message: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly.)", Type: "invalid_request_error"}, nil)
		return
	case req.Model == "":
		writeError(w, http.StatusBadRequest, ErrorBody{Message: "Missing required parameter: 'model'.", Type: "invalid_request_error", Param: "model", Code: "missing_required_parameter"}, nil)
		return
	}

	if refusal := refuse(req, raw); refusal != nil {
		refusal.write(w)
		return
	}
	turn, seq, ok := s.next(req)
	if !ok {
		if req.API == APIAnthropic || req.API == APIGemini {
			(&apiError{api: req.API, status: http.StatusBadRequest, typ: "llmtest_script_exhausted",
				msg: fmt.Sprintf("llmtest: the script has no turn left for request %d (%d turns served)", req.Seq, seq)}).write(w)
			return
		}
		writeError(w, http.StatusBadRequest, ErrorBody{
			Message: fmt.Sprintf("llmtest: the script has no turn left for request %d (%d turns served)", req.Seq, seq),
			Type:    "llmtest_script_exhausted",
		}, nil)
		return
	}
	if !wait(r.Context(), time.Duration(turn.Delay)) {
		return
	}
	a := answer{turn: turn, seq: seq, req: req, raw: raw}
	if req.API == APIAnthropic {
		if msg := s.continues(a); msg != "" {
			(&apiError{api: APIAnthropic, status: http.StatusBadRequest, typ: "invalid_request_error", msg: msg}).write(w)
			return
		}
	}
	// A request answered with an error (an HTTP error, a body not the
	// API's, an error in place of the stream) reads and writes no cache:
	// the provider never ran it.
	if (req.API == APIAnthropic || req.API == APIGemini) && turn.Status < 400 && turn.Body == "" && turn.StreamError == nil {
		a.cached = s.cache.use(req.API, raw)
	}
	a.write(r.Context(), w)
}

// continues checks an Anthropic request answered with a turn that
// continues a paused one (Turn.Continues): its last message must be the
// paused content, as it came. It remembers the content of an answer that
// pauses (with the content it continued, if it continued a paused turn
// too: the assistant's turn so far).
func (s *Server) continues(a answer) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	paused := s.paused
	s.paused = nil
	if a.turn.Incomplete == "pause_turn" {
		// The turn so far: what it continues, and this answer.
		if a.turn.Continues {
			s.paused = append(slices.Clone(paused), a.anthropicBlocks()...)
		} else {
			s.paused = a.anthropicBlocks()
		}
	}
	if !a.turn.Continues {
		return ""
	}
	var msgs []aMessage
	_ = json.Unmarshal(a.raw["messages"], &msgs)
	const want = "llmtest: this answer continues a paused turn: the request must end with the paused answer's content, as it came, in an assistant message"
	if paused == nil {
		return "llmtest: the script's turn continues a paused turn, but the answer before it did not pause"
	}
	if len(msgs) == 0 || msgs[len(msgs)-1].Role != "assistant" {
		return want + " (it ends with no assistant message)"
	}
	var got []map[string]any
	if err := json.Unmarshal(msgs[len(msgs)-1].Content, &got); err != nil {
		return want + " (its content is not a list of blocks)"
	}
	for _, b := range got {
		delete(b, "cache_control")
	}
	if string(mustJSON(got)) != string(mustJSON(paused)) {
		return fmt.Sprintf("%s (it ends with %s, the paused content was %s)", want, mustJSON(got), mustJSON(paused))
	}
	return ""
}

// wait sleeps d and reports whether ctx is still live.
func wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// next picks the turn for req and its number.
func (s *Server) next(req Request) (Turn, int, bool) {
	if s.fn != nil {
		t := s.fn(req)
		s.mu.Lock()
		seq := s.served
		s.served++
		s.mu.Unlock()
		return t, seq, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.served >= len(s.turns) {
		return Turn{}, s.served, false
	}
	seq := s.served
	s.served++
	return s.turns[seq], seq, true
}

// defaultErrors are the error bodies of an HTTP error turn without Error.
var defaultErrors = map[int]ErrorBody{
	400: {Message: "Invalid request.", Type: "invalid_request_error"},
	401: {Message: "Incorrect API key provided: sk-llmt*****test. You can find your API key at https://platform.openai.com/account/api-keys.", Type: "invalid_request_error", Code: "invalid_api_key"},
	403: {Message: "You are not allowed to sample from this model", Type: "invalid_request_error", Code: "model_not_allowed"},
	404: {Message: "The model does not exist or you do not have access to it.", Type: "invalid_request_error", Code: "model_not_found"},
	429: {Message: "Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.", Type: "requests", Code: "rate_limit_exceeded"},
	500: {Message: "The server had an error while processing your request. Sorry about that!", Type: "server_error"},
	502: {Message: "Bad gateway.", Type: "server_error"},
	503: {Message: "The engine is currently overloaded, please try again later.", Type: "server_error"},
}

// writeError answers an OpenAI error body.
func writeError(w http.ResponseWriter, status int, e ErrorBody, header map[string]string) {
	for k, v := range header {
		w.Header().Set(k, v)
	}
	type body struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	b := body{Message: e.Message, Type: e.Type}
	if e.Param != "" {
		b.Param = &e.Param
	}
	if e.Code != "" {
		b.Code = &e.Code
	}
	out, _ := json.Marshal(map[string]body{"error": b})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(out)
}

// answer renders one turn for one request.
type answer struct {
	turn   Turn
	seq    int
	req    Request
	raw    map[string]json.RawMessage
	cached cacheUse // what the request read from and wrote to the prompt cache
}

func (a *answer) write(ctx context.Context, w http.ResponseWriter) {
	t := a.turn
	w.Header().Set("x-request-id", "req_"+a.hexID("req", 0, 32))
	native := a.req.API == APIAnthropic || a.req.API == APIGemini
	if native {
		w.Header().Del("x-request-id")
		if a.req.API == APIAnthropic {
			w.Header().Set("request-id", "req_"+a.hexID("req", 0, 24))
		}
	}
	if t.Status >= 400 && t.Body == "" && native {
		for k, v := range t.Header {
			w.Header().Set(k, v)
		}
		a.nativeError().write(w)
		return
	}
	if t.Status >= 400 && t.Body == "" {
		e := defaultErrors[t.Status]
		if e.Message == "" {
			e = ErrorBody{Message: http.StatusText(t.Status), Type: "api_error"}
		}
		if t.Error != nil {
			e = mergeError(e, *t.Error)
		}
		writeError(w, t.Status, e, t.Header)
		return
	}
	for k, v := range t.Header {
		w.Header().Set(k, v)
	}
	if t.Body != "" {
		ct := t.ContentType
		if ct == "" {
			ct = "text/html; charset=utf-8"
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(max(t.Status, 200))
		io.WriteString(w, t.Body)
		return
	}
	stream := a.req.Stream && !t.IgnoreStream
	if t.StreamError != nil && !stream {
		if native {
			(&apiError{api: a.req.API, status: 500, typ: t.StreamError.Type, msg: t.StreamError.Message}).write(w)
			return
		}
		writeError(w, http.StatusInternalServerError, mergeError(defaultErrors[500], *t.StreamError), nil)
		return
	}
	if a.req.API == APIChat && t.Failed != nil {
		writeError(w, http.StatusInternalServerError, mergeError(defaultErrors[500], *t.Failed), nil)
		return
	}
	var events []sseEvent
	var body []byte
	switch {
	case a.req.API == APIResponses && stream:
		events = a.responsesEvents()
	case a.req.API == APIResponses:
		body = mustJSON(a.responseObject(""))
	case a.req.API == APIAnthropic && stream:
		events = a.anthropicEvents()
	case a.req.API == APIAnthropic:
		body = mustJSON(a.anthropicMessage())
	case a.req.API == APIGemini && stream:
		events = a.geminiChunks()
	case a.req.API == APIGemini:
		body = mustJSON(a.geminiResponse())
	case stream:
		events = a.chatChunks()
	default:
		body = mustJSON(a.chatCompletion())
	}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		if t.CutOff {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.WriteHeader(http.StatusOK)
			w.Write(body[:len(body)/2])
			http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler) // drop the connection mid-body
		}
		w.WriteHeader(http.StatusOK)
		w.Write(body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	n := len(events)
	if t.CutOff {
		n = max(len(events)/2, 1)
		n = min(n, len(events)-1)
	}
	for i, ev := range events[:n] {
		if ctx.Err() != nil {
			return
		}
		if i > 0 && !wait(ctx, time.Duration(t.EventDelay)) {
			return
		}
		if i == len(events)-1 && t.Hold != nil {
			select {
			case <-t.Hold:
			case <-ctx.Done():
				return
			}
		}
		var buf bytes.Buffer
		if ev.name != "" {
			fmt.Fprintf(&buf, "event: %s\n", ev.name)
		}
		if a.req.API == APIGemini {
			fmt.Fprintf(&buf, "data: %s\r\n\r\n", ev.data) // as Google writes its events
		} else {
			fmt.Fprintf(&buf, "data: %s\n\n", ev.data)
		}
		w.Write(buf.Bytes())
		rc.Flush()
	}
	if t.CutOff {
		panic(http.ErrAbortHandler) // drop the connection before the end
	}
}

func mergeError(base, over ErrorBody) ErrorBody {
	if over.Message != "" {
		base.Message = over.Message
	}
	if over.Type != "" {
		base.Type = over.Type
	}
	if over.Code != "" {
		base.Code = over.Code
	}
	if over.Param != "" {
		base.Param = over.Param
	}
	return base
}

// sseEvent is one server-sent event.
type sseEvent struct {
	name string // "event:" line, "" for none
	data []byte
}

// hexID returns n hex digits derived from the turn number, a kind and an
// index: stable across runs.
func (a *answer) hexID(kind string, i, n int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "llmtest|%s|%d|%d", kind, a.seq, i))
	return hex.EncodeToString(sum[:])[:n]
}

// callID returns the call id of call i: the turn's override or
// "call_" + 24 letters and digits.
func (a *answer) callID(i int) string {
	if id := a.turn.Calls[i].CallID; id != "" {
		return id
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	sum := sha256.Sum256(fmt.Appendf(nil, "llmtest|call|%d|%d", a.seq, i))
	var b strings.Builder
	b.WriteString("call_")
	for _, c := range sum[:24] {
		b.WriteByte(alphabet[int(c)%len(alphabet)])
	}
	return b.String()
}

// model is the model the answer names.
func (a *answer) model() string {
	if a.turn.Model != "" {
		return a.turn.Model
	}
	return a.req.Model
}

// created is the answer's timestamp: fixed, one second per turn.
func (a *answer) created() int64 { return 1760000000 + int64(a.seq) }

// tokens estimates the tokens of s: a quarter of its bytes, rounded up.
func tokens(s string) int64 { return int64(len(s)+3) / 4 }

// usage returns the turn's token counts.
func (a *answer) usage() Usage {
	if a.turn.Usage != nil {
		return *a.turn.Usage
	}
	u := Usage{Input: max(int64(len(a.req.Body))/4, 1)}
	u.Output = tokens(a.turn.Text) + tokens(a.turn.Refusal)
	for _, c := range a.turn.Calls {
		u.Output += tokens(c.Name) + tokens(c.Arguments) + 3
	}
	if a.turn.Reasoning != "" && a.req.API == APIResponses {
		u.Reasoning = 16 + tokens(a.turn.Reasoning)
		u.Output += u.Reasoning
	}
	u.Output = max(u.Output, 1)
	return u
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("llmtest: encode answer: %v", err)) // programmer error: the types are ours
	}
	return b
}

// chunks splits s into pieces of about n bytes on rune boundaries, keeping
// the separators (so the pieces concatenate back to s).
func chunks(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		end := min(n, len(s))
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

// words splits s after each space, so "a b" is "a ", "b".
func words(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// encryptedContent is the stand-in for an opaque reasoning blob.
func (a *answer) encryptedContent() string {
	sum := sha256.Sum256(fmt.Appendf(nil, "llmtest|rs|%d|%s", a.seq, a.turn.Reasoning))
	return "gAAAAA" + base64.RawURLEncoding.EncodeToString(append(sum[:], sum[:]...))
}

// wantsEncrypted reports whether the request includes reasoning.encrypted_content.
func (a *answer) wantsEncrypted() bool {
	var include []string
	_ = json.Unmarshal(a.raw["include"], &include)
	return slices.Contains(include, "reasoning.encrypted_content")
}
