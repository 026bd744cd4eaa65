package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools/workspace"
	"github.com/demiurge-dev/demiurge/tools/workspace/history"
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
		asJSON   bool
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
		Example: `  demiurge workspace import --manifest examples/demiurge src
  demiurge workspace import --manifest examples/demiurge --world w2 --workspace docs --owner me docs`,
		Args: wantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if err := f.check(); err != nil {
				return err
			}
			if manifest == "" {
				return usagef("--manifest is required: the path of the world's AIR, which routes %s to %s", history.CommitSchema, history.Module)
			}
			dir := args[0]
			if fi, err := os.Stat(dir); err != nil {
				return fmt.Errorf("workspace import: %w", err)
			} else if !fi.IsDir() {
				return fmt.Errorf("workspace import: %s is not a directory", dir)
			}
			cat, err := a.loadCatalog(manifest)
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
			root, stats, err := workspace.ImportDir(ctx, s.CAS(), dir, storeDir, func(p, reason string) {
				a.warnf("workspace import: skipped %s: %s", p, reason)
			})
			if err != nil {
				return fmt.Errorf("workspace import: %w; nothing was recorded", err)
			}
			var mu sync.Mutex
			var reducerErrs []string
			w, err := world.Open(ctx, world.Options{
				Name: f.world, Catalog: cat, Reducers: a.registry(), Storage: st, Adapters: a.adapters(), Logger: a.log,
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
			a.noteMove(w, manifest)
			a.rememberManifest(f.world, manifest)
			readHistory := func() (history.History, error) {
				v, _, _ := w.State(history.Module, f.workspace)
				return history.Decode(v)
			}
			h, err := readHistory()
			if err != nil {
				return fmt.Errorf("workspace import: %w", err)
			}
			res := importJSON{World: f.world, Workspace: f.workspace, Dir: dir, Root: root.String(),
				Files: stats.Files, Dirs: stats.Dirs, Bytes: stats.Bytes}
			if m, ok := h.Version(h.Latest); ok && m.RootHash == root {
				if asJSON {
					res.Version = h.Latest
					writeJSONLine(a.out, res)
					return nil
				}
				fmt.Fprintf(a.out, "nothing to import: %s matches version %d of workspace %s of world %s\n", dir, h.Latest, f.workspace, f.world)
				return nil
			}
			commit, _ := json.Marshal(map[string]any{
				"workspace": f.workspace, "expected_head": h.Latest,
				"meta": map[string]any{"root_hash": root.String(), "owner": owner, "created_at": "1970-01-01T00:00:00Z"},
			})
			if _, err := w.SendJSON(ctx, history.CommitSchema, commit); err != nil {
				return fmt.Errorf("workspace import: send the commit: %w", err)
			}
			wctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			if err := w.WaitIdle(wctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			after, err := readHistory()
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
			if asJSON {
				res.Version, res.Changed = h.Latest+1, true
				writeJSONLine(a.out, res)
				return nil
			}
			fmt.Fprintf(a.out, "imported %s into workspace %s of world %s as version %d: %s, %s, %s (root %s)\n", dir, f.workspace, f.world,
				h.Latest+1, plural(stats.Files, "file"), plural(stats.Dirs, "directory"), plural(int(stats.Bytes), "byte"), root)
			return nil
		},
	}
	f.add(cmd, false)
	addManifestFlag(cmd, &manifest, "the world's AIR: manifest.air, manifest.air.json or its `PATH`")
	cmd.Flags().StringVar(&owner, "owner", defaultImportOwner, "the `OWNER` recorded with the commit")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print one JSON object: {"world", "workspace", "dir", "version", "changed", "root", "files", "dirs", "bytes"} (changed is false when DIR matches the latest version)`)
	cmd.Flags().DurationVar(&wait, "wait", 30*time.Second, "how long to run the world after sending the commit")
	return cmd
}

// checkWorkspaceRoute checks that a manifest records workspace commits.
func checkWorkspaceRoute(cat *schema.Catalog) error {
	for _, r := range cat.Manifest.Routes {
		if r.Event == history.CommitSchema && r.Reducer == history.Module {
			if r.KeyField != "workspace" {
				return fmt.Errorf("the route of %s to %s has key_field %q; it must be \"workspace\"", r.Event, r.Reducer, r.KeyField)
			}
			return nil
		}
	}
	return fmt.Errorf(`the manifest does not route %s to %s; add {"event": %q, "reducer": %q, "key_field": "workspace"} to routing.events`,
		history.CommitSchema, history.Module, history.CommitSchema, history.Module)
}

// importJSON is what workspace import --json prints: the version that
// holds DIR, and whether the import made it (false: DIR matched the
// latest version).
type importJSON struct {
	World     string `json:"world"`
	Workspace string `json:"workspace"`
	Dir       string `json:"dir"`
	Version   uint64 `json:"version"`
	Changed   bool   `json:"changed"`
	Root      string `json:"root"`
	Files     int    `json:"files"`
	Dirs      int    `json:"dirs"`
	Bytes     int64  `json:"bytes"`
}
