package otlp

import (
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/agent/session"
)

// TestProviderName names who served a call: its receipt's provider, in
// the conventions' words, else its wire protocol.
func TestProviderName(t *testing.T) {
	for _, tc := range []struct {
		m    session.ModelCall
		want string
	}{
		{session.ModelCall{Provider: llm.ProviderChat}, "openai"},
		{session.ModelCall{}, "openai"},
		{session.ModelCall{Provider: llm.ProviderChat, ProviderName: "openrouter"}, "openrouter"},
		{session.ModelCall{Provider: llm.ProviderChat, ProviderName: "xai"}, "x_ai"},
		{session.ModelCall{Provider: llm.ProviderChat, ProviderName: "azure"}, "azure.ai.openai"},
		{session.ModelCall{Provider: llm.ProviderChat, ProviderName: "deepseek"}, "deepseek"},
		{session.ModelCall{Provider: "anthropic"}, "anthropic"},
		// An older receipt does not say: the maker of the model that
		// answered.
		{session.ModelCall{Provider: llm.ProviderChat, Model: "deepseek-v4-flash"}, "deepseek"},
		{session.ModelCall{Provider: llm.ProviderChat, Model: "grok-4.20"}, "x_ai"},
		{session.ModelCall{Provider: llm.ProviderChat, Model: "qwen3:8b"}, "openai"},
	} {
		if got := providerName(&tc.m); got != tc.want {
			t.Errorf("providerName(%+v) = %q; want %q", tc.m, got, tc.want)
		}
	}
}
