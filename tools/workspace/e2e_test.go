package workspace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/toolcall"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/reducer/builtin"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools/workspace"
	"github.com/demiurge-dev/demiurge/tools/workspace/history"
	"github.com/demiurge-dev/demiurge/world"
	"github.com/demiurge-dev/demiurge/world/worldview"
)

// e2eAIR is a world with the sys/Workspace@1 reducer and a plan that runs
// one workspace tool call (workspace.call) per test/Call@1 event and raises
// its response as test/Result@1. The grant allows the default workspace
// under src/ and docs/ only.
const e2eAIR = `[
 {"$kind": "manifest", "air_version": "1",
  "schemas": [{"name": "test/Call@1"}, {"name": "test/Result@1"}, {"name": "sys/WorkspaceCommit@1"}, {"name": "sys/WorkspaceHistory@1"},
              {"name": "sys/WorkspaceName@1"}, {"name": "sys/WorkspaceCommitMeta@1"}, {"name": "sys/ToolResponse@1"}],
  "modules": [{"name": "sys/Workspace@1"}],
  "plans": [{"name": "test/tool_plan@1"}],
  "effects": [{"name": "sys/workspace.call@1"}],
  "caps": [], "policies": [{"name": "test/policy@1"}],
  "defaults": {"policy": "test/policy@1", "cap_grants": [
    {"name": "workspace", "cap": "sys/workspace@1", "params": {"workspaces": ["default"], "path_prefixes": ["src", "docs"]}}]},
  "routing": {"events": [{"event": "sys/WorkspaceCommit@1", "reducer": "sys/Workspace@1", "key_field": "workspace"}], "inboxes": []},
  "triggers": [{"event": "test/Call@1", "plan": "test/tool_plan@1", "correlate_by": "id"}]},
 {"$kind": "defschema", "name": "test/Call@1", "type": {"record": {"id": {"text": {}}, "tool": {"text": {}}, "arguments_json": {"text": {}}}}},
 {"$kind": "defschema", "name": "test/Result@1", "type": {"record": {"id": {"text": {}}, "response": {"ref": "sys/ToolResponse@1"}}}},
 {"$kind": "defpolicy", "name": "test/policy@1", "rules": [
   {"when": {"effect_kind": "workspace.call", "origin_kind": "plan", "origin_name": "test/tool_plan@1"}, "decision": "allow"},
   {"when": {}, "decision": "deny"}]},
 {"$kind": "defplan", "name": "test/tool_plan@1", "input": "test/Call@1",
  "steps": [
    {"id": "call", "op": "emit_effect", "kind": "workspace.call", "cap": "workspace",
     "params": {"record": {"tool": {"ref": "@plan.input.tool"}, "arguments_json": {"ref": "@plan.input.arguments_json"}}},
     "bind": {"effect_id_as": "h"}},
    {"id": "wait", "op": "await_receipt", "for": {"ref": "@var:h"}, "bind": {"as": "r"}},
    {"id": "result", "op": "raise_event", "event": "test/Result@1",
     "value": {"record": {"id": {"ref": "@plan.input.id"}, "response": {"ref": "@var:r"}}}}],
  "edges": [{"from": "call", "to": "wait"}, {"from": "wait", "to": "result"}]}
]`

type e2e struct {
	t    *testing.T
	cat  *schema.Catalog
	reg  *reducer.Registry
	st   world.Storage
	w    *world.World
	svc  *workspace.Service
	mu   sync.Mutex
	res  map[string]schema.Value // test/Result@1 response by id
	recs []journal.Record
	// inline: the service reads heads through the call's context, so the
	// world runs the tools inside its steps.
	inline bool
}

func newE2EWith(t *testing.T, inline bool) *e2e {
	reg := reducer.NewRegistry()
	builtin.Register(reg)
	cat, err := schema.LoadSources([]schema.Source{{Name: "e2e.air.json", Data: []byte(e2eAIR)}}, &schema.LoadOptions{Reducers: reg.Names()})
	if err != nil {
		t.Fatalf("load the test AIR:\n%v", err)
	}
	e := &e2e{t: t, cat: cat, reg: reg, st: world.NewMemoryStorage(), res: map[string]schema.Value{}, inline: inline}
	e.open()
	return e
}

// open opens the world with a fresh workspace service, as a process does.
func (e *e2e) open() {
	heads := workspace.NewDeferredHeads()
	e.svc = workspace.NewService(e.st.CAS(), heads, nil)
	clock := time.Unix(1_700_000_000, 0)
	w, err := world.Open(e.t.Context(), world.Options{
		Name: "e2e", Catalog: e.cat, Reducers: e.reg, Storage: e.st,
		Adapters: map[string]effects.Adapter{"workspace.call": toolcall.New(workspace.Tools(e.svc)...)},
		Now: func() time.Time {
			e.mu.Lock()
			defer e.mu.Unlock()
			clock = clock.Add(time.Second)
			return clock
		},
		OnCommit: func(recs []journal.Record) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.recs = append(e.recs, recs...)
			for _, r := range recs {
				if r.Kind != world.KindRaised {
					continue
				}
				v, _ := schema.Decode(r.Payload)
				m := v.(*schema.Map)
				if s, _ := m.Get("schema"); s != "test/Result@1" {
					continue
				}
				val, _ := m.Get("value")
				id, _ := val.(*schema.Map).Get("id")
				resp, _ := val.(*schema.Map).Get("response")
				e.res[id.(string)] = resp
			}
		},
	})
	if err != nil {
		e.t.Fatalf("open world: %v", err)
	}
	if e.inline {
		heads.Set(worldview.WorkspaceHeads(w))
	} else {
		heads.Set(workspace.CellHeads(func(name string) (schema.Value, bool) {
			v, _, ok := w.State(history.Module, name)
			return v, ok
		}))
	}
	e.w = w
	e.t.Cleanup(func() { w.Close() })
}

// calls sends tool calls (id, tool, arguments) together and waits for the
// world to be idle; it returns their responses by id.
func (e *e2e) calls(cs ...[3]string) map[string]*schema.Map {
	e.t.Helper()
	ctx := e.t.Context()
	for _, c := range cs {
		if _, err := e.w.Send(ctx, "test/Call@1", schema.Record("id", c[0], "tool", c[1], "arguments_json", c[2]), nil); err != nil {
			e.t.Fatalf("send %v: %v", c, err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := e.w.WaitIdle(wctx); err != nil {
		e.t.Fatalf("wait: %v", err)
	}
	out := map[string]*schema.Map{}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range cs {
		if r, ok := e.res[c[0]]; ok {
			out[c[0]] = r.(*schema.Map)
		}
	}
	return out
}

func get(m *schema.Map, k string) schema.Value {
	v, _ := m.Get(k)
	return v
}

// forward sends the commits of responses to the world, in the order given.
func (e *e2e) forward(resps ...*schema.Map) {
	e.t.Helper()
	for _, r := range resps {
		for _, c := range get(r, "commits").([]schema.Value) {
			if _, err := e.w.Send(e.t.Context(), history.CommitSchema, c, nil); err != nil {
				e.t.Fatalf("forward commit %s: %v", schema.String(c), err)
			}
		}
	}
}

func (e *e2e) history() history.History {
	e.t.Helper()
	v, _, _ := e.w.State(history.Module, "default")
	h, err := history.Decode(v)
	if err != nil {
		e.t.Fatal(err)
	}
	return h
}

func (e *e2e) kinds(kind string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, r := range e.recs {
		if r.Kind == kind {
			v, _ := schema.Decode(r.Payload)
			out = append(out, schema.String(v))
		}
	}
	return out
}

func write(id, path, content string) [3]string {
	b, _ := json.Marshal(map[string]string{"path": path, "content": content})
	return [3]string{id, workspace.ToolWrite, string(b)}
}

func TestEndToEnd(t *testing.T) {
	t.Run("dispatched", func(t *testing.T) { testEndToEnd(t, newE2EWith(t, false)) })
	// The same calls run inside the world's steps: each commits with the
	// event that asked for it.
	t.Run("inline", func(t *testing.T) {
		e := newE2EWith(t, true)
		testEndToEnd(t, e)
		// A call's result is there when Send returns: no dispatch.
		if _, err := e.w.Send(t.Context(), "test/Call@1", schema.Record("id", "late", "tool", workspace.ToolList, "arguments_json", `{"path": "src"}`), nil); err != nil {
			t.Fatal(err)
		}
		e.mu.Lock()
		r, ok := e.res["late"]
		e.mu.Unlock()
		if !ok {
			t.Fatal("no result when Send returned: the call did not run inside the step")
		}
		if code, _ := schema.AsInt64(get(r.(*schema.Map), "exit_code")); code != 0 {
			t.Errorf("workspace_list inside the step: %s", schema.String(r))
		}
	})
}

func testEndToEnd(t *testing.T, e *e2e) {

	// Three writes at once: the service serializes them; their commits are
	// forwarded in reverse order and wait in the world's state for the gap.
	rs := e.calls(write("w1", "src/a.txt", "alpha\n"), write("w2", "src/b.txt", "beta\n"), write("w3", "docs/c.md", "# gamma\n"))
	if len(rs) != 3 {
		t.Fatalf("%d results; want 3", len(rs))
	}
	// The service serializes the writes in whatever order the dispatcher
	// runs them: which version wrote src/b.txt is read from its response.
	byVersion := map[uint64]*schema.Map{}
	var bVersion uint64
	for id, r := range rs {
		if get(r, "exit_code") != uint64(0) {
			t.Fatalf("%s: %s", id, schema.String(r))
		}
		cs := get(r, "commits").([]schema.Value)
		if len(cs) != 1 {
			t.Fatalf("%s: %d commits", id, len(cs))
		}
		var out struct{ Version uint64 }
		json.Unmarshal([]byte(get(r, "stdout").(string)), &out)
		byVersion[out.Version] = r
		if id == "w2" {
			bVersion = out.Version
		}
	}
	if len(byVersion) != 3 || byVersion[1] == nil || byVersion[2] == nil || byVersion[3] == nil {
		t.Fatalf("versions %v; want 1, 2, 3", slices.Sorted(maps.Keys(byVersion)))
	}
	e.forward(byVersion[3], byVersion[2])
	if h := e.history(); h.Latest != 0 || h.Waiting() != 2 {
		t.Fatalf("before version 1 arrives: latest %d, %d waiting; want 0 and 2", h.Latest, h.Waiting())
	}
	e.forward(byVersion[1])
	if h := e.history(); h.Latest != 3 || h.Waiting() != 0 {
		t.Fatalf("after version 1 arrives: latest %d, %d waiting; want 3 and 0", h.Latest, h.Waiting())
	}

	// Edit, then read and list through the tools: the newest version.
	rs = e.calls([3]string{"e1", workspace.ToolEdit, `{"path": "src/a.txt", "old_string": "alpha", "new_string": "ALPHA"}`})
	e.forward(rs["e1"])
	rs = e.calls(
		[3]string{"r1", workspace.ToolRead, `{"path": "src/a.txt"}`},
		[3]string{"l1", workspace.ToolList, `{"path": "src", "recursive": true}`},
		[3]string{"d1", workspace.ToolDiff, `{"from_version": 0, "prefix": "docs"}`},
	)
	if got := get(rs["r1"], "stdout"); got != "ALPHA\n" {
		t.Errorf("read: %v", got)
	}
	if got := get(rs["l1"], "stdout"); got != `{"workspace":"default","version":4,"path":"src","entries":[{"path":"src/a.txt","kind":"file","size":6},{"path":"src/b.txt","kind":"file","size":5}]}` {
		t.Errorf("list: %v", got)
	}
	if got := get(rs["d1"], "stdout"); got != `{"workspace":"default","from_version":0,"to_version":4,"prefix":"docs","changes":[{"path":"docs","change":"added","kind":"dir"},{"path":"docs/c.md","change":"added","kind":"file"}]}` {
		t.Errorf("diff: %v", got)
	}

	// The cap refuses paths outside src/ and docs/, after cleaning, and
	// other workspaces: the plan step fails, nothing is written.
	before := len(e.kinds(world.KindDenied))
	rs = e.calls(write("x1", "secret.txt", "no"), write("x2", "src/../secret.txt", "no"),
		[3]string{"x3", workspace.ToolWrite, `{"workspace": "other", "path": "src/x", "content": "no"}`})
	if len(rs) != 0 {
		t.Errorf("denied calls have results: %v", rs)
	}
	denied := e.kinds(world.KindDenied)[before:]
	if len(denied) != 3 {
		t.Fatalf("%d denials; want 3: %v", len(denied), denied)
	}
	for i, want := range []string{`path \"secret.txt\" is not under the allowed path prefixes [src docs]`, `escapes the workspace`, `workspace \"other\" is not in the allowed workspaces [default]`} {
		if !strings.Contains(denied[i], want) {
			t.Errorf("denial %d: %s; want %s", i, denied[i], want)
		}
	}
	// A tool error is a response, not a failure of the world.
	rs = e.calls([3]string{"n1", workspace.ToolRead, `{"path": "src/nope"}`})
	if get(rs["n1"], "error") != workspace.ErrorNotFound || !strings.Contains(get(rs["n1"], "stderr").(string), "src/nope not found") {
		t.Errorf("not found: %s", schema.String(rs["n1"]))
	}

	// A conflicting commit (made on version 2, latest is 4) is refused.
	stale := schema.Record("workspace", "default", "expected_head", uint64(2),
		"meta", schema.Record("root_hash", workspace.EmptyRootRef.String(), "owner", "someone", "created_at", uint64(0)))
	if _, err := e.w.Send(t.Context(), history.CommitSchema, stale, nil); err != nil {
		t.Fatal(err)
	}
	if errs := e.kinds(world.KindReducerError); len(errs) != 1 || !strings.Contains(errs[0], "the commit was made on version 2, but the latest version is 4") {
		t.Errorf("reducer errors %v; want the conflict", errs)
	}
	h := e.history()
	if h.Latest != 4 {
		t.Fatalf("latest %d; want 4", h.Latest)
	}
	for v := uint64(1); v <= 4; v++ {
		m, _ := h.Version(v)
		if m.CreatedAt <= 1_700_000_000*1e9 || m.Owner != workspace.DefaultOwner {
			t.Errorf("version %d: %+v", v, m)
		}
	}
	m4, _ := h.Version(4)
	data, _, err := workspace.ReadBytes(t.Context(), e.st.CAS(), m4.RootHash, "docs/c.md", nil)
	if err != nil || string(data) != "# gamma\n" {
		t.Errorf("docs/c.md at version 4: %q, %v", data, err)
	}

	// Replay from genesis re-derives every record byte for byte.
	state := func(m *world.Machine) string {
		v, ref, _ := m.State(history.Module, "default")
		return ref.String() + " " + schema.String(v)
	}
	var live string
	e.w.View(func(m *world.Machine) { live = state(m) })
	res, err := world.Rerun(t.Context(), world.RerunOptions{Name: "e2e", Catalog: e.cat, Reducers: e.reg, Storage: e.st, FromGenesis: true})
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if got := state(res.Machine); got != live {
		t.Fatalf("replayed state %s\nlive state %s", got, live)
	}

	// Reopened with a new service, the world's versions are what it knows.
	e.w.Close()
	e.open()
	rs = e.calls([3]string{"r2", workspace.ToolRead, fmt.Sprintf(`{"path": "src/b.txt", "version": %d}`, bVersion)}, write("w4", "src/d.txt", "delta\n"))
	if get(rs["r2"], "stdout") != "beta\n" {
		t.Errorf("read version %d, which wrote src/b.txt, after reopening: %s", bVersion, schema.String(rs["r2"]))
	}
	var out struct{ Version uint64 }
	json.Unmarshal([]byte(get(rs["w4"], "stdout").(string)), &out)
	if out.Version != 5 {
		t.Errorf("write after reopening made version %d; want 5", out.Version)
	}
	e.forward(rs["w4"])
	if h := e.history(); h.Latest != 5 {
		t.Errorf("latest %d; want 5", h.Latest)
	}
}
