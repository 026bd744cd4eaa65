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

// ForkOptions configure Fork.
type ForkOptions struct {
	// From is the world forked and Name the new world, both in Storage.
	From, Name string
	// At is the seq of the last record of From that Name keeps. It must
	// end a step (a *MidStepError says which seqs around it do).
	At uint64
	// Catalog is the AIR From's records are replayed under until its
	// first Manifest record says otherwise (see RerunOptions); nil reads
	// that manifest from the store, where the world keeps it.
	Catalog *schema.Catalog
	// Reducers are the Go reducers From's manifests name.
	Reducers *reducer.Registry
	Storage  Storage
}

// ErrWorldExists is returned (wrapped) by Fork when the new world already
// has records.
var ErrWorldExists = errors.New("world: the world already exists")

// Fork makes a new world, Name, from the first At records of world From:
// it replays them, checking every derived record byte for byte as Rerun
// does, and appends them to Name's journal, followed by a Fork record
// ({world: From, seq: At, hash: the hash of From's record At}). The blobs
// they refer to are not copied: the store is content-addressed, and both
// worlds share them. Name then goes on as a world of its own (Open it
// with any manifest, model or adapters); replay verifies its records
// before the Fork record against From's chain, and the rest as any
// world's.
//
// The new world is appended in one transaction: it exists whole, or not
// at all. From is only read, and may be running meanwhile. It returns
// Name's head, the Fork record.
func Fork(ctx context.Context, opts ForkOptions) (journal.Head, error) {
	for _, n := range []string{opts.From, opts.Name} {
		if err := journal.ValidateWorld(n); err != nil {
			return journal.Head{}, err
		}
	}
	if opts.From == opts.Name {
		return journal.Head{}, fmt.Errorf("fork world %s: give the new world another name", opts.From)
	}
	if opts.Storage == nil || opts.Reducers == nil {
		return journal.Head{}, errors.New("world: ForkOptions need Reducers and Storage")
	}
	j := opts.Storage.Journal()
	head, err := j.Head(ctx, opts.From)
	if err != nil {
		return journal.Head{}, fmt.Errorf("fork world %s: %w", opts.From, err)
	}
	switch {
	case head.Seq == 0:
		return journal.Head{}, fmt.Errorf("fork world %s: it has no records", opts.From)
	case opts.At == 0 || opts.At > head.Seq:
		return journal.Head{}, fmt.Errorf("fork world %s at seq %d: it has records 1 to %d; fork at one of them", opts.From, opts.At, head.Seq)
	}
	if nh, err := j.Head(ctx, opts.Name); err != nil {
		return journal.Head{}, fmt.Errorf("fork into world %s: %w", opts.Name, err)
	} else if nh.Seq != 0 {
		return journal.Head{}, fmt.Errorf("fork into world %s: %w: it has %d records; fork into a new name", opts.Name, ErrWorldExists, nh.Seq)
	}
	cat := opts.Catalog
	if cat == nil {
		if cat, err = firstCatalog(ctx, opts.From, opts.Reducers, opts.Storage); err != nil {
			return journal.Head{}, fmt.Errorf("fork world %s: %w", opts.From, err)
		}
	}
	entries := make([]journal.Entry, 0, opts.At+1)
	res, err := Rerun(ctx, RerunOptions{Name: opts.From, Catalog: cat, Reducers: opts.Reducers, Storage: opts.Storage, To: opts.At,
		OnRecord: func(r journal.Record) { entries = append(entries, journal.Entry{Kind: r.Kind, Payload: r.Payload}) }})
	if err != nil {
		return journal.Head{}, fmt.Errorf("fork world %s at seq %d: %w", opts.From, opts.At, err)
	}
	fe, err := entryKV(KindFork, "world", opts.From, "seq", opts.At, "hash", res.Head.Hash)
	if err != nil {
		return journal.Head{}, err
	}
	nh, err := j.Append(ctx, opts.Name, journal.Head{}, append(entries, fe))
	if err != nil {
		return journal.Head{}, fmt.Errorf("fork into world %s: %w", opts.Name, err)
	}
	return nh, nil
}

// firstCatalog loads the catalog of the first Manifest record of world
// name from the store.
func firstCatalog(ctx context.Context, name string, reg *reducer.Registry, st Storage) (*schema.Catalog, error) {
	var in *Input
	err := st.Journal().Read(ctx, name, 1, func(r journal.Record) error {
		if r.Kind != KindManifest {
			return nil
		}
		var err error
		if in, err = DecodeInput(r); err != nil {
			return err
		}
		return errWindowDone
	})
	if err != nil && !errors.Is(err, errWindowDone) {
		return nil, err
	}
	if in == nil {
		return nil, errors.New("its journal records no manifest: give the AIR it runs")
	}
	return schema.LoadFromCAS(ctx, st.CAS(), in.Manifest, reg.LoadOptions())
}

// ForkOrigin is where a forked world came from: the world it was forked
// from, and the seq of that world's last record it kept.
type ForkOrigin struct {
	// Seq is the Fork record's own seq (At+1).
	Seq  uint64
	From string
	At   uint64
	// Hash is the hash of From's record At.
	Hash cas.Ref
}

// DecodeFork decodes a Fork record.
func DecodeFork(r journal.Record) (ForkOrigin, error) {
	fp, err := decodeFork(r)
	if err != nil {
		return ForkOrigin{}, err
	}
	return ForkOrigin{Seq: fp.seq, From: fp.from, At: fp.at, Hash: fp.hash}, nil
}
