package world

import (
	"bytes"
	"context"
	"fmt"

	"github.com/demiurge-dev/demiurge/journal"
)

// DivergenceError reports the first record where re-deriving a journal
// gives something else than what the journal holds.
type DivergenceError struct {
	World string
	Seq   uint64
	// Reason says what differs, in words.
	Reason string
	// Journal is the record the journal holds at Seq (nil if the journal
	// ended before it).
	Journal *journal.Record
	// Derived is what the code derives at Seq (nil if it derives nothing
	// there).
	Derived *journal.Entry
}

func (e *DivergenceError) Error() string {
	kind := ""
	switch {
	case e.Journal != nil:
		kind = " (" + e.Journal.Kind + ")"
	case e.Derived != nil:
		kind = " (" + e.Derived.Kind + ")"
	}
	return fmt.Sprintf("world %s: replay diverges at seq %d%s: %s", e.World, e.Seq, kind, e.Reason)
}

// verifier feeds journal records to a machine: inputs are applied, and each
// derived record must equal, byte for byte, what the machine derives.
type verifier struct {
	m      *Machine
	world  string
	ctx    context.Context
	expect []journal.Entry // derived records still expected from the last input
	// OnStep, if set, is called after each input is applied.
	onStep func(in *Input, step *Step)
	inputs int
	count  uint64
}

func (v *verifier) record(r journal.Record) error {
	v.count++
	if len(v.expect) > 0 {
		want := v.expect[0]
		v.expect = v.expect[1:]
		if r.Kind != want.Kind || !bytes.Equal(r.Payload, want.Payload) {
			reason := "the record differs from what the code derives"
			if r.Kind != want.Kind {
				reason = fmt.Sprintf("the journal has a %s record where the code derives a %s record", r.Kind, want.Kind)
			}
			rr, ww := r, want
			return &DivergenceError{World: v.world, Seq: r.Seq, Reason: reason, Journal: &rr, Derived: &ww}
		}
		return nil
	}
	if r.Kind == KindSnapshot {
		// Snapshots are taken when a world chooses to: check that the
		// journaled one captures the state the code re-derived.
		e, _, err := v.m.Snapshot()
		if err != nil {
			return err
		}
		if !bytes.Equal(e.Payload, r.Payload) {
			rr, ww := r, e
			return &DivergenceError{World: v.world, Seq: r.Seq, Reason: "the snapshot differs from the state the code re-derives", Journal: &rr, Derived: &ww}
		}
		return nil
	}
	if !IsInput(r.Kind) {
		rr := r
		return &DivergenceError{World: v.world, Seq: r.Seq, Journal: &rr,
			Reason: fmt.Sprintf("the journal has a %s record the code does not derive (an extra record)", r.Kind)}
	}
	in, err := DecodeInput(r)
	if err != nil {
		return err
	}
	in.raw = r.Payload // the input is what was journaled, byte for byte
	if in.Kind != KindManifest && in.Stamp.JournalHeight != v.m.Height() {
		return fmt.Errorf("world %s: record %d was stamped at height %d, but %d records precede it", v.world, r.Seq, in.Stamp.JournalHeight, v.m.Height())
	}
	step, err := v.m.Apply(v.ctx, in)
	if err != nil {
		return fmt.Errorf("world %s: replaying record %d (%s): %w", v.world, r.Seq, r.Kind, err)
	}
	if !bytes.Equal(step.Records[0].Payload, r.Payload) {
		rr, ww := r, step.Records[0]
		return &DivergenceError{World: v.world, Seq: r.Seq, Reason: "the input record does not re-encode to the same bytes", Journal: &rr, Derived: &ww}
	}
	v.inputs++
	v.expect = step.Records[1:]
	if v.onStep != nil {
		v.onStep(in, step)
	}
	return nil
}

// finish reports derived records the journal is missing.
func (v *verifier) finish() error {
	if len(v.expect) > 0 {
		ww := v.expect[0]
		return &DivergenceError{World: v.world, Seq: v.m.Height() - uint64(len(v.expect)) + 1, Derived: &ww,
			Reason: fmt.Sprintf("the code derives a %s record the journal does not have (a missing record)", ww.Kind)}
	}
	return nil
}
