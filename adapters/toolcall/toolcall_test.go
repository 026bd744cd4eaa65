package toolcall

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
)

// funcTool is a tools.Tool whose Run is fn.
type funcTool struct {
	name string
	fn   func(ctx context.Context, req tools.Request) tools.Response
}

func (f *funcTool) Info() tools.Info { return tools.Info{Name: f.name} }
func (f *funcTool) Run(ctx context.Context, req tools.Request, _ tools.StatusFunc) tools.Response {
	return f.fn(ctx, req)
}

// testTools are echo (its arguments to stdout), fail (exit 3, error
// "internal"), write (two workspace commits and a sub-call, as the bash
// tool records them) and wait (until its context is done).
func testTools() []tools.Tool {
	return []tools.Tool{
		&funcTool{name: "echo", fn: func(_ context.Context, req tools.Request) tools.Response {
			return tools.Response{Stdout: string(req.Arguments)}
		}},
		&funcTool{name: "fail", fn: func(context.Context, tools.Request) tools.Response {
			return tools.Response{Stdout: "partial", Stderr: "fail: disk on fire", ExitCode: 3, Error: "internal",
				StdoutTruncated: true, StderrTruncated: true}
		}},
		&funcTool{name: "write", fn: func(ctx context.Context, _ tools.Request) tools.Response {
			rec := tools.RecorderFrom(ctx)
			rec.AddCommit(tools.Commit{Workspace: "default", ExpectedHead: 0, Version: 1, Root: cas.Sum([]byte("one")), Owner: "test"})
			rec.AddCommit(tools.Commit{Workspace: "notes", ExpectedHead: 4, Version: 5, Root: cas.Sum([]byte("two")), Owner: "test"})
			rec.AddCall(tools.SubCall{Seq: 1, Tool: "echo", Arguments: `{"a":1}`, ExitCode: 0, Duration: time.Millisecond})
			rec.AddCall(tools.SubCall{Seq: 2, Tool: "fail", Arguments: `{}`, ExitCode: 3, Error: "internal", Duration: -time.Second})
			return tools.Response{Stdout: "written"}
		}},
		&funcTool{name: "wait", fn: func(ctx context.Context, _ tools.Request) tools.Response {
			<-ctx.Done()
			return tools.Response{Stderr: "wait: " + ctx.Err().Error(), ExitCode: 124, Error: "timeout"}
		}},
	}
}

// toolResponse checks v against sys/ToolResponse@1, as the world checks a
// receipt, and returns it as JSON.
func toolResponse(t *testing.T, v schema.Value) string {
	t.Helper()
	n, err := schema.Normalize(schema.BuiltinTypes, schema.RefType("sys/ToolResponse@1"), v)
	if err != nil {
		t.Fatalf("%s does not fit sys/ToolResponse@1: %v", schema.String(v), err)
	}
	return schema.String(n)
}

// want builds the JSON of a normalized sys/ToolResponse@1 with no commits
// and no calls.
func want(t *testing.T, stdout, stderr string, exit int, errv string) string {
	t.Helper()
	return toolResponse(t, tools.Response{Stdout: stdout, Stderr: stderr, ExitCode: exit, Error: errv}.Value(nil))
}

// callParams normalizes sys/ToolCallParams@1 as the gate does.
func callParams(t *testing.T, tool, args string) schema.Value {
	t.Helper()
	v, err := schema.Normalize(schema.BuiltinTypes, schema.RefType("sys/ToolCallParams@1"),
		schema.Record("tool", tool, "arguments_json", args))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

const knownTools = "the tools are echo, fail, wait, write"

func TestRun(t *testing.T) {
	a := New(testTools()...)
	for _, tc := range []struct {
		name     string
		params   schema.Value
		noIntent bool
		adapter  string
		want     string // the receipt as JSON
	}{
		{name: "ok", params: callParams(t, "echo", `{"x": [1, 2]}`), adapter: "echo",
			want: want(t, `{"x": [1, 2]}`, "", 0, "")},
		{name: "no arguments", params: callParams(t, "echo", ""), adapter: "echo",
			want: want(t, "", "", 0, "")},
		{name: "the tool fails", params: callParams(t, "fail", `{}`), adapter: "fail",
			want: toolResponse(t, tools.Response{Stdout: "partial", Stderr: "fail: disk on fire", ExitCode: 3, Error: "internal",
				StdoutTruncated: true, StderrTruncated: true}.Value(nil))},
		{name: "unknown tool", params: callParams(t, "nope", `{}`), adapter: "workspace.call",
			want: want(t, "", "unknown tool nope; "+knownTools, 127, "unknown_tool")},
		{name: "tool names are case-sensitive", params: callParams(t, "Echo", `{}`), adapter: "workspace.call",
			want: want(t, "", "unknown tool Echo; "+knownTools, 127, "unknown_tool")},
		{name: "no tool", params: schema.Record("arguments_json", `{}`), adapter: "workspace.call",
			want: want(t, "", "unknown tool: the call names no tool (params.tool is empty); "+knownTools, 127, "unknown_tool")},
		{name: "params not a record", params: "echo", adapter: "workspace.call",
			want: want(t, "", "unknown tool: the call names no tool (params.tool is empty); "+knownTools, 127, "unknown_tool")},
		{name: "tool not text", params: schema.Record("tool", uint64(7)), adapter: "workspace.call",
			want: want(t, "", "unknown tool: the call names no tool (params.tool is empty); "+knownTools, 127, "unknown_tool")},
		// A call built by hand without an intent: no panic; the dispatcher
		// fills an empty adapter id with the kind.
		{name: "unknown tool without an intent", params: callParams(t, "nope", `{}`), noIntent: true, adapter: "",
			want: want(t, "", "unknown tool nope; "+knownTools, 127, "unknown_tool")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &effects.Call{Intent: &effects.Intent{Kind: "workspace.call"}, Params: tc.params}
			if tc.noIntent {
				c.Intent = nil
			}
			r := a.Run(t.Context(), c)
			if r.Status != effects.StatusOK || r.Error != "" {
				t.Fatalf("receipt %s %q; want ok", r.Status, r.Error)
			}
			if r.AdapterID != tc.adapter {
				t.Errorf("adapter id %q; want %q", r.AdapterID, tc.adapter)
			}
			if got := toolResponse(t, r.Payload); got != tc.want {
				t.Errorf("receipt\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestRunNoTools: an adapter without tools says so.
func TestRunNoTools(t *testing.T) {
	r := New().Run(t.Context(), &effects.Call{Intent: &effects.Intent{Kind: "introspect.call"}, Params: callParams(t, "echo", `{}`)})
	if got, want := toolResponse(t, r.Payload), want(t, "", "unknown tool echo; no tools are registered", 127, "unknown_tool"); got != want {
		t.Errorf("receipt\n%s\nwant\n%s", got, want)
	}
}

// TestRunRecords: what the tool records (commits, sub-calls) is in the
// receipt, in order; a negative duration is 0; the first commit expects
// head 0 (not null).
func TestRunRecords(t *testing.T) {
	r := New(testTools()...).Run(t.Context(), &effects.Call{Intent: &effects.Intent{Kind: "workspace.call"}, Params: callParams(t, "write", `{}`)})
	got := toolResponse(t, r.Payload)
	want := fmt.Sprintf(`{"calls":[`+
		`{"seq":1,"tool":"echo","error":null,"exit_code":0,"duration_ns":1000000,"arguments_json":"{\"a\":1}"},`+
		`{"seq":2,"tool":"fail","error":"internal","exit_code":3,"duration_ns":0,"arguments_json":"{}"}],`+
		`"error":null,"stderr":"","stdout":"written","commits":[`+
		`{"meta":{"owner":"test","root_hash":"%s","created_at":0},"workspace":"default","expected_head":0},`+
		`{"meta":{"owner":"test","root_hash":"%s","created_at":0},"workspace":"notes","expected_head":4}],`+
		`"exit_code":0,"stderr_truncated":false,"stdout_truncated":false}`,
		cas.Sum([]byte("one")), cas.Sum([]byte("two")))
	if got != want {
		t.Errorf("receipt\n%s\nwant\n%s", got, want)
	}
}

// TestRunCancelled: the tool gets the call's context.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
	defer cancel()
	r := New(testTools()...).Run(ctx, &effects.Call{Intent: &effects.Intent{Kind: "workspace.call"}, Params: callParams(t, "wait", `{}`)})
	if got, want := toolResponse(t, r.Payload), want(t, "", "wait: context deadline exceeded", 124, "timeout"); got != want {
		t.Errorf("receipt\n%s\nwant\n%s", got, want)
	}
}

func TestRegistry(t *testing.T) {
	ts := testTools()
	a := New(ts[1], ts[0])
	if got := a.Names(); !reflect.DeepEqual(got, []string{"echo", "fail"}) {
		t.Errorf("Names() = %q", got)
	}
	if _, ok := a.Tool("write"); ok {
		t.Error("Tool(write) before Add")
	}
	a.Add(ts[2])
	if tl, ok := a.Tool("write"); !ok || tl != ts[2] {
		t.Errorf("Tool(write) = %v, %v after Add", tl, ok)
	}
	// A tool replaces one of the same name, in New and in Add.
	loud := &funcTool{name: "echo", fn: func(context.Context, tools.Request) tools.Response { return tools.Response{Stdout: "LOUD"} }}
	if tl, _ := New(ts[0], loud).Tool("echo"); tl != loud {
		t.Error("New: the later echo was not kept")
	}
	a.Add(loud)
	if got := a.Names(); !reflect.DeepEqual(got, []string{"echo", "fail", "write"}) {
		t.Errorf("Names() = %q after replacing echo", got)
	}
	r := a.Run(t.Context(), &effects.Call{Intent: &effects.Intent{Kind: "workspace.call"}, Params: callParams(t, "echo", `{}`)})
	if s := schema.FieldPath(r.Payload, "stdout"); s != "LOUD" {
		t.Errorf("stdout %v after replacing echo; want LOUD", s)
	}
	if got := New().Names(); got == nil || len(got) != 0 {
		t.Errorf("Names() of no tools = %#v; want empty, not nil", got)
	}
}

// TestConcurrent: tools are added while calls run (go test -race).
func TestConcurrent(t *testing.T) {
	a := New(testTools()...)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			name := fmt.Sprintf("t%d", i)
			a.Add(&funcTool{name: name, fn: func(context.Context, tools.Request) tools.Response { return tools.Response{Stdout: name} }})
			for _, tool := range []string{"echo", name, "missing"} {
				r := a.Run(t.Context(), &effects.Call{Intent: &effects.Intent{Kind: "workspace.call"}, Params: callParams(t, tool, `{}`)})
				if r.Status != effects.StatusOK {
					t.Errorf("%s: %s", tool, r.Error)
				}
			}
			a.Names()
		})
	}
	wg.Wait()
	if names := a.Names(); len(names) != 12 || !slices.IsSorted(names) {
		t.Errorf("Names() = %q; want 12 names, sorted", names)
	}
}
