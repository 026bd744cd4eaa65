// Package worldtools is the tools a world has of its own (the
// introspect tools reading it and, when it keeps workspaces, the workspace
// tools), and the start of its MCP servers: what the agent door gives a
// model, and what demiurge sh and mcp ls use without a model.
package worldtools

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/demiurge-dev/demiurge/adapters/bashfx"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/introspect"
	"github.com/demiurge-dev/demiurge/tools/mcp"
	"github.com/demiurge-dev/demiurge/tools/workspace"
	"github.com/demiurge-dev/demiurge/tools/workspace/history"
	"github.com/demiurge-dev/demiurge/world"
	"github.com/demiurge-dev/demiurge/world/worldview"
)

// StartMCP starts the MCP servers the world's manifest declares, as Open
// does: cat is the manifest loaded from path (stdio servers run in its
// directory); o says where their tool lists go (Store), the names their
// tools may not take (Reserved: see ReservedNames), the environment
// (Getenv, default os.LookupEnv) and how long a server may take to start.
// A server that fails to start is left out, and the set says why
// (mcp.ServerInfo). Close the set when done, even after an error.
func StartMCP(ctx context.Context, cat *schema.Catalog, path string, o mcp.Options) (*mcp.Set, error) {
	dir, err := manifestDir(path)
	if err != nil {
		return nil, err
	}
	if o.Getenv == nil {
		o.Getenv = os.LookupEnv
	}
	servers, err := mcp.FromManifest(cat, o.Getenv, dir)
	if err != nil {
		return nil, err
	}
	return mcp.Connect(ctx, servers, &o)
}

// ReservedNames are the names the tools of a world's MCP servers may not
// take: the world's own tools, and bash.
func ReservedNames(cat *schema.Catalog) []string {
	names := []string{bashfx.ToolName}
	for _, t := range NewToolset("main", cat, world.NewMemoryStorage()).Tools() {
		names = append(names, t.Info().Name)
	}
	return names
}

// manifestDir is the absolute directory of a world's AIR (a folder, or a
// manifest file in it).
func manifestDir(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
		abs = filepath.Dir(abs)
	}
	return abs, nil
}

// ReportMCP writes a warning line, each starting with prefix (a
// command's "demiurge: warning: "), for each MCP server that is not up and
// each tool of theirs that is not offered: the command goes on without
// them.
func ReportMCP(w io.Writer, prefix string, servers []mcp.ServerInfo) {
	for _, si := range servers {
		if si.Status != mcp.StatusConnected && si.Err != nil {
			fmt.Fprintf(w, "%s%s; its tools are not offered\n", prefix, strings.TrimPrefix(si.Err.Error(), mcp.ErrServerDown.Error()+": "))
		}
		for _, sk := range si.Skipped {
			fmt.Fprintf(w, "%sMCP server %s: tool %s; it is not offered\n", prefix, si.Name, sk)
		}
	}
}

// Toolset is the tools of a world: the introspect tools reading it and,
// when it keeps workspaces, the workspace tools working on them. A world's
// adapters are built from its tools before world.Open returns the world,
// so a Toolset is made from what is known before (name, catalog, storage)
// and attached to the world once it is open; tools called before that
// wait for it.
type Toolset struct {
	view  *worldview.View
	heads *workspace.DeferredHeads
	svc   *workspace.Service
	// tools are the introspect tools, then the workspace tools, each in
	// their package's order.
	tools []tools.Tool
}

// NewToolset returns the tools of the world name, which runs cat on st.
func NewToolset(name string, cat *schema.Catalog, st world.Storage) *Toolset {
	s := &Toolset{view: worldview.New(name, cat, st)}
	s.tools = introspect.Tools(s.view, nil)
	if KeepsWorkspaces(cat) {
		s.heads = workspace.NewDeferredHeads()
		s.svc = workspace.NewService(st.CAS(), s.heads, nil)
		s.tools = append(s.tools, workspace.Tools(s.svc)...)
	}
	return s
}

// WorldTools returns the tools of the open world w (see Toolset).
func WorldTools(w *world.World) *Toolset {
	s := NewToolset(w.Name(), w.Catalog(), w.Storage())
	s.Attach(w)
	return s
}

// Tools returns the introspect tools, then the workspace tools if the
// world keeps workspaces. They are the commands of the bash tool and,
// each by itself, tools of the model. The workspace tools report their
// commits to the tools.Recorder of their call; the caller records them in
// the world (as sys/WorkspaceCommit@1 events).
func (s *Toolset) Tools() []tools.Tool { return s.tools }

// Workspace returns the service of the world's workspaces, or nil if it
// keeps none.
func (s *Toolset) Workspace() *workspace.Service { return s.svc }

// Attach connects the tools to their open world.
func (s *Toolset) Attach(w *world.World) {
	s.view.Attach(w)
	if s.heads != nil {
		s.heads.Set(worldview.WorkspaceHeads(w))
	}
}

// KeepsWorkspaces reports whether a world records workspace versions: it
// routes sys/WorkspaceCommit@1 to sys/Workspace@1. A world that does not
// could never record what the workspace tools write, so it has none.
func KeepsWorkspaces(cat *schema.Catalog) bool {
	for _, r := range cat.Manifest.Routes {
		if r.Event == history.CommitSchema && r.Reducer == history.Module {
			return true
		}
	}
	return false
}
