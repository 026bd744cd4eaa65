// Package effects turns the effects that plans and reducers emit into
// intents, decides them (caps, policies, secrets), and dispatches them to
// adapters whose receipts come back to the world.
//
// # Deciding
//
// Gate.Check normalizes an effect's params against its defeffect's params
// schema, checks who may emit it (origin_scope), finds the cap grant, checks
// the grant's cap type and expiry, runs the cap's enforcer on the params,
// checks secret ACLs, and asks the policy: the first matching rule decides
// and no match denies. With no policy configured every effect is denied
// (AgentOS allowed all). Every decision, allow or deny, is something the
// world journals. The intent hash binds the kind, the canonical params, the
// grant, the idempotency key and the origin.
//
// # Dispatching
//
// A Dispatcher runs adapters on a bounded pool of goroutines, each call
// with a timeout, and hands their receipts back in completion order; the
// world journals them one at a time. Secrets are resolved only at dispatch,
// into the params the adapter sees, and never reach the journal or a hash.
// A missing secret fails closed with an error receipt naming the secret and
// its binding.
package effects

import (
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/schema"
)

// Origin is who emitted an effect.
type Origin struct {
	Kind   string       // "plan" or "reducer"
	Name   string       // plan or reducer module name
	PlanID uint64       // plans: the instance
	Step   string       // plans: the emit_effect step
	Key    schema.Value // reducers: the cell key, or nil
}

// Value returns the origin as a value, for hashing and journaling.
func (o Origin) Value() schema.Value {
	if o.Kind == "plan" {
		return schema.Record("kind", o.Kind, "name", o.Name, "plan_id", o.PlanID, "step", o.Step)
	}
	return schema.Record("kind", o.Kind, "name", o.Name, "key", o.Key)
}

// Intent is an effect that was allowed: what to do, under which grant, for
// whom. It is immutable.
type Intent struct {
	Hash           cas.Ref
	Kind           string
	Params         schema.Value // normalized against the effect's params schema; secrets are refs
	Grant          string       // grant name
	Cap            string       // the grant's defcap
	CapType        string
	GrantParams    schema.Value
	IdempotencyKey []byte
	Origin         Origin
	// Effect is the defeffect name (its receipt schema types the receipt).
	Effect string
	// LogicalNowNS is the world's logical time when the effect was
	// emitted: the ingress stamp of the input that caused it. Adapters that
	// need "now" inside a world (the bash tool's date) use it. It is
	// not part of the intent hash.
	LogicalNowNS uint64
}

// intentHash is hash(kind, canonical params, grant, idempotency key, origin):
// the ref of the record intentValue returns, encoded straight from the
// fields in canonical key order (kind, grant, origin, params,
// idempotency_key; in grant cap, name) instead of through a map built and
// sorted for every intent. TestIntentHashEncoding holds it to the map's
// bytes.
func intentHash(kind string, params schema.Value, grant, capName string, key []byte, origin Origin) (cas.Ref, error) {
	for _, s := range [...]string{kind, grant, capName, origin.Kind, origin.Name, origin.Step} {
		if !utf8.ValidString(s) {
			return cas.Ref{}, fmt.Errorf("intent: text %q is not valid UTF-8", s)
		}
	}
	bp := intentBufs.Get().(*[]byte)
	defer intentBufs.Put(bp)
	b := append((*bp)[:0], cas.SelfDescribePrefix...)
	b = appendHead(b, 5, 5)
	b = appendText(appendText(b, "kind"), kind)
	b = appendText(b, "grant")
	b = appendHead(b, 5, 2)
	b = appendText(appendText(b, "cap"), capName)
	b = appendText(appendText(b, "name"), grant)
	b = appendText(b, "origin")
	var err error
	if origin.Kind == "plan" {
		b = appendHead(b, 5, 4)
		b = appendText(appendText(b, "kind"), origin.Kind)
		b = appendText(appendText(b, "name"), origin.Name)
		b = appendText(appendText(b, "step"), origin.Step)
		b = appendHead(appendText(b, "plan_id"), 0, origin.PlanID)
	} else {
		b = appendHead(b, 5, 3)
		b = appendText(b, "key")
		if b, err = schema.AppendBody(b, origin.Key); err != nil {
			return cas.Ref{}, err
		}
		b = appendText(appendText(b, "kind"), origin.Kind)
		b = appendText(appendText(b, "name"), origin.Name)
	}
	b = appendText(b, "params")
	if b, err = schema.AppendBody(b, params); err != nil {
		return cas.Ref{}, err
	}
	b = appendText(b, "idempotency_key")
	b = append(appendHead(b, 2, uint64(len(key))), key...)
	if cap(b) <= 1<<16 {
		*bp = b
	}
	return cas.Sum(b), nil
}

// intentValue is the record whose ref is an intent's hash.
func intentValue(kind string, params schema.Value, grant, capName string, key []byte, origin Origin) schema.Value {
	if key == nil {
		key = []byte{}
	}
	return schema.Record(
		"kind", kind, "params", params, "grant", schema.Record("name", grant, "cap", capName),
		"idempotency_key", key, "origin", origin.Value())
}

// intentBufs holds intentHash's buffers.
var intentBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// appendHead appends the head of a CBOR item of major type major and
// argument n, in its shortest form.
func appendHead(b []byte, major byte, n uint64) []byte {
	m := major << 5
	switch {
	case n < 24:
		return append(b, m|byte(n))
	case n <= 0xff:
		return append(b, m|24, byte(n))
	case n <= 0xffff:
		return append(b, m|25, byte(n>>8), byte(n))
	case n <= 0xffffffff:
		return append(b, m|26, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	return append(b, m|27, byte(n>>56), byte(n>>48), byte(n>>40), byte(n>>32), byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

// appendText appends s as a CBOR text string.
func appendText(b []byte, s string) []byte { return append(appendHead(b, 3, uint64(len(s))), s...) }

// Receipt statuses.
const (
	StatusOK      = "ok"
	StatusError   = "error"
	StatusTimeout = "timeout"
)

// Receipt is the outcome of an intent as an adapter reports it.
type Receipt struct {
	Status string // StatusOK, StatusError or StatusTimeout
	// Payload is the receipt value when Status is ok; the world validates
	// it against the effect's receipt schema.
	Payload schema.Value
	// Error says what went wrong when Status is not ok.
	Error     string
	AdapterID string
	CostCents uint64
}

// Errorf returns an error receipt.
func Errorf(adapter, format string, args ...any) Receipt {
	return Receipt{Status: StatusError, Error: fmt.Sprintf(format, args...), AdapterID: adapter}
}

// OK returns a successful receipt.
func OK(adapter string, payload schema.Value) Receipt {
	return Receipt{Status: StatusOK, Payload: payload, AdapterID: adapter}
}
