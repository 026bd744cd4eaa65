// Package toolcall runs the tools of a world (tools.Tool) as effects:
// introspect.call and workspace.call ({tool, arguments_json}), whose
// receipts are sys/ToolResponse@1.
package toolcall

import (
	"context"
	"sort"
	"strings"
	"sync"

	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
)

// EffectCustom is the kind of the effect through which the tools of a
// program embedding demiurge run (sys/custom.call@1: params {tool,
// arguments_json}, a sys/ToolResponse@1 receipt, cap sys/custom@1).
const EffectCustom = "custom.call"

// Adapter runs tools by name. It is safe for concurrent use.
type Adapter struct {
	mu    sync.RWMutex
	tools map[string]tools.Tool
}

// New returns an adapter running the given tools. Of two tools with the
// same name, the later one is kept.
func New(ts ...tools.Tool) *Adapter {
	a := &Adapter{tools: map[string]tools.Tool{}}
	for _, t := range ts {
		a.tools[t.Info().Name] = t
	}
	return a
}

// Add registers more tools; a tool replaces one already registered under
// its name.
func (a *Adapter) Add(ts ...tools.Tool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range ts {
		a.tools[t.Info().Name] = t
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

// Run executes the tool named in the params with their arguments. The
// receipt is always ok: what the tool did, failures included, is in the
// sys/ToolResponse@1. Its adapter id is the tool's name; for a tool that is
// not registered (exit code 127, error "unknown_tool", and a stderr that
// lists the registered tools) it is the intent's kind.
func (a *Adapter) Run(ctx context.Context, c *effects.Call) effects.Receipt {
	name, _ := schema.FieldPath(c.Params, "tool").(string)
	t, ok := a.Tool(name)
	if !ok {
		var kind string
		if c.Intent != nil {
			kind = c.Intent.Kind
		}
		return effects.OK(kind, tools.Response{
			Stderr: a.unknown(name), ExitCode: 127, Error: "unknown_tool"}.Value(nil))
	}
	rec := &tools.Recorder{}
	args, _ := schema.FieldPath(c.Params, "arguments_json").(string)
	resp := t.Run(tools.WithRecorder(ctx, rec), tools.Request{Arguments: []byte(args)}, nil)
	return effects.OK(name, resp.Value(rec))
}

var _ effects.InlineAdapter = (*Adapter)(nil)

// RunsInline reports whether a call can run inside the world's step that
// asks for it (see effects.InlineAdapter): a call of a tools.InlineTool
// that agrees to, or of a tool that is not registered (its answer is an
// error, at once). Other tools run once the step is durable.
func (a *Adapter) RunsInline(ctx context.Context, c *effects.Call) bool {
	name, _ := schema.FieldPath(c.Params, "tool").(string)
	t, ok := a.Tool(name)
	if !ok {
		return true
	}
	it, ok := t.(tools.InlineTool)
	if !ok {
		return false
	}
	args, _ := schema.FieldPath(c.Params, "arguments_json").(string)
	return it.RunsInline(ctx, tools.Request{Arguments: []byte(args)})
}

// unknown is the stderr of a call of a tool that is not registered.
func (a *Adapter) unknown(name string) string {
	known := "no tools are registered"
	if names := a.Names(); len(names) > 0 {
		known = "the tools are " + strings.Join(names, ", ")
	}
	if name == "" {
		return "unknown tool: the call names no tool (params.tool is empty); " + known
	}
	return "unknown tool " + name + "; " + known
}
