package workspace

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/tools"
)

// memView is a View over a tree of the Service's store, started from the
// Service's head.
type memView struct {
	mu    sync.Mutex
	start Head
	root  cas.Ref
}

func (v *memView) head() Head {
	h := v.start
	if v.root != h.Root {
		h.Version, h.Root, h.Recorded = h.Version+1, v.root, false
	}
	return h
}

func (v *memView) Head(context.Context) (Head, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.head(), nil
}

func (v *memView) Update(ctx context.Context, fn UpdateFunc) (Head, bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	next, err := fn(ctx, v.root)
	if err != nil || next == v.root {
		return v.head(), false, err
	}
	v.root = next
	return v.head(), true, nil
}

// TestWithView: in a context with a View, the tools of the Service read
// and change the View and commit nothing; a version, another workspace
// and the tools of another Service read and change the store.
func TestWithView(t *testing.T) {
	e := newToolEnv(t)
	e.run(ToolWrite, `{"path": "a", "content": "one"}`)
	h, err := e.svc.Head(t.Context(), "default")
	if err != nil {
		t.Fatal(err)
	}
	v := &memView{start: h, root: h.Root}
	ctx := e.svc.WithView(t.Context(), "default", v)
	run := func(svc *Service, name, args string) (tools.Response, int) {
		t.Helper()
		var tl tools.Tool
		for _, x := range Tools(svc) {
			if x.Info().Name == name {
				tl = x
			}
		}
		rec := &tools.Recorder{}
		resp := tl.Run(tools.WithRecorder(ctx, rec), tools.Request{Arguments: json.RawMessage(args)}, nil)
		for _, c := range rec.Commits() {
			if err := e.w.record(c); err != nil {
				t.Fatal(err)
			}
		}
		return resp, len(rec.Commits())
	}
	for _, c := range []struct {
		svc           *Service
		tool, args    string
		stdout        string
		commits, code int
	}{
		{e.svc, ToolWrite, `{"path": "a", "content": "two"}`, `{"workspace":"default","version":2,"path":"a","bytes":3,"changed":true}`, 0, 0},
		{e.svc, ToolRead, `{"path": "a"}`, "two", 0, 0},
		{e.svc, ToolRead, `{"path": "a", "version": 1}`, "one", 0, 0},
		{e.svc, ToolRead, `{"path": "a", "version": 2}`, "two", 0, 0}, // the view's version, not in the store
		{e.svc, ToolEdit, `{"path": "a", "old_string": "two", "new_string": "zwei"}`, `{"workspace":"default","version":2,"path":"a","replacements":1}`, 0, 0},
		{e.svc, ToolDiff, `{}`, `{"workspace":"default","from_version":1,"to_version":2,"changes":[{"path":"a","change":"changed","kind":"file"}]}`, 0, 0},
		{e.svc, ToolWrite, `{"path": "b", "content": "x", "workspace": "other"}`, `{"workspace":"other","version":1,"path":"b","bytes":1,"changed":true}`, 1, 0},
		{NewService(e.svc.Store(), e.svc.heads, nil), ToolRead, `{"path": "a"}`, "one", 0, 0},
		{e.svc, ToolRemove, `{"path": "a"}`, `{"workspace":"default","version":2,"path":"a","kind":"file"}`, 0, 0},
		{e.svc, ToolRead, `{"path": "a"}`, "", 0, 1},
	} {
		resp, commits := run(c.svc, c.tool, c.args)
		if resp.Stdout != c.stdout || commits != c.commits || resp.ExitCode != c.code {
			t.Errorf("%s %s: exit %d, stdout %q, %d commits; want %d, %q, %d (stderr %q)", c.tool, c.args, resp.ExitCode, resp.Stdout, commits, c.code, c.stdout, c.commits, resp.Stderr)
		}
	}
	if h2, _ := e.svc.Head(t.Context(), "default"); h2.Version != 1 {
		t.Errorf("the store's head is version %d; want 1", h2.Version)
	}
}
