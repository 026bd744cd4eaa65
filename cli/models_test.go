package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestModels(t *testing.T) {
	t.Parallel()
	// The table: OpenAI's gpt-5.2 from the catalog, its chat-latest
	// model from demiurge's rules, not a reasoning model.
	r := mustRun(t, exitOK, "", "models", "gpt-5.2")
	for _, want := range []string{"PROVIDER", "openai    gpt-5.2 ", "openai-responses", "1.75", "14", "catalog+rules", "gpt-5.2-chat-latest"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("models gpt-5.2 lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.Contains(line, "gpt-5.2-chat-latest") && !strings.Contains(line, " no ") {
			t.Errorf("gpt-5.2-chat-latest is listed as reasoning: %s", line)
		}
	}

	// JSON, one document (an array), with the source of each fact.
	r = mustRun(t, exitOK, "", "models", "--json", "claude-sonnet-4-5")
	var ms []struct {
		Provider, Model, API string
		Price                *struct {
			Input      float64 `json:"input"`
			CacheRead  float64 `json:"cache_read"`
			CacheWrite float64 `json:"cache_write"`
		} `json:"price"`
		Sources map[string]string `json:"sources"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &ms); err != nil || len(ms) == 0 {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	m := ms[0]
	if m.Provider != "anthropic" || m.API != "anthropic" || m.Price == nil || m.Price.CacheWrite != 3.75 || m.Price.CacheRead != 0.3 ||
		!strings.HasPrefix(m.Sources["price"], "catwalk") {
		t.Errorf("claude-sonnet-4-5: %+v", m)
	}

	// Each family the issue names has priced models.
	for _, name := range []string{"gpt-5.4", "claude-opus", "gemini-3", "deepseek-v4", "grok-4", "kimi-k2", "glm-5"} {
		r := mustRun(t, exitOK, "", "models", "--json", name)
		if !strings.Contains(r.stdout, `"price":{"input":`) {
			t.Errorf("models %s: no priced model:\n%s", name, r.stdout)
		}
	}

	// Another provider's prices; a pattern.
	r = mustRun(t, exitOK, "", "models", "--provider", "openrouter", "anthropic/*")
	if !strings.Contains(r.stdout, "openrouter  anthropic/claude") {
		t.Errorf("openrouter's models:\n%s", r.stdout)
	}

	// A model nothing knows is said so (exit 1), with the close names
	// (a name mistyped), and nothing listed; --defaults shows what a
	// call of it gets: a conservative default, its cost unknown.
	r = mustRun(t, exitFailure, "", "models", "gpt5-mini")
	if r.stdout != "" || !strings.HasPrefix(r.stderr, "demiurge: models gpt5-mini: demiurge knows no model gpt5-mini") || !strings.Contains(r.stderr, "did you mean gpt-5-mini") {
		t.Errorf("a mistyped model: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	r = mustRun(t, exitFailure, "", "models", "my-finetune-7b")
	if r.stdout != "" || !strings.Contains(r.stderr, "knows no model my-finetune-7b") || strings.Contains(r.stderr, "did you mean") {
		t.Errorf("an unknown model: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	r = mustRun(t, exitOK, "", "models", "--defaults", "my-finetune-7b")
	if !strings.Contains(r.stdout, "my-finetune-7b") || !strings.Contains(r.stdout, "default (unknown model)") {
		t.Errorf("an unknown model with --defaults:\n%s", r.stdout)
	}
	// --model-option layers on top.
	r = mustRun(t, exitOK, "", "models", "--json", "--model-option", "price_input=2", "--model-option", "price_output=8", "my-finetune-7b")
	if !strings.Contains(r.stdout, `"input":2,`) || !strings.Contains(r.stdout, `"price":"the configuration`) {
		t.Errorf("an override:\n%s", r.stdout)
	}
	mustRun(t, exitUsage, "", "models", "--provider", "nowhere")
	mustRun(t, exitUsage, "", "models", "--model-option", "colour=blue")
}
