package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/agent"
)

// TestToolPromptTokens: a chat with a Claude model counts Anthropic's
// tool-use system prompt in its estimate of its first request. Anthropic
// adds it to every request that carries tools (and the chat's always
// do), its input_tokens count it, and no byte of the request shows it:
// before, the chat's first estimate fell 346 tokens short of Anthropic's
// count (its later ones start from that count). The estimate is read as
// the request arrives; a manifest whose Settings@2 predates
// tool_prompt_tokens counts as before, so its worlds replay unchanged.
func TestToolPromptTokens(t *testing.T) {
	firstEstimate := func(manifest, model string) uint64 {
		t.Helper()
		var chat atomic.Pointer[agent.Chat]
		var seen atomic.Uint64
		srv := llmtest.NewServerFunc(func(r llmtest.Request) llmtest.Turn {
			if c := chat.Load(); r.Seq == 0 && c != nil {
				if st, ok := c.State(); ok {
					seen.Store(st.Tokens) // the state that sent this request
				}
			}
			return llmtest.Turn{Text: "hello"}
		})
		t.Cleanup(srv.Close)
		w, err := agent.Open(t.Context(), manifest,
			env("OPENAI_API_KEY", "sk-test", "OPENAI_BASE_URL", srv.URL, "ANTHROPIC_API_KEY", "sk-ant-test", "ANTHROPIC_BASE_URL", srv.Root),
			agent.WithModel(agent.Model{Name: model}), agent.WithDir(t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		c := w.Chat("c")
		chat.Store(c)
		if _, end := collect(t, c.Send(t.Context(), "hello")); end.Outcome != agent.OutcomeAnswer {
			t.Fatalf("%s: %+v", model, end)
		}
		if len(srv.Requests()) != 1 || seen.Load() == 0 {
			t.Fatalf("%s: %d requests, estimate %d", model, len(srv.Requests()), seen.Load())
		}
		return seen.Load()
	}

	// The example's manifest as it was before tool_prompt_tokens.
	old := filepath.Join(t.TempDir(), "demiurge")
	if err := os.CopyFS(old, os.DirFS(manifest)); err != nil {
		t.Fatal(err)
	}
	schemas := filepath.Join(old, "schemas.air.json")
	b, err := os.ReadFile(schemas)
	if err != nil {
		t.Fatal(err)
	}
	before := strings.Replace(string(b), `"item_bytes": {"option": {"nat": {}}},
    "tool_prompt_tokens": {"option": {"nat": {}}}`, `"item_bytes": {"option": {"nat": {}}}`, 1)
	if before == string(b) {
		t.Fatal("the example's Settings@2 has no tool_prompt_tokens")
	}
	if err := os.WriteFile(schemas, []byte(before), 0o600); err != nil {
		t.Fatal(err)
	}

	claude, claudeBefore := firstEstimate(manifest, "claude-sonnet-4-5"), firstEstimate(old, "claude-sonnet-4-5")
	if want := llm.ToolPromptTokens(llm.ProviderAnthropic); want == 0 || claude != claudeBefore+want {
		t.Errorf("the first estimate of a Claude chat is %d, %d with a manifest before tool_prompt_tokens; want %d more", claude, claudeBefore, want)
	}
	gpt, gptBefore := firstEstimate(manifest, "gpt-4o"), firstEstimate(old, "gpt-4o")
	if gpt != gptBefore {
		t.Errorf("the first estimate of a gpt-4o chat is %d, %d with a manifest before tool_prompt_tokens; OpenAI adds no known tool prompt", gpt, gptBefore)
	}
}
