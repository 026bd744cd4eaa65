package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/agent/session"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/replay"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

func newReplayCommand(a *app) *cobra.Command {
	var (
		wf            worldFlags
		fromGenesis   bool
		underManifest bool
		asJSON        bool
	)
	cmd := &cobra.Command{
		Use:   "replay [BUNDLE | [--world W] [--manifest M]] [--from-genesis | --under-manifest] [--json]",
		Short: "Re-run a recorded session and verify it byte for byte",
		Long: `Feed the journaled inputs of a session to a fresh world, with no adapter
running (no model, no tool, no network), re-derive every derived record and
compare it byte for byte with the journal.

The session is a bundle directory (see "demiurge export") or world W of the
store (--world, default main). Replay starts from the newest snapshot, or
from the first record with --from-genesis; each snapshot met on the way is
checked against the re-derived state.

Each record is replayed under the manifest the world ran when it was
written. A world stores its manifest and every definition it pins when it
records them, so replay needs no AIR: it reads the manifest the journal
names from the store (a bundle carries its own). --manifest M gives the
AIR from files instead, and a note says if M is not the manifest the
journal last ran. With --under-manifest, every record is replayed from
genesis under one AIR (M; the bundle's; or else the manifest the world last
ran) instead: what a changed AIR would have derived differently.

On success it prints what it replayed and exits 0. The first difference is
reported as world, seq and record kind, with both sides decoded to JSON and a
diff, and replay exits 1. A difference in a reducer's state shows the paths
where the two states differ and a diff of their JSON; what the diverging
step derived (the replayed state) is kept in a new store in a temporary
directory, whose "demiurge --store DIR cas get" command the report prints.
Under --under-manifest, the report names the defs whose hashes differ
between the manifest the record was written under and the AIR given, with
a diff of each. Opens the store read-only and writes nothing to it.

With --json, one JSON object on stdout. On success:
  {"ok": true, "world", "bundle" (for a bundle), "records", "inputs",
   "from_seq", "snapshot" (if replay started from one), "head": {"seq",
   "hash"}, "manifest" (the one the journal last ran),
   "under_manifest" (with --under-manifest), "given_manifest" (the AIR
   given, when the journal has not run it)}
When replay fails: {"ok": false, "error", and for a divergence "world",
"seq", "reason" and "kept_in" (the store that keeps the replayed
state)}; the error is on stderr as well, and replay exits 1.`,
		Example: `  demiurge replay
  demiurge replay --world t1 --from-genesis --json
  demiurge replay testdata/sessions/demo
  # what the AIR as edited now would have derived differently
  demiurge replay --manifest examples/counter --under-manifest`,
		Args: wantArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if asJSON {
				defer func() {
					if _, usage := errors.AsType[*usageError](err); err != nil && !usage {
						writeJSONLine(a.out, replayFailure(err))
					}
				}()
			}
			ctx := cmd.Context()
			var res *world.RerunResult
			var given cas.Ref // the manifest of the AIR given
			source := ""
			out := replayJSON{OK: true, World: wf.world}
			if len(args) == 1 {
				if cmd.Flags().Changed("world") || wf.manifest != "" {
					return usagef("replay: give a bundle directory or --world/--manifest, not both")
				}
				b, err := replay.Read(args[0])
				if err != nil {
					return err
				}
				reg := a.registry()
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
				out.World, out.Bundle = b.Manifest.World, args[0]
			} else {
				if err := wf.check(false); err != nil {
					return err
				}
				var cat *schema.Catalog
				if wf.manifest != "" {
					if cat, err = a.loadCatalog(wf.manifest); err != nil {
						return err
					}
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
					return fmt.Errorf("replay: %w", noRecords(ctx, s, wf.world))
				}
				if cat == nil {
					if cat, err = a.storedCatalog(ctx, s, wf.world); err != nil {
						return explainMissing(ctx, s, fmt.Errorf("replay: %w", err))
					}
				}
				res, err = world.Rerun(ctx, world.RerunOptions{Name: wf.world, Catalog: cat, Reducers: a.registry(), Storage: st,
					FromGenesis: fromGenesis, UnderManifest: underManifest})
				if err != nil {
					return explainMissing(ctx, s, describeKept(ctx, err))
				}
				given = cat.ManifestRef()
				source = "world " + wf.world
			}
			last := res.Machine.Manifest()
			if asJSON {
				out.Records, out.Inputs, out.FromSeq = res.Records, res.Inputs, res.FromSeq
				out.Head, out.Manifest = &session.Head{Seq: res.Head.Seq, Hash: res.Head.Hash.String()}, last.String()
				if res.Snapshot.Valid() {
					out.Snapshot = res.Snapshot.String()
				}
				if underManifest {
					out.UnderManifest = given.String()
				} else if given.Valid() && last != given {
					out.GivenManifest = given.String()
				}
				writeJSONLine(a.out, out)
				return nil
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
			if !underManifest && given.Valid() && last != given {
				fmt.Fprintf(a.out, "note: the journal last ran manifest %s; the AIR given is manifest %s, which it has not run "+
					"(each record replayed under the manifest it was written under; --under-manifest replays them all under the AIR given)\n",
					last.Short(), given.Short())
			}
			return nil
		},
	}
	wf.add(cmd, "the world's AIR from files (`PATH`; default: the manifest the journal names, read from the store)")
	cmd.Flags().BoolVar(&fromGenesis, "from-genesis", false, "replay from the first record, not the newest snapshot")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the outcome as one JSON object (the shape is above)")
	cmd.Flags().BoolVar(&underManifest, "under-manifest", false, "replay every record from genesis under the AIR given (--manifest or the bundle's), not the manifests the journal recorded")
	return cmd
}

// replayJSON is what replay --json prints.
type replayJSON struct {
	OK            bool          `json:"ok"`
	World         string        `json:"world,omitempty"`
	Bundle        string        `json:"bundle,omitempty"`
	Records       uint64        `json:"records,omitempty"`
	Inputs        int           `json:"inputs,omitempty"`
	FromSeq       uint64        `json:"from_seq,omitempty"`
	Snapshot      string        `json:"snapshot,omitempty"`
	Head          *session.Head `json:"head,omitempty"`
	Manifest      string        `json:"manifest,omitempty"`
	UnderManifest string        `json:"under_manifest,omitempty"`
	GivenManifest string        `json:"given_manifest,omitempty"`
	// When replay fails:
	Error  string `json:"error,omitempty"`
	Seq    uint64 `json:"seq,omitempty"`
	Reason string `json:"reason,omitempty"`
	// KeptIn is the store that keeps what the diverging step derived.
	KeptIn string `json:"kept_in,omitempty"`
}

// replayFailure is what replay --json prints when replay fails.
func replayFailure(err error) replayJSON {
	out := replayJSON{Error: err.Error()}
	if d, ok := errors.AsType[*world.DivergenceError](err); ok {
		out.World, out.Seq, out.Reason = d.World, d.Seq, d.Reason
	}
	if de, ok := errors.AsType[*describedError](err); ok {
		out.KeptIn = de.opts.KeptIn
	}
	return out
}
