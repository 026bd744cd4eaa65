// Package realwire reads recordings of real HTTP traffic with model
// providers and serves them again on loopback, for tests that check
// demiurge against what providers really sent and accepted.
//
// The recordings are in two places: those the repository may keep, in
// adapters/llm/testdata/realwire, and the extended corpus, in the
// directory the environment variable DEMIURGE_REALWIRE names (laid out the
// same way; see the README in each). Tests read the first always and the
// second when the variable is set (LoadCorpus, Find).
//
// A recording is a JSON file:
//
//	{"source": {"repo", "commit", "path", "license"}, "vendor", "api": "responses"|"chat"|"anthropic"|"gemini", "notes",
//	 "interactions": [{"request": {"method", "url", "headers", "body"},
//	                   "response": {"status", "headers", "body" | "body_text"}}]}
//
// In a recording of several interactions, a request that follows an
// answered one is one the provider accepted.
package realwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Source says where a recording was copied from.
type Source struct {
	Repo    string `json:"repo"`
	Commit  string `json:"commit"`
	Path    string `json:"path"`
	License string `json:"license"`
}

// Recording is one recorded conversation with a provider.
type Recording struct {
	// Name is the file's path under the corpus directory, without .json
	// ("pydantic-ai/openai_responses_thinking_with_tool_calls").
	Name string `json:"-"`
	// File is the path it was read from (its golden file is beside it).
	File         string        `json:"-"`
	Source       Source        `json:"source"`
	Vendor       string        `json:"vendor"`
	API          string        `json:"api"` // "responses", "chat", "anthropic" or "gemini"
	Notes        string        `json:"notes"`
	Interactions []Interaction `json:"interactions"`
}

// Interaction is one request and its response.
type Interaction struct {
	Request  *Request `json:"request"` // nil when only the response was recorded
	Response Response `json:"response"`
}

// Request is a recorded request.
type Request struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

// Response is a recorded response: a JSON body, or a text body (an SSE
// stream, verbatim).
type Response struct {
	Status   *int              `json:"status"`
	Headers  map[string]string `json:"headers"`
	Body     json.RawMessage   `json:"body"`
	BodyText *string           `json:"body_text"`
}

// StatusCode is the response's status, 200 if none was recorded.
func (r Response) StatusCode() int {
	if r.Status == nil {
		return http.StatusOK
	}
	return *r.Status
}

// Bytes returns the body as it went on the wire: the text body, or the
// JSON body (whose key order is the recording's). A stream recorded as
// one JSON event a line, its SSE framing stripped (vercel/ai's fixtures),
// is framed again: "data: EVENT\n\n" for each.
func (r Response) Bytes() []byte {
	if r.eventLines() {
		var b bytes.Buffer
		for _, line := range strings.Split(strings.TrimSpace(*r.BodyText), "\n") {
			b.WriteString("data: " + line + "\n\n")
		}
		return b.Bytes()
	}
	if r.BodyText != nil {
		return []byte(*r.BodyText)
	}
	return bytes.TrimSpace(r.Body)
}

// eventLines reports whether the text body is a stream recorded as one
// JSON object a line.
func (r Response) eventLines() bool {
	if r.BodyText == nil {
		return false
	}
	lines := strings.Split(strings.TrimSpace(*r.BodyText), "\n")
	if len(lines) < 2 {
		return false
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "{") || !json.Valid([]byte(l)) {
			return false
		}
	}
	return true
}

// IsStream reports whether the body is a server-sent event stream.
func (r Response) IsStream() bool {
	if ct := r.Headers["content-type"]; strings.HasPrefix(ct, "text/event-stream") || r.eventLines() {
		return true
	}
	return r.BodyText != nil && (strings.HasPrefix(strings.TrimSpace(*r.BodyText), "data:") || strings.HasPrefix(strings.TrimSpace(*r.BodyText), "event:"))
}

// Load reads one recording; name is what Recording.Name will be.
func Load(path, name string) (*Recording, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("realwire: %w", err)
	}
	var r Recording
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("realwire: %s: %w", path, err)
	}
	switch r.API {
	case "responses", "chat", "anthropic", "gemini":
	default:
		return nil, fmt.Errorf("realwire: %s: api %q is not responses, chat, anthropic or gemini", path, r.API)
	}
	if r.Source.Repo == "" || len(r.Source.Commit) != 40 || r.Source.Path == "" {
		return nil, fmt.Errorf("realwire: %s: the source (repository, 40-hex commit, path) is incomplete", path)
	}
	if len(r.Interactions) == 0 {
		return nil, fmt.Errorf("realwire: %s: no interactions", path)
	}
	r.Name = name
	r.File = path
	return &r, nil
}

// LoadDir reads every recording under dir (*/*.json), sorted by name.
func LoadDir(dir string) ([]*Recording, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("realwire: no recordings under %s", dir)
	}
	sort.Strings(files)
	var out []*Recording
	for _, f := range files {
		rel, _ := filepath.Rel(dir, f)
		r, err := Load(f, strings.TrimSuffix(filepath.ToSlash(rel), ".json"))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Env is the environment variable that names the extended corpus: the
// absolute path of a directory laid out as adapters/llm/testdata/realwire
// (a folder per source, NAME.json and its NAME.golden), holding the
// recordings the repository may not keep.
const Env = "DEMIURGE_REALWIRE"

// NeedExtended is what a test that means nothing without the extended
// corpus says when it skips.
const NeedExtended = "set " + Env + " to the extended realwire corpus to run this test"

// Extended returns the directory of the extended corpus, or "" when
// DEMIURGE_REALWIRE is unset. A value that is not the absolute path of a
// directory is an error (each package's tests run in their own
// directory, so a relative one would mean something else to each).
func Extended() (string, error) {
	dir := os.Getenv(Env)
	if dir == "" {
		return "", nil
	}
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("realwire: %s=%s is not an absolute path", Env, dir)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("realwire: %s=%s is not a directory", Env, dir)
	}
	return dir, nil
}

// LoadCorpus reads every recording under dir (the repository's) and,
// when DEMIURGE_REALWIRE is set, every one of the extended corpus, sorted
// by name; extended reports whether the extended corpus was read. A name
// in both is an error.
func LoadCorpus(dir string) (recs []*Recording, extended bool, err error) {
	recs, err = LoadDir(dir)
	if err != nil {
		return nil, false, err
	}
	ext, err := Extended()
	if err != nil || ext == "" {
		return recs, false, err
	}
	more, err := LoadDir(ext)
	if err != nil {
		return nil, false, err
	}
	seen := map[string]string{}
	for _, r := range recs {
		seen[r.Name] = r.File
	}
	for _, r := range more {
		if f, ok := seen[r.Name]; ok {
			return nil, false, fmt.Errorf("realwire: %s is both %s and %s", r.Name, f, r.File)
		}
	}
	recs = append(recs, more...)
	sort.Slice(recs, func(i, j int) bool { return recs[i].Name < recs[j].Name })
	return recs, true, nil
}

// Find reads the recording NAME ("pydantic-ai/openai_responses_stream"):
// from dir (the repository's), or else from the extended corpus when
// DEMIURGE_REALWIRE is set.
func Find(dir, name string) (*Recording, error) {
	path := filepath.Join(dir, filepath.FromSlash(name)+".json")
	if _, err := os.Stat(path); err == nil {
		return Load(path, name)
	}
	ext, err := Extended()
	if err != nil {
		return nil, err
	}
	if ext == "" {
		return nil, fmt.Errorf("realwire: %s is not among the recordings in %s, and %s (the extended corpus) is unset", name, dir, Env)
	}
	path = filepath.Join(ext, filepath.FromSlash(name)+".json")
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("realwire: %s is neither among the recordings in %s nor in the extended corpus %s (%s): that corpus lacks it; adapters/llm/testdata/realwire/README.md lists what it holds and where each recording came from", name, dir, ext, Env)
	}
	return Load(path, name)
}

// Server answers requests with recorded responses, in order, and keeps
// the requests it received. Close it when done.
type Server struct {
	// URL is the base URL to give an OpenAI client ("http://127.0.0.1:PORT/v1").
	URL string
	// Root is the base URL to give an Anthropic or Gemini client
	// ("http://127.0.0.1:PORT").
	Root string

	srv       *httptest.Server
	mu        sync.Mutex
	responses []Response
	requests  [][]byte
	check     func(seq int, body []byte) error
	api       string
}

// SetAPI makes the refusals of SetCheck's check take the error shape of
// api ("anthropic", "gemini"; OpenAI's by default).
func (s *Server) SetAPI(api string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.api = api
}

// SetCheck makes check look at each request before it is answered: a
// non-nil error is answered with HTTP 400 and the error's text, as the
// provider would refuse it.
func (s *Server) SetCheck(check func(seq int, body []byte) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.check = check
}

// NewServer serves responses, the n-th request getting the n-th response;
// a request after the last is answered with HTTP 500.
func NewServer(responses []Response) *Server {
	s := &Server{responses: responses}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	s.Root = s.srv.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Requests returns the bodies of the requests received so far.
func (s *Server) Requests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	seq := len(s.requests)
	s.requests = append(s.requests, body)
	check, api := s.check, s.api
	s.mu.Unlock()
	if check != nil {
		if err := check(seq, body); err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			var e any
			switch api {
			case "anthropic":
				e = map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": err.Error()}}
			case "gemini":
				e = map[string]any{"error": map[string]any{"code": 400, "message": err.Error(), "status": "INVALID_ARGUMENT"}}
			default:
				e = map[string]any{"error": map[string]any{"message": err.Error(), "type": "invalid_request_error", "code": "realwire_check"}}
			}
			b, _ := json.Marshal(e)
			w.Write(b)
			return
		}
	}
	if seq >= len(s.responses) {
		http.Error(w, fmt.Sprintf("realwire: request %d, but the recording has %d responses", seq+1, len(s.responses)), http.StatusInternalServerError)
		return
	}
	resp := s.responses[seq]
	for k, v := range resp.Headers {
		if k == "content-length" || k == "transfer-encoding" || k == "content-encoding" {
			continue
		}
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		if resp.IsStream() {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
	}
	w.WriteHeader(resp.StatusCode())
	w.Write(resp.Bytes())
}
