package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/adapters/builtin"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// defaultWorld is the world a command uses without --world.
const defaultWorld = "main"

// worldFlags are the flags of commands that work on one world.
type worldFlags struct {
	manifest string
	world    string
}

func (f *worldFlags) add(cmd *cobra.Command, manifestUsage string) {
	cmd.Flags().StringVar(&f.world, "world", defaultWorld, "the world's `NAME` in the store")
	if manifestUsage != "" {
		cmd.Flags().StringVarP(&f.manifest, "manifest", "m", "", manifestUsage)
	}
}

func (f *worldFlags) check(needManifest bool) error {
	if err := checkWorldFlag(f.world); err != nil {
		return err
	}
	if needManifest && f.manifest == "" {
		return usagef("--manifest is required: the path of the world's AIR (manifest.air, manifest.air.json or its folder)")
	}
	return nil
}

// loadCatalog loads and validates a world's AIR with this binary's reducers.
func loadCatalog(path string) (*schema.Catalog, error) {
	cat, err := schema.Load(path, &schema.LoadOptions{Reducers: newRegistry().Names()})
	if err != nil {
		if l, ok := err.(schema.ErrorList); ok {
			return nil, fmt.Errorf("%s does not load:\n%v", path, l)
		}
		return nil, err
	}
	return cat, nil
}

// storage returns world storage over an open store.
func storage(s *store.Handle) (world.Storage, error) {
	if pg := s.Postgres(); pg != nil {
		return pg.Storage(), nil
	}
	if s.Bolt() == nil { // read through the process that writes it
		return readStorage{s.CAS(), s.Journal()}, nil
	}
	return world.NewBoltStorage(s.Bolt().CAS(), s.Bolt().Journal())
}

// readStorage is the world storage of a store read through the process
// that writes it: what replay reads. It commits nothing.
type readStorage struct {
	cas     cas.Store
	journal journal.Store
}

func (s readStorage) CAS() cas.Store         { return s.cas }
func (s readStorage) Journal() journal.Store { return s.journal }
func (s readStorage) Commit(context.Context, string, journal.Head, []journal.Entry, [][]byte) (journal.Head, error) {
	return journal.Head{}, journal.ErrReadOnly
}

// adapters returns the effect adapters this binary runs.
func adapters() map[string]effects.Adapter {
	return builtin.Adapters(&http.Client{})
}

// worldManifest returns the manifest ref a world last recorded, or the
// zero ref if it has none.
func worldManifest(ctx context.Context, j journal.Reader, name string) (ref string, err error) {
	err = j.Read(ctx, name, 1, func(r journal.Record) error {
		if r.Kind == world.KindManifest {
			in, err := world.DecodeInput(r)
			if err != nil {
				return err
			}
			ref = in.Manifest.String()
		}
		return nil
	})
	return ref, err
}

// localStorage returns the storage op runs a world on in this process. In
// a PostgreSQL store a world runs on the worker that holds its lease,
// never beside it in a command, so op refuses one.
func localStorage(s *store.Handle, op string) (world.Storage, error) {
	if s.Postgres() != nil {
		return nil, fmt.Errorf("%s runs the world in this process, but in a PostgreSQL store (%s) worlds run on workers (demiurge worker), one owner each: send events with demiurge send, chat with demiurge run", op, s.Dir())
	}
	return storage(s)
}
