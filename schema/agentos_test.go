package schema

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// AgentOSEnv names the environment variable that gives the tests AgentOS's
// own AIR files: the directory (agentos-air) holding spec/ and examples/.
// CI sets it; without it the tests that need those files skip.
const AgentOSEnv = "DEMIURGE_AGENTOS_AIR"

// AgentOSDir returns the directory $DEMIURGE_AGENTOS_AIR names, and skips
// the test, saying what to set, if it is not set. A variable that names no
// such directory fails the test: a CI that set it means it.
func AgentOSDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(AgentOSEnv)
	if dir == "" {
		t.Skipf("set %s to the directory of AgentOS's AIR files (agentos-air, with spec/ and examples/) to run this test", AgentOSEnv)
	}
	if st, err := os.Stat(filepath.Join(dir, "examples")); err != nil || !st.IsDir() {
		t.Fatalf("%s=%s: want the directory of AgentOS's AIR files, with examples/ in it (an absolute path: each package's tests run in its own directory): %v", AgentOSEnv, dir, err)
	}
	return dir
}

// agentOSWorlds returns every directory under dir that holds a manifest.
func agentOSWorlds(t testing.TB, dir string) []string {
	t.Helper()
	var worlds []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (d.Name() == "manifest.air.json" || d.Name() == "manifest.air") {
			worlds = append(worlds, filepath.Dir(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(worlds)
	worlds = slices.Compact(worlds)
	if len(worlds) == 0 {
		t.Fatalf("no manifest under %s", dir)
	}
	return worlds
}

// TestAgentOSConformance loads every AIR directory of AgentOS's unchanged:
// each validates, without a warning. Their reducers were WASM modules;
// with no Go reducer registered under their names, loading reports each
// reducer module, and only that.
func TestAgentOSConformance(t *testing.T) {
	root := AgentOSDir(t)
	for _, dir := range agentOSWorlds(t, root) {
		name, _ := filepath.Rel(root, dir)
		t.Run(name, func(t *testing.T) {
			c, err := Load(dir, nil)
			if err != nil {
				t.Fatalf("load:\n%v", err)
			}
			for _, w := range c.Warnings {
				t.Errorf("warning: %v", w)
			}
			_, err = Load(dir, &LoadOptions{Reducers: []string{}})
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
