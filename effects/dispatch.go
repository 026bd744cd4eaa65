package effects

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/schema"
)

// Adapter executes intents of some effect kinds.
type Adapter interface {
	// Run executes one intent and returns its receipt. It must return
	// promptly once ctx is done; the dispatcher then reports a timeout.
	// Run is called concurrently for different intents. An intent may be
	// run again after a crash, with the same idempotency key.
	Run(ctx context.Context, call *Call) Receipt
}

// AdapterFunc is an adapter to allow the use of ordinary functions as
// adapters.
type AdapterFunc func(ctx context.Context, call *Call) Receipt

// Run calls f.
func (f AdapterFunc) Run(ctx context.Context, call *Call) Receipt { return f(ctx, call) }

// InlineAdapter is an Adapter whose effects change nothing outside the
// world: they read the world, through the context the world runs them
// with, and write nothing but blobs, which are stored with their receipt.
// The world may run such an effect inside the step that emits its intent
// (see Dispatcher.RunInline), so that the intent, its run and its receipt
// commit in one transaction: one commit for the round trip instead of two.
// Nothing is lost by it: a crash before that commit loses the intent with
// its receipt, and the input that emitted it is applied again.
//
// Run of an InlineAdapter is called with the step's context; it must not
// call the world's methods that take its lock (World.View, State...): the
// step holds it. Readers of the world find the step in ctx instead (see
// world.World.InStep).
type InlineAdapter interface {
	Adapter
	// RunsInline reports whether call can run inside the step whose
	// context is ctx. An effect that would wait for the world to move on
	// (for a journal height it has not reached, say) must say no: it is
	// then dispatched as usual, once its intent is durable.
	RunsInline(ctx context.Context, call *Call) bool
}

// Call is one execution of an intent.
type Call struct {
	Intent *Intent
	// Params are the intent's params with secrets resolved: each secret ref
	// is replaced by its literal arm. Never journal or log them.
	Params schema.Value
	// CAS holds blobs the params refer to; adapters put the blobs their
	// receipts refer to. What an adapter puts is kept with the call and
	// stored in the same transaction as its receipt (see Completion.Blobs).
	CAS cas.Store
	// Now is the dispatcher's clock.
	Now func() time.Time
	// Sleep waits until t or until ctx is done.
	Sleep func(ctx context.Context, t time.Time) error
	// Progress, if set, receives progress notes for the user (streamed model
	// text, say). It never affects the receipt.
	Progress func(text string)
	// Attempt counts dispatches of this intent in this process, from 1.
	Attempt int
}

// Completion is a receipt handed back to the world with its intent.
type Completion struct {
	Intent  *Intent
	Receipt Receipt
	Elapsed time.Duration
	// Blobs are what the adapter put into its Call.CAS, in order: the
	// world must store them no later than the receipt.
	Blobs [][]byte
	// Fault, if not nil, is a fault of the world's storage the adapter met
	// reading its Call.CAS: an error wrapping cas.ErrCorrupt (a blob whose
	// bytes do not hash to its ref, a damaged page of the store's file).
	// The receipt may say the effect failed for a reason that is not its
	// own ("the model could not be reached"), or hold what the adapter
	// made of damaged data: the world must not apply it, but stop and say
	// that its store is damaged. The intent stays pending, and runs again
	// when the world reopens on a repaired store.
	Fault error
}

// DispatcherOptions configure a Dispatcher. Zero fields take defaults.
type DispatcherOptions struct {
	// Workers bounds how many adapters run at once (default 16).
	Workers int
	// Timeout bounds each call (default 2 minutes); TimeoutFor, if set,
	// overrides it per kind.
	Timeout    time.Duration
	TimeoutFor func(kind string) time.Duration
	// Getenv resolves env:VAR secret bindings (default os.LookupEnv); a
	// variable that is set, even to "", resolves.
	Getenv func(string) (string, bool)
	// Now and Sleep are the clock (default the wall clock).
	Now   func() time.Time
	Sleep func(ctx context.Context, t time.Time) error
	// Progress receives adapters' progress notes, with their intent.
	Progress func(in *Intent, text string)
	// Deliver, if set, takes each completion instead of the out channel,
	// called on the goroutine that ran the adapter once it has given up
	// its worker slot (so Deliver may do work of its own, such as
	// applying the receipt, without holding up other adapters). It is not
	// called once the dispatcher is closed.
	Deliver func(Completion)
	Logger  *slog.Logger
}

// Dispatcher runs intents on adapters and delivers their receipts.
type Dispatcher struct {
	cat      *schema.Catalog
	store    cas.Store
	adapters map[string]Adapter
	opts     DispatcherOptions
	out      chan<- Completion
	sem      chan struct{}
	wg       sync.WaitGroup
	ctx      context.Context
	cancel   context.CancelFunc

	// idle hands a job to a parked worker goroutine (see worker).
	idle   chan job
	parked atomic.Int32 // workers parked on idle

	mu       sync.Mutex
	attempts map[cas.Ref]int
	closed   bool
	// running cancels the runs of an intent in flight; cancelled holds
	// the intents Cancel named, whose runs end before they start.
	running   map[cas.Ref][]*inflight
	cancelled map[cas.Ref]bool
}

// inflight is one run of an intent in flight, for Cancel.
type inflight struct{ cancel context.CancelFunc }

// job is one run of an intent.
type job struct {
	in      *Intent
	attempt int
}

// NewDispatcher returns a dispatcher that sends each completion to out.
// adapters maps effect kinds to adapters; an intent of a kind without an
// adapter gets an error receipt saying so.
func NewDispatcher(cat *schema.Catalog, store cas.Store, adapters map[string]Adapter, out chan<- Completion, opts DispatcherOptions) *Dispatcher {
	if opts.Workers <= 0 {
		opts.Workers = 16
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.Getenv == nil {
		opts.Getenv = os.LookupEnv
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Sleep == nil {
		opts.Sleep = SleepUntil
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Dispatcher{cat: cat, store: store, adapters: adapters, opts: opts, out: out,
		sem: make(chan struct{}, opts.Workers), ctx: ctx, cancel: cancel, attempts: map[cas.Ref]int{}, idle: make(chan job),
		running: map[cas.Ref][]*inflight{}, cancelled: map[cas.Ref]bool{}}
}

// Cancel stops the runs of intent h: a run in flight has its context
// cancelled and its receipt dropped, one not started yet never starts
// (until h is dispatched again).
// It is for an intent the world has answered itself (an abandoned one,
// see world.Options.Abandoned), whose own receipt nobody waits for.
func (d *Dispatcher) Cancel(h cas.Ref) {
	d.mu.Lock()
	d.cancelled[h] = true
	runs := d.running[h]
	d.mu.Unlock()
	for _, r := range runs {
		r.cancel()
	}
}

// track registers a run of h under a context of its own that Cancel
// cancels; ok is false when h was cancelled before the run began. The
// caller calls done when the run is over.
func (d *Dispatcher) track(ctx context.Context, h cas.Ref) (_ context.Context, done func(), ok bool) {
	ctx, cancel := context.WithCancel(ctx)
	r := &inflight{cancel: cancel}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cancelled[h] {
		cancel()
		return ctx, func() {}, false
	}
	d.running[h] = append(d.running[h], r)
	return ctx, func() {
		d.mu.Lock()
		rs := d.running[h]
		for i, x := range rs {
			if x == r {
				rs = append(rs[:i], rs[i+1:]...)
				break
			}
		}
		if len(rs) == 0 {
			delete(d.running, h)
		} else {
			d.running[h] = rs
		}
		d.mu.Unlock()
		cancel()
	}, true
}

// SleepUntil waits on the wall clock until t or until ctx is done.
func SleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Dispatch starts running an intent. It does not block on the adapter.
func (d *Dispatcher) Dispatch(in *Intent) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.attempts[in.Hash]++
	attempt := d.attempts[in.Hash]
	delete(d.cancelled, in.Hash) // wanted again: the same intent emitted anew
	d.wg.Add(1)
	d.mu.Unlock()
	select {
	case d.idle <- job{in, attempt}:
	default:
		go d.worker(job{in, attempt})
	}
}

// worker runs j, then waits for the next job Dispatch hands it, until the
// dispatcher closes. Workers are kept (at most Workers of them parked) so
// that an effect runs on a goroutine whose stack has grown already: a
// fresh goroutine per effect spent tens of microseconds growing its stack
// when the receipt's commit ran on it (the world applies a receipt on the
// goroutine that delivers it).
func (d *Dispatcher) worker(j job) {
	for {
		d.run(j.in, j.attempt)
		if d.parked.Add(1) > int32(d.opts.Workers) {
			d.parked.Add(-1)
			return
		}
		select {
		case j = <-d.idle:
			d.parked.Add(-1)
		case <-d.ctx.Done():
			d.parked.Add(-1)
			return
		}
	}
}

func (d *Dispatcher) run(in *Intent, attempt int) { d.runWith(d.ctx, in, attempt, nil) }

// runWith runs in under ctx (the dispatcher's, or one derived from it) and
// sends its completion; pending, if not nil, reads blobs not yet in the
// store (see DispatchEarly).
func (d *Dispatcher) runWith(ctx context.Context, in *Intent, attempt int, pending cas.Getter) {
	defer d.wg.Done()
	ctx, done, ok := d.track(ctx, in.Hash)
	defer done()
	if !ok {
		return
	}
	select {
	case d.sem <- struct{}{}:
	case <-ctx.Done():
		return
	}
	start := d.opts.Now()
	stage := newStaging(d.store)
	stage.unstored = pending
	r := d.call(ctx, in, attempt, stage)
	<-d.sem
	c := Completion{Intent: in, Receipt: r, Elapsed: d.opts.Now().Sub(start), Blobs: stage.take(), Fault: stage.storageFault()}
	d.opts.Logger.Debug("effect done", "kind", in.Kind, "intent", in.Hash.Short(), "status", r.Status, "elapsed", c.Elapsed)
	if d.opts.Deliver != nil {
		if ctx.Err() == nil {
			d.opts.Deliver(c)
		}
		return
	}
	select {
	case d.out <- c:
	case <-ctx.Done():
	}
}

// RunInline runs an intent inside the step that emitted it, on the
// caller's goroutine, if its adapter is an InlineAdapter that agrees to
// (see InlineAdapter); ctx is the step's context, which the adapter's
// reads of the world need. It returns the completion, whose receipt and
// blobs the caller must commit with the intent, or ok false: the caller
// dispatches the intent as usual once it is durable. Secrets, the timeout
// and the handling of panics are those of Dispatch.
func (d *Dispatcher) RunInline(ctx context.Context, in *Intent) (c Completion, ok bool) {
	a, isInline := d.adapters[in.Kind].(InlineAdapter)
	if !isInline {
		return Completion{}, false
	}
	params, err := d.resolveSecrets(in)
	if err != nil {
		return Completion{}, false // Dispatch reports it
	}
	start := d.opts.Now()
	stage := newStaging(d.store)
	call := d.newCall(in, params, stage, 0)
	if !runsInline(ctx, a, call) {
		return Completion{}, false
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return Completion{}, false
	}
	d.attempts[in.Hash]++
	call.Attempt = d.attempts[in.Hash]
	d.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(d.ctx, cancel) // Close cancels inline runs too
	defer stop()
	defer cancel()
	r := d.execute(ctx, a, call)
	c = Completion{Intent: in, Receipt: r, Elapsed: d.opts.Now().Sub(start), Blobs: stage.take(), Fault: stage.storageFault()}
	d.opts.Logger.Debug("effect done inline", "kind", in.Kind, "intent", in.Hash.Short(), "status", r.Status, "elapsed", c.Elapsed)
	return c, true
}

// MayRunInline reports whether any of intents has an InlineAdapter: only
// those are worth offering to RunInline.
func (d *Dispatcher) MayRunInline(intents []*Intent) bool {
	for _, in := range intents {
		if _, ok := d.adapters[in.Kind].(InlineAdapter); ok {
			return true
		}
	}
	return false
}

// runsInline asks a whether call can run inline; a panic is a no.
func runsInline(ctx context.Context, a InlineAdapter, call *Call) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return a.RunsInline(ctx, call)
}

// newCall returns the Call of one execution of in.
func (d *Dispatcher) newCall(in *Intent, params schema.Value, stage *staging, attempt int) *Call {
	call := &Call{Intent: in, Params: params, CAS: stage, Now: d.opts.Now, Sleep: d.opts.Sleep, Attempt: attempt}
	if d.opts.Progress != nil {
		call.Progress = func(text string) { d.opts.Progress(in, text) }
	}
	return call
}

func (d *Dispatcher) call(ctx context.Context, in *Intent, attempt int, stage *staging) Receipt {
	a, ok := d.adapters[in.Kind]
	if !ok {
		return Errorf("dispatcher", "no adapter runs %s effects in this world", in.Kind)
	}
	params, err := d.resolveSecrets(in)
	if err != nil {
		return Errorf("dispatcher", "%v", err)
	}
	return d.execute(ctx, a, d.newCall(in, params, stage, attempt))
}

// execute runs call on a under the intent's timeout and returns a
// receipt with a status: a panic, a timeout and a receipt without a
// status become error receipts.
func (d *Dispatcher) execute(parent context.Context, a Adapter, call *Call) (r Receipt) {
	in := call.Intent
	timeout := d.opts.Timeout
	if d.opts.TimeoutFor != nil {
		if t := d.opts.TimeoutFor(in.Kind); t > 0 {
			timeout = t
		}
	}
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			r = Errorf(in.Kind, "adapter panicked: %v", p)
		}
	}()
	r = a.Run(ctx, call)
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && r.Status != StatusOK {
		r.Status = StatusTimeout
		if r.Error == "" || !strings.Contains(r.Error, "deadline") {
			r.Error = fmt.Sprintf("%s timed out after %s", in.Kind, timeout)
		}
	}
	if r.Status == "" {
		r = Errorf(in.Kind, "adapter returned a receipt without a status")
	}
	if r.AdapterID == "" {
		r.AdapterID = in.Kind
	}
	return r
}

// resolveSecrets replaces secret refs in the intent's params with their
// values, read from their bindings. It fails closed.
func (d *Dispatcher) resolveSecrets(in *Intent) (schema.Value, error) {
	ef, ok := d.cat.Effect(in.Effect)
	if !ok {
		return in.Params, nil
	}
	var err error
	out := findSecrets(d.cat, schema.RefType(ef.ParamsSchema), in.Params, func(s SecretRef, v schema.Value) schema.Value {
		if err != nil {
			return v
		}
		def, ok := d.cat.Secret(s.Name())
		if !ok {
			err = fmt.Errorf("secret %s is not declared", s.Name())
			return v
		}
		name, ok := strings.CutPrefix(def.BindingID, "env:")
		if !ok {
			err = fmt.Errorf("secret %s is bound to %q; demiurge resolves only env:VARIABLE bindings", def.Name, def.BindingID)
			return v
		}
		// A variable set to "" resolves to "": a model server that takes
		// no key is sent none.
		val, ok := d.opts.Getenv(name)
		if !ok {
			err = fmt.Errorf("secret %s is not available: environment variable %s is not set", def.Name, name)
			return v
		}
		if def.ExpectedDigest != "" {
			if want, perr := cas.ParseRef(def.ExpectedDigest); perr == nil && want.Algo() == cas.BLAKE3 && cas.Sum([]byte(val)) != want {
				err = fmt.Errorf("secret %s from %s does not match its expected_digest", def.Name, name)
				return v
			}
		}
		return schema.Variant("literal", val)
	})
	return out, err
}

// Close stops dispatching: calls in flight are cancelled and their receipts
// dropped (they will be dispatched again when the world reopens). Close
// waits for the adapters to return.
func (d *Dispatcher) Close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.cancel()
	d.wg.Wait()
}
