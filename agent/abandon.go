package agent

import (
	"fmt"

	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// abandonedCalls is an agent world's world.Options.Abandoned: an intent
// of a plan started for a turn of a chat (the plan's input names the
// chat_id and the request_id, as the chat module's ChatRequest and
// ToolCallRequested do) is abandoned once that turn is no longer the
// chat's turn. The user stopped it (Ctrl-C, a cancelled context), or it
// ended otherwise, and the chat would ignore its result: a model call is
// not paid for to the end, and a tool call of a stopped turn does not run
// on after the stop, nor again when the world reopens.
//
// An intent of the chat or tool plan of another chat module is abandoned
// too: the world's manifest moved to this module while it was in flight
// (from Chat@2 to Chat@3), and the event its plan would raise goes to no
// reducer (the chat goes on under this module: see Chat.importOlder).
func abandonedCalls(module string) func(*world.Machine, *effects.Intent) (string, bool) {
	chatPlan, toolPlan := demiurge.Plans(module)
	return func(m *world.Machine, in *effects.Intent) (string, bool) {
		if in.Origin.Kind != "plan" {
			return "", false
		}
		if p := in.Origin.Name; p != chatPlan && p != toolPlan && isChatPlan(p) {
			return fmt.Sprintf("plan %s belongs to a chat module this world no longer runs (it runs %s), and nobody reads this result", p, module), true
		}
		input, ok := m.PlanInput(in.Origin.PlanID)
		if !ok {
			return "", false
		}
		rec, ok := input.(*schema.Map)
		if !ok {
			return "", false
		}
		chat, ok1 := fieldOf[string](rec, "chat_id")
		request, ok2 := fieldOf[uint64](rec, "request_id")
		if !ok1 || !ok2 {
			return "", false
		}
		st, _, ok := m.State(module, chat)
		if !ok {
			return "", false
		}
		state, ok := st.(*schema.Map)
		if !ok {
			return "", false
		}
		if turn, ok := state.Get("turn"); ok && turn != nil {
			t, ok := turn.(*schema.Map)
			if !ok {
				return "", false
			}
			if id, ok := fieldOf[uint64](t, "request_id"); !ok || id == request {
				return "", false // the turn still runs
			}
		}
		return fmt.Sprintf("turn %d of chat %s has ended (stopped) and nobody reads this result", request, chat), true
	}
}

// isChatPlan reports whether plan is the chat or the tool plan of a
// version of the chat module.
func isChatPlan(plan string) bool {
	for _, mod := range demiurge.Modules {
		if c, t := demiurge.Plans(mod); plan == c || plan == t {
			return true
		}
	}
	return false
}

// fieldOf returns field k of rec if it holds a T.
func fieldOf[T any](rec *schema.Map, k string) (T, bool) {
	v, ok := rec.Get(k)
	if !ok {
		var zero T
		return zero, false
	}
	t, ok := v.(T)
	return t, ok
}
