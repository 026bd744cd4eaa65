package examples

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
)

// TestEveryWorldLoads loads every example world with the reducers
// RegisterAll adds: each module an example's AIR names is registered, and
// every example's reducer is named by some world.
func TestEveryWorldLoads(t *testing.T) {
	r := reducer.NewRegistry()
	RegisterAll(r)
	dirs, err := filepath.Glob("*/manifest.air.json")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, m := range dirs {
		dir := filepath.Dir(m)
		t.Run(dir, func(t *testing.T) {
			c, err := schema.Load(dir, &schema.LoadOptions{Reducers: r.Names()})
			if err != nil {
				t.Fatalf("load:\n%v", err)
			}
			if len(c.Warnings) > 0 {
				t.Errorf("warnings:\n%v", c.Warnings)
			}
			for _, name := range r.Names() {
				if mod, ok := c.Module(name); ok && mod.Reducer != nil {
					used[name] = true
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
				t.Errorf("no README: %v", err)
			}
		})
	}
	if len(dirs) < 7 {
		t.Errorf("found %d example worlds; want at least 7", len(dirs))
	}
	for _, name := range r.Names() {
		if name == "demiurge/Chat@1" || name == "demiurge/Chat@2" {
			continue // the chat of worlds made before Chat@3 (testdata/sessions), which must still replay
		}
		if !used[name] {
			t.Errorf("reducer %s is registered but no example world names it", name)
		}
	}
}

func TestRegisterAllTwicePanics(t *testing.T) {
	r := reducer.NewRegistry()
	RegisterAll(r)
	defer func() {
		if recover() == nil {
			t.Error("a second RegisterAll on the same registry did not panic")
		}
	}()
	RegisterAll(r)
}
