package worldview

import (
	"context"

	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools/workspace"
	"github.com/demiurge-dev/demiurge/tools/workspace/history"
	"github.com/demiurge-dev/demiurge/world"
)

// WorkspaceHeads returns the workspace versions of w as the workspace
// tools read them: the states of its sys/Workspace@1 cells, read from the
// step's machine when the call runs inside one of w's steps (see
// world.World.InStep), else from w. With them the tools run inside the
// steps that ask for them (see tools.InlineTool).
func WorkspaceHeads(w *world.World) workspace.CellHeadsContext {
	return func(ctx context.Context, name string) (v schema.Value, ok bool) {
		// Inside a step, w's lock is the step's: read its machine.
		if in, _ := w.InStep(ctx, func(m *world.Machine, _ journal.Head) {
			v, _, ok = m.State(history.Module, name)
		}); in {
			return v, ok
		}
		v, _, ok = w.State(history.Module, name)
		return v, ok
	}
}
