package llm_test

import (
	"context"
	"fmt"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/cas"
)

// An agent turn: the model asks for a tool, and the receipt names the call.
func ExampleGenerator_Generate() {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_read", Arguments: `{"path":"README.md"}`}}},
	}})
	defer srv.Close()

	g, err := llm.New(llm.Config{BaseURL: srv.URL})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	store := cas.NewMemory()
	msg, _ := store.Put(ctx, []byte("Summarise README.md"))
	tools, _ := store.Put(ctx, []byte(`{"tools":[{"type":"function","name":"workspace_read",`+
		`"parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},"strict":false}]}`))

	r, err := g.Generate(ctx, store, llm.Params{
		Model:       "gpt-5.2",
		MessageRefs: []cas.Ref{msg},
		ToolsRef:    &tools,
		ToolChoice:  &llm.ToolChoice{Kind: llm.ToolChoiceRequired},
	}, "sk-example-key", nil)
	if err != nil {
		panic(err)
	}
	var call llm.ToolCall
	if err := cas.GetNode(ctx, store, r.ToolCallRefs[0], &call); err != nil {
		panic(err)
	}
	fmt.Println(r.FinishReason, r.Attempts, call.Name, call.ArgumentsJSON)
	// Output: tool_calls 1 workspace_read {"path":"README.md"}
}
