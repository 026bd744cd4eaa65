package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/cas"
)

func newCASCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cas",
		Short: "Put, read and verify blobs in the content-addressed store",
		Long: `The content-addressed store (CAS) keeps every blob under its BLAKE3 hash,
written "blake3:<64 lowercase hex>". Only "cas put" writes the store; the
other cas commands open it read-only and leave it unchanged.`,
		Example: `  demiurge cas put notes.txt
  demiurge cas verify`,
		Args: cobra.ArbitraryArgs,
		RunE: groupRunE,
	}
	cmd.AddCommand(
		newCASPutCommand(a),
		newCASGetCommand(a),
		newCASStatCommand(a),
		newCASVerifyCommand(a),
	)
	return cmd
}

// parseRefArg parses a ref given on the command line; a malformed ref is
// a usage error.
func parseRefArg(s string) (cas.Ref, error) {
	ref, err := cas.ParseRef(s)
	if err != nil {
		return cas.Ref{}, usagef("%v (want blake3:<64 lowercase hex>)", err)
	}
	return ref, nil
}

// storeErr adds the store's directory to an error of the CAS, which
// already names the ref.
func storeErr(op, dir string, err error) error {
	return fmt.Errorf("%s: %w (store %s)", op, err, dir)
}
