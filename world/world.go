package world

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
)

// Options configure a World.
type Options struct {
	// Name is the world's name in the journal (see journal.ValidateWorld).
	Name string
	// Catalog is the loaded manifest. When it differs from the manifest the
	// world last ran, Open records the change.
	Catalog *schema.Catalog
	// Reducers are the Go reducers the manifest's modules name.
	Reducers *reducer.Registry
	// Storage holds the journal and the blobs.
	Storage Storage
	// Adapters run effects, by kind. Kinds without an adapter get error
	// receipts.
	Adapters map[string]effects.Adapter
	// Dispatch configures the dispatcher (workers, timeouts, secrets, clock).
	Dispatch effects.DispatcherOptions
	// Now is the ingress clock (default time.Now).
	Now func() time.Time
	// Entropy is the source of each input's random bytes (default
	// crypto/rand).
	Entropy io.Reader
	// SnapshotEvery is the number of inputs between snapshots; 0 means
	// DefaultSnapshotEvery, a negative number never.
	SnapshotEvery int
	// OnCommit, if set, is called with each step's records after they are
	// durable, in journal order, on the goroutine that applied them (never
	// two calls at once). It must not call the world.
	OnCommit func(recs []journal.Record)
	// Abandoned, if set, says whether a pending intent is still wanted,
	// from the machine as the latest commit left it (an agent's call of a
	// turn the user stopped is not). An abandoned intent gets a receipt
	// from the world, journaled like any other: status error, "cancelled:
	// REASON". Its run in flight is cancelled and whatever it returns is
	// dropped; recovered when the world opens, it is not run at all. The
	// world asks after every commit while intents are pending, holding its
	// lock: Abandoned must be quick and must not call the world.
	Abandoned func(m *Machine, in *effects.Intent) (reason string, abandoned bool)
	Logger    *slog.Logger
}

// DefaultSnapshotEvery is how many inputs a world takes between snapshots.
const DefaultSnapshotEvery = 256

// EntropySize is the number of random bytes in each ingress stamp.
const EntropySize = 32

// Errors of a World.
var (
	// ErrClosed is returned when the world was closed.
	ErrClosed = errors.New("world: closed")
	// ErrInvalidInput is returned (wrapped) when an event does not fit its
	// schema; nothing is journaled.
	ErrInvalidInput = errors.New("world: invalid input")
)

// World is a running world: inputs are applied one batch at a time, in
// journal order; adapters run effects concurrently. There is no goroutine
// of the world's own: an input (an event sent, an effect's receipt) is
// queued, and the goroutine that queued it applies the queue if no other
// goroutine is applying it, or else leaves it to that goroutine, which
// looks again before it stops. So a single caller's event is applied and
// committed on the caller's goroutine, as a raw bbolt Update would be,
// with no hand-off to another goroutine and back.
type World struct {
	opts Options
	log  *slog.Logger

	mu    sync.RWMutex // guards m, head and err
	m     *Machine
	cas   *overlay // what m reads
	head  journal.Head
	err   error // set when the world broke (a commit failed)
	since int   // inputs since the last snapshot

	// movedFrom is the manifest the journal last recorded when Open
	// found another one given (and recorded the change); zero for a new
	// world or an unchanged manifest. See MovedFrom.
	movedFrom cas.Ref

	// committed is each cell's state as of the last commit (cellID →
	// *committedCell), and committedHead that commit's head: State and
	// Head read them without mu, so that a reader never waits for the
	// batch being applied and committed (its fsync above all), and sees
	// only what is durable. applyBatch publishes a batch's cells after its
	// commit, before OnCommit and before its Send returns.
	committed     sync.Map
	committedHead atomic.Pointer[journal.Head]
	// committedPlans is the input of each running plan instance as the
	// last commit left them (id → schema.Value), for PlanInput.
	committedPlans sync.Map

	// runMu is held by the goroutine applying the queue; closed is set
	// under it by Close.
	runMu  sync.Mutex
	closed bool

	qmu     sync.Mutex
	queue   []queued      // inputs waiting to be applied, in arrival order
	running int           // events sent (Send) and not yet answered; guarded by qmu
	signal  chan struct{} // closed and replaced to wake WaitIdle and Drain; guarded by qmu

	disp      *effects.Dispatcher
	done      chan struct{} // closed by Close
	closeOnce sync.Once

	// cancelling holds the abandoned intents whose receipts are queued
	// (see Options.Abandoned), by hash, with the emission (the machine's
	// pending seq) abandoned: the same hash emitted again is another
	// intent. Guarded by mu.
	cancelling map[cas.Ref]uint64

	// draining is set by Drain: intents emitted from then on are held
	// back, not dispatched, until Resume (or whoever opens the world
	// next). Guarded by mu, as held is.
	draining bool
	held     map[cas.Ref]*effects.Intent
}

// queued is an input waiting in the queue: an event sent (req) or an
// effect's completion.
type queued struct {
	req *request
	c   effects.Completion
}

type request struct {
	in   *Input
	done chan result
}

type result struct {
	head journal.Head
	err  error
}

// Open recovers a world from its journal (from its newest snapshot,
// re-deriving and verifying every record after it), records the manifest
// if it is new or changed, dispatches again every intent still waiting for
// its receipt, and starts the world.
func Open(ctx context.Context, opts Options) (*World, error) {
	if err := journal.ValidateWorld(opts.Name); err != nil {
		return nil, err
	}
	if opts.Catalog == nil || opts.Storage == nil || opts.Reducers == nil {
		return nil, errors.New("world: Options need a Catalog, Reducers and Storage")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Entropy == nil {
		opts.Entropy = rand.Reader
	}
	if opts.SnapshotEvery == 0 {
		opts.SnapshotEvery = DefaultSnapshotEvery
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	m, head, err := Recover(ctx, opts.Name, opts.Catalog, opts.Reducers, opts.Storage)
	if err != nil {
		return nil, err
	}
	ov := &overlay{base: opts.Storage.CAS()}
	m.cas = ov
	w := &World{
		opts: opts, log: opts.Logger.With("world", opts.Name), m: m, cas: ov, head: head,
		signal: make(chan struct{}), done: make(chan struct{}),
	}
	w.committedHead.Store(&head)
	for module, cs := range m.cells {
		for kb, c := range cs {
			w.committed.Store(cellID{module, kb}, &committedCell{state: c.state, ref: c.ref})
		}
	}
	for id, in := range m.instances {
		w.committedPlans.Store(id, in.Input)
	}
	m.trackChanges = true
	if m.Manifest() != opts.Catalog.ManifestRef() {
		if head.Seq == 0 {
			w.log.Info("new world", "manifest", opts.Catalog.ManifestRef().Short())
		} else {
			w.log.Info("manifest changed", "from", m.Manifest().Short(), "to", opts.Catalog.ManifestRef().Short())
			w.movedFrom = m.Manifest()
		}
		var blobs [][]byte
		_ = opts.Catalog.Nodes(func(_ cas.Ref, node []byte) error {
			blobs = append(blobs, node)
			return nil
		})
		if _, err := w.applyBatch(ctx, []*Input{{Kind: KindManifest, Manifest: opts.Catalog.ManifestRef()}}, blobs); err != nil {
			return nil, err
		}
	}
	dopts := opts.Dispatch
	if dopts.Now == nil {
		dopts.Now = opts.Now
	}
	if dopts.Logger == nil {
		dopts.Logger = w.log
	}
	dopts.Deliver = w.deliver
	w.disp = effects.NewDispatcher(opts.Catalog, opts.Storage.CAS(), opts.Adapters, nil, dopts)
	// Recovered intents nobody wants any more are answered, not run; the
	// answers are applied before the others go out.
	w.mu.Lock()
	w.abandon()
	pending := m.Pending()
	abandoned := len(w.cancelling) > 0
	w.mu.Unlock()
	if abandoned {
		w.run()
		if err := w.Err(); err != nil {
			_ = w.Close()
			return nil, err
		}
	}
	for _, in := range pending {
		w.mu.RLock()
		wanted := w.m.IsPending(in.Hash) && !w.abandoned(in.Hash)
		w.mu.RUnlock()
		if !wanted {
			continue
		}
		w.log.Debug("dispatching again", "kind", in.Kind, "intent", in.Hash.Short())
		w.disp.Dispatch(in)
	}
	return w, nil
}

// abandoned reports whether the pending intent h is being answered by the
// world (abandon). The caller holds mu.
func (w *World) abandoned(h cas.Ref) bool {
	at, ok := w.cancelling[h]
	if !ok {
		return false
	}
	seq, pending := w.m.pendingSeq(h)
	return pending && seq == at
}

// isAbandoned asks Options.Abandoned about in; a panic in it is logged and
// counts as "wanted".
func (w *World) isAbandoned(in *effects.Intent) (reason string, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			w.log.Error("Options.Abandoned panicked; the intent is kept", "intent", in.Hash.Short(), "panic", p)
			reason, ok = "", false
		}
	}()
	return w.opts.Abandoned(w.m, in)
}

// abandon queues the world's receipt for each pending intent that
// Options.Abandoned says nobody wants any more, and cancels its runs. The
// caller holds mu.
func (w *World) abandon() {
	for h := range w.cancelling { // answered meanwhile, or emitted again
		if !w.abandoned(h) {
			delete(w.cancelling, h)
		}
	}
	if w.opts.Abandoned == nil || len(w.m.pending) == 0 {
		return
	}
	var cs []queued
	for _, in := range w.m.Pending() {
		if w.abandoned(in.Hash) {
			continue
		}
		reason, ok := w.isAbandoned(in)
		if !ok {
			continue
		}
		if w.cancelling == nil {
			w.cancelling = map[cas.Ref]uint64{}
		}
		w.cancelling[in.Hash], _ = w.m.pendingSeq(in.Hash)
		w.log.Debug("cancelling an abandoned intent", "kind", in.Kind, "intent", in.Hash.Short(), "reason", reason)
		cs = append(cs, queued{c: effects.Completion{Intent: in, Receipt: effects.Errorf("world", "cancelled: %s", reason)}})
		if w.disp != nil {
			w.disp.Cancel(in.Hash)
		}
	}
	if len(cs) > 0 {
		w.qmu.Lock()
		w.queue = append(w.queue, cs...)
		w.qmu.Unlock()
	}
}

// Recover rebuilds a world's machine from its journal without running it:
// from the newest snapshot, re-deriving and checking every record after it.
// It returns the machine and the head.
func Recover(ctx context.Context, name string, cat *schema.Catalog, reg *reducer.Registry, st Storage) (*Machine, journal.Head, error) {
	r, err := Rerun(ctx, RerunOptions{Name: name, Catalog: cat, Reducers: reg, Storage: st})
	if err != nil {
		return nil, journal.Head{}, err
	}
	return r.Machine, r.Head, nil
}

// stamp samples a new ingress stamp for in.
func (w *World) stamp(in *Input) (reducer.Stamp, error) {
	t := in.arrived
	if t.IsZero() {
		t = w.opts.Now()
	}
	now := t.UnixNano()
	if now < 0 {
		now = 0
	}
	s := reducer.Stamp{NowNS: uint64(now), LogicalNowNS: uint64(now), JournalHeight: w.m.Height(), ManifestHash: w.m.Manifest()}
	if s.LogicalNowNS < w.m.LogicalNow() {
		s.LogicalNowNS = w.m.LogicalNow()
	}
	s.Entropy = make([]byte, EntropySize)
	if _, err := io.ReadFull(w.opts.Entropy, s.Entropy); err != nil {
		return reducer.Stamp{}, fmt.Errorf("world: entropy: %w", err)
	}
	return s, nil
}

// maxBatch bounds how many inputs one commit may carry.
const maxBatch = 256

// applyBatch applies inputs in order and commits all their records in one
// transaction: when receipts arrive together, they share one fsync. The
// caller holds no lock.
func (w *World) applyBatch(ctx context.Context, ins []*Input, extraBlobs [][]byte) (head journal.Head, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return journal.Head{}, w.err
	}
	// Whatever breaks the world below (a failed commit above all) ends
	// every wait at once: the waiters of WaitIdle see w.err. This runs
	// last, after the recovery of a panic.
	defer func() {
		if w.err != nil {
			w.wake()
		}
	}()
	// The effects started before their intents are durable, waiting for
	// the commit's outcome (see below). Any way out but the one that
	// releases them as durable (a failed commit, a broken world, a panic)
	// releases them as not.
	var early []func(durable bool)
	release := func(durable bool) {
		for _, c := range early {
			c(durable)
		}
		early = nil
	}
	defer release(false)
	defer func() {
		// A bug in the kernel must not take the process down with it: the
		// world stops, the journal keeps everything committed before.
		if p := recover(); p != nil {
			w.err = fmt.Errorf("world %s: internal error applying an input: %v\n%s(reopen the world to recover from the journal; please report this)", w.opts.Name, p, debug.Stack())
			head, err = journal.Head{}, w.err
		}
	}()
	var records []journal.Entry
	blobs := extraBlobs
	var dispatch []*effects.Intent
	w.cas.stage(extraBlobs)
	defer w.cas.clear()
	staged := len(blobs) // blobs[:staged] are readable through w.cas
	// Receipts of effects run inline join the batch as inputs after ins.
	queue := slices.Clip(ins)
	for i := 0; i < len(queue); i++ {
		in := queue[i]
		if in.Kind != KindManifest {
			s, err := w.stamp(in)
			if err != nil {
				if len(records) > 0 {
					// Earlier inputs of the batch moved the machine on and
					// will never be committed: the machine is not the
					// journal any more.
					w.err = fmt.Errorf("world %s broke stamping an input: %w (reopen it to recover from the journal)", w.opts.Name, err)
					return journal.Head{}, w.err
				}
				return journal.Head{}, err
			}
			in.Stamp = s
		}
		step, err := w.m.Apply(ctx, in)
		if err != nil {
			w.err = fmt.Errorf("world %s broke applying %s: %w (reopen it to recover from the journal)", w.opts.Name, in.Kind, err)
			return journal.Head{}, w.err
		}
		records = append(records, step.Records...)
		blobs = append(blobs, step.Blobs...)
		if in.Kind != KindManifest {
			w.since++
		}
		if w.opts.SnapshotEvery > 0 && w.since >= w.opts.SnapshotEvery {
			e, b, err := w.m.Snapshot()
			if err != nil {
				w.err = err
				return journal.Head{}, err
			}
			records = append(records, e)
			blobs = append(blobs, b)
			w.since = 0
		}
		if w.disp == nil || !w.disp.MayRunInline(step.Dispatch) {
			dispatch = append(dispatch, step.Dispatch...)
			continue
		}
		// Effects that run inline do so now, together (the calls of one
		// turn run concurrently, as dispatched ones do); their receipts
		// join the batch in emission order. They read the batch's blobs
		// through w.cas.
		w.cas.stage(blobs[staged:])
		staged = len(blobs)
		room := max(maxBatch-len(queue), 0)
		ran := w.runInline(ctx, step.Dispatch[:min(room, len(step.Dispatch))], w.head, records)
		for i := range ran {
			if ran[i].fault != nil {
				w.err = storageFault(w.opts.Name, step.Dispatch[i], ran[i].fault)
				return journal.Head{}, w.err
			}
		}
		for i, intent := range step.Dispatch {
			if i >= len(ran) || ran[i].in == nil {
				dispatch = append(dispatch, intent)
				continue
			}
			queue = append(queue, ran[i].in)
			blobs = append(blobs, ran[i].blobs...)
		}
		w.cas.stage(blobs[staged:]) // the receipts' steps read them
		staged = len(blobs)
	}
	// Effects whose adapters start early (the model's) start now: they
	// build their requests while the commit waits for the disk, and send
	// them once their intents are durable (effects.EarlyAdapter). They
	// read the batch's blobs through w.cas until the commit has stored
	// them.
	if w.disp != nil && !w.draining && w.disp.MayStartEarly(dispatch) {
		w.cas.stage(blobs[staged:])
		later := dispatch[:0:0]
		for _, intent := range dispatch {
			if committed := w.disp.DispatchEarly(intent, w.cas.unstored()); committed != nil {
				early = append(early, committed)
			} else {
				later = append(later, intent)
			}
		}
		dispatch = later
	}
	head, err = w.opts.Storage.Commit(ctx, w.opts.Name, w.head, records, blobs)
	if err != nil {
		w.err = fmt.Errorf("world %s: commit failed: %w (reopen it to recover from the journal)", w.opts.Name, err)
		return journal.Head{}, w.err
	}
	if head.Seq != w.m.Height() {
		w.err = fmt.Errorf("world %s: journal head %d after commit, machine at %d", w.opts.Name, head.Seq, w.m.Height())
		return journal.Head{}, w.err
	}
	first := w.head.Seq + 1
	w.head = head
	w.publish()
	w.wake()
	if w.opts.OnCommit != nil {
		recs := make([]journal.Record, len(records))
		for i, e := range records {
			recs[i] = journal.Record{Seq: first + uint64(i), Kind: e.Kind, Payload: e.Payload}
		}
		w.opts.OnCommit(recs)
	}
	// The batch may have ended what some intents were for, its own among
	// them: those are answered, not run (the receipts abandon queues are
	// applied by the loop that applies the queue). Before the early ones
	// are released: an abandoned model call is cancelled before it sends.
	w.abandon()
	// The batch's effects go out once OnCommit has seen its records, those
	// started early as the others.
	release(true)
	if w.disp != nil {
		for _, intent := range dispatch {
			switch {
			case w.abandoned(intent.Hash):
			case w.draining: // journaled; dispatched by Resume, or by the next Open
				if w.held == nil {
					w.held = map[cas.Ref]*effects.Intent{}
				}
				w.held[intent.Hash] = intent
			default:
				w.disp.Dispatch(intent)
			}
		}
	}
	return head, nil
}

// committedCell is a cell's state as a commit left it (see
// World.committed).
type committedCell struct {
	state schema.Value
	ref   cas.Ref
}

// publish makes the cells the machine changed since the last commit, and
// the head, readable by State and Head: their states are durable now. The
// caller holds mu and has just committed.
func (w *World) publish() {
	for _, id := range w.m.changed {
		if c := w.m.cells[id.module][id.key]; c != nil {
			w.committed.Store(id, &committedCell{state: c.state, ref: c.ref})
		} else {
			w.committed.Delete(id)
		}
	}
	clear(w.m.changed)
	w.m.changed = w.m.changed[:0]
	for _, id := range w.m.changedPlans {
		if in, ok := w.m.instances[id]; ok {
			w.committedPlans.Store(id, in.Input)
		} else {
			w.committedPlans.Delete(id)
		}
	}
	w.m.changedPlans = w.m.changedPlans[:0]
	head := w.head
	w.committedHead.Store(&head)
}

// Drain stops the world from dispatching effects and waits until none it
// dispatched is in flight: each has its receipt applied (or was answered
// otherwise), and no input is being applied. Intents emitted meanwhile,
// by the receipts that come in, are journaled as usual but held back:
// Resume dispatches them, or, once the world is closed, whoever opens it
// next (Open dispatches every intent still waiting for its receipt). It is
// how a world moves to another process without running an effect twice:
// after Drain, Close cancels nothing. Drain does not stop inputs: the
// caller stops sending events first. Effects that run inline (see
// effects.InlineAdapter) still do, inside their steps.
//
// If ctx ends first, Drain returns its error and the world stays drained:
// Resume goes on. It returns the world's error if it broke.
func (w *World) Drain(ctx context.Context) error {
	w.mu.Lock()
	w.draining = true
	w.mu.Unlock()
	for {
		w.mu.RLock()
		w.qmu.Lock()
		queued, running, sig := len(w.queue), w.running, w.signal
		w.qmu.Unlock()
		err := w.err
		quiet := w.inFlightLocked() == 0 && running == 0 && queued == 0
		w.mu.RUnlock()
		if err != nil {
			return err
		}
		if quiet {
			return nil
		}
		select {
		case <-sig:
		case <-w.done:
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Resume undoes Drain: the intents held back are dispatched, and the
// world dispatches again as it goes.
func (w *World) Resume() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.draining = false
	held := w.held
	w.held = nil
	if w.disp == nil {
		return
	}
	for _, in := range w.m.Pending() { // in emission order
		if held[in.Hash] != nil && !w.abandoned(in.Hash) {
			w.disp.Dispatch(in)
		}
	}
}

// InFlight returns how many effects the world dispatched whose receipts
// it has not applied yet: those Close would cancel, to run again wherever
// the world is opened next.
func (w *World) InFlight() int {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.inFlightLocked()
}

// inFlightLocked is InFlight; the caller holds mu.
func (w *World) inFlightLocked() int {
	n := 0
	for h := range w.m.pending {
		if w.held[h] == nil {
			n++
		}
	}
	return n
}

// wake wakes the waiters of WaitIdle and Drain. The caller holds w.mu.
func (w *World) wake() {
	w.qmu.Lock()
	w.wakeQueued()
	w.qmu.Unlock()
}

// wakeQueued is wake for a caller that holds w.qmu. The signal is
// guarded by qmu, and waiters read it with running and the queue, so an
// input answered after the commit that woke them (running falls to 0
// after the wake-up) wakes them again instead of leaving them for the
// next commit.
func (w *World) wakeQueued() {
	close(w.signal)
	w.signal = make(chan struct{})
}

// storageFault is the error of a world whose adapter met a damaged store
// running intent.
func storageFault(world string, intent *effects.Intent, fault error) error {
	return fmt.Errorf("world %s stopped: its store is damaged: the %s effect (intent %s) read it and failed: %w (the effect runs again when the world reopens)",
		world, intent.Kind, intent.Hash.Short(), fault)
}

// deliver queues an effect's completion and applies the queue if no
// other goroutine does (the dispatcher's Deliver: it runs on the
// adapter's goroutine).
func (w *World) deliver(c effects.Completion) {
	w.qmu.Lock()
	w.queue = append(w.queue, queued{c: c})
	w.qmu.Unlock()
	w.run()
}

// run applies the queue, batch by batch, unless another goroutine is
// applying it: that one finds what was queued before run was called (it
// looks at the queue again after it lets go of runMu).
func (w *World) run() {
	for {
		if !w.runMu.TryLock() {
			return
		}
		if w.closed {
			w.failQueued()
			w.runMu.Unlock()
			return
		}
		w.applyQueued()
		w.runMu.Unlock()
		w.qmu.Lock()
		empty := len(w.queue) == 0
		w.qmu.Unlock()
		if empty {
			return
		}
	}
}

// failQueued answers the queued requests with ErrClosed and drops the
// queued completions (their intents are dispatched again when the world
// reopens). The caller holds runMu.
func (w *World) failQueued() {
	w.qmu.Lock()
	q := w.queue
	w.queue = nil
	w.qmu.Unlock()
	for _, it := range q {
		if it.req != nil {
			it.req.done <- result{err: ErrClosed}
		}
	}
}

// applyQueued applies what is queued, in batches of at most maxBatch
// inputs, each committed in one transaction: receipts that arrive
// together share one fsync. The caller holds runMu.
func (w *World) applyQueued() {
	var ins []*Input
	var waiters []*request
	var blobs [][]byte
	for {
		w.qmu.Lock()
		q := w.queue
		n := min(len(q), maxBatch)
		w.queue = q[n:]
		if len(w.queue) == 0 {
			w.queue = nil
		}
		w.qmu.Unlock()
		if n == 0 {
			return
		}
		ins, waiters, blobs = ins[:0], waiters[:0], blobs[:0]
		for _, it := range q[:n] {
			if it.req != nil {
				ins = append(ins, it.req.in)
				waiters = append(waiters, it.req)
				continue
			}
			c := it.c
			if c.Fault != nil {
				// Its receipt is not applied: the store the adapter read
				// is damaged, and so may be what it made of it.
				w.mu.Lock()
				if w.err == nil {
					w.err = storageFault(w.opts.Name, c.Intent, c.Fault)
					w.log.Error("stopped", "err", w.err)
					w.wake()
				}
				w.mu.Unlock()
				continue
			}
			w.mu.RLock()
			pending := w.m.IsPending(c.Intent.Hash)
			w.mu.RUnlock()
			for _, in := range ins { // the same receipt twice in one batch
				if in.Kind == KindReceipt && in.Intent == c.Intent.Hash {
					pending = false
				}
			}
			if !pending {
				w.log.Debug("dropping receipt of an intent that is not pending", "intent", c.Intent.Hash.Short())
				continue
			}
			ins = append(ins, &Input{Kind: KindReceipt, Intent: c.Intent.Hash, Status: c.Receipt.Status, Payload: c.Receipt.Payload,
				Error: c.Receipt.Error, AdapterID: c.Receipt.AdapterID, CostCents: c.Receipt.CostCents})
			blobs = append(blobs, c.Blobs...)
		}
		if len(ins) == 0 {
			continue
		}
		broken := w.Err() != nil
		h, err := w.applyBatch(context.Background(), ins, blobs)
		if err != nil && len(waiters) == 0 && !broken { // logged once, when the world breaks
			if errors.Is(err, journal.ErrConflict) {
				// Another writer committed first (a worker that took the
				// world over, say): this one stops, as it should.
				w.log.Warn("stopped: another writer committed to the world first", "err", err)
			} else {
				w.log.Error("apply", "err", err)
			}
		}
		for _, r := range waiters {
			r.done <- result{head: h, err: err}
		}
	}
}

// Send validates a domain event and, if it fits its schema, journals it and
// applies it. It returns once the event and everything it derived are
// durable (effects it started may still be running). An event that does not
// fit is refused with an error wrapping ErrInvalidInput; nothing is
// journaled.
func (w *World) Send(ctx context.Context, schemaName string, value, key schema.Value) (journal.Head, error) {
	if _, ok := w.opts.Catalog.SchemaType(schemaName); !ok {
		return journal.Head{}, fmt.Errorf("%w: schema %s is not in the manifest", ErrInvalidInput, schemaName)
	}
	v, err := schema.Normalize(w.opts.Catalog, schema.RefType(schemaName), value)
	if err != nil {
		return journal.Head{}, fmt.Errorf("%w: %s: %v", ErrInvalidInput, schemaName, err)
	}
	return w.submit(ctx, &Input{Kind: KindEvent, Schema: schemaName, Value: v, Key: key})
}

// SendJSON is Send with the value in either AIR JSON form.
func (w *World) SendJSON(ctx context.Context, schemaName string, js []byte) (journal.Head, error) {
	if _, ok := w.opts.Catalog.SchemaType(schemaName); !ok {
		return journal.Head{}, fmt.Errorf("%w: schema %s is not in the manifest", ErrInvalidInput, schemaName)
	}
	v, err := schema.NormalizeJSON(w.opts.Catalog, schema.RefType(schemaName), js)
	if err != nil {
		return journal.Head{}, fmt.Errorf("%w: %s: %v", ErrInvalidInput, schemaName, err)
	}
	return w.submit(ctx, &Input{Kind: KindEvent, Schema: schemaName, Value: v})
}

// submit queues in, applies the queue unless another goroutine does, and
// waits for in's outcome. Once queued, in is applied whatever ctx does.
func (w *World) submit(ctx context.Context, in *Input) (journal.Head, error) {
	if err := ctx.Err(); err != nil {
		return journal.Head{}, err
	}
	select {
	case <-w.done:
		return journal.Head{}, ErrClosed
	default:
	}
	r := &request{in: in, done: make(chan result, 1)}
	// running and the queue are guarded by qmu, not mu: an event is
	// queued at once, even while a batch is being committed.
	defer w.answered()
	w.qmu.Lock()
	w.running++
	w.queue = append(w.queue, queued{req: r})
	w.qmu.Unlock()
	w.run()
	res := <-r.done
	return res.head, res.err
}

// answered counts a sent input answered (its submit returns). The last
// one wakes WaitIdle and Drain: their waiters may have seen it running
// after the commit that woke them last.
func (w *World) answered() {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	w.running--
	if w.running == 0 && len(w.queue) == 0 {
		w.wakeQueued()
	}
}

// WaitIdle waits until no effect is in flight and no input is being
// applied, or until ctx is done. It returns the world's error if it broke,
// as soon as it breaks (a commit failed, an adapter met a damaged store),
// whatever is still in flight.
func (w *World) WaitIdle(ctx context.Context) error {
	for {
		w.mu.RLock()
		w.qmu.Lock()
		queued, running, sig := len(w.queue), w.running, w.signal
		w.qmu.Unlock()
		err, idle := w.err, len(w.m.pending) == 0 && running == 0 && queued == 0
		w.mu.RUnlock()
		if err != nil {
			return err
		}
		if idle {
			return nil
		}
		select {
		case <-sig:
		case <-w.done:
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// View calls fn with the world's machine under a read lock, for queries.
// fn must not keep the machine or modify it.
func (w *World) View(fn func(m *Machine)) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	fn(w.m)
}

// ViewAt is View with the journal head, read under the same lock: fn sees
// the machine's state at that head (m.Height() == head.Seq), unless the
// world broke applying inputs it could not commit (then the machine is
// ahead of the head and Err says why). fn must not keep the machine or
// modify it.
func (w *World) ViewAt(fn func(m *Machine, head journal.Head)) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	fn(w.m, w.head)
}

// Head returns the journal head: the last commit's, without waiting for
// a batch being committed.
func (w *World) Head() journal.Head {
	return *w.committedHead.Load()
}

// Err returns the error that broke the world, if any.
func (w *World) Err() error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.err
}

// Close stops the world: effects in flight are cancelled (they are
// dispatched again when the world reopens) and nothing more is journaled.
// The journal keeps every record committed before Close.
func (w *World) Close() error {
	w.closeOnce.Do(func() {
		w.runMu.Lock() // wait for the batch being applied
		w.closed = true
		w.failQueued()
		close(w.done)
		w.runMu.Unlock()
		w.run() // answers what was queued while Close held runMu
		if w.disp != nil {
			w.disp.Close()
		}
	})
	return nil
}

// Name returns the world's name.
func (w *World) Name() string { return w.opts.Name }

// MovedFrom returns the manifest the world ran before this Open, when
// Open was given another and recorded the change (a Manifest record):
// what a command says to the user, whose world now runs another AIR. ok
// is false for a new world and for one reopened with its manifest.
func (w *World) MovedFrom() (from cas.Ref, ok bool) {
	return w.movedFrom, w.movedFrom.Valid()
}

// Catalog returns the manifest the world runs.
func (w *World) Catalog() *schema.Catalog { return w.opts.Catalog }

// Storage returns the world's storage.
func (w *World) Storage() Storage { return w.opts.Storage }

// State returns a cell's state and its ref (key nil for a reducer that is
// not keyed) as the last commit left it: what is durable. It takes no
// lock and never waits for the batch being applied and committed.
func (w *World) State(module string, key schema.Value) (schema.Value, cas.Ref, bool) {
	kb, err := keyBytes(key)
	if err != nil {
		return nil, cas.Ref{}, false
	}
	v, ok := w.committed.Load(cellID{module, kb})
	if !ok {
		return nil, cas.Ref{}, false
	}
	c := v.(*committedCell)
	return c.state, c.ref, true
}

// PlanInput returns the value running plan instance id started with (its
// trigger event) as the last commit left the world, as
// Machine.PlanInput does, without the world's lock: it never waits for
// the batch being applied and committed.
func (w *World) PlanInput(id uint64) (schema.Value, bool) {
	v, ok := w.committedPlans.Load(id)
	if !ok {
		return nil, false
	}
	return v, true
}

// Cells returns a reducer's current cells in canonical key order.
func (w *World) Cells(module string) []Cell {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.m.Cells(module)
}
