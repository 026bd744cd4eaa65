package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/replay"
)

func newTraceCommand(a *app) *cobra.Command {
	var (
		wf     worldFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "trace [BUNDLE | --world W] [--json]",
		Short: "Print a session as a timeline",
		Long: `Print the journal of world W of the store, or of a bundle directory, as a
readable timeline: the events that came in with their time, what each caused
(reducer states, events, plans started and ended, effects and their receipts,
denials), one record a line. With --json, one JSON object per record with its
seq, kind, hash and decoded payload, for tools. Opens the store read-only.`,
		Args: wantArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			ctx := cmd.Context()
			if len(args) == 1 {
				if cmd.Flags().Changed("world") {
					return usagef("trace: give a bundle directory or --world, not both")
				}
				b, err := replay.Read(args[0])
				if err != nil {
					return err
				}
				st, err := b.Storage(ctx)
				if err != nil {
					return err
				}
				return replay.Trace(ctx, a.out, st.Journal(), b.Manifest.World, replay.TraceOptions{JSON: asJSON, CAS: st.CAS()})
			}
			if err := wf.check(false); err != nil {
				return err
			}
			s, err := a.openStore(true)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			head, err := s.Journal().Head(ctx, wf.world)
			if err != nil {
				return err
			}
			if head.Seq == 0 {
				return fmt.Errorf("trace: world %s has no records in store %s", wf.world, s.Dir())
			}
			return replay.Trace(ctx, a.out, s.Journal(), wf.world, replay.TraceOptions{JSON: asJSON, CAS: s.CAS()})
		},
	}
	wf.add(cmd, "")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per record")
	return cmd
}
