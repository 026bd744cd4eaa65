package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/demiurge-dev/demiurge/examples/counter"
	"github.com/demiurge-dev/demiurge/schema"
)

func TestRegistry(t *testing.T) {
	t.Parallel()
	names := (&app{}).registry().Names()
	if !slices.Contains(names, counter.ModuleName) {
		t.Errorf("registry %v lacks %s", names, counter.ModuleName)
	}
}

// TestExamplesValidate loads every example world with the binary's
// registry: a world under examples/ whose reducer is not registered in
// newRegistry fails here.
func TestExamplesValidate(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob(filepath.Join("..", "examples", "*"))
	if err != nil {
		t.Fatal(err)
	}
	reducers := (&app{}).registry().Names()
	n := 0
	for _, dir := range dirs {
		if !hasManifest(dir) {
			continue
		}
		n++
		t.Run(filepath.Base(dir), func(t *testing.T) {
			if _, err := schema.Load(dir, &schema.LoadOptions{Reducers: reducers}); err != nil {
				t.Errorf("validate %s:\n%v", dir, err)
			}
		})
	}
	if n == 0 {
		t.Fatal("no example worlds found")
	}
}

func hasManifest(dir string) bool {
	for _, name := range []string{"manifest.air", "manifest.air.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}
