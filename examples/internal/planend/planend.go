// Package planend decodes sys/PlanEnded@1, the event a world raises when a
// plan ends, for reducers that route it to notice plans that failed.
package planend

import (
	"fmt"

	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
)

// Event is the Go form of sys/PlanEnded@1.
type Event struct {
	Plan   string `cbor:"plan"`
	PlanID uint64 `cbor:"plan_id"`
	// Status is "ok" or "error".
	Status string `cbor:"status"`
	// Error is set when Status is "error".
	Error *Error `cbor:"error"`
	// Input is the canonical CBOR of the plan's input.
	Input []byte `cbor:"input"`
}

// Error is the Go form of sys/PlanError@1.
type Error struct {
	Step    string `cbor:"step"`
	Code    string `cbor:"code"`
	Message string `cbor:"message"`
}

// Decode decodes a sys/PlanEnded@1 value.
func Decode(v schema.Value) (Event, error) {
	var e Event
	if err := reducer.ToGo(v, &e); err != nil {
		return Event{}, fmt.Errorf("planend: want a sys/PlanEnded@1, got %s: %w", schema.String(v), err)
	}
	return e, nil
}

// Failed reports whether the plan ended with an error.
func (e Event) Failed() bool { return e.Status != "ok" }

// DecodeInput decodes the plan's input into out, a pointer to a struct
// with cbor tags.
func (e Event) DecodeInput(out any) error {
	v, err := schema.Decode(e.Input)
	if err != nil {
		return fmt.Errorf("planend: input of %s: %w", e.Plan, err)
	}
	if err := reducer.ToGo(v, out); err != nil {
		return fmt.Errorf("planend: input of %s: %w", e.Plan, err)
	}
	return nil
}

// Reason says why the plan failed, naming the plan and the step:
// "fetch/fetch_plan@1 step get: effect_denied: …". It is "" for a plan
// that ended well.
func (e Event) Reason() string {
	if !e.Failed() {
		return ""
	}
	if e.Error == nil {
		return fmt.Sprintf("%s ended with status %q", e.Plan, e.Status)
	}
	return fmt.Sprintf("%s step %s: %s: %s", e.Plan, e.Error.Step, e.Error.Code, e.Error.Message)
}
