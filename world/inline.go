package world

import (
	"context"
	"fmt"
	"sync"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/journal"
)

// An effect whose adapter is an effects.InlineAdapter runs inside the step
// that emits its intent: World.applyBatch runs it right after that step
// and applies its receipt as the batch's next input, so the intent, the run
// and the receipt commit in one transaction. While it runs, the world's
// lock is held by the step; the effect reads the world through its ctx
// (InStep, StepJournal, StepCAS), which sees the machine as the step left
// it and the step's records and blobs as they will be committed.

// stepKey is the context key of a step's view.
type stepKey struct{}

// stepView is what an inline effect sees of the world running it.
type stepView struct {
	w       *World
	base    journal.Head    // the journal's head before the batch
	entries []journal.Entry // the batch's records so far

	mu   sync.Mutex // effects of one step run concurrently
	recs []journal.Record
}

// step returns the view of w inside the step ctx belongs to, or nil.
func (w *World) step(ctx context.Context) *stepView {
	sv, _ := ctx.Value(stepKey{}).(*stepView)
	if sv == nil || sv.w != w {
		return nil
	}
	return sv
}

// records returns the step's records so far with their seqs and hashes,
// chained to the journal's head.
func (sv *stepView) records() ([]journal.Record, error) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if len(sv.recs) == len(sv.entries) {
		return sv.recs, nil
	}
	prev := sv.base
	if n := len(sv.recs); n > 0 {
		prev = journal.Head{Seq: sv.recs[n-1].Seq, Hash: sv.recs[n-1].Hash}
	} else if prev.Seq == 0 {
		prev.Hash = journal.Genesis(sv.w.opts.Name)
	}
	for _, e := range sv.entries[len(sv.recs):] {
		r := journal.Record{Seq: prev.Seq + 1, Kind: e.Kind, Payload: e.Payload, Prev: prev.Hash}
		b, err := r.Encode()
		if err != nil {
			return nil, fmt.Errorf("world %s: record %d of the step: %w", sv.w.opts.Name, r.Seq, err)
		}
		r.Hash = cas.Sum(b)
		sv.recs = append(sv.recs, r)
		prev = journal.Head{Seq: r.Seq, Hash: r.Hash}
	}
	return sv.recs, nil
}

// InStep reports whether ctx belongs to an effect w runs inside one of its
// steps (an effects.InlineAdapter's Run or RunsInline), and if so calls fn
// with the machine as the step has left it and the head its records will
// have once committed (with the effect's receipt). fn must not keep the
// machine or modify it. The step holds the world's lock: inside it, read
// the world this way, never with View (State and Head show only the last
// commit, not the step).
func (w *World) InStep(ctx context.Context, fn func(m *Machine, head journal.Head)) (bool, error) {
	sv := w.step(ctx)
	if sv == nil {
		return false, nil
	}
	recs, err := sv.records()
	if err != nil {
		return true, err
	}
	head := sv.base
	if n := len(recs); n > 0 {
		head = journal.Head{Seq: recs[n-1].Seq, Hash: recs[n-1].Hash}
	}
	fn(w.m, head)
	return true, nil
}

// StepJournal returns w's journal as an effect sees it: inside a step
// (see InStep) it holds the step's records after the committed ones;
// elsewhere it is the journal.
func (w *World) StepJournal() journal.Reader { return stepJournal{w} }

type stepJournal struct{ w *World }

func (j stepJournal) Read(ctx context.Context, world string, from uint64, fn func(journal.Record) error) error {
	sv := j.w.step(ctx)
	if sv == nil || world != j.w.opts.Name {
		return j.w.opts.Storage.Journal().Read(ctx, world, from, fn)
	}
	recs, err := sv.records()
	if err != nil {
		return err
	}
	if from <= sv.base.Seq {
		// Committed records, up to the step's first: the world is their
		// only writer, so its head is still sv.base.
		err := j.w.opts.Storage.Journal().Read(ctx, world, from, func(r journal.Record) error {
			if r.Seq > sv.base.Seq {
				return nil
			}
			return fn(r)
		})
		if err != nil {
			return err
		}
	}
	for _, r := range recs {
		if r.Seq < from {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		r.Payload = append([]byte(nil), r.Payload...)
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func (j stepJournal) Head(ctx context.Context, world string) (journal.Head, error) {
	if j.w.step(ctx) == nil || world != j.w.opts.Name {
		return j.w.opts.Storage.Journal().Head(ctx, world)
	}
	var head journal.Head
	_, err := j.w.InStep(ctx, func(_ *Machine, h journal.Head) { head = h })
	return head, err
}

// StepCAS returns w's blobs as an effect sees them: inside a step (see
// InStep) they include the blobs the step will commit; elsewhere they are
// the store's.
func (w *World) StepCAS() cas.Getter { return stepCAS{w} }

type stepCAS struct{ w *World }

func (c stepCAS) Get(ctx context.Context, r cas.Ref) ([]byte, error) {
	if c.w.step(ctx) != nil {
		return c.w.cas.Get(ctx, r)
	}
	return c.w.opts.Storage.CAS().Get(ctx, r)
}

// inlineRun is what running one intent inline gave: its receipt's input
// and the adapter's blobs, or a nil input when it did not run inline.
type inlineRun struct {
	in    *Input
	blobs [][]byte
	fault error // a fault of the store the effect met (see effects.Completion)
}

// runInline runs the intents one step emitted inside that step, those
// whose adapter is an effects.InlineAdapter that agrees to, concurrently,
// and returns what each gave, in order. base is the journal's head before
// the batch; records are the batch's so far. The caller holds w.mu.
func (w *World) runInline(ctx context.Context, intents []*effects.Intent, base journal.Head, records []journal.Entry) []inlineRun {
	sv := &stepView{w: w, base: base, entries: records}
	ctx = context.WithValue(ctx, stepKey{}, sv)
	out := make([]inlineRun, len(intents))
	run := func(i int) {
		c, ok := w.disp.RunInline(ctx, intents[i])
		if !ok {
			return
		}
		if c.Fault != nil {
			out[i] = inlineRun{fault: c.Fault}
			return
		}
		in := receiptInput(c)
		// Stamped when its run ended, not when its turn in the batch
		// comes (after the other effects of the step have run).
		in.arrived = w.opts.Now()
		out[i] = inlineRun{in: in, blobs: c.Blobs}
	}
	if len(intents) == 1 {
		run(0)
		return out
	}
	var wg sync.WaitGroup
	for i := range intents {
		wg.Go(func() { run(i) })
	}
	wg.Wait()
	return out
}

// receiptInput is the input of a completed effect.
func receiptInput(c effects.Completion) *Input {
	return &Input{Kind: KindReceipt, Intent: c.Intent.Hash, Status: c.Receipt.Status, Payload: c.Receipt.Payload,
		Error: c.Receipt.Error, AdapterID: c.Receipt.AdapterID, CostCents: c.Receipt.CostCents}
}

// Stepping returns the world whose step ctx belongs to (see InStep), or
// nil when ctx is not the context of an effect running inside a step.
func Stepping(ctx context.Context) *World {
	if sv, _ := ctx.Value(stepKey{}).(*stepView); sv != nil {
		return sv.w
	}
	return nil
}
