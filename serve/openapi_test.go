package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/demiurge-dev/demiurge/agent/session"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/replay"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The OpenAPI file and the events' schema beside it, which it refers to
// by a relative reference ("run-json.schema.json#/$defs/usage"), as any
// tool that reads the file from disk or from a URL resolves it.
const (
	openAPIPath = "../docs/openapi.json"
	runJSONPath = "../docs/run-json.schema.json"
)

// openAPIURL and runJSONURL are the files' URLs (file:///…/docs/…).
var openAPIURL, runJSONURL = fileURL(openAPIPath), fileURL(runJSONPath)

// fileURL is the file: URL of path.
func fileURL(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		panic(err)
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
}

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
			// A named event is named by its type (the native error
			// event's data is the error shape, which has none).
			if m, ok := v.(map[string]any); ok && ev.Event != "" {
				if typ, ok := m["type"].(string); ok && typ != ev.Event || !ok && ev.Event != "error" {
					bad = fmt.Errorf("%s %s: event %q carries data of type %v", method, tmpl, ev.Event, m["type"])
					return false
				}
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

// TestOpenAPIEventsAreRunJSON: the events of the native streams, and of a
// turn as JSON, are run-json.schema.json's, by reference: the OpenAPI
// file copies none of its definitions (it refers to the file beside it),
// so the two cannot drift; and docs/api.md lists the same event types.
func TestOpenAPIEventsAreRunJSON(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(openAPIPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	if got := schemas["TurnEvent"].(map[string]any)["$ref"]; got != "run-json.schema.json" {
		t.Errorf("TurnEvent is %v; want a $ref to run-json.schema.json", got)
	}
	if got, _ := json.Marshal(schemas["StreamEvent"].(map[string]any)["oneOf"]); string(got) != `[{"$ref":"#/components/schemas/TurnEvent"},{"$ref":"#/components/schemas/Error"}]` {
		t.Errorf("StreamEvent is one of %s; want TurnEvent or Error", got)
	}
	// Every native stream's events are StreamEvent; a turn as JSON holds
	// TurnEvents.
	native := 0
	for p, ops := range openAPI(t).doc.Paths {
		for m, op := range ops {
			for code, resp := range op.Responses {
				for mt, c := range resp.Content {
					if mt != "text/event-stream" || !strings.HasPrefix(p, "/v1/worlds/") {
						continue
					}
					native++
					if string(c.EventData) != `{"$ref":"#/components/schemas/StreamEvent"}` && !jsonEqual(c.EventData, `{"$ref":"#/components/schemas/StreamEvent"}`) {
						t.Errorf("%s %s %s: events %s; want StreamEvent", m, p, code, c.EventData)
					}
				}
			}
		}
	}
	if native < 3 {
		t.Errorf("%d native streams in the file; want the message's, the turn's and the chat's", native)
	}
	// Nothing of run-json's is defined again: no schema of the file names
	// an event type as a const, and every reference to the events' file
	// is relative (an absolute one would resolve nowhere).
	rj, err := os.ReadFile(runJSONPath)
	if err != nil {
		t.Fatal(err)
	}
	var runJSON struct {
		OneOf []struct {
			Ref string `json:"$ref"`
		} `json:"oneOf"`
	}
	if err := json.Unmarshal(rj, &runJSON); err != nil {
		t.Fatal(err)
	}
	types := map[string]bool{}
	var order []string
	for _, o := range runJSON.OneOf {
		typ := strings.TrimPrefix(o.Ref, "#/$defs/")
		types[typ] = true
		order = append(order, typ)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if props, ok := v["properties"].(map[string]any); ok {
				typ, _ := props["type"].(map[string]any)
				c, _ := typ["const"].(string)
				_, seq := props["seq"]
				_, round := props["round"]
				if types[c] && (seq || round) {
					t.Errorf("%s: the event %q is defined here again: refer to run-json.schema.json", path, c)
				}
			}
			if r, ok := v["$ref"].(string); ok && strings.Contains(r, "run-json") && !strings.HasPrefix(r, "run-json.schema.json") {
				t.Errorf("%s: $ref %q: refer to run-json.schema.json relatively", path, r)
			}
			for k, e := range v {
				walk(path+"/"+k, e)
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s/%d", path, i), e)
			}
		}
	}
	walk("", doc)
	// docs/api.md names the events run-json.schema.json defines.
	md, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	_, list, ok := strings.Cut(string(md), "A turn's **events** are the objects `run --json` prints")
	list, _, _ = strings.Cut(list, "Every event but")
	if !ok {
		t.Fatal("docs/api.md no longer says what a turn's events are")
	}
	var listed []string
	for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(list, -1) {
		listed = append(listed, m[1])
	}
	slices.Sort(listed)
	slices.Sort(order)
	if !slices.Equal(listed, order) {
		t.Errorf("docs/api.md lists the events %v; run-json.schema.json defines %v", listed, order)
	}
}

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(a json.RawMessage, b string) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

// TestOpenAPITraceOfSessions: the turns `trace --json` reads out of the
// recorded sessions (testdata/sessions: model calls that retried, bash
// scripts, workspace commits, MCP calls, approvals) fit the file's
// TraceTurn, which GET …/trace answers: the schema is held to every field
// the reader writes, not only to those of the tests' small turns.
func TestOpenAPITraceOfSessions(t *testing.T) {
	t.Parallel()
	s, err := openAPI(t).schema("/components/schemas/TraceTurn")
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := filepath.Glob("../testdata/sessions/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no recorded sessions: %v", err)
	}
	seen := map[string]bool{}
	for _, dir := range dirs {
		b, err := replay.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		blobs := cas.NewMemory()
		for _, blob := range b.Blobs {
			if _, err := blobs.Put(t.Context(), blob); err != nil {
				t.Fatal(err)
			}
		}
		rd := session.NewReader(blobs)
		for _, rec := range b.Records {
			if err := rd.Record(rec); err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
		}
		for _, turn := range rd.Turns() {
			js, err := json.Marshal(turn)
			if err != nil {
				t.Fatal(err)
			}
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(v); err != nil {
				t.Errorf("%s: turn %d does not fit TraceTurn: %v\n%s", dir, turn.RequestID, err, js)
			}
			for _, k := range []string{`"tool_calls"`, `"commands"`, `"commits"`, `"retried"`, `"approval"`, `"compaction"`, `"notices"`} {
				if bytes.Contains(js, []byte(k)) {
					seen[k] = true
				}
			}
		}
	}
	for _, k := range []string{`"tool_calls"`, `"commands"`, `"commits"`} {
		if !seen[k] {
			t.Errorf("no recorded turn has %s: the test no longer reaches it", k)
		}
	}
	t.Logf("fields reached: %v", keys(seen))
}
