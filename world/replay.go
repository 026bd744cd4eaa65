package world

import (
	"context"
	"fmt"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
)

// ReplayOptions configure Replay.
type ReplayOptions struct {
	Name     string
	Catalog  *schema.Catalog
	Reducers *reducer.Registry
	// Storage holds the journal to replay and the blobs it refers to. Replay
	// only reads it.
	Storage Storage
	// FromGenesis replays every record; otherwise replay starts from the
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
}

// ReplayResult is what a replay did.
type ReplayResult struct {
	// Machine is the world's state after the last record.
	Machine *Machine
	Head    journal.Head
	// FromSeq is the first record replayed (1, or the record after the
	// snapshot replay started from).
	FromSeq uint64
	// Snapshot is the snapshot replay started from, if any.
	Snapshot cas.Ref
	// Records and Inputs count the records read and the inputs applied.
	Records uint64
	Inputs  int
}

// Replay feeds a world's journaled inputs to a fresh machine, with no
// adapter running, and checks that every derived record it re-derives is
// byte for byte the one journaled. The first difference is returned as a
// *DivergenceError. Derived records are compared, never applied.
func Replay(ctx context.Context, opts ReplayOptions) (*ReplayResult, error) {
	name := opts.Name
	st := opts.Storage
	head, err := st.Journal().Head(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("world %s: %w", name, err)
	}
	res := &ReplayResult{Head: head, FromSeq: 1}
	m := NewMachine(opts.Catalog, opts.Reducers, st.CAS())
	m.pinned = opts.UnderManifest
	if head.Seq == 0 {
		res.Machine = m
		return res, nil
	}
	if !opts.FromGenesis && !opts.UnderManifest {
		var snapSeq uint64
		err = st.Journal().Read(ctx, name, 1, func(r journal.Record) error {
			if r.Kind != KindSnapshot {
				return nil
			}
			ref, err := snapshotRef(r)
			if err != nil {
				return err
			}
			res.Snapshot, snapSeq = ref, r.Seq
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("world %s: %w", name, err)
		}
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
	if err := st.Journal().Read(ctx, name, res.FromSeq, v.record); err != nil {
		return nil, err
	}
	if err := v.finish(); err != nil {
		return nil, err
	}
	res.Machine, res.Records, res.Inputs = m, v.count, v.inputs
	return res, nil
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
