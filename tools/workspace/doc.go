// Package workspace implements demiurge's workspaces: versioned file trees
// in a content-addressed store, the tools a model uses on them, and the
// AgentOS workspace.* effect adapters.
//
// # Trees
//
// A tree is a sys/WorkspaceTree@2 node (canonical CBOR, entries sorted by
// name) whose entries are files (raw blobs) and directories (more tree
// nodes). Trees are immutable and deterministic: the same files make the
// same root ref, whatever order they were written in. WriteBytes, Remove
// and EditFile return a new root and leave the old one intact. Every path
// goes through CleanPath (effects.CleanWorkspacePath plus UTF-8 and length
// checks) before anything touches a tree: no "..", no absolute host path,
// no NUL or backslash.
//
// # Versions
//
// The versions of a workspace live in the world, in the cell of the
// built-in reducer sys/Workspace@1 (see reducer/builtin). A Service knows
// them through Heads, adds the commits it made that the world has not
// recorded yet, and serializes writers per workspace, so that concurrent
// tool calls never lose each other's changes. Each commit is reported to
// the tools.Recorder of the call; the world records it when the chat
// reducer forwards it as a sys/WorkspaceCommit@1 event.
//
// # Wiring a world
//
// The tools run in a world through adapters/toolcall (workspace.call), the
// primitives through Adapters. A world needs its adapters before it exists,
// so the Service reads the world's versions through DeferredHeads:
//
//	heads := workspace.NewDeferredHeads()
//	svc := workspace.NewService(storage.CAS(), heads, nil)
//	adapters["workspace.call"] = toolcall.New(workspace.Tools(svc)...)
//	w, err := world.Open(ctx, world.Options{..., Adapters: adapters})
//	heads.Set(workspace.CellHeads(func(name string) (schema.Value, bool) {
//		v, _, ok := w.State(history.Module, name)
//		return v, ok
//	}))
//
// # Tools
//
// Tools returns workspace_list, workspace_read, workspace_write,
// workspace_edit, workspace_remove and workspace_diff (tools.Tool). Their
// arguments are JSON objects with an optional "workspace" (default
// effects.DefaultWorkspace); listings, diffs and write results are JSON on
// stdout, a read is the file's text. Errors are responses with a message
// that says what failed, where, and how to fix it.
//
// # Views
//
// A View is a workspace as a caller sees it before it commits: a bash
// script's file system (adapters/bashfx). In a context made with
// Service.WithView, the tools of that Service read and change the View in
// place of the workspace's newest version and commit nothing, so that a
// script's workspace_* commands and its own file operations see one
// workspace, which the script commits as one version when it ends.
//
// # Caveats
//
//   - Every commit a Service makes must reach the world. A commit whose
//     receipt is lost leaves the Service building on a version the world
//     never records: later commits wait in the world's state for it. Start
//     a new Service (as reopening the world does) to drop such commits.
//   - Directories are explicit entries: WriteBytes creates missing parents,
//     Remove leaves an emptied parent in place.
//   - annotations_get and annotations_set are not implemented; entries and
//     trees keep the annotations_hash they were read with.
package workspace
