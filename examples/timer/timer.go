// Package timer is the reducer of the timer example world, demiurge's port
// of AgentOS's 01-hello-timer: a Start{deliver_at_ns, key} event sets a
// timer with the timer.set micro-effect, and when the timer fires its
// receipt comes back to the reducer as a sys/TimerFired@1 event and the
// timer is Done.
//
// The world's AIR (manifest.air.json and the *.air.json files beside it)
// declares the schemas timer/State@1 and timer/Event@1, the module
// timer/Timer@1 that names this reducer, the grant timer_grant of the
// built-in cap sys/timer@1 that the module's default cap slot binds to
// (it is the only timer grant), and a policy that allows timer.set from
// this reducer and nothing else. Register adds the reducer to a binary's
// registry.
//
// The reducer is deterministic: it reads nothing but its state and event.
// deliver_at_ns is a time on the world's clock (nanoseconds since the Unix
// epoch); the timer adapter waits until then.
package timer

import (
	"errors"
	"fmt"

	"github.com/demiurge-dev/demiurge/examples/internal/arm"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
)

// ModuleName is the name of the defmodule the reducer is registered under.
const ModuleName = "timer/Timer@1"

// EventSchema is the reducer's event, the schema to send Start in.
const EventSchema = "timer/Event@1"

// The arms of timer/Phase@1, the state's pc.
const (
	Idle    = "Idle"
	Waiting = "Waiting"
	Done    = "Done"
	Failed  = "Failed"
)

// State is the Go form of timer/State@1.
type State struct {
	PC reducer.Variant `cbor:"pc"`
	// Key and DeadlineNS are those of the timer set last.
	Key        *string `cbor:"key"`
	DeadlineNS *uint64 `cbor:"deadline_ns"`
	// FiredKey and FiredAtNS come from the timer's receipt.
	FiredKey  *string `cbor:"fired_key"`
	FiredAtNS *uint64 `cbor:"fired_at_ns"`
	// Error says why the timer failed.
	Error *string `cbor:"error"`
}

// Start is the Go form of timer/Start@1.
type Start struct {
	DeliverAtNS uint64  `cbor:"deliver_at_ns"`
	Key         *string `cbor:"key"`
}

// timerParams is sys/TimerSetParams@1 and, with other names,
// sys/TimerSetReceipt@1.
type timerParams struct {
	DeliverAtNS uint64  `cbor:"deliver_at_ns"`
	Key         *string `cbor:"key"`
}

type timerReceipt struct {
	DeliveredAtNS uint64  `cbor:"delivered_at_ns"`
	Key           *string `cbor:"key"`
}

// timerFired is the part of sys/TimerFired@1 the reducer reads.
type timerFired struct {
	Status    string       `cbor:"status"`
	Requested timerParams  `cbor:"requested"`
	Receipt   timerReceipt `cbor:"receipt"`
}

// ErrBadEvent is returned (wrapped) for an event that is not a
// timer/Event@1 value.
var ErrBadEvent = errors.New("timer: bad event")

// Reducer is the timer's reducer. The zero value is ready to use.
//
//   - Start sets a timer (timer.set{deliver_at_ns, key}) and waits for it.
//     A Start while a timer is pending changes nothing: the pending timer
//     is still the one that counts.
//   - Fired, the receipt of the pending timer, ends the wait: Done with
//     the receipt's key and time if the timer fired, Failed with the
//     receipt's status otherwise. A Fired that does not belong to the
//     pending timer (another deadline or key) changes nothing.
type Reducer struct{}

var _ reducer.Reducer = Reducer{}

// Step implements reducer.Reducer. A nil state is a fresh timer: Idle.
func (Reducer) Step(_ *reducer.Context, state, event schema.Value) (reducer.Output, error) {
	st := State{PC: reducer.Variant{Tag: Idle}}
	if err := reducer.StateToGo(state, &st); err != nil {
		return reducer.Output{}, fmt.Errorf("timer: %w", err)
	}
	tag, payload, ok := arm.Split(event)
	if !ok {
		return reducer.Output{}, fmt.Errorf("%w: want a variant Start|Fired, got %s", ErrBadEvent, schema.String(event))
	}
	var out reducer.Output
	switch tag {
	case "Start":
		var ev Start
		if err := reducer.ToGo(payload, &ev); err != nil {
			return reducer.Output{}, fmt.Errorf("%w: Start wants {deliver_at_ns: nat, key: option text}, got %s: %v", ErrBadEvent, schema.String(payload), err)
		}
		if st.PC.Tag == Waiting {
			return reducer.Output{State: state}, nil
		}
		st = State{PC: reducer.Variant{Tag: Waiting}, Key: ev.Key, DeadlineNS: &ev.DeliverAtNS}
		params, err := reducer.FromGo(timerParams(ev))
		if err != nil {
			return reducer.Output{}, fmt.Errorf("timer: encode timer.set params: %w", err)
		}
		out.Effects = []reducer.Effect{{Kind: "timer.set", Params: params}}
	case "Fired":
		var ev timerFired
		if err := reducer.ToGo(payload, &ev); err != nil {
			return reducer.Output{}, fmt.Errorf("%w: Fired wants a sys/TimerFired@1, got %s: %v", ErrBadEvent, schema.String(payload), err)
		}
		if st.PC.Tag != Waiting || st.DeadlineNS == nil || ev.Requested.DeliverAtNS != *st.DeadlineNS || !sameText(ev.Requested.Key, st.Key) {
			return reducer.Output{State: state}, nil
		}
		if ev.Status != "ok" {
			msg := fmt.Sprintf("timer.set ended with status %q", ev.Status)
			st.PC, st.Error = reducer.Variant{Tag: Failed}, &msg
			break
		}
		at := ev.Receipt.DeliveredAtNS
		st.PC, st.FiredKey, st.FiredAtNS = reducer.Variant{Tag: Done}, ev.Receipt.Key, &at
	default:
		return reducer.Output{}, fmt.Errorf("%w: unknown variant tag %q (want Start|Fired)", ErrBadEvent, tag)
	}
	v, err := reducer.FromGo(st)
	if err != nil {
		return reducer.Output{}, fmt.Errorf("timer: encode state: %w", err)
	}
	out.State = v
	return out, nil
}

func sameText(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// Register adds the timer's reducer to r under ModuleName. It panics if
// the name is already registered: it is for program setup.
func Register(r *reducer.Registry) {
	r.MustRegister(ModuleName, Reducer{})
}
