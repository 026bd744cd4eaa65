package cli

import (
	"encoding/json"
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
With --json each entry is one JSON object {"path", "kind", "size", "mode",
"hash"}. Opens the store read-only.`,
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
			for {
				res, err := workspace.List(ctx, s.CAS(), root, workspace.ListOptions{Path: p, Recursive: recursive, Cursor: cursor, Limit: workspace.MaxListLimit})
				if err != nil {
					return fmt.Errorf("workspace ls: %w", err)
				}
				for _, e := range res.Entries {
					if asJSON {
						line, _ := json.Marshal(struct {
							Path string `json:"path"`
							Kind string `json:"kind"`
							Size uint64 `json:"size"`
							Mode string `json:"mode"`
							Hash string `json:"hash"`
						}{e.Path, e.Kind, e.Size, fmt.Sprintf("%o", e.Mode), e.Hash.String()})
						fmt.Fprintf(a.out, "%s\n", line)
						continue
					}
					name := e.Path
					if e.Kind == workspace.KindDir {
						name += "/"
					}
					fmt.Fprintf(a.out, "%-4s %10d %s\n", e.Kind, e.Size, name)
				}
				if res.NextCursor == "" {
					return nil
				}
				cursor = res.NextCursor
			}
		},
	}
	f.add(cmd, true)
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "list everything under PATH")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per entry")
	return cmd
}
