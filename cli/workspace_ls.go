package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/tools/workspace"
)

func newWorkspaceLsCommand(a *app) *cobra.Command {
	var (
		f         wsFlags
		recursive bool
		asJSON    bool
	)
	cmd := &cobra.Command{
		Use:   "ls [--world W] [--workspace NAME] [--version N] [-r] [--json] [PATH]",
		Short: "List a directory of a workspace",
		Long: `List the directory PATH (default: the root) of a workspace of world W at its
latest version, or at --version N: one entry a line, "dir" or "file", its
size in bytes (for a directory, the total of the files under it) and its
path, directories with a trailing slash. -r lists everything under PATH.
With --json, one JSON document: an array of entries, [{"path", "kind",
"size", "mode", "hash"}] ([] for none). Opens the store read-only.`,
		Example: `  demiurge workspace ls -r
  demiurge workspace ls --version 1 --json notes`,
		Args: wantArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if err := f.check(); err != nil {
				return err
			}
			p := ""
			if len(args) == 1 {
				if p, err = wsPathArg(args[0]); err != nil {
					return err
				}
			}
			s, err := a.openStore(cmd.Context(), true)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			defer func() { err = explainMissing(cmd.Context(), s, err) }()
			ctx := cmd.Context()
			_, root, err := f.root(ctx, s)
			if err != nil {
				return fmt.Errorf("workspace ls: %w", err)
			}
			cursor := ""
			entries := []entryJSON{} // --json: one document
			for {
				res, err := workspace.List(ctx, s.CAS(), root, workspace.ListOptions{Path: p, Recursive: recursive, Cursor: cursor, Limit: workspace.MaxListLimit})
				if err != nil {
					return fmt.Errorf("workspace ls: %w", err)
				}
				for _, e := range res.Entries {
					if asJSON {
						entries = append(entries, entryJSON{e.Path, e.Kind, e.Size, fmt.Sprintf("%o", e.Mode), e.Hash.String()})
						continue
					}
					name := e.Path
					if e.Kind == workspace.KindDir {
						name += "/"
					}
					fmt.Fprintf(a.out, "%-4s %10d %s\n", e.Kind, e.Size, escapeName(name))
				}
				if res.NextCursor == "" {
					if asJSON {
						return writeJSON(a.out, entries)
					}
					return nil
				}
				cursor = res.NextCursor
			}
		},
	}
	f.add(cmd, true)
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "list everything under PATH")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print one JSON document: an array of entries, [{"path", "kind", "size", "mode", "hash"}] ([] for none)`)
	return cmd
}

// entryJSON is an entry as workspace ls --json prints it.
type entryJSON struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
	Size uint64 `json:"size"`
	Mode string `json:"mode"`
	Hash string `json:"hash"`
}
