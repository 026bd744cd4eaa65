package workspace

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/reducer/builtin"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/workspace/history"
)

// fakeWorld holds sys/Workspace@1 cells and records commits with the real
// reducer, as a world does when the chat reducer forwards them.
type fakeWorld struct {
	mu      sync.Mutex
	cells   map[string]schema.Value
	logical uint64
}

func newFakeWorld() *fakeWorld { return &fakeWorld{cells: map[string]schema.Value{}} }

func (w *fakeWorld) state(name string) (schema.Value, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.cells[name]
	return v, ok
}

// commitValue is a commit as the toolcall adapter puts it in a receipt.
func commitValue(c tools.Commit) schema.Value {
	rec := &tools.Recorder{}
	rec.AddCommit(c)
	m := tools.Response{}.Value(rec).(*schema.Map)
	cs, _ := m.Get("commits")
	return cs.([]schema.Value)[0]
}

// record applies a commit to its cell.
func (w *fakeWorld) record(c tools.Commit) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.logical++
	ev, err := schema.Normalize(schema.BuiltinTypes, schema.RefType(history.CommitSchema), commitValue(c))
	if err != nil {
		return err
	}
	out, err := builtin.WorkspaceReducer{}.Step(&reducer.Context{Key: c.Workspace, Stamp: reducer.Stamp{LogicalNowNS: w.logical}}, w.cells[c.Workspace], ev)
	if err != nil {
		return err
	}
	w.cells[c.Workspace] = out.State
	return nil
}

func (w *fakeWorld) history(t testing.TB, name string) history.History {
	t.Helper()
	v, _ := w.state(name)
	h, err := history.Decode(v)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestServiceHeads(t *testing.T) {
	ctx := t.Context()
	w := newFakeWorld()
	svc := NewService(cas.NewMemory(), CellHeads(w.state), &Options{Owner: "tester"})
	h, err := svc.Head(ctx, "default")
	if err != nil || h.Version != 0 || h.Root != EmptyRootRef || !h.Recorded {
		t.Fatalf("empty head %+v, %v", h, err)
	}
	write := func(p string) Head {
		t.Helper()
		rec := &tools.Recorder{}
		h, changed, err := svc.Update(tools.WithRecorder(ctx, rec), "default", func(ctx context.Context, root cas.Ref) (cas.Ref, error) {
			nr, _, err := WriteBytes(ctx, svc.Store(), root, p, []byte(p), 0)
			return nr, err
		})
		if err != nil || !changed {
			t.Fatalf("update %s: %v, changed %v", p, err, changed)
		}
		cs := rec.Commits()
		if len(cs) != 1 || cs[0].Version != h.Version || cs[0].Root != h.Root || cs[0].Owner != "tester" || cs[0].ExpectedHead != h.Version-1 {
			t.Fatalf("recorded %+v; want one commit of %+v", cs, h)
		}
		return h
	}
	h1 := write("a")
	h2 := write("b")
	if h1.Version != 1 || h2.Version != 2 {
		t.Fatalf("versions %d, %d; want 1, 2", h1.Version, h2.Version)
	}
	if h, _ := svc.Head(ctx, "default"); h.Version != 2 || h.Recorded {
		t.Fatalf("head before the world records: %+v", h)
	}
	if r, err := svc.Root(ctx, "default", 1); err != nil || r != h1.Root {
		t.Fatalf("Root(1) = %s, %v; want %s", r, err, h1.Root)
	}
	// The world records the first: the head is still ours, pending shrinks.
	for _, c := range svc.Pending("default")[:1] {
		if err := w.record(c); err != nil {
			t.Fatal(err)
		}
	}
	if h, _ := svc.Head(ctx, "default"); h.Version != 2 || h.Recorded || len(svc.Pending("default")) != 1 {
		t.Fatalf("head after recording 1: %+v, pending %v", h, svc.Pending("default"))
	}
	for _, c := range svc.Pending("default") {
		if err := w.record(c); err != nil {
			t.Fatal(err)
		}
	}
	if h, _ := svc.Head(ctx, "default"); h.Version != 2 || !h.Recorded || h.Root != h2.Root || len(svc.Pending("default")) != 0 {
		t.Fatalf("head after recording 2: %+v, pending %v", h, svc.Pending("default"))
	}
	if r, err := svc.Root(ctx, "default", 1); err != nil || r != h1.Root {
		t.Fatalf("recorded Root(1) = %s, %v; want %s", r, err, h1.Root)
	}
	if _, err := svc.Root(ctx, "default", 3); !errors.Is(err, ErrUnknownVersion) || !strings.Contains(err.Error(), "its versions are 1 to 2") {
		t.Fatalf("Root(3): %v", err)
	}
	// No change, no commit.
	_, changed, err := svc.Update(ctx, "default", func(ctx context.Context, root cas.Ref) (cas.Ref, error) { return root, nil })
	if err != nil || changed || len(svc.Pending("default")) != 0 {
		t.Fatalf("no-op update: changed %v, %v", changed, err)
	}
	// A failed update commits nothing.
	boom := errors.New("boom")
	if _, _, err := svc.Update(ctx, "default", func(context.Context, cas.Ref) (cas.Ref, error) { return cas.Ref{}, boom }); !errors.Is(err, boom) {
		t.Fatalf("failed update: %v", err)
	}
	for _, name := range []string{"", "a/b", "../x", strings.Repeat("x", 300)} {
		if _, err := svc.Head(ctx, name); !errors.Is(err, ErrInvalidWorkspace) {
			t.Errorf("Head(%q): %v; want ErrInvalidWorkspace", name, err)
		}
	}
}

// TestServiceLostCommits: when the world records another root as one of
// the service's versions, the service drops its commits from there on.
func TestServiceLostCommits(t *testing.T) {
	ctx := t.Context()
	w := newFakeWorld()
	store := cas.NewMemory()
	svc := NewService(store, CellHeads(w.state), nil)
	for _, p := range []string{"a", "b"} {
		if _, _, err := svc.Update(ctx, "ws", func(ctx context.Context, root cas.Ref) (cas.Ref, error) {
			nr, _, err := WriteBytes(ctx, store, root, p, nil, 0)
			return nr, err
		}); err != nil {
			t.Fatal(err)
		}
	}
	other := build(t, store, "other", "x")
	if err := w.record(tools.Commit{Workspace: "ws", ExpectedHead: 0, Version: 1, Root: other, Owner: "someone"}); err != nil {
		t.Fatal(err)
	}
	h, err := svc.Head(ctx, "ws")
	if err != nil || h.Version != 1 || h.Root != other || len(svc.Pending("ws")) != 0 {
		t.Fatalf("head %+v, %v, pending %v; want the world's version 1 and nothing pending", h, err, svc.Pending("ws"))
	}
}

// TestServiceConcurrentWriters: N writers in one workspace, their commits
// recorded by the world in a scrambled order while others still write:
// every change is in the final tree, the versions are 1..N.
func TestServiceConcurrentWriters(t *testing.T) {
	const n = 48
	ctx := t.Context()
	w := newFakeWorld()
	store := cas.NewMemory()
	svc := NewService(store, CellHeads(w.state), nil)
	write := Tools(svc)[2]
	if write.Info().Name != ToolWrite {
		t.Fatalf("tool 2 is %s", write.Info().Name)
	}
	commits := make(chan tools.Commit, n)
	recorded := make(chan error, 1)
	go func() {
		// Record in batches, each shuffled: commits arrive out of order.
		var batch []tools.Commit
		flush := func() error {
			rand.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
			for _, c := range batch {
				if err := w.record(c); err != nil {
					return err
				}
			}
			batch = batch[:0]
			return nil
		}
		for c := range commits {
			batch = append(batch, c)
			if len(batch) == 5 {
				if err := flush(); err != nil {
					recorded <- err
					return
				}
			}
		}
		recorded <- flush()
	}()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			rec := &tools.Recorder{}
			args := fmt.Sprintf(`{"path": "dir%d/file%d.txt", "content": "writer %d"}`, i%4, i, i)
			resp := write.Run(tools.WithRecorder(ctx, rec), tools.Request{Arguments: []byte(args)}, nil)
			if resp.ExitCode != 0 {
				t.Errorf("writer %d: %+v", i, resp)
			}
			for _, c := range rec.Commits() {
				commits <- c
			}
		})
	}
	wg.Wait()
	close(commits)
	if err := <-recorded; err != nil {
		t.Fatalf("the world refused a commit: %v", err)
	}
	hist := w.history(t, effectsDefault)
	if hist.Latest != n || len(hist.Versions) != n {
		t.Fatalf("world has latest %d and %d versions; want %d contiguous", hist.Latest, len(hist.Versions), n)
	}
	for v := uint64(1); v <= n; v++ {
		if _, ok := hist.Version(v); !ok {
			t.Fatalf("version %d missing", v)
		}
	}
	h, err := svc.Head(ctx, effectsDefault)
	if err != nil || h.Version != n || !h.Recorded || len(svc.Pending(effectsDefault)) != 0 {
		t.Fatalf("service head %+v, %v, pending %d", h, err, len(svc.Pending(effectsDefault)))
	}
	m, _ := hist.Version(n)
	if m.RootHash != h.Root {
		t.Fatalf("world root %s, service root %s", m.RootHash, h.Root)
	}
	for i := range n {
		p := fmt.Sprintf("dir%d/file%d.txt", i%4, i)
		data, _, err := ReadBytes(ctx, store, h.Root, p, nil)
		if err != nil || string(data) != fmt.Sprintf("writer %d", i) {
			t.Errorf("%s: %q, %v", p, data, err)
		}
	}
}

const effectsDefault = "default"

func TestServiceWaitsForWriter(t *testing.T) {
	svc := NewService(cas.NewMemory(), CellHeads(newFakeWorld().state), nil)
	inside := make(chan struct{})
	release := make(chan struct{})
	go svc.Update(context.Background(), "ws", func(ctx context.Context, root cas.Ref) (cas.Ref, error) {
		close(inside)
		<-release
		return root, nil
	})
	<-inside
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, err := svc.Update(ctx, "ws", func(ctx context.Context, root cas.Ref) (cas.Ref, error) { return root, nil })
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "waiting for another writer") {
		t.Fatalf("Update behind a writer with a cancelled ctx: %v", err)
	}
	close(release)
}

func TestDeferredHeads(t *testing.T) {
	d := NewDeferredHeads()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, _, err := d.Head(ctx, "ws"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Head before Set: %v", err)
	}
	w := newFakeWorld()
	d.Set(CellHeads(w.state))
	d.Set(nil) // ignored
	if err := w.record(tools.Commit{Workspace: "ws", Root: EmptyRootRef}); err != nil {
		t.Fatal(err)
	}
	v, root, ok, err := d.Head(t.Context(), "ws")
	if err != nil || !ok || v != 1 || root != EmptyRootRef {
		t.Fatalf("Head after Set: %d %s %v %v", v, root, ok, err)
	}
	if r, ok, err := d.Version(t.Context(), "ws", 1); err != nil || !ok || r != EmptyRootRef {
		t.Fatalf("Version(1): %s %v %v", r, ok, err)
	}
}
