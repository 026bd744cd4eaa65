package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newCASStatCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "stat REF",
		Short: "Print a blob's ref and size in bytes",
		Long: `Print "REF SIZE" for the blob stored under REF, without reading or
verifying its bytes (use "cas get" or "cas verify" for that). A missing blob
is an error. Opens the store read-only.`,
		Example: `  demiurge cas stat "$(demiurge cas put notes.txt)"`,
		Args:    wantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			ref, err := parseRefArg(args[0])
			if err != nil {
				return err
			}
			s, err := a.openStore(cmd.Context(), true)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			defer func() { err = explainMissing(cmd.Context(), s, err) }()
			size, err := s.CAS().Stat(cmd.Context(), ref)
			if err != nil {
				return storeErr("cas stat", s.Dir(), err)
			}
			_, err = fmt.Fprintf(a.out, "%s %d\n", ref, size)
			return err
		},
	}
}
