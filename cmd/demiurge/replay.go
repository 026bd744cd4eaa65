package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/replay"
	"github.com/demiurge-dev/demiurge/world"
)

func newReplayCommand(a *app) *cobra.Command {
	var (
		wf          worldFlags
		fromGenesis bool
	)
	cmd := &cobra.Command{
		Use:   "replay [BUNDLE | --world W --manifest M] [--from-genesis]",
		Short: "Re-run a recorded session and verify it byte for byte",
		Long: `Feed the journaled inputs of a session to a fresh world, with no adapter
running (no model, no tool, no network), re-derive every derived record and
compare it byte for byte with the journal.

The session is a bundle directory (see "demiurge export") or world W of the
store, replayed with the AIR at M. Replay starts from the newest snapshot,
or from the first record with --from-genesis; each snapshot met on the way
is checked against the re-derived state.

On success it prints what it replayed and exits 0. The first difference is
reported as world, seq and record kind, with both sides decoded to JSON and a
diff, and replay exits 1. Opens the store read-only.`,
		Args: wantArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			ctx := cmd.Context()
			var res *world.ReplayResult
			source := ""
			if len(args) == 1 {
				if cmd.Flags().Changed("world") || wf.manifest != "" {
					return usagef("replay: give a bundle directory or --world/--manifest, not both")
				}
				b, err := replay.Read(args[0])
				if err != nil {
					return err
				}
				res, err = replay.ReplayBundle(ctx, b, newRegistry(), fromGenesis)
				if err != nil {
					return fmt.Errorf("%s", replay.Describe(err))
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
				s, err := a.openStore(true)
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
				res, err = world.Replay(ctx, world.ReplayOptions{Name: wf.world, Catalog: cat, Reducers: newRegistry(), Storage: st, FromGenesis: fromGenesis})
				if err != nil {
					return fmt.Errorf("%s", replay.Describe(err))
				}
				source = "world " + wf.world
			}
			from := "genesis"
			if res.Snapshot.Valid() {
				from = fmt.Sprintf("snapshot %s at seq %d", res.Snapshot.Short(), res.FromSeq-1)
			}
			fmt.Fprintf(a.out, "ok: %s replays to the same bytes: %s from %s, %s, head %s\n",
				source, plural(int(res.Records), "record"), from, plural(res.Inputs, "input"), res.Head)
			return nil
		},
	}
	wf.add(cmd, "the world's AIR, for --world (`PATH`)")
	cmd.Flags().BoolVar(&fromGenesis, "from-genesis", false, "replay from the first record, not the newest snapshot")
	return cmd
}
