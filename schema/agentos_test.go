package schema

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// agentOSDir is AgentOS's own AIR, kept beside the checkout as test data.
const agentOSDir = "../../shared/agentos-air"

func needAgentOS(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(agentOSDir); err != nil {
		t.Skipf("AgentOS AIR not found at %s: %v", agentOSDir, err)
	}
	return agentOSDir
}

// TestLoadAgentOSExamples loads every AgentOS example folder unchanged.
// Their reducers were WASM; registering none reports each reducer module,
// and only that.
func TestLoadAgentOSExamples(t *testing.T) {
	dir := needAgentOS(t)
	examples, err := filepath.Glob(filepath.Join(dir, "examples", "*"))
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, ex := range examples {
		t.Run(filepath.Base(ex), func(t *testing.T) {
			c, err := Load(ex, nil)
			if err != nil {
				t.Fatalf("load:\n%v", err)
			}
			for _, w := range c.Warnings {
				t.Logf("warning: %v", w)
			}
			_, err = Load(ex, &LoadOptions{Reducers: []string{}})
			if err == nil {
				t.Fatal("with no reducers registered, want an error naming the reducer module")
			}
			for _, e := range err.(ErrorList) {
				if !strings.Contains(e.Msg, "is not registered in this binary (registered: none)") {
					t.Errorf("unexpected problem: %v", e)
				}
			}
		})
	}
}
