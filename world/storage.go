package world

import (
	"context"
	"fmt"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"go.etcd.io/bbolt"
)

// Storage is where a world keeps its journal and blobs.
type Storage interface {
	CAS() cas.Store
	Journal() journal.Store
	// Commit appends a step's records and stores its blobs atomically: both
	// are durable when it returns, or neither is written.
	Commit(ctx context.Context, world string, expect journal.Head, entries []journal.Entry, blobs [][]byte) (journal.Head, error)
}

// BoltStorage keeps the CAS and the journal in one bbolt file, so a step's
// records and blobs commit in one transaction, with one fsync.
type BoltStorage struct {
	cas     *cas.Bolt
	journal *journal.Bolt
}

// NewBoltStorage returns storage over a CAS store and a journal that share
// one bbolt DB.
func NewBoltStorage(c *cas.Bolt, j *journal.Bolt) (*BoltStorage, error) {
	if c.DB() != j.DB() {
		return nil, fmt.Errorf("world: the CAS and the journal must share one bbolt file")
	}
	return &BoltStorage{cas: c, journal: j}, nil
}

// CAS returns the blob store.
func (s *BoltStorage) CAS() cas.Store { return s.cas }

// Journal returns the journal.
func (s *BoltStorage) Journal() journal.Store { return s.journal }

// Commit appends entries and puts blobs in one bbolt transaction.
func (s *BoltStorage) Commit(ctx context.Context, world string, expect journal.Head, entries []journal.Entry, blobs [][]byte) (journal.Head, error) {
	if len(blobs) == 0 {
		return s.journal.Append(ctx, world, expect, entries)
	}
	return s.journal.AppendWith(ctx, world, expect, entries, func(tx *bbolt.Tx) error {
		for _, b := range blobs {
			if _, err := s.cas.PutTx(tx, b); err != nil {
				return err
			}
		}
		return nil
	})
}

// MemoryStorage keeps everything in memory, for tests and replay.
type MemoryStorage struct {
	cas     *cas.Memory
	journal *journal.Memory
}

// NewMemoryStorage returns empty in-memory storage.
func NewMemoryStorage() *MemoryStorage {
	return &MemoryStorage{cas: cas.NewMemory(), journal: journal.NewMemory()}
}

// CAS returns the blob store.
func (s *MemoryStorage) CAS() cas.Store { return s.cas }

// Journal returns the journal.
func (s *MemoryStorage) Journal() journal.Store { return s.journal }

// Commit puts the blobs, then appends the entries.
func (s *MemoryStorage) Commit(ctx context.Context, world string, expect journal.Head, entries []journal.Entry, blobs [][]byte) (journal.Head, error) {
	for _, b := range blobs {
		if _, err := s.cas.Put(ctx, b); err != nil {
			return journal.Head{}, err
		}
	}
	return s.journal.Append(ctx, world, expect, entries)
}
