package replay

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/world"
)

// Keep keeps what a divergence's step derived for a person to read: a
// replay stores nothing (it leaves the store it reads unchanged, and may
// read a store another process writes), so the replayed state exists
// nowhere else. Keep writes the step's blobs (the replayed state among
// them) and the journal's state into a new store in a new temporary
// directory, and returns it: `demiurge --store DIR cas get --json REF`
// reads them; DescribeOptions.KeptIn makes the report say so. The caller
// removes the directory when it is done with it.
//
// It returns "" and no error when err is not a divergence, or one that
// has nothing to keep.
func Keep(ctx context.Context, err error) (string, error) {
	var d *world.DivergenceError
	if !errors.As(err, &d) {
		return "", nil
	}
	blobs := d.Blobs
	if s := d.JournalState; s != nil && s.Blob != nil {
		blobs = append(blobs[:len(blobs):len(blobs)], s.Blob)
	}
	if len(blobs) == 0 {
		return "", nil
	}
	dir, err := os.MkdirTemp("", "demiurge-divergence-")
	if err != nil {
		return "", fmt.Errorf("keep the divergence's states: %w", err)
	}
	s, err := store.Open(dir, nil)
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("keep the divergence's states: %w", err)
	}
	for _, b := range blobs {
		if _, err = s.CAS().Put(ctx, b); err != nil {
			break
		}
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("keep the divergence's states in %s: %w", dir, err)
	}
	return dir, nil
}
