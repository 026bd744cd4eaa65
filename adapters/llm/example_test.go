package llm_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/cas"
)

// mapStore is the smallest cas.Getter and cas.Putter.
type mapStore struct {
	mu sync.Mutex
	m  map[cas.Ref][]byte
}

func (s *mapStore) Get(_ context.Context, ref cas.Ref) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.m[ref]; ok {
		return b, nil
	}
	return nil, cas.ErrNotFound
}

func (s *mapStore) Put(_ context.Context, b []byte) (cas.Ref, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ref := cas.Sum(b)
	s.m[ref] = append([]byte(nil), b...)
	return ref, nil
}

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
	store := &mapStore{m: map[cas.Ref][]byte{}}
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
