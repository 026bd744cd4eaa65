package main

import (
	"github.com/spf13/cobra"
)

// newDecideCommand returns demiurge approve (approve true) or deny.
func newDecideCommand(a *app, getenv func(string) string, approve bool) *cobra.Command {
	f := &runFlags{decide: &decision{}}
	f.decide.Approve = approve
	name, verb := "approve", "Approve"
	if !approve {
		name, verb = "deny", "Deny"
	}
	cmd := &cobra.Command{
		Use:   name + " MANIFEST [CALL] [--reason TEXT] [--world W] [--chat ID] [run's model flags]",
		Short: verb + " a tool call that waits for the user's approval, and run the rest of its turn",
		Long: verb + ` a tool call of chat ID (--chat, default main) of world W that waits for
the user's approval (run --require-approval TOOL made it wait), then run the
rest of the turn as "demiurge run -m" does, with the model and limits the
flags give (the same flags as run). The decision is journaled: the call runs,
or the model reads that the user denied it and why (--reason). Without
CALL, the calls that wait are listed. Exit codes as run -m's.`,
		Example: "  demiurge " + name + " examples/demiurge                      # list the calls that wait\n" +
			"  demiurge " + name + " examples/demiurge call_abc123 --reason 'not now'",
		Args: wantArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.manifest = args[0]
			if len(args) == 2 {
				f.decide.call = args[1]
			}
			if err := f.validate(cmd); err != nil {
				return err
			}
			if err := f.check(true); err != nil {
				return err
			}
			return a.run(cmd.Context(), f, getenv)
		},
	}
	f.addFlags(cmd)
	cmd.Flags().StringVar(&f.decide.Reason, "reason", "", "why: what the model reads of a denial, and what the journal keeps")
	return cmd
}
