package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The OpenAPI file and the events' schema it refers to.
const (
	openAPIPath = "../docs/openapi.json"
	runJSONPath = "../docs/run-json.schema.json"
	openAPIURL  = "https://demiurge.test/openapi.json"
	runJSONURL  = "https://github.com/demiurge-dev/demiurge/docs/run-json.schema.json"
)

// apiDoc is docs/openapi.json, loaded for the tests that hold the
// handlers to it.
type apiDoc struct {
	doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Content map[string]struct {
					Schema    json.RawMessage `json:"schema"`
					EventData json.RawMessage `json:"x-event-data"`
				} `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
	}
	c       *jsonschema.Compiler
	mu      sync.Mutex
	schemas map[string]*jsonschema.Schema
	ops     []apiOp
}

// apiOp is a path of the file as a pattern.
type apiOp struct {
	path string
	re   *regexp.Regexp
}

var (
	loadOnce sync.Once
	loaded   *apiDoc
	loadErr  error
)

// openAPI returns docs/openapi.json, loaded once.
func openAPI(t testing.TB) *apiDoc {
	t.Helper()
	loadOnce.Do(func() { loaded, loadErr = loadAPI() })
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	return loaded
}

func loadAPI() (*apiDoc, error) {
	b, err := os.ReadFile(openAPIPath)
	if err != nil {
		return nil, err
	}
	d := &apiDoc{schemas: map[string]*jsonschema.Schema{}, c: jsonschema.NewCompiler()}
	if err := json.Unmarshal(b, &d.doc); err != nil {
		return nil, fmt.Errorf("%s: %w", openAPIPath, err)
	}
	for _, f := range []struct{ path, url string }{{openAPIPath, openAPIURL}, {runJSONPath, runJSONURL}} {
		b, err := os.ReadFile(f.path)
		if err != nil {
			return nil, err
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.path, err)
		}
		if err := d.c.AddResource(f.url, v); err != nil {
			return nil, err
		}
	}
	segment := regexp.MustCompile(`\\\{[a-z]+\\\}`) // {x}, as QuoteMeta leaves it
	for p := range d.doc.Paths {
		d.ops = append(d.ops, apiOp{path: p, re: regexp.MustCompile("^" + segment.ReplaceAllString(regexp.QuoteMeta(p), `[^/]+`) + "$")})
	}
	return d, nil
}

// schema compiles the schema at the JSON pointer ptr of the file.
func (d *apiDoc) schema(ptr string) (*jsonschema.Schema, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.schemas[ptr]; ok {
		return s, nil
	}
	s, err := d.c.Compile(openAPIURL + "#" + ptr)
	if err != nil {
		return nil, err
	}
	d.schemas[ptr] = s
	return s, nil
}

// escape escapes a JSON pointer token.
func escape(s string) string { return strings.NewReplacer("~", "~0", "/", "~1").Replace(s) }

// check holds an answer to the file: the operation of method and path,
// the response of status (or default), the content of its media type,
// the body against its schema (a stream: each event's data).
func (d *apiDoc) check(method, path string, status int, ctype string, body []byte) error {
	var tmpl string
	for _, op := range d.ops {
		if op.re.MatchString(path) {
			tmpl = op.path
		}
	}
	if tmpl == "" {
		if status == http.StatusNotFound {
			return nil // a route that is not there
		}
		return fmt.Errorf("%s %s: no path of the OpenAPI file", method, path)
	}
	op, ok := d.doc.Paths[tmpl][strings.ToLower(method)]
	if !ok {
		if status == http.StatusMethodNotAllowed || status == http.StatusNotFound || status == http.StatusForbidden || method == http.MethodOptions {
			return nil
		}
		return fmt.Errorf("%s %s: the OpenAPI file has no %s on %s", method, path, method, tmpl)
	}
	code := strconv.Itoa(status)
	resp, ok := op.Responses[code]
	if !ok {
		code = "default"
		resp = op.Responses[code]
	}
	if status == http.StatusNoContent {
		if _, ok := op.Responses["204"]; !ok {
			return fmt.Errorf("%s %s: 204, which the OpenAPI file does not say", method, tmpl)
		}
		return nil
	}
	mt, _, _ := mime.ParseMediaType(ctype)
	_, ok = resp.Content[mt]
	if !ok {
		return fmt.Errorf("%s %s: %d %s, which the OpenAPI file does not say (it has %v)", method, tmpl, status, mt, keys(resp.Content))
	}
	base := "/paths/" + escape(tmpl) + "/" + strings.ToLower(method) + "/responses/" + code + "/content/" + escape(mt)
	switch mt {
	case "application/json":
		s, err := d.schema(base + "/schema")
		if err != nil {
			return err
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("%s %s: %d: not JSON: %v", method, tmpl, status, err)
		}
		if err := s.Validate(v); err != nil {
			return fmt.Errorf("%s %s: %d: the body does not fit the OpenAPI file: %v\n%s", method, tmpl, status, err, body)
		}
	case "text/event-stream":
		s, err := d.schema(base + "/x-event-data")
		if err != nil {
			return err
		}
		var bad error
		_ = readSSE(bytes.NewReader(body), func(ev sseEvent) bool {
			if ev.Event == "error" { // a stream's end on failure: the error shape
				es, _ := d.schema("/components/schemas/Error")
				v, err := jsonschema.UnmarshalJSON(strings.NewReader(ev.Data))
				if err == nil {
					err = es.Validate(v)
				}
				if err != nil {
					bad = fmt.Errorf("%s %s: an error event does not fit: %v\n%s", method, tmpl, err, ev.Data)
				}
				return bad == nil
			}
			var v any = ev.Data
			if ev.Data != "[DONE]" {
				if v, err = jsonschema.UnmarshalJSON(strings.NewReader(ev.Data)); err != nil {
					bad = fmt.Errorf("%s %s: event %s: not JSON: %v", method, tmpl, ev.Event, err)
					return false
				}
			}
			if err := s.Validate(v); err != nil {
				bad = fmt.Errorf("%s %s: event %s does not fit the OpenAPI file: %v\n%s", method, tmpl, ev.Event, err, ev.Data)
				return false
			}
			return true
		})
		return bad
	}
	return nil
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checked wraps h so that every answer it gives is held to the OpenAPI
// file: a test's requests, whatever they are, check the file too.
func checked(t *testing.T, h http.Handler) http.Handler {
	d := openAPI(t)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tee := &teeWriter{ResponseWriter: w, status: 200}
		h.ServeHTTP(tee, r)
		if tee.hijacked {
			return
		}
		if err := d.check(r.Method, r.URL.Path, tee.status, tee.Header().Get("Content-Type"), tee.buf.Bytes()); err != nil {
			t.Errorf("OpenAPI: %v", err)
		}
	})
}

// teeWriter keeps a copy of what a handler writes.
type teeWriter struct {
	http.ResponseWriter
	status   int
	wrote    bool
	hijacked bool
	mu       sync.Mutex
	buf      bytes.Buffer
}

func (w *teeWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *teeWriter) Write(b []byte) (int, error) {
	w.wrote = true
	w.mu.Lock()
	w.buf.Write(b)
	w.mu.Unlock()
	return w.ResponseWriter.Write(b)
}

func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestOpenAPIRoutes: the OpenAPI file describes every route the server
// answers, and no route it does not.
func TestOpenAPIRoutes(t *testing.T) {
	t.Parallel()
	d := openAPI(t)
	var routes, documented []string
	for _, rt := range routeTable {
		method, path, _ := strings.Cut(rt.pattern, " ")
		routes = append(routes, strings.ToLower(method)+" "+path)
	}
	for p, ops := range d.doc.Paths {
		for m := range ops {
			documented = append(documented, m+" "+p)
		}
	}
	slices.Sort(routes)
	slices.Sort(documented)
	if g, w := strings.Join(routes, "\n"), strings.Join(documented, "\n"); g != w {
		t.Errorf("the server's routes:\n%s\nthe OpenAPI file's:\n%s", g, w)
	}
	// Every schema of the file compiles.
	for p, ops := range d.doc.Paths {
		for m, op := range ops {
			for code, resp := range op.Responses {
				for mt, c := range resp.Content {
					base := "/paths/" + escape(p) + "/" + m + "/responses/" + code + "/content/" + escape(mt)
					if _, err := d.schema(base + "/schema"); err != nil {
						t.Errorf("%s %s %s %s: %v", m, p, code, mt, err)
					}
					if len(c.EventData) > 0 {
						if _, err := d.schema(base + "/x-event-data"); err != nil {
							t.Errorf("%s %s %s %s events: %v", m, p, code, mt, err)
						}
					}
				}
			}
		}
	}
}
