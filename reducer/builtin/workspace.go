// Package builtin implements demiurge's built-in reducers, the ones the
// built-in defmodules (schema/builtin/modules.air.json) name: for now
// sys/Workspace@1, which records the versions of workspaces.
//
// Register adds them to a registry; a binary that runs worlds with
// workspaces registers them once at start.
package builtin

import (
	"errors"
	"fmt"
	"math"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
)

// Names of the workspace module and its schemas.
const (
	WorkspaceModule        = "sys/Workspace@1"
	WorkspaceHistorySchema = "sys/WorkspaceHistory@1" // the state
	WorkspaceCommitSchema  = "sys/WorkspaceCommit@1"  // the event
	WorkspaceNameSchema    = "sys/WorkspaceName@1"    // the key
)

// MaxWaiting bounds how far ahead of the latest version a commit may be
// and still wait for the versions before it.
const MaxWaiting = 1024

// MaxWorkspaceName bounds the length of a workspace name.
const MaxWorkspaceName = 255

// CommitMeta is the Go form of sys/WorkspaceCommitMeta@1.
type CommitMeta struct {
	RootHash cas.Ref `cbor:"root_hash"`
	Owner    string  `cbor:"owner"`
	// CreatedAt is the logical time (nanoseconds since the Unix epoch) of
	// the input that recorded the commit.
	CreatedAt int64 `cbor:"created_at"`
}

// History is the Go form of sys/WorkspaceHistory@1, the state of a
// workspace's cell.
//
// Latest is the newest version n such that versions 1..n are all
// recorded. Versions may also hold entries above Latest: commits that came
// before the commits they were made on, waiting for the gap to fill (see
// WorkspaceReducer). Version returns only recorded versions.
type History struct {
	Latest   uint64                `cbor:"latest"`
	Versions map[uint64]CommitMeta `cbor:"versions"`
}

// Version returns a recorded version (1..Latest).
func (h *History) Version(v uint64) (CommitMeta, bool) {
	if v == 0 || v > h.Latest {
		return CommitMeta{}, false
	}
	m, ok := h.Versions[v]
	return m, ok
}

// Waiting returns how many commits wait above Latest.
func (h *History) Waiting() int {
	n := 0
	for v := range h.Versions {
		if v > h.Latest {
			n++
		}
	}
	return n
}

// Commit is the Go form of sys/WorkspaceCommit@1.
type Commit struct {
	Workspace string `cbor:"workspace"`
	// ExpectedHead is the version the commit was made on; nil applies it
	// on whatever is latest (AgentOS's meaning of an absent expected_head).
	ExpectedHead *uint64    `cbor:"expected_head"`
	Meta         CommitMeta `cbor:"meta"`
}

// DecodeHistory decodes a sys/WorkspaceHistory@1 value; nil is the empty
// history.
func DecodeHistory(v schema.Value) (History, error) {
	h := History{}
	if v != nil {
		if err := reducer.ToGo(v, &h); err != nil {
			return History{}, fmt.Errorf("decode %s %s: %w", WorkspaceHistorySchema, clip(schema.String(v)), err)
		}
	}
	if h.Versions == nil {
		h.Versions = map[uint64]CommitMeta{}
	}
	return h, nil
}

// Value returns h as a sys/WorkspaceHistory@1 value.
func (h *History) Value() (schema.Value, error) {
	if h.Versions == nil {
		h.Versions = map[uint64]CommitMeta{}
	}
	return reducer.FromGo(h)
}

// Errors of the workspace reducer.
var (
	// ErrBadCommit is returned (wrapped) for an event that is not a valid
	// commit: an invalid workspace name, a key that is not the workspace.
	ErrBadCommit = errors.New("workspace: bad commit")
	// ErrConflict is returned (wrapped) for a commit made on a version
	// older than the latest: applying it would undo the versions since.
	ErrConflict = errors.New("workspace: conflict")
)

// ValidWorkspaceName reports whether name can name a workspace: 1 to 255
// characters out of A-Z a-z 0-9 . _ ~ - (AgentOS's rule, with a length
// limit).
func ValidWorkspaceName(name string) bool {
	if name == "" || len(name) > MaxWorkspaceName {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '~' || c == '-') {
			return false
		}
	}
	return true
}

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
	h, err := DecodeHistory(state)
	if err != nil {
		return reducer.Output{}, fmt.Errorf("workspace: %w", err)
	}
	var ev Commit
	if err := reducer.ToGo(event, &ev); err != nil {
		return reducer.Output{}, fmt.Errorf("%w: decode %s %s: %v", ErrBadCommit, WorkspaceCommitSchema, clip(schema.String(event)), err)
	}
	if !ValidWorkspaceName(ev.Workspace) {
		return reducer.Output{}, fmt.Errorf("%w: workspace name %q is not 1-%d characters of A-Z a-z 0-9 . _ ~ -", ErrBadCommit, ev.Workspace, MaxWorkspaceName)
	}
	if c != nil && c.Key != nil {
		if k, ok := c.Key.(string); !ok || k != ev.Workspace {
			return reducer.Output{}, fmt.Errorf("%w: the commit for workspace %q reached the cell of %s; route %s by its workspace field", ErrBadCommit, ev.Workspace, schema.String(c.Key), WorkspaceCommitSchema)
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
			if *e-h.Latest > MaxWaiting {
				return reducer.Output{}, fmt.Errorf("%w: workspace %q: the commit was made on version %d, more than %d versions ahead of the latest version %d", ErrConflict, ev.Workspace, *e, MaxWaiting, h.Latest)
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

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// Register adds the built-in reducers to r: WorkspaceReducer under
// WorkspaceModule. It panics if a name is already registered: it is for
// program setup.
func Register(r *reducer.Registry) {
	r.MustRegister(WorkspaceModule, WorkspaceReducer{})
}
