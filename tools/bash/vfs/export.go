package vfs

import (
	"io/fs"
	"slices"
	"strings"
)

// Node is an entry of the workspace as Export returns it.
type Node struct {
	Name string // "" for the workspace root
	Dir  bool
	Mode fs.FileMode // permission bits
	// Handle is set when the entry is unchanged since it came from the
	// source: a file's content, or a directory's whole subtree (then
	// Entries is nil). Size is the source's size for a file.
	Handle Handle
	Size   int64
	// Data is a file's content when Handle is nil. It must not be
	// changed.
	Data []byte
	// Entries are a directory's entries, sorted by name, when Handle is
	// nil.
	Entries []*Node
}

// Export returns the workspace as the script left it. Entries the script
// did not change keep their source handles, so that a caller can reuse the
// source's nodes for them; Changed is false when the whole workspace is
// unchanged (the root has its Handle, or both are empty).
func (f *FS) Export() *Node {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tree()
	return export("", f.ws)
}

func export(name string, n *node) *Node {
	out := &Node{Name: name, Dir: n.dir, Mode: n.mode, Size: n.size}
	if unchanged(n) {
		out.Handle = n.h
		if !n.dir {
			return out
		}
		if n.h != nil || !n.listed {
			return out
		}
	}
	if !n.dir {
		out.Data = n.data[:len(n.data):len(n.data)]
		return out
	}
	out.Size = 0
	names := make([]string, 0, len(n.kids))
	for k := range n.kids {
		names = append(names, k)
	}
	slices.SortFunc(names, strings.Compare)
	out.Entries = make([]*Node, 0, len(names))
	for _, k := range names {
		out.Entries = append(out.Entries, export(k, n.kids[k]))
	}
	return out
}

// unchanged reports whether n is still its source entry: a file whose
// content was not written, a directory whose entries were neither added,
// removed, renamed nor changed.
func unchanged(n *node) bool {
	if n.h == nil {
		return false
	}
	if !n.dir || !n.listed {
		return true
	}
	for _, k := range n.kids {
		if !unchanged(k) {
			return false
		}
	}
	return true
}

// Changed reports whether the script changed the workspace: wrote,
// created, removed, renamed or chmod-ed anything under /workspace.
func (f *FS) Changed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tree()
	if f.src == nil {
		return len(f.ws.kids) > 0
	}
	return !unchanged(f.ws)
}
