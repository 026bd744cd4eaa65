package ui

import (
	"context"
	"errors"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
)

// Source is what the view reads of a store: its worlds, their records and
// the blobs they name. It is the read side of a store: a store.Live (what
// demiurge ui reads, through the process that writes the store, or its
// file while none does; it is a Waiter too), or Parts of one opened
// read-only or held in memory.
// Its methods must be safe for concurrent use: each request reads on its
// own. The view never writes through it.
type Source interface {
	journal.Lister
	journal.Reader
	cas.Getter
}

// Waiter is an optional interface of a Source that can wait for records to
// land: Wait returns the world's head once its seq is past after, or an
// error when ctx ends first. Without it, live pages look at the world's
// head every Options.Poll.
type Waiter interface {
	Wait(ctx context.Context, world string, after uint64) (journal.Head, error)
}

// Journal is the part of a journal a Source reads.
type Journal interface {
	journal.Lister
	journal.Reader
}

// Parts is a Source made of a journal and a CAS.
type Parts struct {
	Journal Journal
	CAS     cas.Getter
}

// Worlds implements journal.Lister.
func (p Parts) Worlds(ctx context.Context) ([]string, error) { return p.Journal.Worlds(ctx) }

// Head implements journal.Reader.
func (p Parts) Head(ctx context.Context, world string) (journal.Head, error) {
	return p.Journal.Head(ctx, world)
}

// Read implements journal.Reader.
func (p Parts) Read(ctx context.Context, world string, from uint64, fn func(journal.Record) error) error {
	return p.Journal.Read(ctx, world, from, fn)
}

// Get implements cas.Getter.
func (p Parts) Get(ctx context.Context, ref cas.Ref) ([]byte, error) { return p.CAS.Get(ctx, ref) }

// Has implements cas.Haser, with the CAS's Has if it has one.
func (p Parts) Has(ctx context.Context, ref cas.Ref) (bool, error) {
	if h, ok := p.CAS.(cas.Haser); ok {
		return h.Has(ctx, ref)
	}
	_, err := p.CAS.Get(ctx, ref)
	if errors.Is(err, cas.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// wait returns the world's head once its seq is past after.
func wait(ctx context.Context, src Source, poll time.Duration, world string, after uint64) (journal.Head, error) {
	if w, ok := src.(Waiter); ok {
		return w.Wait(ctx, world, after)
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		h, err := src.Head(ctx, world)
		if err != nil || h.Seq > after {
			return h, err
		}
		select {
		case <-ctx.Done():
			return h, ctx.Err()
		case <-t.C:
		}
	}
}

// errReadOnly is what the view's storage says to a write: the view only
// reads.
var errReadOnly = errors.New("ui: the web view only reads the store")

// readStorage is the world.Storage a replay from the page runs on: it
// reads the Source and writes nothing.
type readStorage struct{ src Source }

func (s readStorage) CAS() cas.Store         { return readCAS(s) }
func (s readStorage) Journal() journal.Store { return readJournal(s) }
func (s readStorage) Commit(context.Context, string, journal.Head, []journal.Entry, [][]byte) (journal.Head, error) {
	return journal.Head{}, errReadOnly
}

type readCAS struct{ src Source }

func (c readCAS) Get(ctx context.Context, r cas.Ref) ([]byte, error) { return c.src.Get(ctx, r) }
func (c readCAS) Put(context.Context, []byte) (cas.Ref, error)       { return cas.Ref{}, errReadOnly }
func (c readCAS) Has(ctx context.Context, r cas.Ref) (bool, error) {
	_, err := c.src.Get(ctx, r)
	if errors.Is(err, cas.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
func (c readCAS) Stat(ctx context.Context, r cas.Ref) (int64, error) {
	b, err := c.src.Get(ctx, r)
	return int64(len(b)), err
}
func (c readCAS) Iterate(context.Context, func(cas.Ref, int64) error) error {
	return errors.New("ui: the web view does not list the store's blobs")
}
func (c readCAS) Close() error { return nil }

type readJournal struct{ src Source }

func (j readJournal) Append(context.Context, string, journal.Head, []journal.Entry) (journal.Head, error) {
	return journal.Head{}, errReadOnly
}
func (j readJournal) Read(ctx context.Context, world string, from uint64, fn func(journal.Record) error) error {
	return j.src.Read(ctx, world, from, fn)
}
func (j readJournal) Head(ctx context.Context, world string) (journal.Head, error) {
	return j.src.Head(ctx, world)
}
func (j readJournal) Worlds(ctx context.Context) ([]string, error) { return j.src.Worlds(ctx) }
func (j readJournal) Close() error                                 { return nil }
