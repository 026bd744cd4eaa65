package world

import (
	"context"
	"errors"
	"fmt"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
)

// RerunOptions configure Rerun.
type RerunOptions struct {
	Name     string
	Catalog  *schema.Catalog
	Reducers *reducer.Registry
	// Storage holds the journal to replay and the blobs it refers to. Rerun
	// only reads it.
	Storage Storage
	// FromGenesis reruns every record; otherwise the rerun starts from the
	// newest snapshot.
	FromGenesis bool
	// UnderManifest replays every record, from genesis, under Catalog,
	// whatever manifests the journal recorded: what a changed manifest
	// would have derived differently. By default each record is replayed
	// under the manifest the world ran when it was written (Catalog is
	// used until the journal's first Manifest record says otherwise; the
	// others are read from the store).
	UnderManifest bool
	// OnStep, if set, is called after each input is applied, with the
	// input and what it derived.
	OnStep func(in *Input, step *Step)
	// To, if not 0, stops the rerun after record To, which must end a
	// step (else a *MidStepError); FromGenesis is then implied.
	To uint64
	// OnRecord, if set, is called with each record read, before it is
	// checked.
	OnRecord func(r journal.Record)
}

// RerunResult is what a rerun did.
type RerunResult struct {
	// Machine is the world's state after the last record.
	Machine *Machine
	Head    journal.Head
	// FromSeq is the first record rerun (1, or the record after the
	// snapshot the rerun started from).
	FromSeq uint64
	// Snapshot is the snapshot the rerun started from, if any.
	Snapshot cas.Ref
	// Records and Inputs count the records read and the inputs applied.
	Records uint64
	Inputs  int
}

// Rerun feeds a world's journaled inputs to a fresh machine, with no
// adapter running, and checks that every derived record it re-derives is
// byte for byte the one journaled. The first difference is returned as a
// *DivergenceError. Derived records are compared, never applied.
func Rerun(ctx context.Context, opts RerunOptions) (*RerunResult, error) {
	name := opts.Name
	st := opts.Storage
	head, err := st.Journal().Head(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("world %s: %w", name, err)
	}
	res := &RerunResult{Head: head, FromSeq: 1}
	m := NewMachine(opts.Catalog, opts.Reducers, st.CAS())
	m.pinned = opts.UnderManifest
	if head.Seq == 0 {
		res.Machine = m
		return res, nil
	}
	if opts.To > head.Seq {
		return nil, fmt.Errorf("world %s has %d records: no record %d", name, head.Seq, opts.To)
	}
	if !opts.FromGenesis && !opts.UnderManifest && opts.To == 0 {
		snap, snapSeq, err := latestSnapshot(ctx, st.Journal(), name, head.Seq)
		if err != nil {
			return nil, fmt.Errorf("world %s: %w", name, err)
		}
		res.Snapshot = snap
		if res.Snapshot.Valid() {
			rm, err := RestoreMachine(ctx, opts.Catalog, opts.Reducers, st.CAS(), res.Snapshot)
			if err != nil {
				return nil, fmt.Errorf("world %s: %w", name, err)
			}
			if rm.Height() != snapSeq {
				return nil, fmt.Errorf("world %s: the snapshot at seq %d says height %d", name, snapSeq, rm.Height())
			}
			m, res.FromSeq = rm, snapSeq+1
		}
	}
	v := &verifier{m: m, world: name, ctx: ctx, onStep: opts.OnStep}
	read := v.record
	if opts.To > 0 || opts.OnRecord != nil {
		read = func(r journal.Record) error {
			if opts.To > 0 && r.Seq > opts.To {
				return errWindowDone
			}
			if opts.OnRecord != nil {
				opts.OnRecord(r)
			}
			return v.record(r)
		}
	}
	if err := st.Journal().Read(ctx, name, res.FromSeq, read); err != nil && !errors.Is(err, errWindowDone) {
		return nil, err
	}
	if opts.To > 0 {
		if len(v.expect) > 0 {
			return nil, &MidStepError{World: name, Seq: opts.To, Input: v.stepKind, From: v.stepSeq, To: v.stepSeq + uint64(v.stepLen) - 1}
		}
		res.Head = v.last
	} else if err := v.finish(); err != nil {
		return nil, err
	}
	if err := v.checkForks(st.Journal()); err != nil {
		return nil, err
	}
	res.Machine, res.Records, res.Inputs = m, v.count, v.inputs
	return res, nil
}

// MidStepError is the error of a cut inside a step: the records of one
// step (an input and what it derived) are written together, and a world
// is whole only between steps.
type MidStepError struct {
	World string
	Seq   uint64
	// Input is the kind of the step's input; From and To are the seqs of
	// its first record (the input) and its last.
	Input    string
	From, To uint64
}

func (e *MidStepError) Error() string {
	return fmt.Sprintf("world %s: seq %d is inside a step: the %s at seq %d and what it derived (seqs %d to %d) were written together, and a world is whole only between steps; cut at seq %d or %d",
		e.World, e.Seq, e.Input, e.From, e.From, e.To, e.From-1, e.To)
}

func snapshotRef(r journal.Record) (cas.Ref, error) {
	v, err := schema.Decode(r.Payload)
	if err != nil {
		return cas.Ref{}, fmt.Errorf("snapshot record %d: %w", r.Seq, err)
	}
	sm, _ := v.(*schema.Map)
	sv, _ := sm.Get("snapshot")
	s, _ := sv.(string)
	ref, err := cas.ParseRef(s)
	if err != nil {
		return cas.Ref{}, fmt.Errorf("snapshot record %d: %w", r.Seq, err)
	}
	return ref, nil
}

// snapshotWindow is how many records latestSnapshot reads first; each
// further window is four times the one before.
const snapshotWindow = 1024

// latestSnapshot returns the newest Snapshot record of world (its
// snapshot's ref and its seq), or the zero ref if there is none. It reads
// the journal backwards from head in windows that grow fourfold, so that
// finding a recent snapshot costs the records after it, not the whole
// journal. (Each window's read checks the hash chain from the window's
// start; only Verify and replay from genesis check a journal from seq 1.)
func latestSnapshot(ctx context.Context, j journal.Reader, world string, head uint64) (cas.Ref, uint64, error) {
	end, window := head, uint64(snapshotWindow)
	for end > 0 {
		from := uint64(1)
		if end > window {
			from = end - window + 1
		}
		var ref cas.Ref
		var seq uint64
		err := j.Read(ctx, world, from, func(r journal.Record) error {
			if r.Seq > end {
				return errWindowDone
			}
			if r.Kind != KindSnapshot {
				return nil
			}
			s, err := snapshotRef(r)
			if err != nil {
				return err
			}
			ref, seq = s, r.Seq
			return nil
		})
		if err != nil && !errors.Is(err, errWindowDone) {
			return cas.Ref{}, 0, err
		}
		if seq > 0 {
			return ref, seq, nil
		}
		end, window = from-1, window*4
	}
	return cas.Ref{}, 0, nil
}

// errWindowDone stops a read at the end of latestSnapshot's window.
var errWindowDone = errors.New("world: end of window")
