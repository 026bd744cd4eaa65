package mcp

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
)

// EffectKind is the effect kind of a call of an MCP tool.
const EffectKind = "mcp.call"

// AdapterID is the adapter id of mcp.call receipts.
const AdapterID = "mcp"

// Params returns sys/McpCallParams@1 {server, tool, arguments_json}, the
// params of mcp.call.
func Params(server, tool, argumentsJSON string) schema.Value {
	return schema.Record("server", server, "tool", tool, "arguments_json", argumentsJSON)
}

// Adapter returns the effects.Adapter of mcp.call: it calls the tool the
// params name ({server, tool, arguments_json}, the server's name of the
// tool) and returns a sys/ToolResponse@1 receipt. Its status is ok
// whatever the call did: an unknown server or tool (unknown_tool, exit
// 127), bad arguments, a failed tool, a server that is down or a timeout
// are in the response, for the model to read.
func (s *Set) Adapter() effects.Adapter { return effects.AdapterFunc(s.run) }

func (s *Set) run(ctx context.Context, c *effects.Call) effects.Receipt {
	server := textField(c.Params, "server")
	tool := textField(c.Params, "tool")
	t, resp := s.find(server, tool)
	if t != nil {
		resp = t.Run(ctx, tools.Request{Arguments: []byte(textField(c.Params, "arguments_json"))}, nil)
	}
	return effects.OK(AdapterID, resp.Value(nil))
}

// find returns the tool a server knows by tool, or the response that says
// it does not exist (and what does).
func (s *Set) find(server, tool string) (*Tool, tools.Response) {
	c, ok := s.byName[server]
	if !ok {
		names := make([]string, 0, len(s.conns))
		for _, c := range s.conns {
			names = append(names, c.cfg.Name)
		}
		return nil, tools.Response{Stderr: fmt.Sprintf("there is no MCP server named %q in this world (servers: %s)", server, orNone(names)),
			ExitCode: exitUnknown, Error: ErrorUnknownTool}
	}
	if t, ok := s.Lookup(server, tool); ok {
		return t, tools.Response{}
	}
	c.mu.Lock()
	status, err := c.status, c.err
	c.mu.Unlock()
	if status == StatusFailed {
		return nil, tools.Response{Stderr: strings.TrimPrefix(err.Error(), ErrServerDown.Error()+": "), ExitCode: exitFailed, Error: ErrorUnavailable}
	}
	var names []string
	for _, t := range s.tools {
		if t.conn == c {
			names = append(names, t.def.Name)
		}
	}
	sort.Strings(names)
	return nil, tools.Response{Stderr: fmt.Sprintf("the MCP server %s has no tool %q (its tools: %s)", server, tool, orNone(names)),
		ExitCode: exitUnknown, Error: ErrorUnknownTool}
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func textField(v schema.Value, name string) string {
	m, _ := v.(*schema.Map)
	f, _ := m.Get(name)
	s, _ := f.(string)
	return s
}
