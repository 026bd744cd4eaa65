package effects

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
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
}

// DispatcherOptions configure a Dispatcher. Zero fields take defaults.
type DispatcherOptions struct {
	// Workers bounds how many adapters run at once (default 16).
	Workers int
	// Timeout bounds each call (default 2 minutes); TimeoutFor, if set,
	// overrides it per kind.
	Timeout    time.Duration
	TimeoutFor func(kind string) time.Duration
	// Getenv resolves env:VAR secret bindings (default os.LookupEnv).
	Getenv func(string) (string, bool)
	// Now and Sleep are the clock (default the wall clock).
	Now   func() time.Time
	Sleep func(ctx context.Context, t time.Time) error
	// Progress receives adapters' progress notes, with their intent.
	Progress func(in *Intent, text string)
	Logger   *slog.Logger
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

	mu       sync.Mutex
	attempts map[cas.Ref]int
	closed   bool
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
		sem: make(chan struct{}, opts.Workers), ctx: ctx, cancel: cancel, attempts: map[cas.Ref]int{}}
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
	d.wg.Add(1)
	d.mu.Unlock()
	go d.run(in, attempt)
}

func (d *Dispatcher) run(in *Intent, attempt int) {
	defer d.wg.Done()
	select {
	case d.sem <- struct{}{}:
	case <-d.ctx.Done():
		return
	}
	defer func() { <-d.sem }()
	start := d.opts.Now()
	stage := newStaging(d.store)
	r := d.call(in, attempt, stage)
	if r.AdapterID == "" {
		r.AdapterID = in.Kind
	}
	c := Completion{Intent: in, Receipt: r, Elapsed: d.opts.Now().Sub(start), Blobs: stage.take()}
	d.opts.Logger.Debug("effect done", "kind", in.Kind, "intent", in.Hash.Short(), "status", r.Status, "elapsed", c.Elapsed)
	select {
	case d.out <- c:
	case <-d.ctx.Done():
	}
}

func (d *Dispatcher) call(in *Intent, attempt int, stage *staging) (r Receipt) {
	a, ok := d.adapters[in.Kind]
	if !ok {
		return Errorf("dispatcher", "no adapter runs %s effects in this world", in.Kind)
	}
	params, err := d.resolveSecrets(in)
	if err != nil {
		return Errorf("dispatcher", "%v", err)
	}
	timeout := d.opts.Timeout
	if d.opts.TimeoutFor != nil {
		if t := d.opts.TimeoutFor(in.Kind); t > 0 {
			timeout = t
		}
	}
	ctx, cancel := context.WithTimeout(d.ctx, timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			r = Errorf(in.Kind, "adapter panicked: %v", p)
		}
	}()
	call := &Call{Intent: in, Params: params, CAS: stage, Now: d.opts.Now, Sleep: d.opts.Sleep, Attempt: attempt}
	if d.opts.Progress != nil {
		call.Progress = func(text string) { d.opts.Progress(in, text) }
	}
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
		val, ok := d.opts.Getenv(name)
		if !ok || val == "" {
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
