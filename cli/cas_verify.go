package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/internal/store"
)

func newCASVerifyCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "verify",
		Short: "Check the store's file and that every blob still hashes to its ref",
		Long: `Check the store's file page by page (bbolt's own consistency check: a damaged
page can hide blobs and records without changing a byte of them), then read
every blob back and check that its bytes still hash to its ref. A damaged
file is printed on stdout as "damaged: <what and where>", each bad blob as
"corrupt REF (bytes hash to GOT)" (or "corrupt REF: reason" when it cannot be
read), then a summary. Exits 1 if the file or any blob is bad. Opens the
store read-only.`,
		Example: `  demiurge cas verify
  demiurge --store backup/.demiurge cas verify`,
		Args: wantArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			s, err := a.openStore(cmd.Context(), true)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			fileErr := s.CheckFile(cmd.Context())
			if errors.Is(fileErr, store.ErrServed) {
				fmt.Fprintf(a.out, "file not checked: process %d writes the store (run cas verify again once it has stopped to check the pages)\n", s.Served())
				fileErr = nil
			}
			if fileErr != nil {
				if cmd.Context().Err() != nil {
					return cmd.Context().Err()
				}
				fmt.Fprintf(a.out, "damaged: %v\n", fileErr)
			}
			checked, bad, err := cas.Verify(cmd.Context(), s.CAS(), func(ref cas.Ref, err error) {
				if ce, ok := errors.AsType[*cas.CorruptError](err); ok && ce.Got.Valid() {
					fmt.Fprintf(a.out, "corrupt %s (bytes hash to %s)\n", ref, ce.Got)
					return
				}
				fmt.Fprintf(a.out, "corrupt %s: %v\n", ref, err)
			})
			if err != nil {
				return fmt.Errorf("cas verify: stopped after %s: %w", plural(checked, "blob"), err)
			}
			if fileErr != nil {
				fmt.Fprintf(a.out, "%s checked, %d corrupt; the file is damaged\n", plural(checked, "blob"), bad)
				return fmt.Errorf("cas verify: the file of store %s is damaged, and %d of %s are corrupt", s.Dir(), bad, plural(checked, "blob"))
			}
			if bad > 0 {
				fmt.Fprintf(a.out, "%s checked, %d corrupt\n", plural(checked, "blob"), bad)
				return fmt.Errorf("cas verify: %d of %s in %s are corrupt", bad, plural(checked, "blob"), s.Dir())
			}
			_, err = fmt.Fprintf(a.out, "%s checked, all good\n", plural(checked, "blob"))
			return err
		},
	}
}
