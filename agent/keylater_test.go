package agent_test

import (
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/agent"
)

// TestKeyLater: a model without a key is refused by Open, unless
// KeyLater: then the world opens (for a program that only reads it), and
// a turn's model call fails, saying that no key is set.
func TestKeyLater(t *testing.T) {
	if _, err := agent.Open(t.Context(), manifest, agent.WithModel(agent.Model{Name: "gpt-test"}), env()); err == nil || !strings.Contains(err.Error(), "no API key") {
		t.Fatalf("Open without a key: %v; want no API key", err)
	}
	w, err := agent.Open(t.Context(), manifest, agent.WithModel(agent.Model{Name: "gpt-test", KeyLater: true}), env())
	if err != nil {
		t.Fatalf("Open with KeyLater: %v", err)
	}
	defer w.Close()
	lines, end := collect(t, w.Chat("main").Send(t.Context(), "hi"))
	if end.Outcome != agent.OutcomeFailed || !strings.Contains(strings.Join(lines, "\n"), "no API key: set OPENAI_API_KEY") {
		t.Errorf("the turn: %s, %s; want failed, saying no API key", end.Outcome, strings.Join(lines, "\n"))
	}
}
