package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/demiurge-dev/demiurge/cas"
)

// ToolList is what a server listed when it connected: the blob stored in
// CAS (canonical CBOR, one node), so that a session keeps exactly the
// tools and schemas the server gave (the model is offered each of them
// whose name and schema are usable: ServerInfo.Skipped says which are
// not).
type ToolList struct {
	Server string `cbor:"server"`
	// Target is the command line or URL of the server (never its
	// environment or headers).
	Target string `cbor:"target"`
	// Protocol is the MCP protocol version the session negotiated.
	Protocol string `cbor:"protocol_version"`
	// Name, Version: the server's implementation, as it said.
	Name    string       `cbor:"server_name"`
	Version string       `cbor:"server_version"`
	Tools   []ListedTool `cbor:"tools"`
}

// ListedTool is one tool of a ToolList. Schemas and annotations are
// compact JSON text with sorted keys, as the model is sent them.
type ListedTool struct {
	// Name is the server's name for the tool; As is the model's.
	Name         string `cbor:"name"`
	As           string `cbor:"as"`
	Title        string `cbor:"title"`
	Description  string `cbor:"description"`
	InputSchema  string `cbor:"input_schema"`
	OutputSchema string `cbor:"output_schema"` // "" when the tool declares none
	Annotations  string `cbor:"annotations"`   // "" when the tool has none
}

// newToolList records what session s listed.
func newToolList(cfg *Server, s *session) *ToolList {
	l := &ToolList{Server: cfg.Name, Target: redact(cfg.target(), cfg.Secrets), Protocol: s.protocol, Name: s.info.Name, Version: s.info.Version, Tools: []ListedTool{}}
	for _, t := range s.tools {
		lt := ListedTool{Name: t.Name, As: cfg.ToolName(t.Name), Title: t.Title, Description: t.Description,
			InputSchema: string(compactJSON(t.InputSchema, `{"type":"object"}`))}
		if t.OutputSchema != nil {
			lt.OutputSchema = string(compactJSON(t.OutputSchema, ""))
		}
		if t.Annotations != nil {
			lt.Annotations = string(compactJSON(t.Annotations, ""))
		}
		l.Tools = append(l.Tools, lt)
	}
	return l
}

// compactJSON encodes v as JSON with sorted keys (encoding/json sorts map
// keys), or returns def if it cannot.
func compactJSON(v any, def string) []byte {
	if raw, ok := v.(json.RawMessage); ok {
		var x any
		if json.Unmarshal(raw, &x) != nil {
			return []byte(def)
		}
		v = x
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil || b.Len() == 0 {
		return []byte(def)
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// Encode returns the list's canonical CBOR bytes.
func (l *ToolList) Encode() ([]byte, error) {
	b, err := cas.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("mcp: encode the tool list of %s: %w", l.Server, err)
	}
	return b, nil
}

// DecodeToolList parses a list written by Encode; bytes that are not its
// canonical encoding are an error.
func DecodeToolList(b []byte) (*ToolList, error) {
	var l ToolList
	if err := cas.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("mcp: decode a tool list: %w", err)
	}
	again, err := l.Encode()
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(again, b) {
		return nil, fmt.Errorf("mcp: decode a tool list: %w", cas.ErrNotCanonical)
	}
	return &l, nil
}

// store puts the list in CAS.
func (l *ToolList) store(ctx context.Context, p cas.Putter) (cas.Ref, error) {
	b, err := l.Encode()
	if err != nil {
		return cas.Ref{}, err
	}
	return p.Put(ctx, b)
}

// sameTools reports whether two lists offer the same tools.
func (l *ToolList) sameTools(o *ToolList) bool {
	if len(l.Tools) != len(o.Tools) {
		return false
	}
	for i := range l.Tools {
		if l.Tools[i] != o.Tools[i] {
			return false
		}
	}
	return true
}
