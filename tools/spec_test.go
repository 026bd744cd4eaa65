package tools_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/tools"
)

type limitedTool struct{ limit int }

func (limitedTool) Info() tools.Info {
	return tools.Info{Name: "read", Description: "Read a file.", InputSchema: json.RawMessage(`{"type": "object"}`)}
}
func (limitedTool) Run(context.Context, tools.Request, tools.StatusFunc) tools.Response {
	return tools.Response{}
}
func (t limitedTool) OutputLimit() int { return t.limit }

func TestSpecRoundTrip(t *testing.T) {
	sp := tools.Spec{
		Tools: []tools.SpecTool{
			{Name: "zeta_call", Description: "An MCP tool.", Parameters: json.RawMessage(`{"type": "object", "properties": {}}`),
				Family: tools.FamilyMCP, Server: "zeta", ServerTool: "call", OutputLimit: 30512},
			tools.SpecFor(limitedTool{limit: 50000}, tools.FamilyWorkspace),
			tools.SpecFor(limitedTool{limit: 0}, tools.FamilyIntrospect),
		},
		MCPLists: map[string]string{"zeta": "blake3:" + strings.Repeat("ab", 32)},
	}
	sp.Tools[2].Name = "unlimited"
	b, err := sp.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := tools.ParseSpec(b)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]tools.SpecTool{}
	for _, st := range got.Tools {
		byName[st.Name] = st
	}
	if l := byName["read"].OutputLimit; l != 50000+tools.NoteRoom {
		t.Errorf("read's limit = %d, want its own plus room for the note", l)
	}
	if l := byName["unlimited"].OutputLimit; l != 0 {
		t.Errorf("a tool without a limit of its own has %d", l)
	}
	if st := byName["zeta_call"]; st.Server != "zeta" || st.ServerTool != "call" || st.OutputLimit != 30512 || st.Family != tools.FamilyMCP {
		t.Errorf("zeta_call = %+v", st)
	}
	if !reflect.DeepEqual(got.MCPLists, sp.MCPLists) {
		t.Errorf("MCPLists = %v, want %v", got.MCPLists, sp.MCPLists)
	}
	// Sorted and compact: the same spec in another order is the same blob.
	sp.Tools[0], sp.Tools[1] = sp.Tools[1], sp.Tools[0]
	b2, _ := sp.Encode()
	if string(b) != string(b2) {
		t.Errorf("the blob depends on the order of the tools:\n%s\n%s", b, b2)
	}
	// The model's part is the Responses API's function shape.
	var f struct {
		Tools []map[string]any `json:"tools"`
	}
	if err := json.Unmarshal(b, &f); err != nil || len(f.Tools) != 3 || f.Tools[0]["type"] != "function" || f.Tools[0]["name"] != "read" {
		t.Errorf("tools = %v, %v", f.Tools, err)
	}
	if strings.Contains(string(b), "output_limit\":0") {
		t.Errorf("a zero limit is written: %s", b)
	}
}

func TestSpecEncodeRefuses(t *testing.T) {
	for name, ts := range map[string][]tools.SpecTool{
		"duplicate": {{Name: "a", Parameters: json.RawMessage(`{}`)}, {Name: "a", Parameters: json.RawMessage(`{}`)}},
		"bad json":  {{Name: "a", Parameters: json.RawMessage(`{`)}},
		"negative":  {{Name: "a", Parameters: json.RawMessage(`{}`), OutputLimit: -1}},
	} {
		if _, err := tools.EncodeSpec(ts); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func FuzzParseSpec(f *testing.F) {
	b, _ := tools.Spec{Tools: []tools.SpecTool{{Name: "a", Parameters: json.RawMessage(`{}`), Family: "mcp", OutputLimit: 9}},
		MCPLists: map[string]string{"s": "x"}}.Encode()
	f.Add(b)
	f.Add([]byte(`{"tools":[{"name":"a"}],"demiurge":{"tools":{"a":{"output_limit":-5}}}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		sp, err := tools.ParseSpec(b)
		if err != nil {
			return
		}
		for _, st := range sp.Tools {
			if st.OutputLimit < 0 {
				t.Fatalf("negative limit %d", st.OutputLimit)
			}
		}
	})
}
