// Package plans interprets AIR defplans: DAGs of steps (assign,
// emit_effect, await_receipt, await_event, raise_event, end) joined by
// guarded edges, and evaluates AIR expressions.
//
// An Instance is one run of a plan. It is a plain state machine: the world
// starts it, hands it receipts and events, and runs it; effects and events
// go out through a Host. Everything it does depends only on its program,
// its input and what it is handed, so replay re-runs it to the same bytes.
//
// # Semantics
//
// A step is ready when each of its predecessors is done or skipped. It
// runs if at least one incoming edge comes from a done step and its guard
// (when) holds; otherwise it is skipped, and the steps behind it see only
// edges from a skipped step, so a false guard skips the whole branch behind
// it (dead-path elimination; AgentOS skipped only the one step). Ready
// steps run in declaration order until none is ready. An end step ends the
// instance with its result; an instance whose every step is done or skipped
// ends too.
//
// Any failure ends the instance with a *PlanError naming the plan, the step
// and the cause: an expression error (a missing field is an error, not
// null), a value that does not fit its schema, an effect refused by a cap,
// policy or secret check, an awaited effect that failed, an invariant that
// does not hold after a step. An instance never hangs on an error.
//
// # Expressions
//
// Eval implements every op of AIR v1. int and nat are one integer type, so
// 200 as int equals 200 as nat; arithmetic is checked (overflow and
// division by zero are errors); the hash op is portable: the BLAKE3 of the
// value's canonical CBOR. References reach into values with dotted paths:
// @plan.input.a.b, @var:x.y, @step:id.field, @event.field.
//
// # Caveats
//
// await_event sees only events that arrive after the step starts waiting,
// and each waiting step takes one event.
package plans
