package workspace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/workspace/history"
)

// Heads reads the versions of workspaces that a world has recorded (the
// sys/Workspace@1 cells). Implementations must be safe for concurrent use.
type Heads interface {
	// Head returns the latest recorded version of workspace and its root;
	// ok is false when the world has recorded none.
	Head(ctx context.Context, workspace string) (version uint64, root cas.Ref, ok bool, err error)
	// Version returns the root of a recorded version; ok is false when the
	// world has not recorded it.
	Version(ctx context.Context, workspace string, version uint64) (root cas.Ref, ok bool, err error)
}

// CellHeads is Heads over the state of sys/Workspace@1 cells: the function
// returns the cell's state for a workspace name, ok false when there is no
// cell. A running world's State fits it:
//
//	workspace.CellHeads(func(name string) (schema.Value, bool) {
//		v, _, ok := w.State(history.Module, name)
//		return v, ok
//	})
type CellHeads func(workspace string) (schema.Value, bool)

// Head implements Heads.
func (f CellHeads) Head(ctx context.Context, workspace string) (uint64, cas.Ref, bool, error) {
	return f.ctx().Head(ctx, workspace)
}

// Version implements Heads.
func (f CellHeads) Version(ctx context.Context, workspace string, version uint64) (cas.Ref, bool, error) {
	return f.ctx().Version(ctx, workspace, version)
}

func (f CellHeads) ctx() CellHeadsContext {
	return func(_ context.Context, workspace string) (schema.Value, bool) { return f(workspace) }
}

// CellHeadsContext is CellHeads whose function also gets the context of
// the read. A world runs the workspace tools inside its steps (see
// tools.InlineTool) only when their Service reads heads this way, and the
// function must then read the step's state when ctx is a step's (see
// world.World.InStep), never the world's, whose lock the step holds;
// worldview.WorkspaceHeads is that function for a *world.World.
type CellHeadsContext func(ctx context.Context, workspace string) (schema.Value, bool)

// stepAware is implemented by the Heads that read a world's versions
// through the context of the call (CellHeadsContext, and DeferredHeads
// set to one): with them the tools may run inside the world's steps.
type stepAware interface{ readsThroughContext() bool }

func (CellHeadsContext) readsThroughContext() bool { return true }

// readsThroughContext reports whether the source, once set, reads
// through the context; false until Set.
func (d *DeferredHeads) readsThroughContext() bool {
	select {
	case <-d.ready:
		sa, ok := d.h.(stepAware)
		return ok && sa.readsThroughContext()
	default:
		return false
	}
}

func (f CellHeadsContext) history(ctx context.Context, workspace string) (history.History, bool, error) {
	v, ok := f(ctx, workspace)
	if !ok || v == nil {
		return history.History{}, false, nil
	}
	h, err := history.Decode(v)
	if err != nil {
		return history.History{}, false, fmt.Errorf("workspace %q: %w", workspace, err)
	}
	return h, true, nil
}

// Head implements Heads.
func (f CellHeadsContext) Head(ctx context.Context, workspace string) (uint64, cas.Ref, bool, error) {
	h, ok, err := f.history(ctx, workspace)
	if err != nil || !ok || h.Latest == 0 {
		return 0, cas.Ref{}, false, err
	}
	m, ok := h.Version(h.Latest)
	if !ok {
		return 0, cas.Ref{}, false, fmt.Errorf("workspace %q: the history's latest version %d has no entry", workspace, h.Latest)
	}
	return h.Latest, m.RootHash, true, nil
}

// Version implements Heads.
func (f CellHeadsContext) Version(ctx context.Context, workspace string, version uint64) (cas.Ref, bool, error) {
	h, ok, err := f.history(ctx, workspace)
	if err != nil || !ok {
		return cas.Ref{}, false, err
	}
	m, ok := h.Version(version)
	return m.RootHash, ok, nil
}

// DeferredHeads is Heads whose source is set after it is made: a world
// needs its adapters (and so the Service) before it exists, and a world
// that reopens dispatches waiting tool calls before Open returns. Its
// methods wait until Set is called, or until their ctx is done.
type DeferredHeads struct {
	ready chan struct{}
	once  sync.Once
	h     Heads
}

// NewDeferredHeads returns DeferredHeads without a source.
func NewDeferredHeads() *DeferredHeads { return &DeferredHeads{ready: make(chan struct{})} }

// Set sets the source. Only the first call has an effect.
func (d *DeferredHeads) Set(h Heads) {
	d.once.Do(func() {
		d.h = h
		close(d.ready)
	})
}

func (d *DeferredHeads) wait(ctx context.Context) (Heads, error) {
	select {
	case <-d.ready:
		return d.h, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("workspace: waiting for the world's workspace versions: %w", ctx.Err())
	}
}

// Head implements Heads.
func (d *DeferredHeads) Head(ctx context.Context, workspace string) (uint64, cas.Ref, bool, error) {
	h, err := d.wait(ctx)
	if err != nil {
		return 0, cas.Ref{}, false, err
	}
	return h.Head(ctx, workspace)
}

// Version implements Heads.
func (d *DeferredHeads) Version(ctx context.Context, workspace string, version uint64) (cas.Ref, bool, error) {
	h, err := d.wait(ctx)
	if err != nil {
		return cas.Ref{}, false, err
	}
	return h.Version(ctx, workspace, version)
}

// Errors of a Service.
var (
	// ErrInvalidWorkspace is returned (wrapped) for a workspace name that
	// history.ValidName refuses.
	ErrInvalidWorkspace = errors.New("workspace: invalid workspace name")
	// ErrUnknownVersion is returned (wrapped) for a version that is
	// neither recorded by the world nor made by the Service.
	ErrUnknownVersion = errors.New("workspace: unknown version")
	// ErrTooManyPending is returned (wrapped) when history.MaxWaiting
	// commits of a workspace wait for the world to record them.
	ErrTooManyPending = errors.New("workspace: too many commits waiting for the world")
)

// DefaultOwner is the owner of commits when Options.Owner is empty.
const DefaultOwner = "demiurge"

// Options configure a Service. The zero value takes the defaults.
type Options struct {
	// Owner is the owner recorded in commits (default DefaultOwner).
	Owner  string
	Logger *slog.Logger
}

// Service knows the versions of a world's workspaces: the ones the world
// has recorded (through Heads) and the commits it made itself that the
// world has not recorded yet. It serializes writers per workspace. It is
// safe for concurrent use.
type Service struct {
	store Store
	heads Heads
	owner string
	log   *slog.Logger

	mu sync.Mutex // guards ws and every wsState.pending
	ws map[string]*wsState
}

type wsState struct {
	write   chan struct{} // a one-slot semaphore: the writer of the workspace
	pending []tools.Commit
}

// NewService returns a Service over a store (where trees and files live)
// and the world's heads. A nil opts takes the defaults. The Service keeps
// decoded tree nodes in a cache (see CachingStore).
func NewService(store Store, heads Heads, opts *Options) *Service {
	s := &Service{store: NewCachingStore(store, 0), heads: heads, owner: DefaultOwner, log: slog.New(slog.DiscardHandler), ws: map[string]*wsState{}}
	if opts != nil {
		if opts.Owner != "" {
			s.owner = opts.Owner
		}
		if opts.Logger != nil {
			s.log = opts.Logger
		}
	}
	return s
}

// Store returns the store the Service reads and writes trees in, with its
// cache of decoded tree nodes.
func (s *Service) Store() Store { return s.store }

// state returns the state of a workspace; the caller holds s.mu.
func (s *Service) state(workspace string) *wsState {
	st := s.ws[workspace]
	if st == nil {
		st = &wsState{write: make(chan struct{}, 1)}
		s.ws[workspace] = st
	}
	return st
}

// Head is the newest version of a workspace that a Service knows.
type Head struct {
	Workspace string
	// Version is 0 when the workspace has no version yet.
	Version uint64
	// Root is the version's tree; EmptyRootRef for version 0.
	Root cas.Ref
	// Recorded says whether the world has recorded Version; false for a
	// commit of this Service that the world has not recorded yet.
	Recorded bool
}

func checkWorkspace(workspace string) error {
	if !history.ValidName(workspace) {
		return fmt.Errorf("%w %q: use 1 to %d characters out of A-Z a-z 0-9 . _ ~ -", ErrInvalidWorkspace, workspace, history.MaxName)
	}
	return nil
}

// Head returns the newest version of workspace: the world's latest, or the
// newest commit of this Service that the world has not recorded yet.
func (s *Service) Head(ctx context.Context, workspace string) (Head, error) {
	if err := checkWorkspace(workspace); err != nil {
		return Head{}, err
	}
	v, root, ok, err := s.heads.Head(ctx, workspace)
	if err != nil {
		return Head{}, fmt.Errorf("workspace %q: %w", workspace, err)
	}
	h := Head{Workspace: workspace, Version: v, Root: root, Recorded: true}
	if !ok {
		h.Version, h.Root = 0, EmptyRootRef
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state(workspace)
	// Drop the commits the world has recorded. If the world recorded
	// another root as one of our versions, our later commits were made on
	// a version that lost: drop them all.
	keep := st.pending[:0]
	for _, c := range st.pending {
		if c.Version == h.Version && c.Root != h.Root {
			s.log.Warn("workspace commits lost to another writer", "workspace", workspace, "version", c.Version,
				"ours", c.Root.Short(), "recorded", h.Root.Short(), "dropped", len(st.pending))
			keep = keep[:0]
			break
		}
		if c.Version > h.Version {
			keep = append(keep, c)
		}
	}
	st.pending = keep
	if n := len(st.pending); n > 0 {
		c := st.pending[n-1]
		h.Version, h.Root, h.Recorded = c.Version, c.Root, false
	}
	return h, nil
}

// Root returns the tree of a version of workspace: 0 is the empty tree,
// other versions are the world's or this Service's commits. A version
// neither knows is an error wrapping ErrUnknownVersion.
func (s *Service) Root(ctx context.Context, workspace string, version uint64) (cas.Ref, error) {
	if err := checkWorkspace(workspace); err != nil {
		return cas.Ref{}, err
	}
	if version == 0 {
		return EmptyRootRef, nil
	}
	s.mu.Lock()
	for _, c := range s.state(workspace).pending {
		if c.Version == version {
			s.mu.Unlock()
			return c.Root, nil
		}
	}
	s.mu.Unlock()
	root, ok, err := s.heads.Version(ctx, workspace, version)
	if err != nil {
		return cas.Ref{}, fmt.Errorf("workspace %q: %w", workspace, err)
	}
	if !ok {
		h, err := s.Head(ctx, workspace)
		if err != nil {
			return cas.Ref{}, err
		}
		return cas.Ref{}, fmt.Errorf("%w: workspace %q has no version %d (its versions are 1 to %d)", ErrUnknownVersion, workspace, version, h.Version)
	}
	return root, nil
}

// Pending returns the commits of workspace this Service made that the
// world has not recorded yet (as of the last Head), oldest first.
func (s *Service) Pending(workspace string) []tools.Commit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]tools.Commit(nil), s.state(workspace).pending...)
}

// UpdateFunc makes a new tree from the root of the newest version.
type UpdateFunc func(ctx context.Context, root cas.Ref) (cas.Ref, error)

// Update changes workspace: it waits for the workspace's other writers,
// calls fn with the root of the newest version, and if fn returns another
// root, commits it as the next version. The commit is kept until the world
// records it, and reported to the tools.Recorder in ctx. It returns the
// head after the update and whether it made a commit.
//
// Writers of one workspace run one at a time, in no promised order; a
// writer waiting for another gives up when ctx is done.
func (s *Service) Update(ctx context.Context, workspace string, fn UpdateFunc) (Head, bool, error) {
	if err := checkWorkspace(workspace); err != nil {
		return Head{}, false, err
	}
	s.mu.Lock()
	st := s.state(workspace)
	s.mu.Unlock()
	select {
	case st.write <- struct{}{}:
	case <-ctx.Done():
		return Head{}, false, fmt.Errorf("workspace %q: waiting for another writer: %w", workspace, ctx.Err())
	}
	defer func() { <-st.write }()
	h, err := s.Head(ctx, workspace)
	if err != nil {
		return Head{}, false, err
	}
	root, err := fn(ctx, h.Root)
	if err != nil {
		return h, false, err
	}
	if root == h.Root {
		return h, false, nil
	}
	s.mu.Lock()
	if len(st.pending) >= history.MaxWaiting {
		s.mu.Unlock()
		return h, false, fmt.Errorf("%w: %d commits of workspace %q wait for the world to record them", ErrTooManyPending, len(st.pending), workspace)
	}
	c := tools.Commit{Workspace: workspace, ExpectedHead: h.Version, Version: h.Version + 1, Root: root, Owner: s.owner}
	st.pending = append(st.pending, c)
	s.mu.Unlock()
	tools.RecorderFrom(ctx).AddCommit(c)
	return Head{Workspace: workspace, Version: c.Version, Root: root}, true, nil
}
