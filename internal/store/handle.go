package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/pgstore"
)

// Handle is an open store of either kind, as the commands use it: a
// directory holding one bbolt file (Open), or a PostgreSQL database named
// by a postgres:// URL (pgstore.Open).
type Handle struct {
	name string
	bolt *Store
	pg   *pgstore.Store
}

// IsURL reports whether where names a PostgreSQL store rather than a
// directory.
func IsURL(where string) bool { return pgstore.IsURL(where) }

// OpenAt opens the store where names: a postgres:// or postgresql:// URL
// opens a PostgreSQL store (creating its tables unless read-only), and
// anything else is a directory, opened as Open does. opts applies to both
// (LockTimeout and NoSync only to a directory). Errors never show the
// URL's password.
func OpenAt(ctx context.Context, where string, opts *Options) (*Handle, error) {
	if !IsURL(where) {
		s, err := Open(where, opts)
		if err != nil {
			return nil, err
		}
		return &Handle{name: where, bolt: s}, nil
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	readOnly := opts != nil && opts.ReadOnly
	s, err := pgstore.Open(ctx, where, &pgstore.Options{ReadOnly: readOnly})
	if err != nil {
		if errors.Is(err, pgstore.ErrNoStore) {
			return nil, fmt.Errorf("%w: %w", ErrNotExist, err)
		}
		return nil, err
	}
	return &Handle{name: s.Name(), pg: s}, nil
}

// Dir returns the store's directory, or its URL with the password
// redacted: the name to show in messages.
func (h *Handle) Dir() string { return h.name }

// Bolt returns the bbolt store, or nil for a PostgreSQL one.
func (h *Handle) Bolt() *Store { return h.bolt }

// Postgres returns the PostgreSQL store, or nil for a bbolt one.
func (h *Handle) Postgres() *pgstore.Store { return h.pg }

// CAS returns the store's blobs.
func (h *Handle) CAS() cas.Store {
	if h.pg != nil {
		return h.pg.CAS()
	}
	return h.bolt.CAS()
}

// Journal returns the store's journal.
func (h *Handle) Journal() journal.Store {
	if h.pg != nil {
		return h.pg.Journal()
	}
	return h.bolt.Journal()
}

// CheckFile checks the pages of a bbolt store's file (see
// cas.Bolt.CheckFile); a PostgreSQL store has no file of ours to check,
// and returns nil.
func (h *Handle) CheckFile(ctx context.Context) error {
	if h.pg != nil {
		return nil
	}
	return h.bolt.CAS().CheckFile(ctx)
}

// Close closes the store.
func (h *Handle) Close() error {
	if h.pg != nil {
		return h.pg.Close()
	}
	return h.bolt.Close()
}
