// Package builtin implements demiurge's built-in reducers, the ones the
// built-in defmodules (schema/builtin/modules.air.json) name: for now
// sys/Workspace@1, which records the versions of workspaces (their data
// model is package tools/workspace/history).
//
// Register adds them to a registry; a binary that runs worlds with
// workspaces registers them once at start.
package builtin

import (
	"errors"
	"fmt"
	"math"

	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools/workspace/history"
)

// Errors of the workspace reducer.
var (
	// ErrBadCommit is returned (wrapped) for an event that is not a valid
	// commit: an invalid workspace name, a key that is not the workspace.
	ErrBadCommit = errors.New("workspace: bad commit")
	// ErrConflict is returned (wrapped) for a commit made on a version
	// older than the latest: applying it would undo the versions since.
	ErrConflict = errors.New("workspace: conflict")
)

// WorkspaceReducer is the keyed reducer sys/Workspace@1 (key: the
// workspace name, sys/WorkspaceName@1; state sys/WorkspaceHistory@1; event
// sys/WorkspaceCommit@1). The zero value is ready to use.
//
// A commit becomes a version:
//   - expected_head equal to Latest: it is version Latest+1;
//   - expected_head absent: it is version Latest+1, whatever Latest is
//     (AgentOS's rule; demiurge's tools always set expected_head);
//   - expected_head ahead of Latest (by at most MaxWaiting): it was made on
//     a version the world has not recorded yet, so it waits in Versions as
//     version expected_head+1 until the versions before it are recorded;
//   - expected_head behind Latest: a conflict, refused with an error (the
//     world journals a ReducerError and keeps the state).
//
// After a commit is recorded, waiting commits that now follow Latest are
// recorded too. created_at is set from the ingress stamp's logical time;
// the event's created_at is ignored. Two commits that claim the same
// waiting version are a conflict.
type WorkspaceReducer struct{}

var _ reducer.Reducer = WorkspaceReducer{}

// Step implements reducer.Reducer.
func (WorkspaceReducer) Step(c *reducer.Context, state, event schema.Value) (reducer.Output, error) {
	h, err := history.Decode(state)
	if err != nil {
		return reducer.Output{}, fmt.Errorf("workspace: %w", err)
	}
	ev, err := history.DecodeCommit(event)
	if err != nil {
		return reducer.Output{}, fmt.Errorf("%w: %v", ErrBadCommit, err)
	}
	if !history.ValidName(ev.Workspace) {
		return reducer.Output{}, fmt.Errorf("%w: workspace name %q is not 1-%d characters of A-Z a-z 0-9 . _ ~ -", ErrBadCommit, ev.Workspace, history.MaxName)
	}
	if c != nil && c.Key != nil {
		if k, ok := c.Key.(string); !ok || k != ev.Workspace {
			return reducer.Output{}, fmt.Errorf("%w: the commit for workspace %q reached the cell of %s; route %s by its workspace field", ErrBadCommit, ev.Workspace, schema.String(c.Key), history.CommitSchema)
		}
	}
	if !ev.Meta.RootHash.Valid() {
		return reducer.Output{}, fmt.Errorf("%w: workspace %q: the commit has no root_hash", ErrBadCommit, ev.Workspace)
	}
	if h.Latest == math.MaxUint64 {
		return reducer.Output{}, fmt.Errorf("%w: workspace %q has no version numbers left", ErrConflict, ev.Workspace)
	}
	meta := ev.Meta
	meta.CreatedAt = 0
	if c != nil {
		meta.CreatedAt = int64(min(c.Stamp.LogicalNowNS, math.MaxInt64))
	}
	v := h.Latest + 1
	if e := ev.ExpectedHead; e != nil {
		switch {
		case *e < h.Latest:
			return reducer.Output{}, fmt.Errorf("%w: workspace %q: the commit was made on version %d, but the latest version is %d; "+
				"recording it would undo versions %d to %d — make the change again on version %d", ErrConflict, ev.Workspace, *e, h.Latest, *e+1, h.Latest, h.Latest)
		case *e > h.Latest:
			if *e-h.Latest > history.MaxWaiting {
				return reducer.Output{}, fmt.Errorf("%w: workspace %q: the commit was made on version %d, more than %d versions ahead of the latest version %d", ErrConflict, ev.Workspace, *e, history.MaxWaiting, h.Latest)
			}
			v = *e + 1
		}
	}
	if old, dup := h.Versions[v]; dup {
		return reducer.Output{}, fmt.Errorf("%w: workspace %q: version %d (root %s) already waits for version %d; a second commit on version %d (root %s) cannot also become version %d",
			ErrConflict, ev.Workspace, v, old.RootHash, v-1, v-1, meta.RootHash, v)
	}
	h.Versions[v] = meta
	for {
		if _, ok := h.Versions[h.Latest+1]; !ok || h.Latest == math.MaxUint64 {
			break
		}
		h.Latest++
	}
	out, err := h.Value()
	if err != nil {
		return reducer.Output{}, fmt.Errorf("workspace %q: encode state: %w", ev.Workspace, err)
	}
	return reducer.Output{State: out}, nil
}

// Register adds the built-in reducers to r: WorkspaceReducer under
// history.Module. It panics if a name is already registered: it is for
// program setup.
func Register(r *reducer.Registry) {
	r.MustRegister(history.Module, WorkspaceReducer{})
}
