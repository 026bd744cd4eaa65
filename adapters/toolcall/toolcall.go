// Package toolcall runs the tools of a world (tools.Tool) as effects:
// introspect.call and workspace.call ({tool, arguments_json}), whose
// receipts are sys/ToolResponse@1.
package toolcall

import (
	"context"
	"sort"
	"sync"

	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
)

// Adapter runs tools by name. It is safe for concurrent use.
type Adapter struct {
	mu    sync.RWMutex
	tools map[string]tools.Tool
}

// New returns an adapter running the given tools.
func New(ts ...tools.Tool) *Adapter {
	a := &Adapter{tools: map[string]tools.Tool{}}
	for _, t := range ts {
		a.tools[t.Name()] = t
	}
	return a
}

// Add registers more tools.
func (a *Adapter) Add(ts ...tools.Tool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range ts {
		a.tools[t.Name()] = t
	}
}

// Tool returns a registered tool.
func (a *Adapter) Tool(name string) (tools.Tool, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	t, ok := a.tools[name]
	return t, ok
}

// Names returns the names of the registered tools, sorted.
func (a *Adapter) Names() []string {
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := make([]string, 0, len(a.tools))
	for n := range a.tools {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func field(v schema.Value, name string) string {
	m, _ := v.(*schema.Map)
	f, _ := m.Get(name)
	s, _ := f.(string)
	return s
}

// Run executes the tool named in the params with their arguments.
func (a *Adapter) Run(ctx context.Context, c *effects.Call) effects.Receipt {
	name := field(c.Params, "tool")
	t, ok := a.Tool(name)
	if !ok {
		return effects.OK(c.Intent.Kind, Response(tools.Response{
			Stderr: "unknown tool " + name, ExitCode: 127, Error: "unknown_tool"}, nil))
	}
	rec := &tools.Recorder{}
	resp := t.Execute(tools.WithRecorder(ctx, rec), tools.Request{Arguments: []byte(field(c.Params, "arguments_json"))})
	return effects.OK(name, Response(resp, rec))
}

// Response returns a tool's response, and what its recorder saw, as a
// sys/ToolResponse@1 value.
func Response(r tools.Response, rec *tools.Recorder) schema.Value {
	var errv schema.Value
	if r.Error != "" {
		errv = r.Error
	}
	commits := []schema.Value{}
	for _, c := range rec.Commits() {
		commits = append(commits, schema.Record("workspace", c.Workspace, "expected_head", c.ExpectedHead,
			"meta", schema.Record("root_hash", c.Root.String(), "owner", c.Owner, "created_at", uint64(0))))
	}
	calls := []schema.Value{}
	for _, c := range rec.Calls() {
		var ce schema.Value
		if c.Error != "" {
			ce = c.Error
		}
		d := c.Duration.Nanoseconds()
		if d < 0 {
			d = 0
		}
		calls = append(calls, schema.Record("seq", c.Seq, "tool", c.Tool, "arguments_json", c.Arguments,
			"exit_code", schema.Int(int64(c.ExitCode)), "error", ce, "duration_ns", uint64(d)))
	}
	return schema.Record("stdout", r.Stdout, "stderr", r.Stderr, "exit_code", schema.Int(int64(r.ExitCode)),
		"error", errv, "stdout_truncated", r.StdoutTruncated, "stderr_truncated", r.StderrTruncated,
		"commits", commits, "calls", calls)
}
