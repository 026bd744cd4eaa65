package builtin

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/schema"
)

// effectSchemas returns the params and receipt schemas of a built-in
// effect kind.
func effectSchemas(t *testing.T, kind string) (params, receipt string) {
	t.Helper()
	ef, ok := schema.BuiltinEffectKind(kind)
	if !ok {
		t.Fatalf("no built-in effect %s", kind)
	}
	return ef.ParamsSchema, ef.ReceiptSchema
}

// params normalizes JSON params of an effect kind, as the gate does before
// an adapter sees them.
func params(t *testing.T, kind, js string) schema.Value {
	t.Helper()
	ps, _ := effectSchemas(t, kind)
	v, err := schema.NormalizeJSON(schema.BuiltinTypes, schema.RefType(ps), []byte(js))
	if err != nil {
		t.Fatalf("%s params %s: %v", kind, js, err)
	}
	return v
}

// httpGrant normalizes the JSON params of a sys/http.out@1 grant.
func httpGrant(t *testing.T, js string) schema.Value {
	t.Helper()
	d, ok := schema.Builtin(schema.KindDefCap, "sys/http.out@1")
	if !ok {
		t.Fatal("no built-in sys/http.out@1")
	}
	v, err := schema.NormalizeJSON(schema.BuiltinTypes, d.(*schema.DefCap).Schema, []byte(js))
	if err != nil {
		t.Fatalf("grant %s: %v", js, err)
	}
	return v
}

// testNow is the dispatcher's clock in these tests.
var testNow = time.Unix(1700000000, 123)

// newCall returns a call of an intent of kind with the given params.
func newCall(kind string, store cas.Store, p schema.Value) *effects.Call {
	return &effects.Call{
		Intent:  &effects.Intent{Kind: kind},
		Params:  p,
		CAS:     store,
		Now:     func() time.Time { return testNow },
		Sleep:   func(context.Context, time.Time) error { return nil },
		Attempt: 1,
	}
}

// checkReceipt fails the test if an ok receipt does not fit the receipt
// schema of kind, as the world checks it, and returns its payload.
func checkReceipt(t *testing.T, kind string, r effects.Receipt) schema.Value {
	t.Helper()
	if r.Status != effects.StatusOK {
		t.Fatalf("%s: receipt %s: %s; want ok", kind, r.Status, r.Error)
	}
	_, rs := effectSchemas(t, kind)
	v, err := schema.Normalize(schema.BuiltinTypes, schema.RefType(rs), r.Payload)
	if err != nil {
		t.Fatalf("%s: receipt %s does not fit %s: %v", kind, schema.String(r.Payload), rs, err)
	}
	return v
}

// checkError fails the test unless r is an error receipt of adapter whose
// message holds every one of want.
func checkError(t *testing.T, r effects.Receipt, adapter string, want ...string) {
	t.Helper()
	if r.Status != effects.StatusError {
		t.Fatalf("receipt %s (payload %s); want an error", r.Status, schema.String(r.Payload))
	}
	if r.AdapterID != adapter {
		t.Errorf("adapter id %q; want %q", r.AdapterID, adapter)
	}
	for _, w := range want {
		if !strings.Contains(r.Error, w) {
			t.Errorf("error %q\ndoes not say %q", r.Error, w)
		}
	}
}

// failingStore is a memory store whose Put fails.
type failingStore struct {
	*cas.Memory
	err error
}

func (s failingStore) Put(context.Context, []byte) (cas.Ref, error) { return cas.Ref{}, s.err }

func sha256Ref(b []byte) cas.Ref { return cas.RefFromDigest(cas.SHA256, sha256.Sum256(b)) }

func TestAdapters(t *testing.T) {
	ads := Adapters(nil)
	for _, kind := range []string{"blob.put", "blob.get", "timer.set", "http.request"} {
		if ads[kind] == nil {
			t.Errorf("no adapter for %s", kind)
		}
	}
	if len(ads) != 4 {
		t.Errorf("%d adapters; want 4", len(ads))
	}
	if h := ads["http.request"].(*HTTP); h.Client == nil || h.MaxBody != defaultMaxBody {
		t.Errorf("http.request adapter %+v; want a client and the default body limit", h)
	}
}

func TestBlobPut(t *testing.T) {
	data := []byte("hello, blob")
	other := []byte("other bytes")
	for _, tc := range []struct {
		name   string
		params schema.Value // nil: {blob_ref: ref, bytes: data}
		ref    string
		store  func() cas.Store
		want   string   // the receipt's blob_ref when ok
		errs   []string // the error says all of these; nil: ok
	}{
		{name: "blake3", ref: cas.Sum(data).String(), want: cas.Sum(data).String()},
		{name: "sha256", ref: sha256Ref(data).String(), want: sha256Ref(data).String()},
		{name: "empty bytes", params: schema.Record("blob_ref", cas.Sum(nil).String(), "bytes", []byte{}),
			want: cas.Sum(nil).String()},
		{name: "wrong blake3", ref: cas.Sum(other).String(),
			errs: []string{"blob.put: blob_ref " + cas.Sum(other).String() + " does not match the bytes (their BLAKE3 is " + cas.Sum(data).String() + ")"}},
		{name: "wrong sha256", ref: sha256Ref(other).String(),
			errs: []string{"blob.put: blob_ref " + sha256Ref(other).String() + fmt.Sprintf(" does not match the bytes' SHA-256 %x", sha256.Sum256(data))}},
		{name: "sha256 digest under blake3", ref: cas.RefFromDigest(cas.BLAKE3, sha256.Sum256(data)).String(),
			errs: []string{"does not match the bytes (their BLAKE3 is " + cas.Sum(data).String() + ")"}},
		{name: "blake3 digest under sha256", ref: cas.RefFromDigest(cas.SHA256, cas.Sum(data).Digest()).String(),
			errs: []string{"does not match the bytes' SHA-256"}},
		{name: "bad ref", params: schema.Record("blob_ref", "blake3:xyz", "bytes", data),
			errs: []string{"blob.put: blob_ref: ", "cas: invalid ref", "digest has 3 hex digits, want 64"}},
		{name: "no ref", params: schema.Record("bytes", data),
			errs: []string{"blob.put: blob_ref: ", "empty string"}},
		{name: "no params", params: schema.Record(),
			errs: []string{"blob.put: blob_ref: "}},
		{name: "store fails", ref: cas.Sum(data).String(),
			store: func() cas.Store { return failingStore{cas.NewMemory(), cas.ErrReadOnly} },
			errs:  []string{"blob.put: ", "cas: store is read-only"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var store cas.Store = cas.NewMemory()
			if tc.store != nil {
				store = tc.store()
			}
			p := tc.params
			if p == nil {
				p = params(t, "blob.put", fmt.Sprintf(`{"blob_ref": %q, "bytes": {"bytes_b64": "aGVsbG8sIGJsb2I="}}`, tc.ref))
			}
			r := BlobPut(t.Context(), newCall("blob.put", store, p))
			if tc.errs != nil {
				checkError(t, r, "blob", tc.errs...)
				if m, ok := store.(*cas.Memory); ok && m.Len() != 0 {
					t.Errorf("%d blobs stored; want none", m.Len())
				}
				return
			}
			got := checkReceipt(t, "blob.put", r)
			stored, _ := schema.FieldPath(p, "bytes").([]byte)
			if ref := schema.FieldPath(got, "blob_ref"); ref != tc.want {
				t.Errorf("blob_ref = %v; want %s", ref, tc.want)
			}
			if size := schema.FieldPath(got, "size"); size != uint64(len(stored)) {
				t.Errorf("size = %v; want %d", size, len(stored))
			}
			if r.AdapterID != "blob" {
				t.Errorf("adapter id %q; want blob", r.AdapterID)
			}
			// The bytes are stored under their BLAKE3, whatever ref named them.
			b, err := store.Get(t.Context(), cas.Sum(stored))
			if err != nil || string(b) != string(stored) {
				t.Errorf("stored %q, %v; want %q", b, err, stored)
			}
		})
	}
}

func TestBlobGet(t *testing.T) {
	store := cas.NewMemory()
	data := []byte("stored blob")
	ref, err := store.Put(t.Context(), data)
	if err != nil {
		t.Fatal(err)
	}
	missing := cas.Sum([]byte("never stored"))
	for _, tc := range []struct {
		name   string
		params schema.Value
		errs   []string // nil: ok
	}{
		{name: "stored", params: params(t, "blob.get", fmt.Sprintf(`{"blob_ref": %q}`, ref))},
		{name: "missing", params: params(t, "blob.get", fmt.Sprintf(`{"blob_ref": %q}`, missing)),
			errs: []string{"blob.get: ", "cas: not found", missing.String()}},
		{name: "sha256 ref", params: params(t, "blob.get", fmt.Sprintf(`{"blob_ref": %q}`, sha256Ref(data))),
			errs: []string{"blob.get: " + sha256Ref(data).String() + ": demiurge stores blobs under their BLAKE3 ref; sha256 refs cannot be read"}},
		{name: "bad ref", params: schema.Record("blob_ref", "md5:abc"),
			errs: []string{"blob.get: blob_ref: ", `unknown algorithm "md5"`}},
		{name: "no ref", params: nil,
			errs: []string{"blob.get: blob_ref: ", "empty string"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := BlobGet(t.Context(), newCall("blob.get", store, tc.params))
			if tc.errs != nil {
				checkError(t, r, "blob", tc.errs...)
				return
			}
			got := checkReceipt(t, "blob.get", r)
			if b, _ := schema.FieldPath(got, "bytes").([]byte); string(b) != string(data) {
				t.Errorf("bytes = %q; want %q", b, data)
			}
			if s := schema.FieldPath(got, "size"); s != uint64(len(data)) {
				t.Errorf("size = %v; want %d", s, len(data))
			}
			if s := schema.FieldPath(got, "blob_ref"); s != ref.String() {
				t.Errorf("blob_ref = %v; want %s", s, ref)
			}
		})
	}
}

func TestTimerSet(t *testing.T) {
	stopped := errors.New("context canceled")
	for _, tc := range []struct {
		name     string
		params   schema.Value
		sleepErr error
		now      time.Time
		status   string
		want     string // the receipt, or the error
		sleptTo  int64  // the time Sleep was asked to wait for; -1: not called
	}{
		{name: "fires", params: schema.Record("deliver_at_ns", uint64(5000), "key", "k1"), now: testNow,
			status: effects.StatusOK, sleptTo: 5000,
			want: fmt.Sprintf(`{"key": "k1", "delivered_at_ns": %d}`, testNow.UnixNano())},
		{name: "no key", params: schema.Record("deliver_at_ns", uint64(7), "key", nil), now: testNow,
			status: effects.StatusOK, sleptTo: 7,
			want: fmt.Sprintf(`{"key": null, "delivered_at_ns": %d}`, testNow.UnixNano())},
		{name: "clock before 1970", params: schema.Record("deliver_at_ns", uint64(0), "key", nil), now: time.Unix(-5, 0),
			status: effects.StatusOK, sleptTo: 0, want: `{"key": null, "delivered_at_ns": 0}`},
		{name: "stopped", params: schema.Record("deliver_at_ns", uint64(9), "key", "k"), sleepErr: stopped,
			status: effects.StatusTimeout, sleptTo: 9, want: "timer.set: stopped before 9: context canceled"},
		{name: "out of range", params: schema.Record("deliver_at_ns", uint64(math.MaxInt64)+1, "key", nil),
			status: effects.StatusError, sleptTo: -1, want: "timer.set: deliver_at_ns 9223372036854775808 is out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCall("timer.set", cas.NewMemory(), tc.params)
			c.Now = func() time.Time { return tc.now }
			slept := int64(-1)
			c.Sleep = func(_ context.Context, at time.Time) error { slept = at.UnixNano(); return tc.sleepErr }
			r := TimerSet(t.Context(), c)
			if slept != tc.sleptTo {
				t.Errorf("slept until %d; want %d", slept, tc.sleptTo)
			}
			if r.Status != tc.status || r.AdapterID != "timer" {
				t.Fatalf("receipt %s from %q (%s); want %s from timer", r.Status, r.AdapterID, r.Error, tc.status)
			}
			if tc.status != effects.StatusOK {
				if r.Error != tc.want {
					t.Errorf("error %q; want %q", r.Error, tc.want)
				}
				return
			}
			got := checkReceipt(t, "timer.set", r)
			_, rs := effectSchemas(t, "timer.set")
			want, err := schema.NormalizeJSON(schema.BuiltinTypes, schema.RefType(rs), []byte(tc.want))
			if err != nil {
				t.Fatal(err)
			}
			if !schema.Equal(got, want) {
				t.Errorf("receipt %s; want %s", schema.String(got), schema.String(want))
			}
		})
	}
}

// echoServer answers /echo with the request's method, body and headers in
// its own headers and body, /empty with 204, /missing with 404 and /big
// with 100 bytes.
func echoServer(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Method", r.Method)
		w.Header().Set("X-Idempotency-Key", r.Header.Get("Idempotency-Key"))
		w.Header().Set("X-Custom", r.Header.Get("X-Custom"))
		w.Header().Add("X-Multi", "one")
		w.Header().Add("X-Multi", "two")
		fmt.Fprintf(w, "%s %s", r.Method, body)
	})
	mux.HandleFunc("/empty", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(strings.Repeat("x", 100))) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// header returns a response header from an http.request receipt.
func header(v schema.Value, name string) string {
	m, _ := schema.FieldPath(v, "headers").(*schema.Map)
	s, _ := m.Get(name)
	str, _ := s.(string)
	return str
}

// body returns the body an http.request receipt refers to.
func body(t *testing.T, store cas.Store, v schema.Value) string {
	t.Helper()
	ref, _ := schema.FieldPath(v, "body_ref").(string)
	if ref == "" {
		return ""
	}
	b, err := store.Get(t.Context(), cas.MustParseRef(ref))
	if err != nil {
		t.Fatalf("body_ref: %v", err)
	}
	return string(b)
}

func TestHTTP(t *testing.T) {
	srv := echoServer(t)
	store := cas.NewMemory()
	reqBody, err := store.Put(t.Context(), []byte("request body"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		params  string
		key     []byte // the intent's idempotency key
		maxBody int64
		status  uint64
		body    string
		headers map[string]string
	}{
		{name: "get", params: `{"method": "GET", "url": "/echo", "headers": {}}`,
			status: 200, body: "GET ", headers: map[string]string{
				"x-method": "GET", "x-multi": "one, two", "x-idempotency-key": "", "content-type": "text/plain; charset=utf-8"}},
		{name: "post with a body and headers", key: []byte{0xab, 0x01},
			params: fmt.Sprintf(`{"method": "POST", "url": "/echo", "headers": {"X-Custom": "v1"}, "body_ref": %q}`, reqBody),
			status: 200, body: "POST request body", headers: map[string]string{
				"x-method": "POST", "x-custom": "v1", "x-idempotency-key": "ab01"}},
		{name: "the caller's idempotency key wins", key: []byte{0xab},
			params: `{"method": "PUT", "url": "/echo", "headers": {"idempotency-key": "mine"}}`,
			status: 200, body: "PUT ", headers: map[string]string{"x-idempotency-key": "mine"}},
		{name: "no body", params: `{"method": "GET", "url": "/empty", "headers": {}}`, status: 204},
		{name: "not found is a receipt", params: `{"method": "GET", "url": "/missing", "headers": {}}`,
			status: 404, body: "404 page not found\n"},
		{name: "a body at the limit", params: `{"method": "GET", "url": "/big", "headers": {}}`, maxBody: 100,
			status: 200, body: strings.Repeat("x", 100)},
		{name: "no limit", params: `{"method": "GET", "url": "/big", "headers": {}}`, maxBody: math.MaxInt64,
			status: 200, body: strings.Repeat("x", 100)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := params(t, "http.request", strings.Replace(tc.params, `"url": "/`, `"url": "`+srv.URL+`/`, 1))
			c := newCall("http.request", store, p)
			c.Intent.IdempotencyKey = tc.key
			h := &HTTP{Client: srv.Client(), MaxBody: tc.maxBody}
			got := checkReceipt(t, "http.request", h.Run(t.Context(), c))
			if s := schema.FieldPath(got, "status"); s != tc.status {
				t.Errorf("status %v; want %d", s, tc.status)
			}
			if b := body(t, store, got); b != tc.body {
				t.Errorf("body %q; want %q", b, tc.body)
			}
			if tc.body == "" && schema.FieldPath(got, "body_ref") != nil {
				t.Errorf("body_ref %v for an empty body; want null", schema.FieldPath(got, "body_ref"))
			}
			for k, v := range tc.headers {
				if g := header(got, k); g != v {
					t.Errorf("header %s = %q; want %q", k, g, v)
				}
			}
			if id := schema.FieldPath(got, "adapter_id"); id != "http" {
				t.Errorf("adapter_id %v; want http", id)
			}
			now := uint64(testNow.UnixNano())
			if s, e := schema.FieldPath(got, "timings", "start_ns"), schema.FieldPath(got, "timings", "end_ns"); s != now || e != now {
				t.Errorf("timings %v, %v; want the call's clock %d", s, e, now)
			}
		})
	}
}

func TestHTTPErrors(t *testing.T) {
	srv := echoServer(t)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	missing := cas.Sum([]byte("not in the store"))
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	for _, tc := range []struct {
		name    string
		params  schema.Value
		ctx     context.Context
		maxBody int64
		errs    []string
	}{
		{name: "bad body_ref", params: schema.Record("method", "POST", "url", srv.URL+"/echo", "body_ref", "blake3:"),
			errs: []string{"http.request: body_ref: cas: invalid ref"}},
		{name: "body_ref not stored", params: params(t, "http.request", fmt.Sprintf(`{"method": "POST", "url": %q, "headers": {}, "body_ref": %q}`, srv.URL+"/echo", missing)),
			errs: []string{"http.request: body_ref: ", "cas: not found", missing.String()}},
		{name: "bad method", params: params(t, "http.request", fmt.Sprintf(`{"method": "GE T", "url": %q, "headers": {}}`, srv.URL)),
			errs: []string{`http.request: net/http: invalid method "GE T"`}},
		{name: "bad url", params: params(t, "http.request", `{"method": "GET", "url": "http://[::1", "headers": {}}`),
			errs: []string{"http.request: ", `parse "http://[::1"`}},
		{name: "relative url", params: params(t, "http.request", `{"method": "GET", "url": "/echo", "headers": {}}`),
			errs: []string{"http.request GET /echo: ", "unsupported protocol scheme"}},
		{name: "bad header value", params: params(t, "http.request", fmt.Sprintf(`{"method": "GET", "url": %q, "headers": {"X-Bad": "a\nb"}}`, srv.URL+"/echo")),
			errs: []string{"http.request GET " + srv.URL + "/echo: ", `invalid header field value for "X-Bad"`}},
		{name: "nothing listening", params: params(t, "http.request", fmt.Sprintf(`{"method": "GET", "url": %q, "headers": {}}`, closed.URL)),
			errs: []string{"http.request GET " + closed.URL + ": ", "connection refused"}},
		{name: "body over the limit", maxBody: 99, params: params(t, "http.request", fmt.Sprintf(`{"method": "GET", "url": %q, "headers": {}}`, srv.URL+"/big")),
			errs: []string{"http.request GET " + srv.URL + "/big: the response body is larger than 99 bytes"}},
		{name: "cancelled", ctx: cancelled, params: params(t, "http.request", fmt.Sprintf(`{"method": "GET", "url": %q, "headers": {}}`, srv.URL+"/echo")),
			errs: []string{"http.request GET " + srv.URL + "/echo: ", "context canceled"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = t.Context()
			}
			store := cas.NewMemory()
			h := &HTTP{Client: srv.Client(), MaxBody: tc.maxBody}
			checkError(t, h.Run(ctx, newCall("http.request", store, tc.params)), "http", tc.errs...)
			if store.Len() != 0 {
				t.Errorf("%d blobs stored by a failed request", store.Len())
			}
		})
	}
}

// TestHTTPNilClient: an HTTP without a client uses a default one.
func TestHTTPNilClient(t *testing.T) {
	srv := echoServer(t)
	p := params(t, "http.request", fmt.Sprintf(`{"method": "GET", "url": %q, "headers": {}}`, srv.URL+"/echo"))
	got := checkReceipt(t, "http.request", (&HTTP{}).Run(t.Context(), newCall("http.request", cas.NewMemory(), p)))
	if s := schema.FieldPath(got, "status"); s != uint64(200) {
		t.Errorf("status %v; want 200", s)
	}
}

// TestHTTPRedirect: a redirect is followed only to a destination the
// grant allows — host, scheme, port and path prefix, as the http.out
// enforcer checks the first request — and a refused one never reaches its
// target.
func TestHTTPRedirect(t *testing.T) {
	// other is a second server, named by "localhost" where the first one
	// is named by its address 127.0.0.1.
	var otherHits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		fmt.Fprintf(w, "other %s", r.URL.Path)
	}))
	t.Cleanup(other.Close)
	otherURL, _ := url.Parse(other.URL)
	otherPort := otherURL.Port()
	otherByName := "http://localhost:" + otherPort

	var hits atomic.Int64
	mux := http.NewServeMux()
	// /to?u=URL redirects to URL (302); /api/to too.
	redirect := func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("u"), http.StatusFound)
	}
	mux.HandleFunc("/to", redirect)
	mux.HandleFunc("/api/to", redirect)
	var loops atomic.Int64
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		loops.Add(1)
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, "here %s", r.URL.Path)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	srvURL, _ := url.Parse(srv.URL)
	port := srvURL.Port()

	for _, tc := range []struct {
		name  string
		grant string
		path  string // on srv
		body  string // the final body, when followed
		loops int64  // requests /loop served
		errs  []string
	}{
		{name: "no limits", grant: `{}`, path: "/to?u=" + otherByName + "/x", body: "other /x"},
		{name: "allowed host", grant: `{"hosts": ["127.0.0.1"]}`, path: "/to?u=/ok", body: "here /ok"},
		{name: "allowed host, any case", grant: `{"hosts": ["127.0.0.1", "LOCALHOST"]}`, path: "/to?u=" + otherByName + "/x", body: "other /x"},
		{name: "allowed subdomain pattern", grant: `{"hosts": ["127.0.0.1", "*.localhost"]}`,
			path: "/to?u=" + otherByName + "/x",
			errs: []string{`redirect to ` + otherByName + `/x refused: host "localhost" is not in the allowed hosts [127.0.0.1 *.localhost]`}},
		{name: "disallowed host", grant: `{"hosts": ["127.0.0.1"]}`, path: "/to?u=" + otherByName + "/x",
			errs: []string{"http.request GET " + srv.URL + "/to?u=" + otherByName + "/x: ",
				`redirect to ` + otherByName + `/x refused: host "localhost" is not in the allowed hosts [127.0.0.1]`}},
		{name: "allowed scheme", grant: `{"schemes": ["HTTP"]}`, path: "/to?u=/ok", body: "here /ok"},
		{name: "disallowed scheme", grant: `{"schemes": ["http"]}`, path: "/to?u=https://127.0.0.1:" + port + "/ok",
			errs: []string{`redirect to https://127.0.0.1:` + port + `/ok refused: scheme "https" is not in the allowed schemes [http]`}},
		{name: "allowed port", grant: fmt.Sprintf(`{"ports": [%s, %s]}`, port, otherPort), path: "/to?u=" + other.URL + "/x", body: "other /x"},
		{name: "disallowed port", grant: fmt.Sprintf(`{"ports": [%s]}`, port), path: "/to?u=" + other.URL + "/x",
			errs: []string{`redirect to ` + other.URL + `/x refused: port ` + otherPort + ` is not in the allowed ports [` + port + `]`}},
		{name: "default port", grant: fmt.Sprintf(`{"ports": [%s]}`, port), path: "/to?u=http://127.0.0.1/x",
			errs: []string{`redirect to http://127.0.0.1/x refused: port 80 is not in the allowed ports [` + port + `]`}},
		{name: "allowed path", grant: `{"path_prefixes": ["/api/"]}`, path: "/api/to?u=/api/ok", body: "here /api/ok"},
		{name: "disallowed path", grant: `{"path_prefixes": ["/api/"]}`, path: "/api/to?u=/admin",
			errs: []string{`redirect to ` + srv.URL + `/admin refused: path "/admin" is not under the allowed path prefixes [/api/]`}},
		{name: "dot segments out of the prefix", grant: `{"path_prefixes": ["/api/"]}`, path: "/api/to?u=/api/../admin",
			errs: []string{`path "/admin" is not under the allowed path prefixes [/api/]`}},
		{name: "loop", grant: `{}`, path: "/loop", loops: 10, errs: []string{"stopped after 10 redirects"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits.Store(0)
			otherHits.Store(0)
			loops.Store(0)
			p := params(t, "http.request", fmt.Sprintf(`{"method": "GET", "url": %q, "headers": {}}`, srv.URL+tc.path))
			c := newCall("http.request", cas.NewMemory(), p)
			c.Intent.GrantParams = httpGrant(t, tc.grant)
			r := (&HTTP{Client: &http.Client{}}).Run(t.Context(), c)
			if n := loops.Load(); n != tc.loops {
				t.Errorf("/loop served %d requests; want %d", n, tc.loops)
			}
			if tc.errs != nil {
				checkError(t, r, "http", tc.errs...)
				if n := hits.Load() + otherHits.Load(); n != 0 {
					t.Errorf("a refused redirect reached its target (%d requests)", n)
				}
				return
			}
			got := checkReceipt(t, "http.request", r)
			if b := body(t, c.CAS, got); b != tc.body {
				t.Errorf("body %q; want %q", b, tc.body)
			}
		})
	}
}
