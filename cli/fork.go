package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/agent/session"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

func newForkCommand(a *app) *cobra.Command {
	var (
		at       uint64
		name     string
		from     string
		manifest string
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "fork --at SEQ --world NEW [--from W]",
		Short: "Make a new world from the first records of another",
		Long: `Make world NEW from the records 1 to SEQ of world W (default main): they are
replayed, each derived record checked byte for byte as "demiurge replay"
does, and copied, followed by a Fork record that names W, SEQ and the hash
of W's record SEQ. The blobs they refer to are shared, not copied: the
store is content-addressed. W is only read.

NEW then goes on from there as a world of its own: send it another
message (demiurge run MANIFEST --world NEW -m ...), run it under other AIR
or another model, or re-run the recorded model answers with the tools live
(--llm cassette:DIR). "demiurge trace --world NEW" shows where it was
forked from; "demiurge replay --world NEW" checks its first records
against W's hash chain, and the rest as any world's.

SEQ must end a step: an input and the records it derived are written
together, and a world is whole only between steps. A SEQ inside a step is
refused, naming the seqs before and after it ("demiurge trace --records"
shows the steps: an input line, then its "→" lines).

The records are replayed under the manifest W recorded first (read from
the store), or under the AIR at M (--manifest) until W's first Manifest
record; a record written under a later manifest is replayed under that.`,
		Example: `  demiurge trace --records                 # find the seq: the last record before a user's message
  demiurge fork --at 3 --world retry
  demiurge run examples/demiurge --world retry -m "Say it another way."
  demiurge fork --from retry --at 40 --world retry2
  demiurge trace --world retry             # "forked from world main at seq 3"`,
		Args: wantArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			ctx := cmd.Context()
			if !cmd.Flags().Changed("at") {
				return usagef("--at is required: the seq of the last record of %s the new world keeps (demiurge trace --records --world %s shows them)", from, from)
			}
			if name == "" {
				return usagef("--world is required: the name of the new world")
			}
			for _, n := range []string{name, from} {
				if err := checkWorldFlag(n); err != nil {
					return err
				}
			}
			var cat *schema.Catalog
			if manifest != "" {
				if cat, err = a.loadCatalog(manifest); err != nil {
					return err
				}
			}
			s, err := a.openStore(ctx, false)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			st, err := storage(s)
			if err != nil {
				return err
			}
			head, err := world.Fork(ctx, world.ForkOptions{From: from, Name: name, At: at, Catalog: cat, Reducers: a.registry(), Storage: st})
			if err != nil {
				if _, diverged := errors.AsType[*world.DivergenceError](err); diverged {
					return explainMissing(ctx, s, describeKept(ctx, err))
				}
				return err
			}
			if asJSON {
				writeJSONLine(a.out, forkJSON{World: name, From: from, At: at, Head: session.Head{Seq: head.Seq, Hash: head.Hash.String()}})
				return nil
			}
			fmt.Fprintf(a.out, "forked world %s at seq %d into world %s: %s replayed and copied, the Fork record at seq %d\n", from, at, name, plural(int(at), "record"), head.Seq)
			fmt.Fprintf(a.out, "go on with it: demiurge run MANIFEST --world %s (or demiurge send --world %s ...)\n", name, name)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.Uint64Var(&at, "at", 0, "the `SEQ` of the last record of the world forked that the new world keeps")
	fl.StringVar(&name, "world", "", "the new world's `NAME`")
	fl.StringVar(&from, "from", defaultWorld, "the `NAME` of the world to fork")
	fl.BoolVar(&asJSON, "json", false, `print one JSON object: {"world", "from", "at", "head": {"seq", "hash"}}`)
	fl.StringVar(&manifest, "manifest", "", "the AIR at `PATH` to replay the world's first records under (default: the manifest it recorded, read from the store)")
	// --from completes with the worlds of the store; --world names a new
	// one, so it completes with none (registerCompletions leaves it so).
	_ = cmd.RegisterFlagCompletionFunc("from", completeWorlds(a))
	_ = cmd.RegisterFlagCompletionFunc("world", cobra.NoFileCompletions)
	return cmd
}

// forkJSON is what fork --json prints: the new world, where it was forked
// from, and its head (the Fork record).
type forkJSON struct {
	World string       `json:"world"`
	From  string       `json:"from"`
	At    uint64       `json:"at"`
	Head  session.Head `json:"head"`
}
