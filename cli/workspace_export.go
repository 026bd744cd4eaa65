package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/tools/workspace"
)

func newWorkspaceExportCommand(a *app) *cobra.Command {
	var (
		f      wsFlags
		force  bool
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "export [--world W] [--workspace NAME] [--version N] [--force] DIR",
		Short: "Write the files of a workspace to a host directory",
		Long: `Write every file and directory of a workspace of world W, at its latest
version or at --version N, into the host directory DIR (created if needed),
with modes 644 or 755. A file that already exists in DIR is an error, and
nothing is written, unless --force: then files are overwritten (never
through a symbolic link, and never a directory). Files of DIR that are not
in the workspace are left alone. Nothing is ever written outside DIR.
Opens the store read-only.`,
		Example: `  demiurge workspace export out
  demiurge workspace export --version 1 --force out`,
		Args: wantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if err := f.check(); err != nil {
				return err
			}
			s, err := a.openStore(cmd.Context(), true)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			defer func() { err = explainMissing(cmd.Context(), s, err) }()
			ctx := cmd.Context()
			v, root, err := f.root(ctx, s)
			if err != nil {
				return fmt.Errorf("workspace export: %w", err)
			}
			st, err := workspace.ExportTree(ctx, s.CAS(), root, args[0], force)
			if _, ok := errors.AsType[*workspace.ExportConflictError](err); ok {
				return fmt.Errorf("workspace export: %w (--force overwrites existing files; remove the others)", err)
			} else if err != nil {
				return fmt.Errorf("workspace export: %w", err)
			}
			if asJSON {
				writeJSONLine(a.out, wsExportJSON{World: f.world, Workspace: f.workspace, Version: v, Dir: args[0],
					Files: st.Files, Dirs: st.Dirs, Bytes: st.Bytes})
				return nil
			}
			fmt.Fprintf(a.out, "exported workspace %s version %d of world %s to %s: %s, %s, %s\n", f.workspace, v, f.world, args[0],
				plural(st.Files, "file"), plural(st.Dirs, "directory"), plural(int(st.Bytes), "byte"))
			return nil
		},
	}
	f.add(cmd, true)
	cmd.Flags().BoolVar(&force, "force", false, "overwrite files that exist in DIR")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print one JSON object: {"world", "workspace", "version", "dir", "files", "dirs", "bytes"}`)
	return cmd
}

// wsExportJSON is what workspace export --json prints.
type wsExportJSON struct {
	World     string `json:"world"`
	Workspace string `json:"workspace"`
	Version   uint64 `json:"version"`
	Dir       string `json:"dir"`
	Files     int    `json:"files"`
	Dirs      int    `json:"dirs"`
	Bytes     int64  `json:"bytes"`
}
