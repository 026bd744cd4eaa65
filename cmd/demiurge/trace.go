package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/agent/session"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/replay"
)

func newTraceCommand(a *app) *cobra.Command {
	var (
		wf      worldFlags
		asJSON  bool
		records bool
		follow  bool
	)
	cmd := &cobra.Command{
		Use:   "trace [BUNDLE | --world W [--follow]] [--json]",
		Short: "Print a session as a timeline",
		Long: `Print the journal of world W of the store, or of a bundle directory.

For an agent world (one with demiurge chats), trace shows the session as
turns: what the user said, each model call of the turn (model, latency,
tokens, cost, why it stopped), the tool calls the model made with their
arguments and results or errors (with durations, and the commands of bash
scripts), rejected calls, and the guards that stopped a turn. With --json,
one JSON object per turn.

Otherwise, or with --records, it prints every record as a timeline: the
events that came in with their time, what each caused (reducer states,
events, plans started and ended, effects and their receipts, denials), one
record a line; with --json, one JSON object per record with its seq, kind,
hash and decoded payload.

Trace needs no AIR (it takes no --manifest): the records, and the blobs
they name, are all in the store or the bundle. Opens the store read-only.

With --follow (-f), trace goes on printing what is committed to the world as
it lands, until Ctrl-C: the lines of a turn as its model and tool calls
finish (with --json, each turn once it has ended), or each record. It works
while another process writes the store (a running "demiurge run"), reading
through that process what it has made durable; when that process stops, it
says so on stderr and reads on from the file, and from the next process that
writes the store.`,
		Example: `  demiurge trace
  demiurge trace --json | jq -c '{request_id, user}'
  demiurge trace testdata/sessions/demo --records
  demiurge trace --follow`,
		Args: wantArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			ctx := cmd.Context()
			if len(args) == 1 {
				if cmd.Flags().Changed("world") {
					return usagef("trace: give a bundle directory or --world, not both")
				}
				if follow {
					return usagef("trace: --follow follows a world of the store; a bundle does not grow")
				}
				b, err := replay.Read(args[0])
				if err != nil {
					return err
				}
				st, err := b.Storage(ctx)
				if err != nil {
					return err
				}
				return trace(ctx, a.out, st.Journal(), st.CAS(), b.Manifest.World, asJSON, records)
			}
			if err := wf.check(false); err != nil {
				return err
			}
			if follow {
				return followTrace(ctx, a, wf.world, asJSON, records)
			}
			s, err := a.openStore(cmd.Context(), true)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			defer func() { err = explainMissing(cmd.Context(), s, err) }()
			head, err := s.Journal().Head(ctx, wf.world)
			if err != nil {
				return err
			}
			if head.Seq == 0 {
				return fmt.Errorf("trace: %w", noRecords(ctx, s, wf.world))
			}
			// The trace shows what it can without the blobs it cannot read
			// (a store imported from a trimmed bundle lacks some), and then
			// fails if that was because the store is damaged.
			g := &notingGetter{Getter: s.CAS()}
			if err := trace(ctx, a.out, s.Journal(), g, wf.world, asJSON, records); err != nil {
				return err
			}
			return g.check(ctx, s, "trace")
		},
	}
	wf.add(cmd, "")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per turn (or per record)")
	cmd.Flags().BoolVar(&records, "records", false, "print every record, even for an agent world")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "go on printing what is committed as it lands, until Ctrl-C")
	return cmd
}

// trace prints a world: as turns if it is an agent world, else (or with
// records) as its records.
func trace(ctx context.Context, w io.Writer, j journal.Reader, g cas.Getter, world string, asJSON, records bool) error {
	if !records {
		c := session.NewReader(g)
		if err := j.Read(ctx, world, 1, c.Record); err != nil {
			return err
		}
		if c.IsChat() {
			if asJSON {
				return c.WriteJSON(w)
			}
			return writeSession(w, c.Turns(), c.Forks())
		}
	}
	return replay.Trace(ctx, w, j, world, replay.TraceOptions{JSON: asJSON, CAS: g})
}
