package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/schema"
)

func newCASGetCommand(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "get REF",
		Short: "Write a blob's bytes to stdout",
		Long: `Write the bytes stored under REF to stdout, after checking that they still
hash to REF (a corrupt blob is an error, never output). With --json the blob
must be a CBOR node, and its value is printed as JSON instead: maps with text
keys as objects, other maps as [[key, value]] pairs, bytes as
{"$bytes": "<base64>"}. Opens the store read-only.`,
		Example: `  ref=$(demiurge cas put notes.txt)
  demiurge cas get "$ref" > copy.txt
  # a state blob, decoded
  ref=$(demiurge state --json | jq -r .state_ref | head -n 1)
  demiurge cas get --json "$ref"`,
		Args: wantArgs(1, 1),
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
			data, err := s.CAS().Get(cmd.Context(), ref)
			if err != nil {
				return storeErr("cas get", s.Dir(), err)
			}
			if asJSON {
				v, err := schema.Decode(data)
				if err != nil {
					return fmt.Errorf("cas get %s: not a CBOR node (drop --json for the raw bytes): %w", ref, err)
				}
				data = append(schema.ValueJSON(v), '\n')
			}
			_, err = a.out.Write(data)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "decode the blob as a CBOR node and print it as JSON")
	return cmd
}
