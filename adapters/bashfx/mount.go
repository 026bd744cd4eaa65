package bashfx

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
	"github.com/demiurge-dev/demiurge/tools/workspace"
)

// Workspace is the workspace a script's file system mounts at /workspace:
// a *workspace.Service.
type Workspace interface {
	// Head returns the newest version of a workspace.
	Head(ctx context.Context, name string) (workspace.Head, error)
	// Update commits a new version made from the newest one, reporting
	// the commit to the tools.Recorder in ctx.
	Update(ctx context.Context, name string, fn workspace.UpdateFunc) (workspace.Head, bool, error)
	// Store holds the workspace's trees and files.
	Store() workspace.Store
	// WithView returns a copy of ctx in which the workspace's tools read
	// and change v in place of its newest version: a script's file system
	// (see Shell.Run).
	WithView(ctx context.Context, name string, v workspace.View) context.Context
}

// Mount says which workspace a run's file system mounts, and how.
type Mount struct {
	// Workspace holds the versions; nil gives the script an empty
	// in-memory workspace that is dropped when it ends.
	Workspace Workspace
	// Name is the workspace (default effects.DefaultWorkspace).
	Name string
	// Check, if set, decides every operation on a workspace path (a
	// world's workspace cap).
	Check vfs.Checker
}

// maxNotedPaths bounds the paths the commit note lists.
const maxNotedPaths = 20

// commitTimeout bounds the commit of a script's changes, which runs even
// when the caller's context is done (the script did write them).
const commitTimeout = 30 * time.Second

// treeSource is a vfs.Source over workspace trees: handles are cas.Refs
// (of tree nodes and of file blobs).
type treeSource struct {
	store workspace.Store
}

func (s treeSource) ReadDir(ctx context.Context, h vfs.Handle) ([]vfs.SourceEntry, error) {
	ref, _ := h.(cas.Ref)
	t, err := workspace.GetTree(ctx, s.store, ref)
	if err != nil {
		return nil, err
	}
	out := make([]vfs.SourceEntry, len(t.Entries))
	for i, e := range t.Entries {
		out[i] = vfs.SourceEntry{Name: e.Name, Dir: e.Kind == workspace.KindDir, Size: int64(e.Size),
			Mode: fs.FileMode(e.Mode).Perm(), Handle: e.Hash}
	}
	return out, nil
}

func (s treeSource) ReadFile(ctx context.Context, h vfs.Handle) ([]byte, error) {
	ref, _ := h.(cas.Ref)
	return s.store.Get(ctx, ref)
}

// mounted is the workspace of one run: the version it started from and
// its file system. It is the workspace.View of the run's workspace
// commands: they read and change the file system, as the script's own
// commands do, and the run commits it all as one version when it ends.
type mounted struct {
	ws    Workspace
	name  string
	start workspace.Head
	fs    *vfs.FS

	mu sync.Mutex // one workspace command changes the file system at a time
}

var _ workspace.View = (*mounted)(nil)

// root stores the file system's workspace as a tree and returns its root:
// the start's root while the script has changed nothing.
func (mt *mounted) root(ctx context.Context) (cas.Ref, error) {
	root, err := putNode(ctx, mt.ws.Store(), mt.fs.Export())
	if err != nil {
		return cas.Ref{}, fmt.Errorf("store the script's files: %w", err)
	}
	return root, nil
}

// head is the view's head when its tree is root: the start, or the
// version after it once root differs.
func (mt *mounted) head(root cas.Ref) workspace.Head {
	h := mt.start
	if root != h.Root {
		h.Version, h.Root, h.Recorded = h.Version+1, root, false
	}
	return h
}

// Head implements workspace.View: the script's files as they are now.
func (mt *mounted) Head(ctx context.Context) (workspace.Head, error) {
	root, err := mt.root(ctx)
	if err != nil {
		return workspace.Head{}, err
	}
	return mt.head(root), nil
}

// Update implements workspace.View: fn changes the script's files, as if
// the script had written, removed or replaced the paths it changed.
// Nothing is committed; the run commits it with the rest.
func (mt *mounted) Update(ctx context.Context, fn workspace.UpdateFunc) (workspace.Head, bool, error) {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	root, err := mt.root(ctx)
	if err != nil {
		return workspace.Head{}, false, err
	}
	next, err := fn(ctx, root)
	if err != nil || next == root {
		return mt.head(root), false, err
	}
	if err := mt.set(ctx, root, next); err != nil {
		return mt.head(root), false, err
	}
	return mt.head(next), true, nil
}

// set makes the changes from the tree from to the tree to in the file
// system: each path changed takes to's entry, a whole directory at once.
func (mt *mounted) set(ctx context.Context, from, to cas.Ref) error {
	store := mt.ws.Store()
	changes, err := workspace.Diff(ctx, store, from, to, "")
	if err != nil {
		return err
	}
	done := "" // a path set or removed whole: skip the changes below it
	for _, ch := range changes {
		if done != "" && strings.HasPrefix(ch.Path, done+"/") {
			continue
		}
		done = ch.Path
		if ch.Change == workspace.ChangeRemoved {
			if err := mt.fs.Set(ctx, ch.Path, nil); err != nil {
				return err
			}
			continue
		}
		e, err := workspace.ReadRef(ctx, store, to, ch.Path)
		if err != nil {
			return err
		}
		se := &vfs.SourceEntry{Name: e.Name, Dir: e.Kind == workspace.KindDir, Size: int64(e.Size),
			Mode: fs.FileMode(e.Mode).Perm(), Handle: e.Hash}
		if err := mt.fs.Set(ctx, ch.Path, se); err != nil {
			return err
		}
	}
	return nil
}

// mount makes the file system of a run.
func mount(ctx context.Context, m Mount, lim vfs.Limits, clock func() time.Time) (*mounted, error) {
	if m.Workspace == nil {
		return &mounted{fs: vfs.New(vfs.Options{Check: m.Check, Limits: lim, Clock: clock})}, nil
	}
	name := m.Name
	if name == "" {
		name = effects.DefaultWorkspace
	}
	head, err := m.Workspace.Head(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("read the head of workspace %q: %w", name, err)
	}
	fsys := vfs.New(vfs.Options{Source: treeSource{m.Workspace.Store()}, Root: head.Root,
		Check: m.Check, Limits: lim, Clock: clock})
	return &mounted{ws: m.Workspace, name: name, start: head, fs: fsys}, nil
}

// commit makes the script's changes one new version of the workspace,
// reported to rec. It returns a note for the script's stderr that lists
// the changes ("" when there are none).
func (mt *mounted) commit(ctx context.Context, rec *tools.Recorder) (string, error) {
	if mt.ws == nil || !mt.fs.Changed() {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	store := mt.ws.Store()
	root, err := putNode(ctx, store, mt.fs.Export())
	if err != nil {
		return "", fmt.Errorf("store the script's files: %w", err)
	}
	var changes []workspace.Change
	var base cas.Ref
	head, made, err := mt.ws.Update(tools.WithRecorder(ctx, rec), mt.name, func(ctx context.Context, cur cas.Ref) (cas.Ref, error) {
		base = cur
		next, err := workspace.Apply(ctx, store, cur, mt.start.Root, root)
		if err != nil {
			return cas.Ref{}, err
		}
		changes, err = workspace.Diff(ctx, store, cur, next, "")
		return next, err
	})
	if err != nil {
		return "", fmt.Errorf("commit the script's changes to workspace %q: %w", mt.name, err)
	}
	if !made {
		return "", nil
	}
	return commitNote(mt.name, mt.start, base, head, changes), nil
}

// commitNote lists a commit's changes: "workspace default: version 3 -> 4:
// +a.md ~b.txt -old/", files and emptied or new empty directories.
func commitNote(name string, start workspace.Head, base cas.Ref, head workspace.Head, changes []workspace.Change) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[workspace %s: version %d -> %d", name, head.Version-1, head.Version)
	if base != start.Root {
		fmt.Fprintf(&b, " (the script started from version %d; its changes were applied on top of the newer one)", start.Version)
	}
	b.WriteString(":")
	shown := 0
	var removedDir string
	for _, ch := range changes {
		if removedDir != "" && strings.HasPrefix(ch.Path, removedDir+"/") {
			continue
		}
		removedDir = ""
		sign := map[string]string{workspace.ChangeAdded: "+", workspace.ChangeRemoved: "-", workspace.ChangeChanged: "~"}[ch.Change]
		p := ch.Path
		if ch.Kind == workspace.KindDir {
			if ch.Change != workspace.ChangeRemoved {
				continue // its files are listed
			}
			removedDir = ch.Path
			p += "/"
		}
		if shown == maxNotedPaths {
			b.WriteString(" ...")
			break
		}
		b.WriteString(" " + sign + p)
		shown++
	}
	b.WriteString("]\n")
	return b.String()
}

// putNode stores an exported tree and returns its root.
func putNode(ctx context.Context, s workspace.Store, n *vfs.Node) (cas.Ref, error) {
	e, err := putEntry(ctx, s, n)
	if err != nil {
		return cas.Ref{}, err
	}
	return e.Hash, nil
}

func putEntry(ctx context.Context, s workspace.Store, n *vfs.Node) (workspace.Entry, error) {
	e := workspace.Entry{Name: n.Name, Mode: uint64(n.Mode.Perm())}
	if e.Mode == 0 {
		e.Mode = workspace.ModeFile
	}
	if !n.Dir {
		e.Kind = workspace.KindFile
		if ref, ok := n.Handle.(cas.Ref); ok {
			e.Hash, e.Size = ref, uint64(n.Size)
			return e, nil
		}
		ref, err := s.Put(ctx, n.Data)
		if err != nil {
			return e, err
		}
		e.Hash, e.Size = ref, uint64(len(n.Data))
		return e, nil
	}
	e.Kind = workspace.KindDir
	if ref, ok := n.Handle.(cas.Ref); ok {
		t, err := workspace.GetTree(ctx, s, ref)
		if err != nil {
			return e, err
		}
		e.Hash, e.Size = ref, t.Size()
		return e, nil
	}
	entries := make([]workspace.Entry, 0, len(n.Entries))
	for _, c := range n.Entries {
		ce, err := putEntry(ctx, s, c)
		if err != nil {
			return e, err
		}
		entries = append(entries, ce)
	}
	ref, size, err := workspace.PutEntries(ctx, s, entries)
	if err != nil {
		return e, err
	}
	e.Hash, e.Size = ref, size
	return e, nil
}

// errNoWorkspaceGrant is the reason a file operation is refused in a
// world whose tool plan grants scripts no workspace effects.
var errNoWorkspaceGrant = errors.New("no cap grant for workspace.call effects is configured for scripts (the world's tool plan emits none)")
