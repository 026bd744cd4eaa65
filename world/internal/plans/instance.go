package plans

import (
	"errors"
	"fmt"
	"strings"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/schema"
)

// StepState is where a step of an instance is.
type StepState uint8

// Step states.
const (
	Pending StepState = iota // not run yet
	Waiting                  // an await step waiting for its receipt or event
	Done                     // ran
	Skipped                  // every incoming edge was inactive (dead path)
)

func (s StepState) String() string {
	return [...]string{"pending", "waiting", "done", "skipped"}[s]
}

// Status is the state of an instance as a whole.
type Status uint8

// Instance statuses.
const (
	Running Status = iota
	EndedOK
	EndedError
)

// Error codes of a failed plan.
const (
	CodeEval      = "eval_error"          // an expression failed (missing field, wrong type, ...)
	CodeInvariant = "invariant_violation" // an invariant was false after a step
	CodeDenied    = "effect_denied"       // a cap, policy or secret check refused an effect
	CodeEffect    = "effect_failed"       // an awaited effect returned an error or timed out
	CodeInvalid   = "invalid_value"       // a value did not fit its schema
)

// PlanError says why an instance failed: which plan and step, and the cause.
type PlanError struct {
	Plan, Step, Code, Msg string
}

func (e *PlanError) Error() string {
	s := "plan " + e.Plan
	if e.Step != "" {
		s += " step " + e.Step
	}
	return s + ": " + e.Msg
}

// Host is the world an instance runs in.
type Host interface {
	// Resolver types the values a plan builds.
	schema.Resolver
	// Emit checks and enqueues an effect (caps, policy, secrets) and
	// returns its intent hash. An error means the effect was refused; the
	// instance then fails with it.
	Emit(inst *Instance, step *schema.Step, params schema.Value, idempotencyKey []byte) (cas.Ref, error)
	// Raise validates and enqueues a domain event.
	Raise(inst *Instance, step *schema.Step, event string, value schema.Value) error
}

// Receipt is the outcome of an effect as a plan sees it: its payload,
// normalized against the effect's receipt schema, or why it failed.
type Receipt struct {
	Payload schema.Value
	Err     string // non-empty: the effect failed or timed out
}

// Instance is one run of a plan. Its fields hold everything needed to
// resume it, so a world can snapshot and restore it (Encode, Decode).
type Instance struct {
	ID          uint64
	Plan        string
	PlanRef     cas.Ref
	Input       schema.Value
	Correlation schema.Value // the correlate_by value, or nil
	Key         schema.Value // the cell key the trigger event carried, or nil
	Status      Status
	Result      schema.Value
	Err         *PlanError

	states   []StepState
	values   []schema.Value       // step values, set when Done
	vars     *schema.Map          // variable → value
	handles  *schema.Map          // handle name → intent hash text
	receipts map[cas.Ref]*Receipt // receipts not yet awaited
	seen     map[cas.Ref]bool     // intents this instance emitted
}

// Start returns a new instance of p for input.
func Start(p *Program, id uint64, input, correlation, key schema.Value) *Instance {
	n := len(p.Def.Steps)
	return &Instance{
		ID: id, Plan: p.Def.Name, PlanRef: p.Ref, Input: input, Correlation: correlation, Key: key,
		states: make([]StepState, n), values: make([]schema.Value, n),
		vars: schema.NewMap(), handles: schema.NewMap(),
		receipts: map[cas.Ref]*Receipt{}, seen: map[cas.Ref]bool{},
	}
}

// Var returns the value of a variable.
func (in *Instance) Var(name string) (schema.Value, bool) {
	if name == schema.CorrelationVar && in.Correlation != nil {
		if _, set := in.vars.Get(name); !set {
			return in.Correlation, true
		}
	}
	return in.vars.Get(name)
}

func (in *Instance) scope(p *Program) *Scope {
	return &Scope{
		Input: in.Input,
		Var:   in.Var,
		Step: func(id string) (schema.Value, bool) {
			i, ok := p.index[id]
			if !ok || in.states[i] != Done {
				return nil, false
			}
			return in.values[i], true
		},
	}
}

func (in *Instance) fail(step, code, format string, args ...any) {
	in.Status = EndedError
	in.Err = &PlanError{Plan: in.Plan, Step: step, Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Run advances the instance as far as it can: it runs every step that is
// ready, in declaration order, until every step is done or skipped, an end
// step runs, a step fails, or only waiting steps remain. It returns
// whether the instance made progress.
func (in *Instance) Run(p *Program, h Host) bool {
	progress := false
	for in.Status == Running {
		moved := false
		for i, s := range p.Def.Steps {
			if in.Status != Running {
				break
			}
			switch in.states[i] {
			case Pending:
			case Waiting:
				if s.Op == schema.OpAwaitReceipt && in.tryReceipt(p, i) {
					moved = true
				}
				continue
			default:
				continue
			}
			ready, active, err := in.readiness(p, i)
			if err != nil {
				in.fail(s.ID, CodeEval, "guard: %v", err)
				break
			}
			if !ready {
				continue
			}
			moved = true
			if !active {
				in.states[i] = Skipped
				continue
			}
			in.exec(p, h, i)
			if in.Status == Running && in.states[i] == Done {
				in.checkInvariants(p, s.ID)
			}
		}
		if !moved {
			break
		}
		progress = true
	}
	if in.Status == Running && in.finished() {
		in.Status = EndedOK
	}
	return progress
}

// finished reports whether no step is pending or waiting.
func (in *Instance) finished() bool {
	for _, s := range in.states {
		if s == Pending || s == Waiting {
			return false
		}
	}
	return true
}

// readiness: a step is ready when every predecessor is done or skipped;
// it is active when at least one incoming edge is from a done step and its
// guard holds. A step without predecessors is ready and active. An inactive
// ready step is skipped, and so are the paths behind it (dead-path
// elimination: their edges come from a skipped step).
func (in *Instance) readiness(p *Program, i int) (ready, active bool, err error) {
	preds := p.preds[i]
	if len(preds) == 0 {
		return true, true, nil
	}
	for _, e := range preds {
		if st := in.states[e.from]; st == Pending || st == Waiting {
			return false, false, nil
		}
	}
	for _, e := range preds {
		if in.states[e.from] != Done {
			continue
		}
		if e.when == nil {
			return true, true, nil
		}
		v, err := Eval(e.when, in.scope(p))
		if err != nil {
			return false, false, fmt.Errorf("edge %s -> %s: %w", p.Def.Steps[e.from].ID, p.Def.Steps[i].ID, err)
		}
		b, ok := v.(bool)
		if !ok {
			return false, false, fmt.Errorf("edge %s -> %s: guard is %s, want a bool", p.Def.Steps[e.from].ID, p.Def.Steps[i].ID, kindOf(v))
		}
		if b {
			return true, true, nil
		}
	}
	return true, false, nil
}

// slot evaluates an ExprOrValue slot and normalizes it against its type.
func (in *Instance) slot(p *Program, h Host, ev *schema.ExprOrValue) (schema.Value, error) {
	if ev == nil {
		return nil, nil
	}
	if ev.HasLiteral {
		return ev.Literal, nil
	}
	v, err := Eval(ev.Expr, in.scope(p))
	if err != nil {
		return nil, err
	}
	if ev.Type != nil {
		nv, err := schema.Normalize(h, ev.Type, v)
		if err != nil {
			return nil, &valueError{err}
		}
		return nv, nil
	}
	return v, nil
}

type valueError struct{ err error }

func (e *valueError) Error() string { return e.err.Error() }

func (in *Instance) slotFail(s *schema.Step, what string, err error) {
	var ve *valueError
	if errors.As(err, &ve) {
		in.fail(s.ID, CodeInvalid, "%s does not fit %s: %v", what, typeName(s, what), ve.err)
		return
	}
	in.fail(s.ID, CodeEval, "%s: %v", what, err)
}

func typeName(s *schema.Step, what string) string {
	var ev *schema.ExprOrValue
	switch what {
	case "params":
		ev = s.Params
	case "value":
		ev = s.Value
	case "expr":
		ev = s.Expr
	case "result":
		ev = s.Result
	}
	if ev != nil && ev.Type != nil {
		return ev.Type.String()
	}
	return "its type"
}

func (in *Instance) setVar(name string, v schema.Value) { in.vars = in.vars.With(name, v) }

func (in *Instance) exec(p *Program, h Host, i int) {
	s := p.Def.Steps[i]
	done := func(v schema.Value) {
		in.states[i] = Done
		in.values[i] = v
	}
	switch s.Op {
	case schema.OpAssign:
		v, err := in.slot(p, h, s.Expr)
		if err != nil {
			in.slotFail(s, "expr", err)
			return
		}
		in.setVar(s.As, v)
		done(v)
	case schema.OpEmitEffect:
		params, err := in.slot(p, h, s.Params)
		if err != nil {
			in.slotFail(s, "params", err)
			return
		}
		var key []byte
		if s.IdempotencyKey != nil {
			kv, err := in.slot(p, h, s.IdempotencyKey)
			if err != nil {
				in.slotFail(s, "idempotency_key", err)
				return
			}
			key = idempotencyKey(kv)
		}
		ref, err := h.Emit(in, s, params, key)
		if err != nil {
			in.fail(s.ID, CodeDenied, "%s: %v", s.Kind, err)
			return
		}
		in.handles = in.handles.With(s.EffectIDAs, ref.String())
		in.seen[ref] = true
		in.setVar(s.EffectIDAs, s.EffectIDAs)
		done(schema.Record("handle", s.EffectIDAs, "intent_hash", ref.String(), "params", params))
	case schema.OpAwaitReceipt:
		in.states[i] = Waiting
		in.tryReceipt(p, i)
	case schema.OpAwaitEvent:
		in.states[i] = Waiting // future events only: it sees events from now on
	case schema.OpRaiseEvent:
		v, err := in.slot(p, h, s.Value)
		if err != nil {
			in.slotFail(s, "value", err)
			return
		}
		if err := h.Raise(in, s, s.Event, v); err != nil {
			in.fail(s.ID, CodeInvalid, "raise %s: %v", s.Event, err)
			return
		}
		done(schema.Record("schema", s.Event, "value", v))
	case schema.OpEnd:
		v, err := in.slot(p, h, s.Result)
		if err != nil {
			in.slotFail(s, "result", err)
			return
		}
		done(v)
		in.Result = v
		in.Status = EndedOK
	}
}

// idempotencyKey turns a key value into bytes: bytes as they are, text as
// its UTF-8, anything else as the BLAKE3 of its canonical encoding.
func idempotencyKey(v schema.Value) []byte {
	switch v := v.(type) {
	case []byte:
		return v
	case string:
		return []byte(v)
	}
	r, err := schema.Ref(v)
	if err != nil {
		return nil
	}
	d := r.Digest()
	return d[:]
}

// handleIntent resolves an await_receipt's "for" to the intent it awaits.
func (in *Instance) handleIntent(p *Program, s *schema.Step) (cas.Ref, error) {
	v, err := Eval(s.For, in.scope(p))
	if err != nil {
		return cas.Ref{}, err
	}
	name, ok := v.(string)
	if !ok {
		return cas.Ref{}, fmt.Errorf("for is %s, want an effect handle", kindOf(v))
	}
	hv, ok := in.handles.Get(name)
	if !ok {
		return cas.Ref{}, fmt.Errorf("no effect was emitted under handle %q", name)
	}
	return cas.ParseRef(hv.(string))
}

// tryReceipt completes a waiting await_receipt whose receipt has arrived.
func (in *Instance) tryReceipt(p *Program, i int) bool {
	s := p.Def.Steps[i]
	ref, err := in.handleIntent(p, s)
	if err != nil {
		in.fail(s.ID, CodeEval, "for: %v", err)
		return true
	}
	r, ok := in.receipts[ref]
	if !ok {
		return false
	}
	delete(in.receipts, ref)
	if r.Err != "" {
		in.fail(s.ID, CodeEffect, "%s", r.Err)
		return true
	}
	in.setVar(s.As, r.Payload)
	in.states[i] = Done
	in.values[i] = r.Payload
	in.checkInvariants(p, s.ID)
	return true
}

// DeliverReceipt hands the instance the receipt of one of its effects. The
// caller then runs it.
func (in *Instance) DeliverReceipt(intent cas.Ref, r Receipt) {
	if in.Status != Running || !in.seen[intent] {
		return
	}
	in.receipts[intent] = &r
}

// WaitsFor reports whether a step of the instance waits for events of a
// schema.
func (in *Instance) WaitsFor(p *Program, event string) bool {
	if in.Status != Running {
		return false
	}
	for i, s := range p.Def.Steps {
		if in.states[i] == Waiting && s.Op == schema.OpAwaitEvent && s.Event == event {
			return true
		}
	}
	return false
}

// OfferEvent offers an event to the instance's waiting await_event steps,
// in declaration order; the first whose "where" holds takes it. It reports
// whether a step took it. The caller then runs the instance.
func (in *Instance) OfferEvent(p *Program, event string, value schema.Value) bool {
	if in.Status != Running {
		return false
	}
	for i, s := range p.Def.Steps {
		if in.states[i] != Waiting || s.Op != schema.OpAwaitEvent || s.Event != event {
			continue
		}
		if s.Where != nil {
			sc := in.scope(p)
			sc.Event, sc.HasEvent = value, true
			v, err := Eval(s.Where, sc)
			if err != nil {
				in.fail(s.ID, CodeEval, "where: %v", err)
				return true
			}
			b, ok := v.(bool)
			if !ok {
				in.fail(s.ID, CodeEval, "where is %s, want a bool", kindOf(v))
				return true
			}
			if !b {
				continue
			}
		}
		in.setVar(s.As, value)
		in.states[i] = Done
		in.values[i] = value
		in.checkInvariants(p, s.ID)
		return true
	}
	return false
}

func (in *Instance) checkInvariants(p *Program, after string) {
	for k, inv := range p.Def.Invariants {
		v, err := Eval(inv, in.scope(p))
		if err != nil {
			in.fail(after, CodeInvariant, "invariant %d: %v", k, err)
			return
		}
		if b, ok := v.(bool); !ok || !b {
			in.fail(after, CodeInvariant, "invariant %d does not hold after step %s", k, after)
			return
		}
	}
}

// Describe summarizes the step states, e.g. "a:done b:waiting c:skipped".
func (in *Instance) Describe(p *Program) string {
	var b strings.Builder
	for i, s := range p.Def.Steps {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s.ID + ":" + in.states[i].String())
	}
	return b.String()
}
