package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/internal/store"
)

// casVerifyJSON is what cas verify --json prints.
type casVerifyJSON struct {
	// File is "ok", "damaged", "not_checked" (a process writes the
	// store: its pages are checked once it has stopped) or "none" (a
	// PostgreSQL store has no file of ours).
	File      string `json:"file"`
	FileError string `json:"file_error,omitempty"`
	// Writer is the pid of the process that writes the store, if one does.
	Writer  int               `json:"writer,omitempty"`
	Checked int               `json:"checked"`
	Corrupt []corruptBlobJSON `json:"corrupt"`
}

// corruptBlobJSON is a blob that failed its check: the hash of its bytes
// (Got), or why it could not be read.
type corruptBlobJSON struct {
	Ref   string `json:"ref"`
	Got   string `json:"got,omitempty"`
	Error string `json:"error,omitempty"`
}

func newCASVerifyCommand(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check the store's file and that every blob still hashes to its ref",
		Long: `Check the store's file page by page (bbolt's own consistency check: a damaged
page can hide blobs and records without changing a byte of them), then read
every blob back and check that its bytes still hash to its ref. A damaged
file is printed on stdout as "damaged: <what and where>", each bad blob as
"corrupt REF (bytes hash to GOT)" (or "corrupt REF: reason" when it cannot be
read), then a summary. Exits 1 if the file or any blob is bad. Opens the
store read-only.

With --json, one JSON object: {"file": "ok"|"damaged"|"not_checked"|"none",
"file_error", "writer", "checked", "corrupt": [{"ref", "got", "error"}]}.`,
		Example: `  demiurge cas verify
  demiurge --store backup/.demiurge cas verify
  demiurge cas verify --json | jq '.corrupt | length'`,
		Args: wantArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			s, err := a.openStore(cmd.Context(), true)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			res := casVerifyJSON{File: "ok", Corrupt: []corruptBlobJSON{}}
			if s.Postgres() != nil {
				res.File = "none"
			}
			say := func(format string, args ...any) {
				if !asJSON {
					fmt.Fprintf(a.out, format, args...)
				}
			}
			fileErr := s.CheckFile(cmd.Context())
			if errors.Is(fileErr, store.ErrServed) {
				say("file not checked: process %d writes the store (run cas verify again once it has stopped to check the pages)\n", s.Served())
				res.File, res.Writer = "not_checked", s.Served()
				fileErr = nil
			}
			if fileErr != nil {
				if cmd.Context().Err() != nil {
					return cmd.Context().Err()
				}
				say("damaged: %v\n", fileErr)
				res.File, res.FileError = "damaged", fileErr.Error()
			}
			checked, bad, err := cas.Verify(cmd.Context(), s.CAS(), func(ref cas.Ref, err error) {
				if ce, ok := errors.AsType[*cas.CorruptError](err); ok && ce.Got.Valid() {
					say("corrupt %s (bytes hash to %s)\n", ref, ce.Got)
					res.Corrupt = append(res.Corrupt, corruptBlobJSON{Ref: ref.String(), Got: ce.Got.String()})
					return
				}
				say("corrupt %s: %v\n", ref, err)
				res.Corrupt = append(res.Corrupt, corruptBlobJSON{Ref: ref.String(), Error: err.Error()})
			})
			if err != nil {
				return fmt.Errorf("cas verify: stopped after %s: %w", plural(checked, "blob"), err)
			}
			res.Checked = checked
			if asJSON {
				writeJSONLine(a.out, res)
			}
			if fileErr != nil {
				say("%s checked, %d corrupt; the file is damaged\n", plural(checked, "blob"), bad)
				return fmt.Errorf("cas verify: the file of store %s is damaged, and %d of %s are corrupt", s.Dir(), bad, plural(checked, "blob"))
			}
			if bad > 0 {
				say("%s checked, %d corrupt\n", plural(checked, "blob"), bad)
				return fmt.Errorf("cas verify: %d of %s in %s are corrupt", bad, plural(checked, "blob"), s.Dir())
			}
			say("%s checked, all good\n", plural(checked, "blob"))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object (the shape is above)")
	return cmd
}
