// Package builtin implements the built-in effect adapters: blob.put,
// blob.get, timer.set and http.request.
package builtin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/schema"
)

// The kinds of the built-in effects.
const (
	EffectBlobPut     = "blob.put"
	EffectBlobGet     = "blob.get"
	EffectTimerSet    = "timer.set"
	EffectHTTPRequest = "http.request"
)

// Adapters returns the built-in adapters by effect kind. client is used
// for http.request (nil: a client with no timeout of its own; the
// dispatcher bounds each call).
func Adapters(client *http.Client) map[string]effects.Adapter {
	if client == nil {
		client = &http.Client{}
	}
	return map[string]effects.Adapter{
		EffectBlobPut:     effects.AdapterFunc(BlobPut),
		EffectBlobGet:     effects.AdapterFunc(BlobGet),
		EffectTimerSet:    effects.AdapterFunc(TimerSet),
		EffectHTTPRequest: &HTTP{Client: client, MaxBody: defaultMaxBody},
	}
}

// BlobPut stores params.bytes and checks them against params.blob_ref: a
// blake3 ref must be their BLAKE3, a sha256 ref (AgentOS style) their
// SHA-256. The receipt is {blob_ref, size}.
func BlobPut(ctx context.Context, c *effects.Call) effects.Receipt {
	const id = "blob"
	refText, _ := schema.FieldPath(c.Params, "blob_ref").(string)
	data, _ := schema.FieldPath(c.Params, "bytes").([]byte)
	want, err := cas.ParseRef(refText)
	if err != nil {
		return effects.Errorf(id, "blob.put: blob_ref: %v", err)
	}
	switch want.Algo() {
	case cas.BLAKE3:
		if got := cas.Sum(data); got != want {
			return effects.Errorf(id, "blob.put: blob_ref %s does not match the bytes (their BLAKE3 is %s)", want, got)
		}
	case cas.SHA256:
		if got := sha256.Sum256(data); got != want.Digest() {
			return effects.Errorf(id, "blob.put: blob_ref %s does not match the bytes' SHA-256 %x", want, got)
		}
	}
	if _, err := c.CAS.Put(ctx, data); err != nil {
		return effects.Errorf(id, "blob.put: %v", err)
	}
	return effects.OK(id, schema.Record("blob_ref", want.String(), "size", uint64(len(data))))
}

// BlobGet reads a blob. The receipt is {blob_ref, size, bytes}.
func BlobGet(ctx context.Context, c *effects.Call) effects.Receipt {
	const id = "blob"
	refText, _ := schema.FieldPath(c.Params, "blob_ref").(string)
	ref, err := cas.ParseRef(refText)
	if err != nil {
		return effects.Errorf(id, "blob.get: blob_ref: %v", err)
	}
	if ref.Algo() == cas.SHA256 {
		return effects.Errorf(id, "blob.get: %s: demiurge stores blobs under their BLAKE3 ref; sha256 refs cannot be read", ref)
	}
	data, err := c.CAS.Get(ctx, ref)
	if err != nil {
		return effects.Errorf(id, "blob.get: %v", err)
	}
	return effects.OK(id, schema.Record("blob_ref", ref.String(), "size", uint64(len(data)), "bytes", data))
}

// TimerSet waits until deliver_at_ns (nanoseconds since the Unix epoch on
// the world's clock) and reports when it fired: {delivered_at_ns, key}.
func TimerSet(ctx context.Context, c *effects.Call) effects.Receipt {
	const id = "timer"
	at, _ := schema.FieldPath(c.Params, "deliver_at_ns").(uint64)
	key := schema.FieldPath(c.Params, "key")
	if at > 1<<63-1 {
		return effects.Errorf(id, "timer.set: deliver_at_ns %d is out of range", at)
	}
	if err := c.Sleep(ctx, time.Unix(0, int64(at))); err != nil {
		return effects.Receipt{Status: effects.StatusTimeout, Error: fmt.Sprintf("timer.set: stopped before %d: %v", at, err), AdapterID: id}
	}
	now := c.Now().UnixNano()
	if now < 0 {
		now = 0
	}
	return effects.OK(id, schema.Record("delivered_at_ns", uint64(now), "key", key))
}

// HTTP runs http.request with net/http. Redirects are followed only to
// destinations the grant allows: the redirect's host, scheme, port and path
// are checked against the grant's hosts, schemes, ports and path_prefixes
// as the http.out enforcer checks the first request (absent or empty lists
// allow any). The method is not checked again, since HTTP decides it (a 303
// is followed with GET).
type HTTP struct {
	Client  *http.Client // nil means a zero http.Client
	MaxBody int64        // response bodies above this are an error; 0 or less means 16 MiB
}

const defaultMaxBody = 16 << 20

// Run performs the request.
func (h *HTTP) Run(ctx context.Context, c *effects.Call) effects.Receipt {
	const id = "http"
	method, _ := schema.FieldPath(c.Params, "method").(string)
	rawURL, _ := schema.FieldPath(c.Params, "url").(string)
	var body io.Reader
	if r, ok := schema.FieldPath(c.Params, "body_ref").(string); ok {
		ref, err := cas.ParseRef(r)
		if err != nil {
			return effects.Errorf(id, "http.request: body_ref: %v", err)
		}
		b, err := c.CAS.Get(ctx, ref)
		if err != nil {
			return effects.Errorf(id, "http.request: body_ref: %v", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, rawURL, body)
	if err != nil {
		return effects.Errorf(id, "http.request: %v", err)
	}
	if hm, ok := schema.FieldPath(c.Params, "headers").(*schema.Map); ok {
		for _, e := range hm.Entries() {
			k, _ := e.Key.(string)
			v, _ := e.Value.(string)
			req.Header.Set(k, v)
		}
	}
	if len(c.Intent.IdempotencyKey) > 0 && req.Header.Get("Idempotency-Key") == "" {
		req.Header.Set("Idempotency-Key", fmt.Sprintf("%x", c.Intent.IdempotencyKey))
	}
	var client http.Client
	if h.Client != nil {
		client = *h.Client
	}
	grant := c.Intent.GrantParams
	client.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		if err := effects.HTTPDestinationAllowed(grant, r.URL); err != nil {
			return fmt.Errorf("redirect to %s refused: %w", r.URL, err)
		}
		return nil
	}
	start := c.Now()
	resp, err := client.Do(req)
	if err != nil {
		return effects.Errorf(id, "http.request %s %s: %v", method, rawURL, err)
	}
	defer resp.Body.Close()
	max := h.MaxBody
	if max <= 0 {
		max = defaultMaxBody
	}
	var src io.Reader = resp.Body
	if max < math.MaxInt64 {
		src = io.LimitReader(resp.Body, max+1) // one byte more tells a body over the limit
	}
	data, err := io.ReadAll(src)
	if err != nil {
		return effects.Errorf(id, "http.request %s %s: reading the body: %v", method, rawURL, err)
	}
	if int64(len(data)) > max {
		return effects.Errorf(id, "http.request %s %s: the response body is larger than %d bytes", method, rawURL, max)
	}
	end := c.Now()
	var bodyRef schema.Value
	if len(data) > 0 {
		ref, err := c.CAS.Put(ctx, data)
		if err != nil {
			return effects.Errorf(id, "http.request: storing the body: %v", err)
		}
		bodyRef = ref.String()
	}
	keys := make([]string, 0, len(resp.Header))
	for k := range resp.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	headers := schema.NewMap()
	for _, k := range keys {
		headers = headers.With(strings.ToLower(k), strings.Join(resp.Header[k], ", "))
	}
	return effects.OK(id, schema.Record(
		"status", schema.Int(int64(resp.StatusCode)), "headers", headers, "body_ref", bodyRef,
		"timings", schema.Record("start_ns", uint64(start.UnixNano()), "end_ns", uint64(end.UnixNano())),
		"adapter_id", id))
}
