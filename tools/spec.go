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
	FamilyCustom     = "custom"     // custom.call: a tool of the program embedding demiurge
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
	// OutputLimit is the most bytes of the tool's output the model gets;
	// 0 leaves it to the chat's output_limit. A tool that bounds its own
	// output (a file read) says how much, so the chat does not cut it
	// shorter.
	OutputLimit int
}

// OutputLimiter is a tool that bounds its own output: OutputLimit is the
// most bytes of stdout it keeps; when it cuts, it appends a note of at
// most NoteRoom bytes.
type OutputLimiter interface {
	OutputLimit() int
}

// NoteRoom is the room a spec's output limit leaves for the note a tool
// appends when it cuts its output.
const NoteRoom = 512

// SpecFor describes a tool for the model.
func SpecFor(t Tool, family string) SpecTool {
	info := t.Info()
	st := SpecTool{Name: info.Name, Description: info.Description, Parameters: info.InputSchema, Family: family}
	if l, ok := t.(OutputLimiter); ok && l.OutputLimit() > 0 {
		st.OutputLimit = l.OutputLimit() + NoteRoom
	}
	return st
}

// Spec is the tools blob of a chat: the tools the model is offered, and
// what they came from.
type Spec struct {
	Tools []SpecTool
	// MCPLists names, by server, the tool list each MCP server gave (a
	// CAS blob, see tools/mcp), so that a journal that records the spec
	// reaches them (demiurge export follows the refs of blobs).
	MCPLists map[string]string
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
	Tools    map[string]specRoute `json:"tools"`
	MCPLists map[string]string    `json:"mcp_lists,omitempty"`
}

type specRoute struct {
	Family      string `json:"family"`
	Server      string `json:"server,omitempty"`
	ServerTool  string `json:"server_tool,omitempty"`
	OutputLimit int    `json:"output_limit,omitempty"`
}

// EncodeSpec returns the tools blob of ts (Spec.Encode).
func EncodeSpec(ts []SpecTool) ([]byte, error) { return Spec{Tools: ts}.Encode() }

// Encode returns the tools blob: {"tools": [...]} in the Responses API's
// flat function shape (what the LLM adapter sends), plus a "demiurge"
// member routing each tool to its family, with its output limit, and
// naming the MCP tool lists. Tools are sorted by name and the JSON is
// compact, so equal specs give equal bytes (and one blob in CAS).
func (sp Spec) Encode() ([]byte, error) {
	ts := append([]SpecTool(nil), sp.Tools...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	f := specFile{Demiurge: specMeta{Tools: map[string]specRoute{}, MCPLists: sp.MCPLists}}
	for i, t := range ts {
		if i > 0 && ts[i-1].Name == t.Name {
			return nil, fmt.Errorf("tools: two tools named %q", t.Name)
		}
		var params bytes.Buffer
		if err := json.Compact(&params, t.Parameters); err != nil {
			return nil, fmt.Errorf("tools: %s: parameters: %w", t.Name, err)
		}
		f.Tools = append(f.Tools, specFunc{Type: "function", Name: t.Name, Description: t.Description, Parameters: params.Bytes(), Strict: t.Strict})
		if t.OutputLimit < 0 {
			return nil, fmt.Errorf("tools: %s: output limit %d is negative", t.Name, t.OutputLimit)
		}
		f.Demiurge.Tools[t.Name] = specRoute{Family: t.Family, Server: t.Server, ServerTool: t.ServerTool, OutputLimit: t.OutputLimit}
	}
	return json.Marshal(f)
}

// DecodeSpec parses a tools blob written by EncodeSpec and returns its
// tools.
func DecodeSpec(b []byte) ([]SpecTool, error) {
	sp, err := ParseSpec(b)
	return sp.Tools, err
}

// ParseSpec parses a tools blob written by Spec.Encode.
func ParseSpec(b []byte) (Spec, error) {
	var f specFile
	if err := json.Unmarshal(b, &f); err != nil {
		return Spec{}, fmt.Errorf("tools: spec: %w", err)
	}
	sp := Spec{Tools: make([]SpecTool, 0, len(f.Tools)), MCPLists: f.Demiurge.MCPLists}
	for _, t := range f.Tools {
		r := f.Demiurge.Tools[t.Name]
		sp.Tools = append(sp.Tools, SpecTool{Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict,
			Family: r.Family, Server: r.Server, ServerTool: r.ServerTool, OutputLimit: max(r.OutputLimit, 0)})
	}
	return sp, nil
}
