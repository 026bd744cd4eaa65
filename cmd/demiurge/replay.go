package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/replay"
	"github.com/demiurge-dev/demiurge/world"
)

func newReplayCommand(a *app) *cobra.Command {
	var (
		wf            worldFlags
		fromGenesis   bool
		underManifest bool
	)
	cmd := &cobra.Command{
		Use:   "replay [BUNDLE | --world W --manifest M] [--from-genesis | --under-manifest]",
		Short: "Re-run a recorded session and verify it byte for byte",
		Long: `Feed the journaled inputs of a session to a fresh world, with no adapter
running (no model, no tool, no network), re-derive every derived record and
compare it byte for byte with the journal.

The session is a bundle directory (see "demiurge export") or world W of the
store, replayed with the AIR at M. Replay starts from the newest snapshot,
or from the first record with --from-genesis; each snapshot met on the way
is checked against the re-derived state.

Each record is replayed under the manifest the world ran when it was
written: a world whose AIR changed recorded each change, and the earlier
definitions are read back from the store. With --under-manifest, every
record is replayed from genesis under the AIR given (M, or the bundle's)
instead: what the changed AIR would have derived differently.

On success it prints what it replayed and exits 0. The first difference is
reported as world, seq and record kind, with both sides decoded to JSON and a
diff, and replay exits 1. A difference in a reducer's state shows the paths
where the two states differ and a diff of their JSON; what the diverging
step derived (the replayed state) is kept in a new store in a temporary
directory, whose "demiurge --store DIR cas get" command the report prints.
Under --under-manifest, the report names the defs whose hashes differ
between the manifest the record was written under and the AIR given, with
a diff of each. Opens the store read-only and writes nothing to it.`,
		Args: wantArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			ctx := cmd.Context()
			var res *world.RerunResult
			var given cas.Ref // the manifest of the AIR given
			source := ""
			if len(args) == 1 {
				if cmd.Flags().Changed("world") || wf.manifest != "" {
					return usagef("replay: give a bundle directory or --world/--manifest, not both")
				}
				b, err := replay.Read(args[0])
				if err != nil {
					return err
				}
				reg := newRegistry()
				if underManifest {
					res, err = replay.ReplayBundleUnder(ctx, b, reg)
				} else {
					res, err = replay.ReplayBundle(ctx, b, reg, fromGenesis)
				}
				if err != nil {
					return describeKept(ctx, err)
				}
				if cat, cerr := b.Catalog(reg); cerr == nil {
					given = cat.ManifestRef()
				}
				source = "bundle " + args[0] + " (world " + b.Manifest.World + ")"
			} else {
				if err := wf.check(true); err != nil {
					return err
				}
				cat, err := loadCatalog(wf.manifest)
				if err != nil {
					return err
				}
				s, err := a.openStore(cmd.Context(), true)
				if err != nil {
					return err
				}
				defer closeStore(s, &err)
				st, err := storage(s)
				if err != nil {
					return err
				}
				head, err := s.Journal().Head(ctx, wf.world)
				if err != nil {
					return err
				}
				if head.Seq == 0 {
					return fmt.Errorf("replay: world %s has no records in store %s", wf.world, s.Dir())
				}
				res, err = world.Rerun(ctx, world.RerunOptions{Name: wf.world, Catalog: cat, Reducers: newRegistry(), Storage: st,
					FromGenesis: fromGenesis, UnderManifest: underManifest})
				if err != nil {
					return explainMissing(ctx, s, describeKept(ctx, err))
				}
				given = cat.ManifestRef()
				source = "world " + wf.world
			}
			from := "genesis"
			if res.Snapshot.Valid() {
				from = fmt.Sprintf("snapshot %s at seq %d", res.Snapshot.Short(), res.FromSeq-1)
			}
			under := ""
			if underManifest {
				under = " under manifest " + given.Short()
			}
			fmt.Fprintf(a.out, "ok: %s replays to the same bytes%s: %s from %s, %s, head %s\n",
				source, under, plural(int(res.Records), "record"), from, plural(res.Inputs, "input"), res.Head)
			if last := res.Machine.Manifest(); !underManifest && given.Valid() && last != given {
				fmt.Fprintf(a.out, "note: the journal last ran manifest %s; the AIR given is manifest %s, which it has not run "+
					"(each record replayed under the manifest it was written under; --under-manifest replays them all under the AIR given)\n",
					last.Short(), given.Short())
			}
			return nil
		},
	}
	wf.add(cmd, "the world's AIR, for --world (`PATH`)")
	cmd.Flags().BoolVar(&fromGenesis, "from-genesis", false, "replay from the first record, not the newest snapshot")
	cmd.Flags().BoolVar(&underManifest, "under-manifest", false, "replay every record from genesis under the AIR given (--manifest or the bundle's), not the manifests the journal recorded")
	return cmd
}
