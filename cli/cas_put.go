package cli

import (
	"fmt"
	"github.com/demiurge-dev/demiurge/internal/readall"
	"io"

	"github.com/spf13/cobra"
)

func newCASPutCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "put [FILE|-]",
		Short: "Store a file's bytes (or stdin's) and print its ref",
		Long: `Store the bytes of FILE, or of stdin when FILE is "-" or absent, as a raw
blob, and print its ref. Storing bytes that are already stored changes
nothing. Creates the store if it does not exist.`,
		Example: `  demiurge cas put notes.txt
  echo hello | demiurge cas put`,
		Args: wantArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			name := "-"
			if len(args) == 1 {
				name = args[0]
			}
			var data []byte
			if name == "-" {
				data, err = io.ReadAll(a.in)
				if err != nil {
					return fmt.Errorf("cas put: read stdin: %w", err)
				}
			} else if data, err = readall.File(name, "a file to put (pipe anything else to standard input)", readall.NoLimit); err != nil {
				return fmt.Errorf("cas put: %w", err)
			}
			s, err := a.openStore(cmd.Context(), false)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			ref, err := s.CAS().Put(cmd.Context(), data)
			if err != nil {
				return fmt.Errorf("cas put %s: %w", name, err)
			}
			a.log.Debug("put", "file", name, "ref", ref, "size", len(data))
			_, err = fmt.Fprintln(a.out, ref)
			return err
		},
	}
}
