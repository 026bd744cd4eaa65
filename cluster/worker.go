package cluster

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/demiurge-dev/demiurge/pgstore"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// Defaults of Options.
const (
	// DefaultLease is how long a lease lasts unless renewed: a world whose
	// worker died is taken over within about DefaultLease plus one
	// acquire period.
	DefaultLease = time.Second
	// DefaultMaxWorlds is how many worlds a worker runs at most.
	DefaultMaxWorlds = 64
	// DefaultPoll is how often a world's inbox is read when no
	// notification woke it (the fallback when LISTEN/NOTIFY is down).
	DefaultPoll = time.Second
	// DefaultHandover is how long a worker that stops waits for the
	// effects in flight of its worlds before it hands them over.
	DefaultHandover = 30 * time.Second
)

// Runtime is what a world runs with on a worker, besides its name,
// catalog, storage and reducers (which the worker sets): its adapters,
// dispatch options, and hooks around its life.
type Runtime struct {
	// Options are the world's options; the worker sets Name, Catalog,
	// Storage and Reducers.
	Options world.Options
	// Attach, if set, is called with the world once it is open.
	Attach func(w *world.World)
	// Close, if set, is called after the world is closed.
	Close func() error
}

// Env is what a worker knows of a world it is about to open.
type Env struct {
	Name    string
	Catalog *schema.Catalog // the manifest it runs
	Storage world.Storage   // its storage: every commit fenced with Lease
	Lease   pgstore.Lease   // the worker's lease on it
	// Store is the store the world lives in, for what is not journaled:
	// the world's stream to its clients (pgstore.Store.PublishStream).
	// Its journal is written through Storage only.
	Store *pgstore.Store
}

// OpenFunc returns the runtime of a world. The worker calls it each time
// it opens the world (after taking it over, or to reopen it after a failed
// commit or a manifest change).
type OpenFunc func(ctx context.Context, env Env) (*Runtime, error)

// Options configure a Worker.
type Options struct {
	// Store is the PostgreSQL store the worlds live in. Required.
	Store *pgstore.Store
	// Reducers are the Go reducers the worlds' manifests name. Required.
	Reducers *reducer.Registry
	// Open returns a world's runtime; nil runs worlds without adapters
	// (their effects get error receipts).
	Open OpenFunc
	// ID names the worker in the leases; empty means host-pid-random.
	ID string
	// MaxWorlds bounds the worlds the worker runs; 0 means
	// DefaultMaxWorlds.
	MaxWorlds int
	// Lease is how long a lease lasts unless renewed; 0 means
	// DefaultLease. Free or expired worlds are looked for every Lease/5.
	Lease time.Duration
	// Renew is how often the leases are renewed; 0 means Lease/3.
	Renew time.Duration
	// Poll is how often a world's inbox is read without a notification; 0
	// means DefaultPoll.
	Poll time.Duration
	// Handover bounds how long a worker that stops (Run's ctx is done)
	// waits for the effects in flight of each of its worlds before it
	// closes the world and releases its lease; 0 means DefaultHandover.
	// An effect still running then is cut short, and runs again on the
	// world's next owner. A world given up to even out the load waits at
	// most Lease, and stays if its effects do not end by then.
	Handover time.Duration
	Logger   *slog.Logger
}

// Worker runs worlds of a PostgreSQL store: it takes free or expired
// worlds up to a limit, keeps their leases, recovers each from its
// journal, feeds it the messages of its inbox, and stops touching a world
// the moment its lease is lost.
type Worker struct {
	opts Options
	id   string
	log  *slog.Logger

	mu   sync.Mutex
	held map[string]*held

	// down is how the database has failed the heartbeats since the last
	// one that succeeded (Run's goroutine only): a worker retries five
	// times a lease, and says so once, then every downEvery.
	down downState

	abort     chan struct{} // closed by Abort
	abortOnce sync.Once
}

// Abort makes a worker that is stopping (Run's ctx is done) stop at once,
// without waiting any more for the effects in flight of the worlds it
// hands over: they close, and what runs runs again on the next owner. A
// second Ctrl-C does this in demiurge worker.
func (wk *Worker) Abort() { wk.abortOnce.Do(func() { close(wk.abort) }) }

// downState is how the database has failed a worker's heartbeats.
type downState struct {
	fails        int       // in a row
	since, noted time.Time // the first failure; the last one logged
}

// downEvery is how often a worker that cannot reach the database says
// so again.
const downEvery = 10 * time.Second

// New returns a worker; Run runs it.
func New(opts Options) (*Worker, error) {
	if opts.Store == nil || opts.Reducers == nil {
		return nil, errors.New("cluster: Options need a Store and Reducers")
	}
	if opts.MaxWorlds < 0 || opts.Lease < 0 || opts.Renew < 0 || opts.Poll < 0 || opts.Handover < 0 {
		return nil, fmt.Errorf("cluster: Options: MaxWorlds %d, Lease %v, Renew %v, Poll %v, Handover %v: want none negative",
			opts.MaxWorlds, opts.Lease, opts.Renew, opts.Poll, opts.Handover)
	}
	if opts.Handover == 0 {
		opts.Handover = DefaultHandover
	}
	if opts.MaxWorlds == 0 {
		opts.MaxWorlds = DefaultMaxWorlds
	}
	if opts.Lease == 0 {
		opts.Lease = DefaultLease
	}
	if opts.Renew == 0 {
		opts.Renew = opts.Lease / 3
	}
	if opts.Poll == 0 {
		opts.Poll = DefaultPoll
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ID == "" {
		opts.ID = NewID()
	}
	return &Worker{opts: opts, id: opts.ID, log: opts.Logger.With("worker", opts.ID), held: map[string]*held{}, abort: make(chan struct{})}, nil
}

// ErrIDInUse is returned (wrapped) by Run when a live worker has the
// worker's ID.
var ErrIDInUse = errors.New("cluster: worker ID in use")

// NewID returns a worker id: the host name, the process id and random
// bits, so that a restarted worker is a new owner.
func NewID() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}

// ID returns the worker's id, the owner of its leases.
func (wk *Worker) ID() string { return wk.id }

// Worlds returns the names of the worlds the worker holds now.
func (wk *Worker) Worlds() []string {
	wk.mu.Lock()
	defer wk.mu.Unlock()
	names := make([]string, 0, len(wk.held))
	for n := range wk.held {
		names = append(names, n)
	}
	return names
}

// Run runs the worker until ctx is done, then hands its worlds over: each
// stops taking messages, waits up to Options.Handover for its effects in
// flight to be answered (their leases still renewed meanwhile), and is
// closed, its lease released, so other workers take it at once and run
// nothing twice. It returns nil after a clean stop; a worker that cannot
// reach the database keeps trying (its worlds stop when their leases run
// out).
func (wk *Worker) Run(ctx context.Context) error {
	// Two live workers under one ID would count as one, and show as one
	// in the leases: refuse to be the second. (Fencing does not depend on
	// it: every lease taken has a new token.)
	if ago, ok, err := wk.opts.Store.WorkerSeen(ctx, wk.id); err == nil && ok && ago < wk.opts.Lease {
		return fmt.Errorf("%w: worker %s reported itself alive %s ago: give each worker its own ID (demiurge worker --id), or if it just died, start again in %s",
			ErrIDInUse, wk.id, ago.Round(time.Millisecond), (wk.opts.Lease - ago).Round(time.Millisecond))
	}
	// The worlds run until they are handed over, after ctx is done; the
	// database is reached meanwhile under bg.
	bg := context.WithoutCancel(ctx)
	worlds, stopWorlds := context.WithCancel(bg)
	defer stopWorlds()
	wake := make(chan string, 256)
	var listeners sync.WaitGroup
	lctx, stopListen := context.WithCancel(ctx)
	listeners.Go(func() { wk.listen(lctx, wake) })
	defer func() {
		stopListen()
		listeners.Wait()
		wk.stopAll()
		rctx, cancel := context.WithTimeout(bg, 5*time.Second)
		defer cancel()
		_ = wk.opts.Store.Retire(rctx, wk.id)
	}()

	acquireEvery := wk.opts.Lease / 5
	renew := time.NewTicker(wk.opts.Renew)
	defer renew.Stop()
	acquire := time.NewTicker(acquireEvery)
	defer acquire.Stop()
	lastRenew := time.Now() // when the last renewal that succeeded was sent
	wk.acquire(worlds)
	done, abort := ctx.Done(), wk.abort
	var leaving <-chan time.Time // set once ctx is done: when to give up waiting
	for {
		select {
		case <-done:
			done = nil
			leaving = wk.leave(bg)
			if abort == nil { // aborted before
				return nil
			}
		case <-leaving:
			wk.log.Warn("handover: effects still in flight; their worlds close, and they run again on the next owner", "after", wk.opts.Handover)
			return nil
		case <-abort:
			if leaving != nil {
				wk.log.Warn("stopping now: the worlds still handing over close, and their effects in flight run again on the next owner")
				return nil
			}
			abort = nil // before the stop: it stops at once when it comes
		case name := <-wake:
			wk.mu.Lock()
			h := wk.held[name]
			wk.mu.Unlock()
			if h != nil {
				h.poke()
			}
		case <-renew.C:
			sent := time.Now()
			if err := wk.renew(bg); err != nil {
				wk.log.Warn("renew leases", "err", err)
				if time.Since(lastRenew) > wk.opts.Lease {
					// The leases may have run out: another worker may
					// own the worlds now. Stop touching them.
					wk.stopAll()
				}
				continue
			}
			lastRenew = sent
		case <-acquire.C:
			if leaving == nil {
				wk.acquire(worlds)
			}
		}
		if leaving != nil && len(wk.Worlds()) == 0 {
			return nil // all handed over
		}
	}
}

// leave starts handing every world over, as the worker stops: it says it
// is gone at once (so that the others count it out and take the worlds
// it releases), and each world stops taking messages, waits for its
// effects in flight and is released (see held.handOver). It returns when
// to stop waiting.
func (wk *Worker) leave(ctx context.Context) <-chan time.Time {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_ = wk.opts.Store.Retire(rctx, wk.id)
	cancel()
	wk.mu.Lock()
	hs := make([]*held, 0, len(wk.held))
	for _, h := range wk.held {
		hs = append(hs, h)
	}
	wk.mu.Unlock()
	wk.log.Info("stopping: handing worlds over once their effects in flight are answered", "worlds", len(hs), "within", wk.opts.Handover)
	for _, h := range hs {
		wk.handOver(ctx, h, wk.opts.Handover, true)
	}
	return time.After(wk.opts.Handover + time.Second)
}

// listen forwards inbox notifications to wake, reconnecting when the
// connection breaks.
func (wk *Worker) listen(ctx context.Context, wake chan<- string) {
	for ctx.Err() == nil {
		l, err := wk.opts.Store.Listen(ctx)
		if err != nil {
			wk.log.Debug("listen", "err", err)
			sleep(ctx, wk.opts.Poll)
			continue
		}
		// Whatever came while not listening is read by the polls.
		for {
			world, err := l.Wait(ctx)
			if err != nil {
				wk.log.Debug("listen", "err", err)
				break
			}
			select {
			case wake <- world:
			default: // the polls read it
			}
		}
		_ = l.Close()
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// acquire reports the worker alive, takes worlds up to its share of them
// (the registered worlds over the live workers, at most MaxWorlds), and
// gives up worlds beyond its share so that a new worker gets some. Worlds
// whose lease expired (their worker died) are taken beyond the share: they
// must run somewhere now; a later round evens the load out.
func (wk *Worker) acquire(ctx context.Context) {
	census, err := wk.opts.Store.Heartbeat(ctx, wk.id, wk.opts.Lease)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		d := &wk.down
		now := time.Now()
		if d.fails == 0 {
			d.since = now
		}
		d.fails++
		if d.fails == 1 || now.Sub(d.noted) >= downEvery {
			d.noted = now
			wk.log.Warn("heartbeat failed: retrying", "failures", d.fails, "since", d.since.Format(time.RFC3339), "err", err)
		}
		return
	}
	if d := &wk.down; d.fails > 0 {
		wk.log.Info("heartbeat ok again", "failures", d.fails, "down_for", time.Since(d.since).Round(time.Millisecond))
		*d = downState{}
	}
	share := min((census.Worlds+census.Workers-1)/max(census.Workers, 1), wk.opts.MaxWorlds)
	// The worlds held are never taken again, even when their leases ran
	// out (the worker was paused, or starved of CPU, past its lease):
	// renew renews them in place, and the worlds go on with their effects
	// in flight. Taking one again would reopen it under a new token and
	// dispatch its effects in flight a second time.
	wk.mu.Lock()
	n, leaving := len(wk.held), 0
	holding := make([]string, 0, n)
	for name, h := range wk.held {
		holding = append(holding, name)
		if h.handingOver() {
			leaving++
		}
	}
	wk.mu.Unlock()
	var leases []pgstore.Lease
	switch {
	case n < share:
		leases, err = wk.opts.Store.Acquire(ctx, wk.id, share-n, wk.opts.Lease, holding)
	case n < wk.opts.MaxWorlds:
		leases, err = wk.opts.Store.AcquireExpired(ctx, wk.id, wk.opts.MaxWorlds-n, wk.opts.Lease, holding)
	}
	if err != nil {
		if ctx.Err() == nil {
			wk.log.Warn("acquire worlds", "err", err)
		}
		return
	}
	for _, l := range leases {
		wk.log.Info("took world", "world", l.World, "token", l.Token)
		h := newHeld(wk, l)
		wk.mu.Lock()
		old := wk.held[l.World]
		wk.held[l.World] = h
		wk.mu.Unlock()
		if old != nil {
			// Not expected (a world held is not acquired: holding), but
			// were it, the old one is stale: its commits are refused now.
			old.stop()
		}
		go h.run(ctx)
	}
	if excess := n + len(leases) - share - leaving; excess > 0 && len(leases) == 0 && leaving == 0 {
		wk.shed(ctx, min(excess, maxShed))
	}
}

// maxShed bounds how many worlds a worker gives up in one round.
const maxShed = 4

// shed gives up n worlds, so that a worker that joined gets some: those
// with the fewest effects in flight, idle ones first. Each is handed over
// (see held.handOver) once its effects in flight are answered, within a
// lease; one whose effects take longer stays, and goes on.
func (wk *Worker) shed(ctx context.Context, n int) {
	wk.mu.Lock()
	type candidate struct {
		h        *held
		inFlight int
	}
	var cs []candidate
	for _, h := range wk.held {
		if f := h.inFlight(); f >= 0 && !h.handingOver() {
			cs = append(cs, candidate{h, f})
		}
	}
	wk.mu.Unlock()
	slices.SortFunc(cs, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.inFlight, b.inFlight), strings.Compare(a.h.lease.World, b.h.lease.World))
	})
	for _, c := range cs[:min(n, len(cs))] {
		wk.handOver(ctx, c.h, wk.opts.Lease, false)
	}
}

// handOver asks h to hand its world over within wait (see held.handOver)
// and, once it has, releases its lease so that another worker takes it
// at once. If leaving, the world is closed after wait whatever is still
// in flight; else it stays and goes on.
func (wk *Worker) handOver(ctx context.Context, h *held, wait time.Duration, leaving bool) {
	if !h.askHandover(wait, leaving) {
		return
	}
	go func() {
		<-h.done
		if !h.handedOver() {
			return // it stopped otherwise (its lease was lost): nothing to give up
		}
		wk.mu.Lock()
		if wk.held[h.lease.World] == h {
			delete(wk.held, h.lease.World)
		}
		wk.mu.Unlock()
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := wk.opts.Store.Release(rctx, h.lease); err != nil {
			wk.log.Debug("release", "world", h.lease.World, "err", err)
		}
		wk.log.Info("handed world over", "world", h.lease.World, "token", h.lease.Token)
	}()
}

// renew renews the leases held; the worlds whose leases are lost stop.
func (wk *Worker) renew(ctx context.Context) error {
	wk.mu.Lock()
	leases := make([]pgstore.Lease, 0, len(wk.held))
	for _, h := range wk.held {
		leases = append(leases, h.lease)
	}
	wk.mu.Unlock()
	if len(leases) == 0 {
		return nil
	}
	kept, err := wk.opts.Store.Renew(ctx, wk.id, leases, wk.opts.Lease)
	if err != nil {
		return err
	}
	ok := make(map[string]pgstore.Lease, len(kept))
	for _, l := range kept {
		ok[l.World] = l
	}
	for _, l := range leases {
		if nl, still := ok[l.World]; still {
			wk.mu.Lock()
			if h := wk.held[l.World]; h != nil {
				h.setManifest(nl.Manifest)
			}
			wk.mu.Unlock()
			continue
		}
		wk.log.Info("lost world", "world", l.World, "token", l.Token)
		wk.drop(l.World, l.Token)
	}
	return nil
}

// drop stops the world held under token, if it still is.
func (wk *Worker) drop(name string, token int64) {
	wk.mu.Lock()
	h := wk.held[name]
	if h != nil && h.lease.Token == token {
		delete(wk.held, name)
	} else {
		h = nil
	}
	wk.mu.Unlock()
	if h != nil {
		h.stop()
	}
}

// forget removes h from the worlds held, if it still is there, without
// stopping it: h's own run calls it as it ends (drop would wait for that
// end, in the goroutine that makes it).
func (wk *Worker) forget(h *held) {
	wk.mu.Lock()
	if wk.held[h.lease.World] == h {
		delete(wk.held, h.lease.World)
	}
	wk.mu.Unlock()
}

// stopAll stops every world and releases its lease.
func (wk *Worker) stopAll() {
	wk.mu.Lock()
	all := wk.held
	wk.held = map[string]*held{}
	wk.mu.Unlock()
	var wg sync.WaitGroup
	for _, h := range all {
		wg.Go(func() {
			h.stop()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := wk.opts.Store.Release(ctx, h.lease); err != nil {
				wk.log.Debug("release", "world", h.lease.World, "err", err)
			}
		})
	}
	wg.Wait()
}
