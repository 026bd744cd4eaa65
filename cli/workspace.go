package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools/workspace"
	"github.com/demiurge-dev/demiurge/tools/workspace/history"
	"github.com/demiurge-dev/demiurge/world"
)

func newWorkspaceCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workspace",
		Short: "List, read, export and import the workspaces of a world",
		Long: `A workspace is a versioned file tree of a world: its versions are recorded
by the built-in reducer sys/Workspace@1, its files and directories are blobs
and tree nodes in the store. "ls", "cat" and "export" read a version (the
latest, or --version N) from the journal and the store, opening the store
read-only; "import" records a host directory as a new version.`,
		Example: `  demiurge workspace ls -r
  demiurge workspace cat notes/hello.md`,
		Args: cobra.ArbitraryArgs,
		RunE: groupRunE,
	}
	cmd.AddCommand(
		newWorkspaceLsCommand(a),
		newWorkspaceCatCommand(a),
		newWorkspaceExportCommand(a),
		newWorkspaceImportCommand(a),
	)
	return cmd
}

// wsFlags are the flags of the workspace commands that read a version.
type wsFlags struct {
	world     string
	workspace string
	version   uint64
	cmd       *cobra.Command
}

func (f *wsFlags) add(cmd *cobra.Command, withVersion bool) {
	f.cmd = cmd
	cmd.Flags().StringVar(&f.world, "world", defaultWorld, "the world's `NAME` in the store")
	cmd.Flags().StringVar(&f.workspace, "workspace", effects.DefaultWorkspace, "the workspace's `NAME`")
	if withVersion {
		cmd.Flags().Uint64Var(&f.version, "version", 0, "the version `N` to read (default: the latest)")
	}
}

func (f *wsFlags) check() error {
	if err := checkWorldFlag(f.world); err != nil {
		return err
	}
	if !history.ValidName(f.workspace) {
		return usagef("--workspace %q: a workspace name is 1 to %d characters out of A-Z a-z 0-9 . _ ~ -", f.workspace, history.MaxName)
	}
	return nil
}

// workspaceHistory reads the newest state of a workspace's sys/Workspace@1
// cell from the journal of a world.
func workspaceHistory(ctx context.Context, s *store.Handle, worldName, ws string) (history.History, error) {
	head, err := s.Journal().Head(ctx, worldName)
	if err != nil {
		return history.History{}, err
	}
	if head.Seq == 0 {
		return history.History{}, noRecords(ctx, s, worldName)
	}
	states := map[string]string{} // workspace → state ref ("" once deleted)
	err = s.Journal().Read(ctx, worldName, 1, func(r journal.Record) error {
		if r.Kind != world.KindState {
			return nil
		}
		sr, err := world.DecodeState(r)
		if err != nil {
			return err
		}
		if sr.Reducer != history.Module {
			return nil
		}
		name, _ := sr.Key.(string)
		states[name] = ""
		if sr.State.Valid() {
			states[name] = sr.State.String()
		}
		return nil
	})
	if err != nil {
		return history.History{}, fmt.Errorf("read the journal of world %s: %w", worldName, err)
	}
	ref := states[ws]
	if ref == "" {
		var names []string
		for n, r := range states {
			if r != "" {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		have := "it has no workspaces"
		if len(names) > 0 {
			have = "its workspaces are " + strings.Join(names, ", ")
		}
		return history.History{}, fmt.Errorf("world %s has no workspace %q (%s)", worldName, ws, have)
	}
	r, err := cas.ParseRef(ref)
	if err != nil {
		return history.History{}, fmt.Errorf("workspace %q: state ref: %w", ws, err)
	}
	b, err := s.CAS().Get(ctx, r)
	if err != nil {
		return history.History{}, fmt.Errorf("workspace %q: state: %w", ws, err)
	}
	v, err := schema.Decode(b)
	if err != nil {
		return history.History{}, fmt.Errorf("workspace %q: state %s: %w", ws, r, err)
	}
	return history.Decode(v)
}

// root returns the version the flags name and its tree.
func (f *wsFlags) root(ctx context.Context, s *store.Handle) (uint64, cas.Ref, error) {
	h, err := workspaceHistory(ctx, s, f.world, f.workspace)
	if err != nil {
		return 0, cas.Ref{}, err
	}
	v := h.Latest
	if f.cmd.Flags().Changed("version") {
		v = f.version
	}
	if v == 0 {
		return 0, workspace.EmptyRootRef, nil
	}
	m, ok := h.Version(v)
	if !ok {
		return 0, cas.Ref{}, fmt.Errorf("workspace %q of world %s has no version %d (its versions are 1 to %d)", f.workspace, f.world, v, h.Latest)
	}
	return v, m.RootHash, nil
}

// wsPathArg cleans a workspace path given on the command line.
func wsPathArg(p string) (string, error) {
	c, err := workspace.CleanPath(p)
	if err != nil {
		return "", usagef("%v", err)
	}
	return c, nil
}
