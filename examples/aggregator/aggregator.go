// Package aggregator is the reducer of the aggregator example world,
// demiurge's port of AgentOS's 04-aggregator: one plan fans out three HTTP
// requests at once, joins their receipts — which may arrive in any order —
// and reports the three answers in a fixed order.
//
//  1. Start{topic, primary, secondary, tertiary} (each target a {name,
//     url, method}) reaches the reducer aggregator/Aggregator@1, which
//     numbers the request and raises aggregator/Requested@1.
//  2. The manifest triggers aggregator/aggregate_plan@1. Its three
//     emit_effect steps have no predecessors, so they run in the plan's
//     first step and the three http.request intents are journaled together.
//     Each is awaited on its own branch; the join step (raise_event) waits
//     for all three branches and raises Complete{request_id, topic,
//     responses} with the responses in slot order (primary, secondary,
//     tertiary), whatever order the receipts came in.
//  3. The reducer keeps the three answers, adds a preview of each body
//     from the CAS, and is Done.
//
// A failed request fails the plan; its sys/PlanEnded@1 makes the
// aggregation Failed.
//
// Register adds the reducer to a binary's registry. The reducer is
// deterministic: besides its state and event it reads only blobs from the
// CAS, by ref.
package aggregator

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
	ModuleName      = "aggregator/Aggregator@1"
	EventSchema     = "aggregator/Event@1"     // the reducer's event: Start | Complete | PlanEnded
	RequestedSchema = "aggregator/Requested@1" // the event that starts PlanName
	PlanName        = "aggregator/aggregate_plan@1"
)

// The arms of aggregator/Phase@1, the state's pc.
const (
	Idle    = "Idle"
	Running = "Running"
	Done    = "Done"
	Failed  = "Failed"
)

// State is the Go form of aggregator/State@1.
type State struct {
	PC             reducer.Variant `cbor:"pc"`
	NextRequestID  uint64          `cbor:"next_request_id"`
	PendingRequest *uint64         `cbor:"pending_request"`
	CurrentTopic   *string         `cbor:"current_topic"`
	// PendingTargets names the targets of the aggregation in flight.
	PendingTargets []string `cbor:"pending_targets"`
	// LastResponses are the answers of the last aggregation, in slot order.
	LastResponses []Summary `cbor:"last_responses"`
	Error         *string   `cbor:"error"`
}

// Summary is the Go form of aggregator/Summary@1: one answer as the state
// keeps it.
type Summary struct {
	Source      string  `cbor:"source"`
	Status      int64   `cbor:"status"`
	BodyRef     *string `cbor:"body_ref"`
	BodyPreview *string `cbor:"body_preview"`
}

// Target is the Go form of aggregator/Target@1.
type Target struct {
	Name   string `cbor:"name"`
	URL    string `cbor:"url"`
	Method string `cbor:"method"`
}

// Start is the Go form of aggregator/Start@1.
type Start struct {
	Topic     string `cbor:"topic"`
	Primary   Target `cbor:"primary"`
	Secondary Target `cbor:"secondary"`
	Tertiary  Target `cbor:"tertiary"`
}

// Requested is the Go form of aggregator/Requested@1.
type Requested struct {
	RequestID uint64 `cbor:"request_id"`
	Topic     string `cbor:"topic"`
	Primary   Target `cbor:"primary"`
	Secondary Target `cbor:"secondary"`
	Tertiary  Target `cbor:"tertiary"`
}

// Response is the Go form of aggregator/Response@1, one answer as the
// plan reports it.
type Response struct {
	Source  string  `cbor:"source"`
	Status  int64   `cbor:"status"`
	BodyRef *string `cbor:"body_ref"`
}

// Complete is the Go form of aggregator/Complete@1.
type Complete struct {
	RequestID uint64     `cbor:"request_id"`
	Topic     string     `cbor:"topic"`
	Responses []Response `cbor:"responses"`
}

// ErrBadEvent is returned (wrapped) for an event that is not an
// aggregator/Event@1 value.
var ErrBadEvent = errors.New("aggregator: bad event")

// Reducer is the aggregator's reducer. The zero value is ready to use.
// A Start while an aggregation runs changes nothing; a Complete or
// PlanEnded that is not about the aggregation in flight changes nothing.
type Reducer struct{}

var _ reducer.Reducer = Reducer{}

// Step implements reducer.Reducer. A nil state is Idle with no request
// made yet.
func (Reducer) Step(c *reducer.Context, state, event schema.Value) (reducer.Output, error) {
	st := State{PC: reducer.Variant{Tag: Idle}}
	if err := reducer.StateToGo(state, &st); err != nil {
		return reducer.Output{}, fmt.Errorf("aggregator: %w", err)
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
			return reducer.Output{}, fmt.Errorf("%w: Start wants {topic, primary, secondary, tertiary}, got %s: %v", ErrBadEvent, schema.String(payload), err)
		}
		if st.PC.Tag == Running {
			return unchanged, nil
		}
		id := st.NextRequestID
		st = State{
			PC: reducer.Variant{Tag: Running}, NextRequestID: id + 1, PendingRequest: &id, CurrentTopic: &ev.Topic,
			PendingTargets: []string{ev.Primary.Name, ev.Secondary.Name, ev.Tertiary.Name},
			LastResponses:  []Summary{},
		}
		req, err := reducer.FromGo(Requested{RequestID: id, Topic: ev.Topic, Primary: ev.Primary, Secondary: ev.Secondary, Tertiary: ev.Tertiary})
		if err != nil {
			return reducer.Output{}, fmt.Errorf("aggregator: encode request: %w", err)
		}
		out.Events = []reducer.Event{{Schema: RequestedSchema, Value: req}}
	case "Complete":
		var ev Complete
		if err := reducer.ToGo(payload, &ev); err != nil {
			return reducer.Output{}, fmt.Errorf("%w: Complete wants {request_id, topic, responses}, got %s: %v", ErrBadEvent, schema.String(payload), err)
		}
		if !st.waitingFor(ev.RequestID) {
			return unchanged, nil
		}
		st.PC, st.PendingRequest, st.PendingTargets = reducer.Variant{Tag: Done}, nil, []string{}
		st.LastResponses = make([]Summary, len(ev.Responses))
		var problems []error
		for i, r := range ev.Responses {
			st.LastResponses[i] = Summary{Source: r.Source, Status: r.Status, BodyRef: r.BodyRef}
			if r.BodyRef == nil {
				continue
			}
			text, err := preview.Of(c, *r.BodyRef)
			if err != nil {
				problems = append(problems, fmt.Errorf("%s: %w", r.Source, err))
				continue
			}
			st.LastResponses[i].BodyPreview = &text
		}
		if len(problems) > 0 {
			msg := errors.Join(problems...).Error()
			st.Error = &msg
		}
	case "PlanEnded":
		ev, err := planend.Decode(payload)
		if err != nil {
			return reducer.Output{}, fmt.Errorf("%w: %v", ErrBadEvent, err)
		}
		var req Requested
		if ev.Plan != PlanName || !ev.Failed() || ev.DecodeInput(&req) != nil || !st.waitingFor(req.RequestID) {
			return unchanged, nil
		}
		reason := ev.Reason()
		st.PC, st.PendingRequest, st.PendingTargets, st.Error = reducer.Variant{Tag: Failed}, nil, []string{}, &reason
	default:
		return reducer.Output{}, fmt.Errorf("%w: unknown variant tag %q (want Start|Complete|PlanEnded)", ErrBadEvent, tag)
	}
	v, err := reducer.FromGo(st)
	if err != nil {
		return reducer.Output{}, fmt.Errorf("aggregator: encode state: %w", err)
	}
	out.State = v
	return out, nil
}

func (st *State) waitingFor(id uint64) bool {
	return st.PC.Tag == Running && st.PendingRequest != nil && *st.PendingRequest == id
}

// Register adds the aggregator's reducer to r under ModuleName. It panics
// if the name is already registered: it is for program setup.
func Register(r *reducer.Registry) {
	r.MustRegister(ModuleName, Reducer{})
}
