package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/pgstore"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// held is a world the worker holds the lease of, and runs.
type held struct {
	wk    *Worker
	lease pgstore.Lease

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{} // cap 1: look at the inbox now

	mu       sync.Mutex
	manifest cas.Ref      // what clients registered the world to run
	w        *world.World // the world while it is open
	ho       handover
}

// handover is a request to hand the world over (see held.askHandover).
type handover struct {
	asked    bool
	wait     time.Duration // how long to wait for the effects in flight
	leaving  bool          // the worker stops: close the world after wait whatever runs
	watched  bool          // the worker waits for the handover to release the lease
	finished bool          // the world was handed over: closed with nothing in flight
}

func newHeld(wk *Worker, l pgstore.Lease) *held {
	ctx, cancel := context.WithCancel(context.Background())
	return &held{wk: wk, lease: l, ctx: ctx, cancel: cancel, done: make(chan struct{}), wake: make(chan struct{}, 1), manifest: l.Manifest}
}

// askHandover asks the world to be handed over: it stops taking messages,
// waits up to wait for its effects in flight to be answered (the intents
// their receipts emit are journaled and held for the next owner), and is
// closed; unless leaving, a world whose effects do not end in time goes
// on as before. A second ask while one is under way can only make it
// leaving. It reports whether the caller is the first to wait for this
// world's handover (it then releases the lease once done is closed and
// handedOver says so).
func (h *held) askHandover(wait time.Duration, leaving bool) (first bool) {
	h.mu.Lock()
	switch {
	case !h.ho.asked:
		h.ho.asked, h.ho.wait, h.ho.leaving = true, wait, leaving
	case leaving && !h.ho.leaving:
		h.ho.wait, h.ho.leaving = max(h.ho.wait, wait), true
	}
	first = !h.ho.watched
	h.ho.watched = true
	h.mu.Unlock()
	h.poke()
	return first
}

// handingOver reports whether a handover was asked and is under way.
func (h *held) handingOver() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ho.asked && !h.ho.finished
}

// handedOver reports whether the world was handed over, closed with no
// effect in flight (or, leaving, after the handover's wait).
func (h *held) handedOver() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ho.finished
}

// inFlight returns how many effects the world has in flight, or -1 while
// it is not open.
func (h *held) inFlight() int {
	h.mu.Lock()
	w := h.w
	h.mu.Unlock()
	if w == nil {
		return -1
	}
	return w.InFlight()
}

// errHandedOver ends serve once the world was handed over.
var errHandedOver = errors.New("cluster: the world was handed over")

// drain hands the world over as askHandover asked (see there): it reports
// whether it did; an error is the world's, or ctx's.
func (h *held) drain(ctx context.Context, w *world.World) (bool, error) {
	start := time.Now()
	log := h.wk.log.With("world", h.lease.World, "token", h.lease.Token)
	for {
		h.mu.Lock()
		ho := h.ho
		h.mu.Unlock()
		dctx, cancel := context.WithDeadline(ctx, start.Add(ho.wait))
		err := w.Drain(dctx)
		cancel()
		switch {
		case err == nil:
			return true, nil
		case ctx.Err() != nil:
			return false, ctx.Err()
		case !errors.Is(err, context.DeadlineExceeded):
			return false, err
		}
		h.mu.Lock()
		again := h.ho.wait != ho.wait || h.ho.leaving != ho.leaving
		h.mu.Unlock()
		switch {
		case again: // asked again meanwhile, for longer: the worker stops
			continue
		case ho.leaving:
			log.Warn("handing the world over with effects in flight: they run again on its next owner", "in_flight", w.InFlight(), "waited", ho.wait)
			return true, nil
		}
		// Giving it up to even out the load can wait: it goes on.
		log.Info("kept the world: its effects in flight outlast the handover's wait", "in_flight", w.InFlight(), "waited", ho.wait)
		w.Resume()
		h.mu.Lock()
		h.ho.asked = false
		h.mu.Unlock()
		return false, nil
	}
}

func (h *held) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

func (h *held) setManifest(m cas.Ref) {
	h.mu.Lock()
	changed := h.manifest != m
	h.manifest = m
	h.mu.Unlock()
	if changed {
		h.poke()
	}
}

// stop stops running the world and waits until it is closed.
func (h *held) stop() {
	h.cancel()
	<-h.done
}

// errReopen ends serve to open the world again with another manifest.
var errReopen = errors.New("cluster: reopen the world")

// run opens and serves the world until its lease is lost or the worker
// stops, reopening it whenever a commit failed (it recovers from the
// journal) or its manifest changed.
func (h *held) run(parent context.Context) {
	defer close(h.done)
	stop := context.AfterFunc(parent, h.cancel)
	defer stop()
	log := h.wk.log.With("world", h.lease.World, "token", h.lease.Token)
	backoff := 100 * time.Millisecond
	for h.ctx.Err() == nil {
		err := h.serveOnce(h.ctx)
		switch {
		case h.ctx.Err() != nil:
			return
		case errors.Is(err, pgstore.ErrLeaseLost):
			log.Info("lease lost: stopped", "err", err)
			h.wk.forget(h)
			return
		case errors.Is(err, errHandedOver):
			h.mu.Lock()
			h.ho.finished = true
			h.mu.Unlock()
			return
		case errors.Is(err, errReopen):
			backoff = 100 * time.Millisecond
			continue
		case err != nil:
			log.Warn("world stopped; reopening it from the journal", "err", err, "in", backoff)
			sleep(h.ctx, backoff)
			backoff = min(2*backoff, 5*time.Second)
		}
	}
}

// serveOnce opens the world, feeds it its inbox until something ends it,
// and closes it.
func (h *held) serveOnce(ctx context.Context) (err error) {
	st := h.wk.opts.Store
	name := h.lease.World
	cat, err := h.catalog(ctx)
	if err != nil {
		return err
	}
	fs := &fenced{s: st, fence: *h.lease.Fence()}
	var rt *Runtime
	if h.wk.opts.Open != nil {
		if rt, err = h.wk.opts.Open(ctx, Env{Name: name, Catalog: cat, Storage: fs, Lease: h.lease, Store: st}); err != nil {
			return fmt.Errorf("cluster: world %s: %w", name, err)
		}
	} else {
		rt = &Runtime{}
	}
	defer func() {
		if rt.Close != nil {
			if cerr := rt.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}
	}()
	o := rt.Options
	o.Name, o.Catalog, o.Storage, o.Reducers = name, cat, fs, h.wk.opts.Reducers
	if o.Logger == nil {
		o.Logger = h.wk.opts.Logger
	}
	w, err := world.Open(ctx, o)
	if err != nil {
		return fmt.Errorf("cluster: open world %s: %w", name, err)
	}
	h.mu.Lock()
	h.w = w
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.w = nil
		h.mu.Unlock()
		w.Close()
	}()
	if rt.Attach != nil {
		rt.Attach(w)
	}
	return h.serve(ctx, w, fs, cat)
}

// catalog loads the manifest the world is registered to run, else the
// one it last ran.
func (h *held) catalog(ctx context.Context) (*schema.Catalog, error) {
	h.mu.Lock()
	ref := h.manifest
	h.mu.Unlock()
	st := h.wk.opts.Store
	if !ref.Valid() {
		var err error
		if ref, err = lastManifest(ctx, st.Journal(), h.lease.World); err != nil {
			return nil, err
		}
		if !ref.Valid() {
			return nil, fmt.Errorf("cluster: world %s has no manifest: neither registered nor journaled", h.lease.World)
		}
	}
	cat, err := schema.LoadFromCAS(ctx, st.CAS(), ref, h.wk.opts.Reducers.LoadOptions())
	if err != nil {
		return nil, fmt.Errorf("cluster: world %s: %w", h.lease.World, err)
	}
	return cat, nil
}

// lastManifest returns the manifest a world's journal last recorded.
func lastManifest(ctx context.Context, j journal.Reader, name string) (cas.Ref, error) {
	var ref cas.Ref
	err := j.Read(ctx, name, 1, func(r journal.Record) error {
		if r.Kind == world.KindManifest {
			in, err := world.DecodeInput(r)
			if err != nil {
				return err
			}
			ref = in.Manifest
		}
		return nil
	})
	return ref, err
}

// inboxBatch is how many messages serve reads from the inbox at once.
const inboxBatch = 64

// serve feeds the world the messages of its inbox, one at a time in id
// order, each sent once its predecessor is journaled, until the world
// breaks (a commit failed: the error), its lease is lost, its manifest
// changes (errReopen) or ctx is done.
func (h *held) serve(ctx context.Context, w *world.World, fs *fenced, cat *schema.Catalog) error {
	st := h.wk.opts.Store
	name := h.lease.World
	check := time.NewTicker(min(h.wk.opts.Poll, 100*time.Millisecond))
	defer check.Stop()
	lastPoll := time.Time{}
	for {
		if err := w.Err(); err != nil {
			return err
		}
		h.mu.Lock()
		asked := h.ho.asked
		h.mu.Unlock()
		if asked {
			// No message is delivered from here on: the next owner
			// delivers what waits in the inbox.
			done, err := h.drain(ctx, w)
			switch {
			case err != nil:
				return err
			case done:
				return errHandedOver
			}
		}
		h.mu.Lock()
		want := h.manifest
		h.mu.Unlock()
		if want.Valid() && want != cat.ManifestRef() {
			return errReopen
		}
		if time.Since(lastPoll) >= h.wk.opts.Poll || lastPoll.IsZero() {
			lastPoll = time.Now()
			msgs, err := st.Waiting(ctx, name, inboxBatch)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				h.wk.log.Debug("inbox", "world", name, "err", err)
			}
			for _, m := range msgs {
				if m.Manifest.Valid() && m.Manifest != cat.ManifestRef() {
					h.setManifest(m.Manifest)
					return errReopen
				}
				if err := h.deliver(ctx, w, fs, cat, m); err != nil {
					return err
				}
			}
			if len(msgs) == inboxBatch {
				lastPoll = time.Time{} // more wait: read on at once
				continue
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-h.wake:
			lastPoll = time.Time{}
		case <-check.C:
		}
	}
}

// deliver journals one message: it sends the message's event to the world,
// and the commit that journals it marks it taken (see fenced.Commit). A
// message whose value does not fit its schema is refused; nothing of it
// is journaled.
func (h *held) deliver(ctx context.Context, w *world.World, fs *fenced, cat *schema.Catalog, m pgstore.Message) error {
	refuse := func(reason string) error {
		_, err := h.wk.opts.Store.Refuse(ctx, m.ID, reason, fs.fence)
		return err
	}
	if _, ok := cat.SchemaType(m.Schema); !ok {
		return refuse(fmt.Sprintf("schema %s is not in the manifest", m.Schema))
	}
	v, err := schema.NormalizeJSON(cat, schema.RefType(m.Schema), m.Value)
	if err != nil {
		return refuse(fmt.Sprintf("%s does not fit %s: %v", m.Value, m.Schema, err))
	}
	enc, err := schema.Encode(v)
	if err != nil {
		return refuse(fmt.Sprintf("%s: %v", m.Schema, err))
	}
	fs.expect(&pendingMessage{id: m.ID, schema: m.Schema, value: enc})
	defer fs.expect(nil)
	if _, err := w.Send(ctx, m.Schema, v, nil); err != nil {
		if errors.Is(err, world.ErrInvalidInput) {
			return refuse(err.Error())
		}
		return err
	}
	if !fs.taken() {
		return fmt.Errorf("cluster: world %s: message %d was applied but no commit journaled it (a bug)", h.lease.World, m.ID)
	}
	return nil
}

// pendingMessage is the inbox message a world is being sent.
type pendingMessage struct {
	id     int64
	schema string
	value  []byte // canonical CBOR of the normalized value
	done   bool   // a commit journaled it
}

// fenced is the storage of a world run under a lease: every commit is
// fenced with the lease, and the commit that journals the message being
// delivered marks it taken.
type fenced struct {
	s     *pgstore.Store
	fence pgstore.Fence

	mu  sync.Mutex
	msg *pendingMessage
}

func (f *fenced) CAS() cas.Store         { return f.s.CAS() }
func (f *fenced) Journal() journal.Store { return f.s.Journal() }

func (f *fenced) expect(m *pendingMessage) {
	f.mu.Lock()
	f.msg = m
	f.mu.Unlock()
}

func (f *fenced) taken() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.msg != nil && f.msg.done
}

// Commit implements world.Storage.
func (f *fenced) Commit(ctx context.Context, name string, expect journal.Head, entries []journal.Entry, blobs [][]byte) (journal.Head, error) {
	f.mu.Lock()
	m := f.msg
	f.mu.Unlock()
	opts := pgstore.CommitOptions{Fence: &f.fence}
	if m != nil && !m.done {
		for i, e := range entries {
			if e.Kind != world.KindEvent || !m.matches(e) {
				continue
			}
			opts.Taken = []pgstore.InboxTaken{{ID: m.id, Seq: expect.Seq + 1 + uint64(i)}}
			break
		}
	}
	head, err := f.s.CommitWith(ctx, name, expect, entries, blobs, opts)
	if err == nil && len(opts.Taken) > 0 {
		f.mu.Lock()
		m.done = true
		f.mu.Unlock()
	}
	return head, err
}

// matches reports whether the DomainEvent entry e is the message's event.
func (m *pendingMessage) matches(e journal.Entry) bool {
	in, err := world.DecodeInput(journal.Record{Kind: e.Kind, Payload: e.Payload})
	if err != nil || in.Schema != m.schema || in.Key != nil {
		return false
	}
	enc, err := schema.Encode(in.Value)
	return err == nil && bytes.Equal(enc, m.value)
}
