package llm

import (
	"errors"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
)

// TestReadRequest: the system prompt joins the instructions and the blob,
// text blobs become user messages, a nested tool is flattened; a blob the
// store lacks is an invalid params error naming it.
func TestReadRequest(t *testing.T) {
	store := cas.NewMemory()
	put := func(s string) cas.Ref {
		r, err := store.Put(t.Context(), []byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	instr, tools := put("Use the tools."), put(`[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`)
	short := "Be brief."
	p := Params{Model: "m", Instructions: &short, InstructionsRef: &instr, ToolsRef: &tools,
		MessageRefs: []cas.Ref{put("hello"), put(`[{"role":"assistant","content":"hi"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]`)}}
	r, err := ReadRequest(t.Context(), store, p)
	if err != nil {
		t.Fatal(err)
	}
	var items []string
	for _, it := range r.Items {
		items = append(items, string(it))
	}
	if r.Model != "m" || r.Instructions != "Be brief.\n\nUse the tools." || len(r.Tools) != 1 || !strings.Contains(string(r.Tools[0]), `"name":"f"`) ||
		strings.Contains(string(r.Tools[0]), `"function":`) ||
		strings.Join(items, "|") != `{"content":"hello","role":"user"}|{"role":"assistant","content":"hi"}|{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}` {
		t.Errorf("ReadRequest = %+v, items %s, tools %s", r, items, r.Tools)
	}
	p.ToolsRef = new(cas.Sum([]byte("not stored")))
	if _, err := ReadRequest(t.Context(), store, p); !errors.Is(err, ErrInvalidParams) || !errors.Is(err, cas.ErrNotFound) || !strings.Contains(err.Error(), "tools_ref") {
		t.Errorf("error %v; want invalid params naming tools_ref", err)
	}
}
