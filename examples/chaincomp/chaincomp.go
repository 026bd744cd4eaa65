// Package chaincomp is the reducer of the chain-with-compensation example
// world, demiurge's port of AgentOS's 05-chain-comp: a saga that charges a
// customer, reserves stock and sends a notification, one plan per step,
// and refunds the charge when the reservation fails.
//
// The reducer chaincomp/Saga@1 drives the saga; each step is a plan
// triggered by the event the reducer raises, that performs one HTTP POST
// and reports the outcome back as an arm of chaincomp/Event@1:
//
//	Start ─▶ ChargeRequested ─▶ charge_plan ─▶ ChargeCompleted
//	      ─▶ ReserveRequested ─▶ reserve_plan ─▶ ReserveCompleted ─▶ NotifyRequested ─▶ notify_plan ─▶ NotifyCompleted: Completed
//	                                          └▶ ReserveFailed ─▶ RefundRequested ─▶ refund_plan ─▶ RefundCompleted: Refunded
//
// The reserve plan branches on the HTTP status: an edge guarded by
// status < 400 leads to a two-step branch that raises ReserveCompleted, one
// guarded by status ≥ 400 to a two-step branch that raises ReserveFailed.
// Only the first edge of each branch carries a guard: in demiurge a false
// guard skips the whole branch behind it.
//
// A charge answered with an error status fails the saga (nothing was
// charged, nothing to compensate). A plan that fails (a refused or failed
// request) reaches the reducer as sys/PlanEnded@1 and fails the saga with
// the plan's reason.
//
// Register adds the reducer to a binary's registry. The reducer is
// deterministic: besides its state and event it reads only blobs from the
// CAS, by ref.
package chaincomp

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
	ModuleName  = "chaincomp/Saga@1"
	EventSchema = "chaincomp/Event@1"

	ChargePlan  = "chaincomp/charge_plan@1"
	ReservePlan = "chaincomp/reserve_plan@1"
	NotifyPlan  = "chaincomp/notify_plan@1"
	RefundPlan  = "chaincomp/refund_plan@1"
)

// The arms of chaincomp/Phase@1, the state's phase.
const (
	Idle      = "Idle"
	Charging  = "Charging"
	Reserving = "Reserving"
	Notifying = "Notifying"
	Refunding = "Refunding"
	Completed = "Completed"
	Refunded  = "Refunded"
	Failed    = "Failed"
)

// State is the Go form of chaincomp/State@1.
type State struct {
	Phase         reducer.Variant `cbor:"phase"`
	NextRequestID uint64          `cbor:"next_request_id"`
	// Saga is the current (or last) saga.
	Saga *Saga `cbor:"saga"`
}

// Saga is the Go form of chaincomp/Saga@1.
type Saga struct {
	RequestID     uint64  `cbor:"request_id"`
	OrderID       string  `cbor:"order_id"`
	CustomerID    string  `cbor:"customer_id"`
	AmountCents   uint64  `cbor:"amount_cents"`
	SKU           string  `cbor:"sku"`
	ChargeStatus  *int64  `cbor:"charge_status"`
	ReserveStatus *int64  `cbor:"reserve_status"`
	NotifyStatus  *int64  `cbor:"notify_status"`
	RefundStatus  *int64  `cbor:"refund_status"`
	LastError     *string `cbor:"last_error"`
	ChargeTarget  Target  `cbor:"charge_target"`
	ReserveTarget Target  `cbor:"reserve_target"`
	NotifyTarget  Target  `cbor:"notify_target"`
	RefundTarget  Target  `cbor:"refund_target"`
}

// Target is the Go form of chaincomp/Target@1: where a step's request goes.
type Target struct {
	Name   string `cbor:"name"`
	Method string `cbor:"method"`
	URL    string `cbor:"url"`
}

// Start is the Go form of chaincomp/Start@1.
type Start struct {
	OrderID     string `cbor:"order_id"`
	CustomerID  string `cbor:"customer_id"`
	AmountCents uint64 `cbor:"amount_cents"`
	SKU         string `cbor:"sku"`
	Charge      Target `cbor:"charge"`
	Reserve     Target `cbor:"reserve"`
	Notify      Target `cbor:"notify"`
	Refund      Target `cbor:"refund"`
}

// The events that start the step plans.
type (
	// ChargeRequested is chaincomp/ChargeRequested@1; it starts ChargePlan.
	ChargeRequested struct {
		RequestID   uint64 `cbor:"request_id"`
		OrderID     string `cbor:"order_id"`
		CustomerID  string `cbor:"customer_id"`
		AmountCents uint64 `cbor:"amount_cents"`
		Target      Target `cbor:"target"`
	}
	// ReserveRequested is chaincomp/ReserveRequested@1; it starts
	// ReservePlan.
	ReserveRequested struct {
		RequestID uint64 `cbor:"request_id"`
		OrderID   string `cbor:"order_id"`
		SKU       string `cbor:"sku"`
		Target    Target `cbor:"target"`
	}
	// NotifyRequested is chaincomp/NotifyRequested@1; it starts NotifyPlan.
	NotifyRequested struct {
		RequestID uint64 `cbor:"request_id"`
		OrderID   string `cbor:"order_id"`
		Message   string `cbor:"message"`
		Target    Target `cbor:"target"`
	}
	// RefundRequested is chaincomp/RefundRequested@1; it starts RefundPlan.
	RefundRequested struct {
		RequestID   uint64 `cbor:"request_id"`
		OrderID     string `cbor:"order_id"`
		CustomerID  string `cbor:"customer_id"`
		AmountCents uint64 `cbor:"amount_cents"`
		Target      Target `cbor:"target"`
	}
)

// Outcome is the Go form of chaincomp/Outcome@1: what a step plan reports.
type Outcome struct {
	RequestID uint64  `cbor:"request_id"`
	Status    int64   `cbor:"status"`
	BodyRef   *string `cbor:"body_ref"`
	Note      *string `cbor:"note"`
}

// stepRequest is the part of every step plan's input the reducer reads
// back from sys/PlanEnded@1.
type stepRequest struct {
	RequestID uint64 `cbor:"request_id"`
}

// ErrBadEvent is returned (wrapped) for an event that is not a
// chaincomp/Event@1 value.
var ErrBadEvent = errors.New("chaincomp: bad event")

// Reducer is the saga's reducer. The zero value is ready to use.
//
// Each outcome is taken only in the phase that waits for it and only for
// the saga in flight (its request_id); anything else changes nothing. A
// Start while a saga is in flight changes nothing either.
type Reducer struct{}

var _ reducer.Reducer = Reducer{}

// Step implements reducer.Reducer. A nil state is Idle with no saga yet.
func (Reducer) Step(c *reducer.Context, state, event schema.Value) (reducer.Output, error) {
	st := State{Phase: reducer.Variant{Tag: Idle}}
	if err := reducer.StateToGo(state, &st); err != nil {
		return reducer.Output{}, fmt.Errorf("chaincomp: %w", err)
	}
	tag, payload, ok := arm.Split(event)
	if !ok {
		return reducer.Output{}, fmt.Errorf("%w: want a variant of chaincomp/Event@1, got %s", ErrBadEvent, schema.String(event))
	}
	unchanged := reducer.Output{State: state}
	var raise []reducer.Event
	emit := func(schemaName string, v any) error {
		val, err := reducer.FromGo(v)
		if err != nil {
			return fmt.Errorf("chaincomp: encode %s: %w", schemaName, err)
		}
		raise = append(raise, reducer.Event{Schema: schemaName, Value: val})
		return nil
	}
	switch tag {
	case "Start":
		var ev Start
		if err := reducer.ToGo(payload, &ev); err != nil {
			return reducer.Output{}, fmt.Errorf("%w: Start wants a chaincomp/Start@1, got %s: %v", ErrBadEvent, schema.String(payload), err)
		}
		switch st.Phase.Tag {
		case Idle, Completed, Refunded, Failed:
		default:
			return unchanged, nil
		}
		id := st.NextRequestID
		st.NextRequestID++
		st.Phase = reducer.Variant{Tag: Charging}
		st.Saga = &Saga{
			RequestID: id, OrderID: ev.OrderID, CustomerID: ev.CustomerID, AmountCents: ev.AmountCents, SKU: ev.SKU,
			ChargeTarget: ev.Charge, ReserveTarget: ev.Reserve, NotifyTarget: ev.Notify, RefundTarget: ev.Refund,
		}
		s := st.Saga
		if err := emit("chaincomp/ChargeRequested@1", ChargeRequested{RequestID: id, OrderID: s.OrderID, CustomerID: s.CustomerID, AmountCents: s.AmountCents, Target: s.ChargeTarget}); err != nil {
			return reducer.Output{}, err
		}
	case "ChargeCompleted", "ReserveCompleted", "ReserveFailed", "NotifyCompleted", "RefundCompleted":
		var ev Outcome
		if err := reducer.ToGo(payload, &ev); err != nil {
			return reducer.Output{}, fmt.Errorf("%w: %s wants a chaincomp/Outcome@1, got %s: %v", ErrBadEvent, tag, schema.String(payload), err)
		}
		waits := map[string]string{
			"ChargeCompleted": Charging, "ReserveCompleted": Reserving, "ReserveFailed": Reserving,
			"NotifyCompleted": Notifying, "RefundCompleted": Refunding,
		}[tag]
		if st.Phase.Tag != waits || st.Saga == nil || st.Saga.RequestID != ev.RequestID {
			return unchanged, nil
		}
		s := st.Saga
		status := ev.Status
		switch tag {
		case "ChargeCompleted":
			s.ChargeStatus = &status
			if status >= 400 {
				st.Phase = reducer.Variant{Tag: Failed}
				s.LastError = describe(c, fmt.Sprintf("the charge was refused with status %d", status), ev.BodyRef)
				break
			}
			st.Phase = reducer.Variant{Tag: Reserving}
			if err := emit("chaincomp/ReserveRequested@1", ReserveRequested{RequestID: s.RequestID, OrderID: s.OrderID, SKU: s.SKU, Target: s.ReserveTarget}); err != nil {
				return reducer.Output{}, err
			}
		case "ReserveCompleted":
			s.ReserveStatus, s.LastError = &status, nil
			st.Phase = reducer.Variant{Tag: Notifying}
			msg := fmt.Sprintf("order %s: charged %d cents, stock reserved", s.OrderID, s.AmountCents)
			if ev.Note != nil {
				msg = fmt.Sprintf("order %s: charged %d cents, %s", s.OrderID, s.AmountCents, *ev.Note)
			}
			if err := emit("chaincomp/NotifyRequested@1", NotifyRequested{RequestID: s.RequestID, OrderID: s.OrderID, Message: msg, Target: s.NotifyTarget}); err != nil {
				return reducer.Output{}, err
			}
		case "ReserveFailed":
			s.ReserveStatus = &status
			what := fmt.Sprintf("the reservation failed with status %d", status)
			if ev.Note != nil {
				what = fmt.Sprintf("%s (status %d)", *ev.Note, status)
			}
			s.LastError = describe(c, what, ev.BodyRef)
			st.Phase = reducer.Variant{Tag: Refunding}
			if err := emit("chaincomp/RefundRequested@1", RefundRequested{RequestID: s.RequestID, OrderID: s.OrderID, CustomerID: s.CustomerID, AmountCents: s.AmountCents, Target: s.RefundTarget}); err != nil {
				return reducer.Output{}, err
			}
		case "NotifyCompleted":
			s.NotifyStatus = &status
			st.Phase = reducer.Variant{Tag: Completed}
		case "RefundCompleted":
			s.RefundStatus = &status
			st.Phase = reducer.Variant{Tag: Refunded}
		}
	case "PlanEnded":
		ev, err := planend.Decode(payload)
		if err != nil {
			return reducer.Output{}, fmt.Errorf("%w: %v", ErrBadEvent, err)
		}
		waits := map[string]string{ChargePlan: Charging, ReservePlan: Reserving, NotifyPlan: Notifying, RefundPlan: Refunding}[ev.Plan]
		var req stepRequest
		if !ev.Failed() || waits == "" || st.Phase.Tag != waits || st.Saga == nil || ev.DecodeInput(&req) != nil || req.RequestID != st.Saga.RequestID {
			return unchanged, nil
		}
		reason := ev.Reason()
		st.Phase, st.Saga.LastError = reducer.Variant{Tag: Failed}, &reason
	default:
		return reducer.Output{}, fmt.Errorf("%w: unknown variant tag %q", ErrBadEvent, tag)
	}
	v, err := reducer.FromGo(st)
	if err != nil {
		return reducer.Output{}, fmt.Errorf("chaincomp: encode state: %w", err)
	}
	return reducer.Output{State: v, Events: raise}, nil
}

// describe returns what went wrong, followed by a preview of the response
// body if there is one.
func describe(c *reducer.Context, what string, bodyRef *string) *string {
	if bodyRef != nil {
		if text, err := preview.Of(c, *bodyRef); err == nil {
			what += ": " + text
		} else {
			what += " (" + err.Error() + ")"
		}
	}
	return &what
}

// Register adds the saga's reducer to r under ModuleName. It panics if the
// name is already registered: it is for program setup.
func Register(r *reducer.Registry) {
	r.MustRegister(ModuleName, Reducer{})
}
