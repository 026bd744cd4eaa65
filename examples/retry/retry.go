// Package retry is the reducer of the retry example world, demiurge's port
// of AgentOS's 08-retry-backoff: a reducer retries a unit of work with
// exponential backoff, waiting between attempts with timer.set, until the
// work succeeds, fails for good, or runs out of attempts.
//
//  1. Start{req_id, url, max_attempts, base_delay_ms, now_ns} reaches the
//     reducer retry/Retry@1, which makes attempt 1: it raises
//     retry/WorkRequested@1{req_id, url, attempt}.
//  2. The manifest triggers retry/work_plan@1, which GETs the URL (grant
//     http_work of the built-in cap sys/http.out@1) and branches on the
//     status: below 400 it raises Ok; otherwise Err, transient for a 5xx.
//  3. On a transient Err (or a failed plan: the request could not be made)
//     with attempts left, the reducer sets a timer for anchor_ns +
//     base_delay_ms·2^(attempt-1) ms — anchor_ns is Start's now_ns, or the
//     world's logical time at Start — and backs off. When the timer's
//     sys/TimerFired@1 comes back, it makes the next attempt.
//  4. Ok ends the work Done; a permanent Err, or a transient one on the
//     last attempt, ends it Failed. attempt counts the attempts made.
//
// Register adds the reducer to a binary's registry. The reducer is
// deterministic: the only time it uses is the ingress stamp's logical time.
package retry

import (
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/demiurge-dev/demiurge/examples/internal/arm"
	"github.com/demiurge-dev/demiurge/examples/internal/planend"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
)

// Names of the world's defs.
const (
	ModuleName          = "retry/Retry@1"
	EventSchema         = "retry/Event@1"
	WorkRequestedSchema = "retry/WorkRequested@1"
	PlanName            = "retry/work_plan@1"
)

// The arms of retry/Phase@1, the state's pc.
const (
	Idle       = "Idle"
	Working    = "Working"    // an attempt is in flight
	BackingOff = "BackingOff" // waiting for the timer before the next attempt
	Done       = "Done"
	Failed     = "Failed"
)

// State is the Go form of retry/State@1.
type State struct {
	PC          reducer.Variant `cbor:"pc"`
	ReqID       string          `cbor:"req_id"`
	URL         string          `cbor:"url"`
	Attempt     uint64          `cbor:"attempt"` // attempts made so far
	MaxAttempts uint64          `cbor:"max_attempts"`
	BaseDelayMS uint64          `cbor:"base_delay_ms"`
	AnchorNS    uint64          `cbor:"anchor_ns"`
	// Timers are the deliver_at_ns of the backoff timers set, in order.
	Timers     []uint64 `cbor:"timers"`
	LastStatus *int64   `cbor:"last_status"`
	LastError  *string  `cbor:"last_error"`
}

// Start is the Go form of retry/Start@1.
type Start struct {
	ReqID       string  `cbor:"req_id"`
	URL         string  `cbor:"url"`
	MaxAttempts uint64  `cbor:"max_attempts"`
	BaseDelayMS uint64  `cbor:"base_delay_ms"`
	NowNS       *uint64 `cbor:"now_ns"`
}

// WorkRequested is the Go form of retry/WorkRequested@1.
type WorkRequested struct {
	ReqID   string `cbor:"req_id"`
	URL     string `cbor:"url"`
	Attempt uint64 `cbor:"attempt"`
}

// WorkOk is the Go form of retry/WorkOk@1.
type WorkOk struct {
	ReqID   string `cbor:"req_id"`
	Attempt uint64 `cbor:"attempt"`
	Status  int64  `cbor:"status"`
}

// WorkErr is the Go form of retry/WorkErr@1.
type WorkErr struct {
	ReqID     string `cbor:"req_id"`
	Attempt   uint64 `cbor:"attempt"`
	Transient bool   `cbor:"transient"`
	Status    *int64 `cbor:"status"`
	Message   string `cbor:"message"`
}

type timerParams struct {
	DeliverAtNS uint64  `cbor:"deliver_at_ns"`
	Key         *string `cbor:"key"`
}

// timerFired is the part of sys/TimerFired@1 the reducer reads.
type timerFired struct {
	Status    string      `cbor:"status"`
	Requested timerParams `cbor:"requested"`
}

// ErrBadEvent is returned (wrapped) for an event that is not a
// retry/Event@1 value.
var ErrBadEvent = errors.New("retry: bad event")

// Reducer is the retry example's reducer. The zero value is ready to use.
//
// A Start while work is under way changes nothing. Ok, Err and PlanEnded
// count only for the attempt in flight (same req_id and attempt, Working);
// Timer only for the timer the reducer is backing off on (BackingOff, same
// key and deadline). Anything else changes nothing. A timer that fails
// (status other than "ok") fails the work.
type Reducer struct{}

var _ reducer.Reducer = Reducer{}

// Step implements reducer.Reducer. A nil state is Idle.
func (Reducer) Step(c *reducer.Context, state, event schema.Value) (reducer.Output, error) {
	st := State{PC: reducer.Variant{Tag: Idle}, Timers: []uint64{}}
	if err := reducer.StateToGo(state, &st); err != nil {
		return reducer.Output{}, fmt.Errorf("retry: %w", err)
	}
	tag, payload, ok := arm.Split(event)
	if !ok {
		return reducer.Output{}, fmt.Errorf("%w: want a variant of retry/Event@1, got %s", ErrBadEvent, schema.String(event))
	}
	unchanged := reducer.Output{State: state}
	var out reducer.Output
	switch tag {
	case "Start":
		var ev Start
		if err := reducer.ToGo(payload, &ev); err != nil {
			return reducer.Output{}, fmt.Errorf("%w: Start wants a retry/Start@1, got %s: %v", ErrBadEvent, schema.String(payload), err)
		}
		if st.PC.Tag == Working || st.PC.Tag == BackingOff {
			return unchanged, nil
		}
		anchor := c.Stamp.LogicalNowNS
		if ev.NowNS != nil {
			anchor = *ev.NowNS
		}
		st = State{
			PC: reducer.Variant{Tag: Working}, ReqID: ev.ReqID, URL: ev.URL, Attempt: 1,
			MaxAttempts: max(ev.MaxAttempts, 1), BaseDelayMS: max(ev.BaseDelayMS, 1), AnchorNS: anchor, Timers: []uint64{},
		}
		if err := st.request(&out); err != nil {
			return reducer.Output{}, err
		}
	case "Ok":
		var ev WorkOk
		if err := reducer.ToGo(payload, &ev); err != nil {
			return reducer.Output{}, fmt.Errorf("%w: Ok wants a retry/WorkOk@1, got %s: %v", ErrBadEvent, schema.String(payload), err)
		}
		if !st.attempting(ev.ReqID, ev.Attempt) {
			return unchanged, nil
		}
		st.PC, st.LastStatus, st.LastError = reducer.Variant{Tag: Done}, &ev.Status, nil
	case "Err":
		var ev WorkErr
		if err := reducer.ToGo(payload, &ev); err != nil {
			return reducer.Output{}, fmt.Errorf("%w: Err wants a retry/WorkErr@1, got %s: %v", ErrBadEvent, schema.String(payload), err)
		}
		if !st.attempting(ev.ReqID, ev.Attempt) {
			return unchanged, nil
		}
		st.LastStatus = ev.Status
		if err := st.failed(&out, ev.Message, ev.Transient); err != nil {
			return reducer.Output{}, err
		}
	case "PlanEnded":
		ev, err := planend.Decode(payload)
		if err != nil {
			return reducer.Output{}, fmt.Errorf("%w: %v", ErrBadEvent, err)
		}
		var req WorkRequested
		if ev.Plan != PlanName || !ev.Failed() || ev.DecodeInput(&req) != nil || !st.attempting(req.ReqID, req.Attempt) {
			return unchanged, nil
		}
		// The request could not be made (or its plan failed otherwise):
		// worth another try.
		st.LastStatus = nil
		if err := st.failed(&out, ev.Reason(), true); err != nil {
			return reducer.Output{}, err
		}
	case "Timer":
		var ev timerFired
		if err := reducer.ToGo(payload, &ev); err != nil {
			return reducer.Output{}, fmt.Errorf("%w: Timer wants a sys/TimerFired@1, got %s: %v", ErrBadEvent, schema.String(payload), err)
		}
		if st.PC.Tag != BackingOff || len(st.Timers) == 0 || ev.Requested.DeliverAtNS != st.Timers[len(st.Timers)-1] ||
			ev.Requested.Key == nil || *ev.Requested.Key != st.ReqID {
			return unchanged, nil
		}
		if ev.Status != "ok" {
			msg := fmt.Sprintf("the backoff timer ended with status %q", ev.Status)
			st.PC, st.LastError = reducer.Variant{Tag: Failed}, &msg
			break
		}
		st.PC = reducer.Variant{Tag: Working}
		st.Attempt++
		if err := st.request(&out); err != nil {
			return reducer.Output{}, err
		}
	default:
		return reducer.Output{}, fmt.Errorf("%w: unknown variant tag %q (want Start|Ok|Err|Timer|PlanEnded)", ErrBadEvent, tag)
	}
	v, err := reducer.FromGo(st)
	if err != nil {
		return reducer.Output{}, fmt.Errorf("retry: encode state: %w", err)
	}
	out.State = v
	return out, nil
}

func (st *State) attempting(reqID string, attempt uint64) bool {
	return st.PC.Tag == Working && st.ReqID == reqID && st.Attempt == attempt
}

// request raises the WorkRequested of the current attempt.
func (st *State) request(out *reducer.Output) error {
	v, err := reducer.FromGo(WorkRequested{ReqID: st.ReqID, URL: st.URL, Attempt: st.Attempt})
	if err != nil {
		return fmt.Errorf("retry: encode work request: %w", err)
	}
	out.Events = append(out.Events, reducer.Event{Schema: WorkRequestedSchema, Value: v})
	return nil
}

// failed handles a failed attempt: back off and retry if it is worth it
// and attempts are left, else fail.
func (st *State) failed(out *reducer.Output, why string, transient bool) error {
	st.LastError = &why
	if !transient || st.Attempt >= st.MaxAttempts {
		st.PC = reducer.Variant{Tag: Failed}
		return nil
	}
	at := st.AnchorNS + min(backoffNS(st.BaseDelayMS, st.Attempt), math.MaxUint64-st.AnchorNS)
	key := st.ReqID
	params, err := reducer.FromGo(timerParams{DeliverAtNS: at, Key: &key})
	if err != nil {
		return fmt.Errorf("retry: encode timer.set params: %w", err)
	}
	st.PC = reducer.Variant{Tag: BackingOff}
	st.Timers = append(st.Timers, at)
	out.Effects = append(out.Effects, reducer.Effect{Kind: "timer.set", Params: params})
	return nil
}

// backoffNS is base·2^(attempt-1) milliseconds in nanoseconds, saturating
// at the largest uint64.
func backoffNS(baseMS, attempt uint64) uint64 {
	shift := min(attempt-1, 63)
	factor := uint64(1) << shift
	hi, ms := bits.Mul64(baseMS, factor)
	if hi != 0 {
		return math.MaxUint64
	}
	hi, ns := bits.Mul64(ms, 1_000_000)
	if hi != 0 {
		return math.MaxUint64
	}
	return ns
}

// Register adds the retry example's reducer to r under ModuleName. It
// panics if the name is already registered: it is for program setup.
func Register(r *reducer.Registry) {
	r.MustRegister(ModuleName, Reducer{})
}
