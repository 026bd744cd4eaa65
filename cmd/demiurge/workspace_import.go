package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer/builtin"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools/workspace"
	"github.com/demiurge-dev/demiurge/world"
)

// defaultImportOwner is the owner of the commits "workspace import" makes.
const defaultImportOwner = "demiurge workspace import"

func newWorkspaceImportCommand(a *app) *cobra.Command {
	var (
		f        wsFlags
		manifest string
		owner    string
		wait     time.Duration
	)
	cmd := &cobra.Command{
		Use:   "import --manifest M [--world W] [--workspace NAME] [--owner O] DIR",
		Short: "Record a host directory as a new version of a workspace",
		Long: `Read the host directory DIR into a new tree (files with their contents and
executable bit, directories, empty ones included) and record it as the next
version of a workspace of world W: open the world with the AIR at M, which
must route sys/WorkspaceCommit@1 to sys/Workspace@1 keyed by "workspace",
and send the commit. The new version holds exactly the files of DIR.

A symbolic link to a file inside DIR is imported as that file; a symbolic
link that points outside DIR is an error, and nothing is recorded. What
cannot be imported — links to directories, sockets, devices, names a
workspace cannot hold, the store itself — is skipped, and each skipped path
is reported on stderr. If DIR matches the latest version, nothing is
recorded.`,
		Args: wantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if err := f.check(); err != nil {
				return err
			}
			if manifest == "" {
				return usagef("--manifest is required: the path of the world's AIR, which routes %s to %s", builtin.WorkspaceCommitSchema, builtin.WorkspaceModule)
			}
			dir := args[0]
			if fi, err := os.Stat(dir); err != nil {
				return fmt.Errorf("workspace import: %w", err)
			} else if !fi.IsDir() {
				return fmt.Errorf("workspace import: %s is not a directory", dir)
			}
			cat, err := loadCatalog(manifest)
			if err != nil {
				return err
			}
			if err := checkWorkspaceRoute(cat); err != nil {
				return fmt.Errorf("workspace import: %s: %w", manifest, err)
			}
			s, err := a.openStore(cmd.Context(), false)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			st, err := localStorage(s, "workspace import")
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			storeDir, _ := filepath.Abs(s.Dir())
			root, stats, err := importDir(ctx, s.CAS(), dir, storeDir, func(p, reason string) {
				fmt.Fprintf(a.err, "demiurge: workspace import: skipped %s: %s\n", p, reason)
			})
			if err != nil {
				return fmt.Errorf("workspace import: %w; nothing was recorded", err)
			}
			var mu sync.Mutex
			var reducerErrs []string
			w, err := world.Open(ctx, world.Options{
				Name: f.world, Catalog: cat, Reducers: newRegistry(), Storage: st, Adapters: adapters(), Logger: a.log,
				OnCommit: func(recs []journal.Record) {
					mu.Lock()
					defer mu.Unlock()
					for _, r := range recs {
						if r.Kind == world.KindReducerError {
							v, _ := schema.Decode(r.Payload)
							m, _ := v.(*schema.Map)
							e, _ := m.Get("error")
							msg, _ := e.(string)
							reducerErrs = append(reducerErrs, msg)
						}
					}
				},
			})
			if err != nil {
				return explainMissing(ctx, s, fmt.Errorf("open world %s: %w", f.world, describe(err)))
			}
			defer func() {
				if cerr := w.Close(); err == nil {
					err = cerr
				}
			}()
			history := func() (builtin.History, error) {
				v, _, _ := w.State(builtin.WorkspaceModule, f.workspace)
				return builtin.DecodeHistory(v)
			}
			h, err := history()
			if err != nil {
				return fmt.Errorf("workspace import: %w", err)
			}
			if m, ok := h.Version(h.Latest); ok && m.RootHash == root {
				fmt.Fprintf(a.out, "nothing to import: %s matches version %d of workspace %s of world %s\n", dir, h.Latest, f.workspace, f.world)
				return nil
			}
			commit, _ := json.Marshal(map[string]any{
				"workspace": f.workspace, "expected_head": h.Latest,
				"meta": map[string]any{"root_hash": root.String(), "owner": owner, "created_at": "1970-01-01T00:00:00Z"},
			})
			if _, err := w.SendJSON(ctx, builtin.WorkspaceCommitSchema, commit); err != nil {
				return fmt.Errorf("workspace import: send the commit: %w", err)
			}
			wctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			if err := w.WaitIdle(wctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			after, err := history()
			if err != nil {
				return fmt.Errorf("workspace import: %w", err)
			}
			if m, ok := after.Version(h.Latest + 1); !ok || m.RootHash != root {
				mu.Lock()
				why := strings.Join(reducerErrs, "; ")
				mu.Unlock()
				if why == "" {
					why = fmt.Sprintf("the latest version is %d", after.Latest)
				}
				return fmt.Errorf("workspace import: world %s did not record the new version of workspace %s: %s", f.world, f.workspace, why)
			}
			fmt.Fprintf(a.out, "imported %s into workspace %s of world %s as version %d: %s, %s, %s (root %s)\n", dir, f.workspace, f.world,
				h.Latest+1, plural(stats.files, "file"), plural(stats.dirs, "directory"), plural(int(stats.bytes), "byte"), root)
			return nil
		},
	}
	f.add(cmd, false)
	cmd.Flags().StringVarP(&manifest, "manifest", "m", "", "the world's AIR: manifest.air, manifest.air.json or its `PATH`")
	cmd.Flags().StringVar(&owner, "owner", defaultImportOwner, "the `OWNER` recorded with the commit")
	cmd.Flags().DurationVar(&wait, "wait", 30*time.Second, "how long to run the world after sending the commit")
	return cmd
}

// checkWorkspaceRoute checks that a manifest records workspace commits.
func checkWorkspaceRoute(cat *schema.Catalog) error {
	for _, r := range cat.Manifest.Routes {
		if r.Event == builtin.WorkspaceCommitSchema && r.Reducer == builtin.WorkspaceModule {
			if r.KeyField != "workspace" {
				return fmt.Errorf("the route of %s to %s has key_field %q; it must be \"workspace\"", r.Event, r.Reducer, r.KeyField)
			}
			return nil
		}
	}
	return fmt.Errorf(`the manifest does not route %s to %s; add {"event": %q, "reducer": %q, "key_field": "workspace"} to routing.events`,
		builtin.WorkspaceCommitSchema, builtin.WorkspaceModule, builtin.WorkspaceCommitSchema, builtin.WorkspaceModule)
}

// importer reads a host directory into tree nodes.
type importer struct {
	ctx       context.Context
	put       cas.Putter
	root      string      // the real path of the directory imported
	store     os.FileInfo // the store's directory, never imported; nil if none
	storeReal string      // its real path
	skip      func(p, reason string)
	stats     treeStats
}

// importDir reads the host directory dir into a tree in p and returns its
// root. storeDir, if it lies inside dir, is skipped. skip reports each
// entry left out; a symbolic link out of dir is an error.
func importDir(ctx context.Context, p cas.Putter, dir, storeDir string, skip func(p, reason string)) (cas.Ref, treeStats, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return cas.Ref{}, treeStats{}, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return cas.Ref{}, treeStats{}, err
	}
	im := &importer{ctx: ctx, put: p, root: real, skip: skip}
	if storeDir != "" {
		im.store, _ = os.Stat(storeDir)
		im.storeReal, _ = filepath.EvalSymlinks(storeDir)
	}
	t, err := im.dir(real, "")
	if err != nil {
		return cas.Ref{}, treeStats{}, err
	}
	ref, err := workspace.PutTree(ctx, p, t)
	return ref, im.stats, err
}

func (im *importer) dir(host, rel string) (*workspace.Tree, error) {
	if err := im.ctx.Err(); err != nil {
		return nil, err
	}
	des, err := os.ReadDir(host)
	if err != nil {
		return nil, err
	}
	t := &workspace.Tree{}
	for _, de := range des { // sorted by name, bytewise: the order of a tree
		name := de.Name()
		hp := filepath.Join(host, name)
		wp := name
		if rel != "" {
			wp = rel + "/" + name
		}
		if c, err := workspace.CleanPath(wp); err != nil || c != wp {
			why := "a workspace path cannot hold this name"
			if err != nil {
				why = strings.TrimPrefix(err.Error(), "workspace: invalid path: ")
			}
			im.skip(filepath.Join(rel, name), why)
			continue
		}
		info, err := os.Lstat(hp)
		if err != nil {
			return nil, err
		}
		if im.store != nil && os.SameFile(info, im.store) {
			im.skip(wp, "it is the demiurge store")
			continue
		}
		var e *workspace.Entry
		switch mode := info.Mode(); {
		case mode.IsDir():
			sub, err := im.dir(hp, wp)
			if err != nil {
				return nil, err
			}
			ref, err := workspace.PutTree(im.ctx, im.put, sub)
			if err != nil {
				return nil, err
			}
			e = &workspace.Entry{Kind: workspace.KindDir, Hash: ref, Size: sub.Size(), Mode: workspace.ModeDir}
			im.stats.dirs++
		case mode.IsRegular():
			if e, err = im.file(hp, wp, info); err != nil {
				return nil, err
			}
		case mode&fs.ModeSymlink != 0:
			if e, err = im.link(hp, wp); err != nil {
				return nil, err
			}
		default:
			im.skip(wp, fmt.Sprintf("not a regular file, directory or link (%s)", mode.Type()))
		}
		if e != nil {
			e.Name = name
			t.Entries = append(t.Entries, *e)
		}
	}
	return t, nil
}

func (im *importer) file(hp, wp string, info os.FileInfo) (*workspace.Entry, error) {
	data, err := os.ReadFile(hp)
	if err != nil {
		return nil, err
	}
	ref, err := im.put.Put(im.ctx, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", wp, err)
	}
	mode := workspace.ModeFile
	if info.Mode().Perm()&0o111 != 0 {
		mode = workspace.ModeExec
	}
	im.stats.files++
	im.stats.bytes += int64(len(data))
	return &workspace.Entry{Kind: workspace.KindFile, Hash: ref, Size: uint64(len(data)), Mode: mode}, nil
}

// link imports a symbolic link: the file it points to inside the
// directory, nothing (reported) for other targets, an error for a target
// outside.
func (im *importer) link(hp, wp string) (*workspace.Entry, error) {
	dest, _ := os.Readlink(hp)
	target, err := filepath.EvalSymlinks(hp)
	if err != nil {
		im.skip(wp, fmt.Sprintf("a symbolic link to %s that does not resolve", dest))
		return nil, nil
	}
	rel, err := filepath.Rel(im.root, target)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return nil, fmt.Errorf("%s is a symbolic link to %s, outside %s: remove the link, or copy what it points to into the directory", wp, target, im.root)
	}
	info, err := os.Stat(target)
	if err != nil {
		return nil, err
	}
	switch {
	case info.IsDir():
		im.skip(wp, fmt.Sprintf("a symbolic link to the directory %s (links to directories are not followed)", rel))
		return nil, nil
	case !info.Mode().IsRegular():
		im.skip(wp, fmt.Sprintf("a symbolic link to %s, which is not a regular file", rel))
		return nil, nil
	}
	if im.storeReal != "" {
		if r, err := filepath.Rel(im.storeReal, target); err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			im.skip(wp, "a symbolic link into the demiurge store")
			return nil, nil
		}
	}
	return im.file(target, wp, info)
}
