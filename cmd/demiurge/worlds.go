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
		addManifestFlag(cmd, &f.manifest, manifestUsage)
	}
}

// addManifestFlag adds --manifest to cmd. It has no shorthand: -m is
// --message in run. The old spelling -m still sets it, with a warning on
// stderr, until the next release.
func addManifestFlag(cmd *cobra.Command, p *string, usage string) {
	cmd.Flags().StringVar(p, "manifest", "", usage)
	f := cmd.Flags().VarPF(&oldManifestFlag{p: p, cmd: cmd}, "manifest-m", "m", "deprecated spelling of --manifest")
	f.Hidden = true
}

// oldManifestFlag is -m where it meant --manifest: it sets the manifest and
// warns that the spelling is going away.
type oldManifestFlag struct {
	p   *string
	cmd *cobra.Command
}

func (f *oldManifestFlag) String() string { return *f.p }
func (f *oldManifestFlag) Type() string   { return "string" }

func (f *oldManifestFlag) Set(v string) error {
	fmt.Fprintln(f.cmd.ErrOrStderr(), "demiurge: -m for --manifest is deprecated; use --manifest")
	*f.p = v
	return nil
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
func storage(s *store.Store) (world.Storage, error) {
	return world.NewBoltStorage(s.CAS(), s.Journal())
}

// adapters returns the effect adapters this binary runs.
func adapters() map[string]effects.Adapter {
	return builtin.Adapters(&http.Client{})
}

// storedCatalog rebuilds, from the store, the catalog of the manifest
// world name last recorded: a world stores its manifest and every def it
// pins when it records it (schema.LoadFromCAS). A world without records
// is an error.
func storedCatalog(ctx context.Context, s *store.Store, name string) (*schema.Catalog, error) {
	ref, err := worldManifest(ctx, s.Journal(), name)
	if err != nil {
		return nil, err
	}
	if ref == "" {
		return nil, fmt.Errorf("world %s has no records in store %s", name, s.Dir())
	}
	r, err := cas.ParseRef(ref)
	if err != nil {
		return nil, fmt.Errorf("world %s: manifest record: %w", name, err)
	}
	cat, err := schema.LoadFromCAS(ctx, s.CAS(), r, &schema.LoadOptions{Reducers: newRegistry().Names()})
	if err != nil {
		return nil, fmt.Errorf("world %s: %w (give the world's AIR with --manifest)", name, err)
	}
	return cat, nil
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
