package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/tools/workspace"
)

func newWorkspaceExportCommand(a *app) *cobra.Command {
	var (
		f     wsFlags
		force bool
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
			st, err := exportTree(ctx, s.CAS(), root, args[0], force)
			if err != nil {
				return fmt.Errorf("workspace export: %w", err)
			}
			fmt.Fprintf(a.out, "exported workspace %s version %d of world %s to %s: %s, %s, %s\n", f.workspace, v, f.world, args[0],
				plural(st.files, "file"), plural(st.dirs, "directory"), plural(int(st.bytes), "byte"))
			return nil
		},
	}
	f.add(cmd, true)
	cmd.Flags().BoolVar(&force, "force", false, "overwrite files that exist in DIR")
	return cmd
}

// treeStats counts what an export or import wrote.
type treeStats struct {
	files, dirs int
	bytes       int64
}

// exportTree writes the tree at root into the host directory dir. All
// writes go through an os.Root, so none can leave dir, whatever symbolic
// links dir holds. Conflicts are checked before anything is written.
func exportTree(ctx context.Context, g cas.Getter, root cas.Ref, dir string, force bool) (treeStats, error) {
	var entries []workspace.ListEntry
	cursor := ""
	for {
		res, err := workspace.List(ctx, g, root, workspace.ListOptions{Recursive: true, Cursor: cursor, Limit: workspace.MaxListLimit})
		if err != nil {
			return treeStats{}, err
		}
		entries = append(entries, res.Entries...)
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return treeStats{}, err
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return treeStats{}, err
	}
	defer r.Close()
	var conflicts []string
	for _, e := range entries {
		fi, err := r.Lstat(e.Path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			conflicts = append(conflicts, fmt.Sprintf("%s (%v)", e.Path, err))
		case fi.Mode()&fs.ModeSymlink != 0:
			conflicts = append(conflicts, e.Path+" is a symbolic link")
		case e.Kind == workspace.KindDir && !fi.IsDir():
			conflicts = append(conflicts, e.Path+" exists and is not a directory")
		case e.Kind == workspace.KindFile && fi.IsDir():
			conflicts = append(conflicts, e.Path+" is a directory")
		case e.Kind == workspace.KindFile && !fi.Mode().IsRegular():
			conflicts = append(conflicts, e.Path+" is not a regular file")
		case e.Kind == workspace.KindFile && !force:
			conflicts = append(conflicts, e.Path+" exists")
		}
	}
	if n := len(conflicts); n > 0 {
		more := ""
		if n > 10 {
			more = fmt.Sprintf(", and %d more", len(conflicts)-10)
			conflicts = conflicts[:10]
		}
		return treeStats{}, fmt.Errorf("nothing written: %s in %s: %s%s (--force overwrites existing files; remove the others)",
			plural(n, "path"), dir, strings.Join(conflicts, "; "), more)
	}
	var st treeStats
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		if e.Kind == workspace.KindDir {
			if err := r.MkdirAll(e.Path, 0o755); err != nil {
				return st, err
			}
			st.dirs++
			continue
		}
		data, err := g.Get(ctx, e.Hash)
		if err != nil {
			return st, fmt.Errorf("%s: %w", e.Path, err)
		}
		perm := fs.FileMode(e.Mode) & fs.ModePerm
		flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if !force {
			flags |= os.O_EXCL
		}
		out, err := r.OpenFile(e.Path, flags, perm)
		if err != nil {
			return st, err
		}
		_, werr := out.Write(data)
		cerr := out.Close()
		if err := errors.Join(werr, cerr); err != nil {
			return st, fmt.Errorf("write %s: %w", e.Path, err)
		}
		if err := r.Chmod(e.Path, perm); err != nil {
			return st, err
		}
		st.files++
		st.bytes += int64(len(data))
	}
	return st, nil
}
