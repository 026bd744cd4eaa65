package workspace

import "context"

// A View is a workspace as one caller sees it before it commits: the
// file system of a bash script (adapters/bashfx), which starts from the
// newest version and becomes one new version when the script ends. Put in
// a call's context with Service.WithView, it is what the tools of that
// Service read and change in place of the newest version, so that a
// script's workspace_* commands and its own file operations see one
// workspace.
//
// A View's trees are in the Service's store. Its methods may be called
// concurrently (the stages of a pipeline).
type View interface {
	// Head returns the view's tree. Its Version is the version the view
	// becomes when it is committed: the version it started from, plus
	// one once it differs from it. Recorded is false once it differs.
	Head(ctx context.Context) (Head, error)
	// Update calls fn with the view's tree and makes the tree fn returns
	// the view's, committing nothing. It returns the head after the
	// update and whether the tree changed.
	Update(ctx context.Context, fn UpdateFunc) (Head, bool, error)
}

// viewKey is the context key of a View: the Service whose tools use it and
// the workspace it stands for.
type viewKey struct {
	svc       *Service
	workspace string
}

// WithView returns a copy of ctx in which the tools of s read and change v
// in place of the newest version of workspace: a call without a version
// (list, read, diff's newest side) reads v, and write, edit and remove
// change v and commit nothing (whoever made v commits it). A call that
// names a version reads that version of the store, except the version v
// would become, which the store does not have yet; a call that names
// another workspace, or the tools of another Service, are not affected.
func (s *Service) WithView(ctx context.Context, workspace string, v View) context.Context {
	return context.WithValue(ctx, viewKey{s, workspace}, v)
}

// view returns the View of workspace in ctx, or nil.
func (s *Service) view(ctx context.Context, workspace string) View {
	v, _ := ctx.Value(viewKey{s, workspace}).(View)
	return v
}
