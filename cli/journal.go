package cli

import (
	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/journal"
)

func newJournalCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "journal",
		Short: "Verify and dump the worlds' journals",
		Long: `Each world has a journal: an append-only sequence of records numbered from 1,
each holding the hash of the one before it (a hash chain). The journal
commands open the store read-only and leave it unchanged.`,
		Example: `  demiurge journal verify
  demiurge journal dump --from 10`,
		Args: cobra.ArbitraryArgs,
		RunE: groupRunE,
	}
	cmd.AddCommand(
		newJournalVerifyCommand(a),
		newJournalDumpCommand(a),
	)
	return cmd
}

// checkWorldFlag reports a malformed --world as a usage error.
func checkWorldFlag(world string) error {
	if err := journal.ValidateWorld(world); err != nil {
		return usagef("--world: %v", err)
	}
	return nil
}
