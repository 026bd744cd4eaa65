// Package fetch is the reducer of the fetch example world, demiurge's port
// of AgentOS's 03-fetch-notify: a reducer asks for an HTTP fetch by raising
// an event, a plan performs it and reports back, and the reducer keeps the
// outcome.
//
//  1. Start{url, method} reaches the reducer fetch/Fetch@1, which numbers
//     the request and emits fetch/Request@1{request_id, url, method}.
//  2. The manifest triggers the plan fetch/fetch_plan@1 on that event. The
//     plan emits one http.request under the grant http_fetch (cap
//     fetch/http@1, enforced by sys/CapEnforceHttpOut@1: hosts and
//     methods), awaits the receipt and raises Complete{request_id, status,
//     body_ref} back to the reducer.
//  3. The reducer records the status and the body's ref, reads the body
//     from the CAS for a short preview, and is Done.
//
// A plan that fails — the cap or policy refuses the request, or the
// request itself fails — ends with sys/PlanEnded@1{status: "error"}, which
// the manifest routes to the reducer as the PlanEnded arm of its event; the
// fetch is then Failed with the plan's reason. An HTTP error status (404,
// 503) is not a failure of the effect: it is Done with that status.
//
// Register adds the reducer to a binary's registry. The reducer is
// deterministic: besides its state and event it reads only blobs from the
// CAS, by ref.
package fetch

import (
	"errors"
	"fmt"

	"github.com/demiurge-dev/demiurge/examples/internal/arm"
	"github.com/demiurge-dev/demiurge/examples/internal/planend"
	"github.com/demiurge-dev/demiurge/examples/internal/preview"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
)

// Names of the world's defs.
const (
	ModuleName    = "fetch/Fetch@1"
	EventSchema   = "fetch/Event@1"   // the reducer's event: Start | Complete | PlanEnded
	RequestSchema = "fetch/Request@1" // the event that starts PlanName
	PlanName      = "fetch/fetch_plan@1"
)

// The arms of fetch/Phase@1, the state's pc.
const (
	Idle     = "Idle"
	Fetching = "Fetching"
	Done     = "Done"
	Failed   = "Failed"
)

// State is the Go form of fetch/State@1.
type State struct {
	PC reducer.Variant `cbor:"pc"`
	// NextRequestID numbers the next request; PendingRequest is the
	// request in flight.
	NextRequestID  uint64  `cbor:"next_request_id"`
	PendingRequest *uint64 `cbor:"pending_request"`
	// The outcome of the last request.
	LastURL         *string `cbor:"last_url"`
	LastStatus      *int64  `cbor:"last_status"`
	LastBodyRef     *string `cbor:"last_body_ref"`
	LastBodyPreview *string `cbor:"last_body_preview"`
	Error           *string `cbor:"error"`
}

// Start is the Go form of fetch/Start@1.
type Start struct {
	URL    string `cbor:"url"`
	Method string `cbor:"method"`
}

// Request is the Go form of fetch/Request@1.
type Request struct {
	RequestID uint64 `cbor:"request_id"`
	URL       string `cbor:"url"`
	Method    string `cbor:"method"`
}

// Complete is the Go form of fetch/Complete@1.
type Complete struct {
	RequestID uint64  `cbor:"request_id"`
	Status    int64   `cbor:"status"`
	BodyRef   *string `cbor:"body_ref"`
}

// ErrBadEvent is returned (wrapped) for an event that is not a
// fetch/Event@1 value.
var ErrBadEvent = errors.New("fetch: bad event")

// Reducer is the fetch example's reducer. The zero value is ready to use.
// A Start while a fetch is in flight changes nothing; a Complete or
// PlanEnded that is not about the request in flight changes nothing.
type Reducer struct{}

var _ reducer.Reducer = Reducer{}

// Step implements reducer.Reducer. A nil state is Idle with no request
// made yet.
func (Reducer) Step(c *reducer.Context, state, event schema.Value) (reducer.Output, error) {
	st := State{PC: reducer.Variant{Tag: Idle}}
	if err := reducer.StateToGo(state, &st); err != nil {
		return reducer.Output{}, fmt.Errorf("fetch: %w", err)
	}
	tag, payload, ok := arm.Split(event)
	if !ok {
		return reducer.Output{}, fmt.Errorf("%w: want a variant Start|Complete|PlanEnded, got %s", ErrBadEvent, schema.String(event))
	}
	unchanged := reducer.Output{State: state}
	var out reducer.Output
	switch tag {
	case "Start":
		var ev Start
		if err := reducer.ToGo(payload, &ev); err != nil {
			return reducer.Output{}, fmt.Errorf("%w: Start wants {url, method}, got %s: %v", ErrBadEvent, schema.String(payload), err)
		}
		if st.PC.Tag == Fetching {
			return unchanged, nil
		}
		id := st.NextRequestID
		st = State{PC: reducer.Variant{Tag: Fetching}, NextRequestID: id + 1, PendingRequest: &id, LastURL: &ev.URL}
		req, err := reducer.FromGo(Request{RequestID: id, URL: ev.URL, Method: ev.Method})
		if err != nil {
			return reducer.Output{}, fmt.Errorf("fetch: encode request: %w", err)
		}
		out.Events = []reducer.Event{{Schema: RequestSchema, Value: req}}
	case "Complete":
		var ev Complete
		if err := reducer.ToGo(payload, &ev); err != nil {
			return reducer.Output{}, fmt.Errorf("%w: Complete wants {request_id, status, body_ref}, got %s: %v", ErrBadEvent, schema.String(payload), err)
		}
		if !st.waitingFor(ev.RequestID) {
			return unchanged, nil
		}
		st.PC, st.PendingRequest = reducer.Variant{Tag: Done}, nil
		st.LastStatus, st.LastBodyRef = &ev.Status, ev.BodyRef
		if ev.BodyRef != nil {
			text, err := preview.Of(c, *ev.BodyRef)
			if err != nil {
				msg := err.Error()
				st.Error = &msg
			} else {
				st.LastBodyPreview = &text
			}
		}
	case "PlanEnded":
		ev, err := planend.Decode(payload)
		if err != nil {
			return reducer.Output{}, fmt.Errorf("%w: %v", ErrBadEvent, err)
		}
		var req Request
		if ev.Plan != PlanName || !ev.Failed() || ev.DecodeInput(&req) != nil || !st.waitingFor(req.RequestID) {
			return unchanged, nil
		}
		reason := ev.Reason()
		st.PC, st.PendingRequest, st.Error = reducer.Variant{Tag: Failed}, nil, &reason
	default:
		return reducer.Output{}, fmt.Errorf("%w: unknown variant tag %q (want Start|Complete|PlanEnded)", ErrBadEvent, tag)
	}
	v, err := reducer.FromGo(st)
	if err != nil {
		return reducer.Output{}, fmt.Errorf("fetch: encode state: %w", err)
	}
	out.State = v
	return out, nil
}

func (st *State) waitingFor(id uint64) bool {
	return st.PC.Tag == Fetching && st.PendingRequest != nil && *st.PendingRequest == id
}

// Register adds the fetch example's reducer to r under ModuleName. It
// panics if the name is already registered: it is for program setup.
func Register(r *reducer.Registry) {
	r.MustRegister(ModuleName, Reducer{})
}
