package main

import (
	"github.com/demiurge-dev/demiurge/reducer/builtin"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/introspect"
	"github.com/demiurge-dev/demiurge/tools/workspace"
	"github.com/demiurge-dev/demiurge/world"
	"github.com/demiurge-dev/demiurge/world/worldview"
)

// toolset is the tools of a world: the introspect tools reading it and,
// when it keeps workspaces, the workspace tools working on them. A world's
// adapters (toolcall, bashfx) are built from its tools before world.Open
// returns the world, so a toolset is made from what is known before (name,
// catalog, storage) and attached to the world once it is open; tools
// called before that wait for it.
type toolset struct {
	view  *worldview.View
	heads *workspace.DeferredHeads
	// svc serves the workspace tools and the bash tool's /workspace; nil
	// when the world keeps no workspaces.
	svc *workspace.Service
	// tools are the introspect tools, then the workspace tools, each in
	// their package's order.
	tools []tools.Tool
}

// newToolset returns the tools of the world name, which runs cat on st.
func newToolset(name string, cat *schema.Catalog, st world.Storage) *toolset {
	s := &toolset{view: worldview.New(name, cat, st)}
	s.tools = introspect.Tools(s.view, nil)
	if keepsWorkspaces(cat) {
		s.heads = workspace.NewDeferredHeads()
		s.svc = workspace.NewService(st.CAS(), s.heads, nil)
		s.tools = append(s.tools, workspace.Tools(s.svc)...)
	}
	return s
}

// attach connects the tools to their open world.
func (s *toolset) attach(w *world.World) {
	s.view.Attach(w)
	if s.heads != nil {
		s.heads.Set(worldview.WorkspaceHeads(w))
	}
}

// keepsWorkspaces reports whether a world records workspace versions: it
// routes sys/WorkspaceCommit@1 to sys/Workspace@1. A world that does not
// could never record what the workspace tools write, so it has none.
func keepsWorkspaces(cat *schema.Catalog) bool {
	for _, r := range cat.Manifest.Routes {
		if r.Event == builtin.WorkspaceCommitSchema && r.Reducer == builtin.WorkspaceModule {
			return true
		}
	}
	return false
}

// worldTools returns the tools a model (and demiurge sh) has in the open
// world w: the introspect tools, then the workspace tools if w keeps
// workspaces, and the workspace service they share (nil without
// workspaces). They are the commands of the bash tool and, each by itself,
// tools of the model. The workspace tools report their commits to the
// tools.Recorder of their call; the caller must record them in w (as
// sys/WorkspaceCommit@1 events).
func worldTools(w *world.World) ([]tools.Tool, *workspace.Service) {
	s := newToolset(w.Name(), w.Catalog(), w.Storage())
	s.attach(w)
	return s.tools, s.svc
}
