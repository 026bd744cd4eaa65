package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// Tool families: which effect runs a tool in a world (docs/agent.md).
const (
	FamilyIntrospect = "introspect" // introspect.call
	FamilyWorkspace  = "workspace"  // workspace.call
	FamilyBash       = "bash"       // scripted.run
	FamilyMCP        = "mcp"        // mcp.call
)

// SpecTool is one tool in the tools blob a world sends the model.
type SpecTool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the tool's arguments.
	Parameters json.RawMessage
	// Strict asks the provider to hold the model to the schema exactly.
	Strict bool
	// Family says which effect runs the tool; Server and ServerTool name
	// an MCP tool.
	Family     string
	Server     string
	ServerTool string
}

// SpecFor describes a tool for the model.
func SpecFor(t Tool, family string) SpecTool {
	return SpecTool{Name: t.Name(), Description: t.Description(), Parameters: t.InputSchema(), Family: family}
}

type specFile struct {
	Tools    []specFunc `json:"tools"`
	Demiurge specMeta   `json:"demiurge"`
}

type specFunc struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

type specMeta struct {
	Tools map[string]specRoute `json:"tools"`
}

type specRoute struct {
	Family     string `json:"family"`
	Server     string `json:"server,omitempty"`
	ServerTool string `json:"server_tool,omitempty"`
}

// EncodeSpec returns the tools blob: {"tools": [...]} in the Responses
// API's flat function shape (what the LLM adapter sends), plus a
// "demiurge" member routing each tool to its family. Tools are sorted by
// name and the JSON is compact, so equal tool sets give equal bytes (and
// one blob in CAS).
func EncodeSpec(ts []SpecTool) ([]byte, error) {
	ts = append([]SpecTool(nil), ts...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	f := specFile{Demiurge: specMeta{Tools: map[string]specRoute{}}}
	for i, t := range ts {
		if i > 0 && ts[i-1].Name == t.Name {
			return nil, fmt.Errorf("tools: two tools named %q", t.Name)
		}
		var params bytes.Buffer
		if err := json.Compact(&params, t.Parameters); err != nil {
			return nil, fmt.Errorf("tools: %s: parameters: %w", t.Name, err)
		}
		f.Tools = append(f.Tools, specFunc{Type: "function", Name: t.Name, Description: t.Description, Parameters: params.Bytes(), Strict: t.Strict})
		f.Demiurge.Tools[t.Name] = specRoute{Family: t.Family, Server: t.Server, ServerTool: t.ServerTool}
	}
	return json.Marshal(f)
}

// DecodeSpec parses a tools blob written by EncodeSpec.
func DecodeSpec(b []byte) ([]SpecTool, error) {
	var f specFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("tools: spec: %w", err)
	}
	out := make([]SpecTool, 0, len(f.Tools))
	for _, t := range f.Tools {
		r := f.Demiurge.Tools[t.Name]
		out = append(out, SpecTool{Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict,
			Family: r.Family, Server: r.Server, ServerTool: r.ServerTool})
	}
	return out, nil
}
