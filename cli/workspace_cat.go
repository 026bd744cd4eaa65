package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/tools/workspace"
)

func newWorkspaceCatCommand(a *app) *cobra.Command {
	var f wsFlags
	cmd := &cobra.Command{
		Use:   "cat [--world W] [--workspace NAME] [--version N] PATH",
		Short: "Write a file of a workspace to stdout",
		Long: `Write the bytes of the file PATH of a workspace of world W, at its latest
version or at --version N, to stdout, unchanged. Opens the store read-only.`,
		Example: `  demiurge workspace cat notes/hello.md
  demiurge workspace cat --version 1 notes/hello.md`,
		Args: wantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if err := f.check(); err != nil {
				return err
			}
			p, err := wsPathArg(args[0])
			if err != nil {
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
				return fmt.Errorf("workspace cat: %w", err)
			}
			data, _, err := workspace.ReadBytes(ctx, s.CAS(), root, p, nil)
			switch {
			case errors.Is(err, workspace.ErrNotFound), errors.Is(err, workspace.ErrIsDir), errors.Is(err, workspace.ErrNotDir):
				return fmt.Errorf("workspace cat: %w (workspace %q, version %d; %s lists its files)", err, f.workspace, v, f.lsCommand())
			case err != nil:
				return fmt.Errorf("workspace cat: %w (workspace %q, version %d)", err, f.workspace, v)
			}
			_, err = a.out.Write(data)
			return err
		},
	}
	f.add(cmd, true)
	return cmd
}

// lsCommand is the workspace ls command line that lists the version the
// flags read, with the flags given.
func (f *wsFlags) lsCommand() string {
	line := "demiurge workspace ls -r"
	for _, name := range []string{"world", "workspace", "version"} {
		if fl := f.cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			line += " --" + name + " " + fl.Value.String()
		}
	}
	return line
}
