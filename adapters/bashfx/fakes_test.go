package bashfx

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/toolcall"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
)

// fakeTool is a tools.Tool whose Run is a function of its decoded
// arguments.
type fakeTool struct {
	name, desc string
	schema     string
	output     string // the output schema; "" is {}
	calls      atomic.Int64
	fn         func(ctx context.Context, args map[string]any) tools.Response
}

func (f *fakeTool) Info() tools.Info {
	out := f.output
	if out == "" {
		out = `{}`
	}
	return tools.Info{Name: f.name, ShortDescription: f.desc, Description: f.desc + "\nMore text.",
		InputSchema: json.RawMessage(f.schema), OutputSchema: json.RawMessage(out), Version: "1.0.0"}
}

func (f *fakeTool) Run(ctx context.Context, req tools.Request, _ tools.StatusFunc) tools.Response {
	f.calls.Add(1)
	var args map[string]any
	if err := json.Unmarshal(req.Arguments, &args); err != nil {
		return tools.Response{Stderr: f.name + ": arguments are not a JSON object: " + err.Error(), ExitCode: 2, Error: "invalid_arguments"}
	}
	return f.fn(ctx, args)
}

// fakeWorld is a set of fake tools: introspect_state, introspect_tick,
// workspace_read, workspace_write, workspace_twice, workspace_fail_after
// and docs_search (an MCP-like tool).
type fakeWorld struct {
	mu    sync.Mutex
	files map[string]string
	head  uint64
	tools map[string]*fakeTool
}

func newFakeWorld() *fakeWorld {
	fw := &fakeWorld{files: map[string]string{}, tools: map[string]*fakeTool{}}
	add := func(t *fakeTool) { fw.tools[t.name] = t }
	add(&fakeTool{name: "introspect_state", desc: "Read the state of a reducer cell",
		schema: `{"type":"object","properties":{"module":{"type":"string"}},"additionalProperties":false}`,
		fn: func(ctx context.Context, args map[string]any) tools.Response {
			return tools.Response{Stdout: `{"count":3,"items":["pear","apple","fig"]}` + "\n"}
		}})
	add(&fakeTool{name: "introspect_tick", desc: "Wait some milliseconds",
		schema: `{"type":"object","properties":{"ms":{"type":"integer"}},"required":["ms"]}`,
		fn: func(ctx context.Context, args map[string]any) tools.Response {
			ms, _ := args["ms"].(float64)
			t := time.NewTimer(time.Duration(ms) * time.Millisecond)
			defer t.Stop()
			select {
			case <-t.C:
				return tools.Response{Stdout: "tick\n"}
			case <-ctx.Done():
				return tools.Response{Stderr: "introspect_tick: cancelled", ExitCode: 124, Error: "timeout"}
			}
		}})
	add(&fakeTool{name: "workspace_read", desc: "Read a file of a workspace",
		schema: `{"type":"object","properties":{"path":{"type":"string"},"workspace":{"type":"string"}},"required":["path"],"additionalProperties":false}`,
		fn: func(ctx context.Context, args map[string]any) tools.Response {
			fw.mu.Lock()
			defer fw.mu.Unlock()
			p, _ := args["path"].(string)
			s, ok := fw.files[p]
			if !ok {
				return tools.Response{Stderr: "workspace_read: no such file: " + p, ExitCode: 1, Error: "not_found"}
			}
			return tools.Response{Stdout: s}
		}})
	add(&fakeTool{name: "workspace_write", desc: "Write a file of a workspace",
		schema: `{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"},"workspace":{"type":"string"}},"required":["path","content"],"additionalProperties":false}`,
		fn: func(ctx context.Context, args map[string]any) tools.Response {
			p, _ := args["path"].(string)
			c, _ := args["content"].(string)
			v := fw.write(ctx, p, c)
			return tools.Response{Stdout: fmt.Sprintf(`{"version":%d}`+"\n", v)}
		}})
	add(&fakeTool{name: "workspace_twice", desc: "Write a file twice (two commits)",
		schema: `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`,
		fn: func(ctx context.Context, args map[string]any) tools.Response {
			p, _ := args["path"].(string)
			fw.write(ctx, p, "one")
			v := fw.write(ctx, p, "two")
			return tools.Response{Stdout: fmt.Sprintf(`{"version":%d}`+"\n", v)}
		}})
	add(&fakeTool{name: "workspace_fail_after", desc: "Write a file, then fail",
		schema: `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`,
		fn: func(ctx context.Context, args map[string]any) tools.Response {
			p, _ := args["path"].(string)
			fw.write(ctx, p, "partial")
			return tools.Response{Stderr: "workspace_fail_after: disk on fire\nsecond line", ExitCode: 3, Error: "internal"}
		}})
	add(&fakeTool{name: "docs_search", desc: "Search the docs (an MCP tool)",
		schema: `{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`,
		fn: func(ctx context.Context, args map[string]any) tools.Response {
			return tools.Response{Stdout: "result\n"}
		}})
	return fw
}

// write stores a file and reports the commit, as a workspace tool does.
func (fw *fakeWorld) write(ctx context.Context, path, content string) uint64 {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	fw.files[path] = content
	expected := fw.head
	fw.head++
	tools.RecorderFrom(ctx).AddCommit(tools.Commit{Workspace: "default", ExpectedHead: expected, Version: fw.head,
		Root: cas.Sum([]byte(path + "=" + content)), Owner: "test"})
	return fw.head
}

// list returns the named tools, in that order.
func (fw *fakeWorld) list(names ...string) []tools.Tool {
	out := make([]tools.Tool, 0, len(names))
	for _, n := range names {
		out = append(out, fw.tools[n])
	}
	return out
}

// all returns every fake tool, sorted by name.
func (fw *fakeWorld) all() []tools.Tool {
	names := make([]string, 0, len(fw.tools))
	for n := range fw.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return fw.list(names...)
}

// mcpRoute routes docs_* to mcp.call on server "docs", the rest like
// DefaultRoute.
func mcpRoute(tool string) (Route, bool) {
	if rest, ok := strings.CutPrefix(tool, "docs_"); ok {
		return Route{Kind: KindMCP, Params: func(_, args string) schema.Value {
			return schema.Record("server", "docs", "tool", rest, "arguments_json", args)
		}}, true
	}
	return DefaultRoute(tool)
}

// subCall is what a recording adapter saw.
type subCall struct {
	Kind, Grant  string
	Key          string
	Origin       effects.Origin
	LogicalNowNS uint64
	Params       string
}

// recording wraps an adapter and records the calls it runs.
type recording struct {
	next  effects.Adapter
	mu    sync.Mutex
	calls []subCall
}

func (r *recording) Run(ctx context.Context, c *effects.Call) effects.Receipt {
	r.mu.Lock()
	r.calls = append(r.calls, subCall{Kind: c.Intent.Kind, Grant: c.Intent.Grant, Key: string(c.Intent.IdempotencyKey),
		Origin: c.Intent.Origin, LogicalNowNS: c.Intent.LogicalNowNS, Params: string(schema.ValueJSON(c.Params))})
	r.mu.Unlock()
	return r.next.Run(ctx, c)
}

func (r *recording) seen() []subCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]subCall(nil), r.calls...)
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// loadCatalog loads the test world's AIR.
func loadCatalog(t testing.TB) *schema.Catalog {
	t.Helper()
	cat, err := schema.Load("testdata/world", nil)
	if err != nil {
		t.Fatalf("load testdata/world: %v", err)
	}
	if len(cat.Warnings) > 0 {
		t.Fatalf("load testdata/world: warnings: %v", cat.Warnings)
	}
	return cat
}

// fixture is an adapter over the fake world with a real gate.
type fixture struct {
	cat *schema.Catalog
	fw  *fakeWorld
	rec *recording
	a   *Adapter
}

func newFixture(t testing.TB, mutate func(*Options)) *fixture {
	t.Helper()
	cat := loadCatalog(t)
	fw := newFakeWorld()
	rec := &recording{next: toolcall.New(fw.all()...)}
	grants, err := GrantsFromPlan(cat, "test/tool_plan@1")
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{
		Catalog: cat, Tools: fw.all(), Grants: grants, Route: mcpRoute,
		Adapters: map[string]effects.Adapter{KindIntrospect: rec, KindWorkspace: rec, KindMCP: rec},
	}
	if mutate != nil {
		mutate(&opts)
	}
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{cat: cat, fw: fw, rec: rec, a: a}
}

// logicalNow is the logical time of the test intents: 2023-11-14T22:13:20Z.
const logicalNow = uint64(1_700_000_000_000_000_000)

// call returns a scripted.run call as the world dispatches it: decided by
// the gate, from the test tool plan's bash step.
func (f *fixture) call(t testing.TB, grant, script string, timeoutMS any) *effects.Call {
	t.Helper()
	d := effects.NewGate(f.cat).Check(effects.Request{
		Kind: KindScripted, Params: schema.Record("script", script, "timeout_ms", timeoutMS), Grant: grant,
		IdempotencyKey: []byte("k1"), LogicalNowNS: logicalNow,
		Origin: effects.Origin{Kind: "plan", Name: "test/tool_plan@1", PlanID: 7, Step: "bash_call"},
	})
	if !d.Allowed {
		t.Fatalf("scripted.run denied: %s", d.Reason)
	}
	st := cas.NewMemory()
	return &effects.Call{Intent: d.Intent, Params: d.Intent.Params, CAS: st, Now: time.Now, Sleep: effects.SleepUntil, Attempt: 1}
}

// receipt is a decoded sys/ToolResponse@1 receipt.
type receipt struct {
	Stdout          string  `json:"stdout"`
	Stderr          string  `json:"stderr"`
	ExitCode        int     `json:"exit_code"`
	Error           *string `json:"error"`
	StdoutTruncated bool    `json:"stdout_truncated"`
	StderrTruncated bool    `json:"stderr_truncated"`
	Commits         []struct {
		Workspace    string  `json:"workspace"`
		ExpectedHead *uint64 `json:"expected_head"`
		Meta         struct {
			RootHash string `json:"root_hash"`
			Owner    string `json:"owner"`
		} `json:"meta"`
	} `json:"commits"`
	Calls []struct {
		Seq           uint64  `json:"seq"`
		Tool          string  `json:"tool"`
		ArgumentsJSON string  `json:"arguments_json"`
		ExitCode      int     `json:"exit_code"`
		Error         *string `json:"error"`
		DurationNS    uint64  `json:"duration_ns"`
	} `json:"calls"`
}

// run runs a call and checks that its receipt is ok and fits
// sys/ToolResponse@1 as it is (already canonical).
func (f *fixture) run(t testing.TB, c *effects.Call) receipt {
	t.Helper()
	r := f.a.Run(t.Context(), c)
	return checkReceipt(t, f.cat, r)
}

func checkReceipt(t testing.TB, cat *schema.Catalog, r effects.Receipt) receipt {
	t.Helper()
	if r.Status != effects.StatusOK || r.AdapterID != AdapterID {
		t.Fatalf("receipt status %q from %q: %s", r.Status, r.AdapterID, r.Error)
	}
	typ := schema.RefType("sys/ToolResponse@1")
	norm, err := schema.Normalize(cat, typ, r.Payload)
	if err != nil {
		t.Fatalf("receipt does not fit sys/ToolResponse@1: %v\n%s", err, schema.ValueJSON(r.Payload))
	}
	a, err := schema.Encode(norm)
	if err != nil {
		t.Fatal(err)
	}
	b, err := schema.Encode(r.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Errorf("receipt is not canonical:\n got %s\nnorm %s", schema.ValueJSON(r.Payload), schema.ValueJSON(norm))
	}
	js, err := schema.MarshalJSON(cat, typ, norm)
	if err != nil {
		t.Fatal(err)
	}
	var out receipt
	if err := json.Unmarshal(js, &out); err != nil {
		t.Fatalf("decode receipt %s: %v", js, err)
	}
	return out
}
