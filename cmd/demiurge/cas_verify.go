package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/cas"
)

func newCASVerifyCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "verify",
		Short: "Check that every blob still hashes to its ref",
		Long: `Read every blob of the store back and check that its bytes still hash to its
ref. Each bad blob is printed on stdout as "corrupt REF (bytes hash to GOT)"
(or "corrupt REF: reason" when it cannot be read), then a summary. Exits 1 if any blob is bad. Opens the store read-only.`,
		Args: wantArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			s, err := a.openStore(true)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
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
			if bad > 0 {
				fmt.Fprintf(a.out, "%s checked, %d corrupt\n", plural(checked, "blob"), bad)
				return fmt.Errorf("cas verify: %d of %s in %s are corrupt", bad, plural(checked, "blob"), s.Dir())
			}
			_, err = fmt.Fprintf(a.out, "%s checked, all good\n", plural(checked, "blob"))
			return err
		},
	}
}
