package layers

import (
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/demiurge-dev/demiurge"

// pkg is what the rules read of a package: its path relative to the
// module, and its imports and dependencies (module packages relative too).
type pkg struct {
	Path    string
	Imports []string
	Deps    []string
}

// list runs go list over the module's production code.
func list(t *testing.T) []pkg {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH: the import rules need go list")
	}
	cmd := exec.CommandContext(t.Context(), goBin, "list", "-json=ImportPath,Imports,Deps", module+"/...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath    string
			Imports, Deps []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, pkg{Path: rel(p.ImportPath), Imports: relAll(p.Imports), Deps: relAll(p.Deps)})
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; want the whole module", len(pkgs))
	}
	return pkgs
}

func rel(p string) string {
	if p == module {
		return "."
	}
	if r, ok := strings.CutPrefix(p, module+"/"); ok {
		return r
	}
	return "std:" + p // not ours; prefixed so no pattern of ours matches it
}

func relAll(ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = rel(p)
	}
	return out
}

// matches reports how specifically pattern matches path: 0 for no match,
// more for a longer pattern, most for an exact one.
func matches(pattern, path string) int {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		if path == base || strings.HasPrefix(path, base+"/") {
			return 2 * len(base)
		}
		return 0
	}
	if path == pattern {
		return 2*len(pattern) + 1
	}
	return 0
}

func matchesAny(patterns []string, path string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matches(p, path) > 0 })
}

// layerOf returns the index in house of the layer that places path, or -1.
func layerOf(house []Layer, path string) int {
	best, at := 0, -1
	for i, l := range house {
		for _, p := range l.Packages {
			if m := matches(p, path); m > best {
				best, at = m, i
			}
		}
	}
	return at
}

// upward returns the imports of pkgs that point to a higher layer, and the
// packages no layer places, as messages.
func upward(house []Layer, pkgs []pkg) []string {
	var bad []string
	for _, p := range pkgs {
		from := layerOf(house, p.Path)
		if from < 0 {
			bad = append(bad, fmt.Sprintf("%s is in no layer: place it in internal/layers.House", p.Path))
			continue
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, "std:") {
				continue
			}
			if to := layerOf(house, imp); to > from {
				bad = append(bad, fmt.Sprintf("%s (layer %q) imports %s (layer %q, above it)", p.Path, house[from].Name, imp, house[to].Name))
			}
		}
	}
	return bad
}

// TestNoArrowUp: no package imports one of a layer above its own.
func TestNoArrowUp(t *testing.T) {
	for _, msg := range upward(House, list(t)) {
		t.Error(msg)
	}
}

// TestUpwardCaught: the rule fails on the two arrows the house had before
// they were taken out (tools/workspace imported reducer/builtin for the
// workspace history, tools/mcp imported adapters/toolcall for the receipt),
// and on a package placed nowhere.
func TestUpwardCaught(t *testing.T) {
	pkgs := []pkg{
		{Path: "tools/workspace", Imports: []string{"cas", "reducer/builtin", "std:fmt"}},
		{Path: "tools/mcp", Imports: []string{"adapters/toolcall", "tools"}},
		{Path: "reducer/demiurge", Imports: []string{"tools", "reducer"}},
		{Path: "nowhere/new"},
	}
	got := upward(House, pkgs)
	want := []string{
		`tools/workspace (layer "tools") imports reducer/builtin (layer "reducers", above it)`,
		`tools/mcp (layer "tools") imports adapters/toolcall (layer "adapters", above it)`,
		`nowhere/new is in no layer: place it in internal/layers.House`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("upward =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestNoTestingInProduction: package testing, and the packages written for
// tests, stay out of every production package and so out of the binary.
func TestNoTestingInProduction(t *testing.T) {
	for _, p := range list(t) {
		if matchesAny(TestHelpers, p.Path) {
			continue
		}
		for _, d := range p.Deps {
			if d == "std:testing" || matchesAny(TestHelpers, d) {
				t.Errorf("%s depends on %s: test code is kept out of production packages (move it to a *test package)", p.Path, strings.TrimPrefix(d, "std:"))
			}
		}
	}
}

// TestDeterministic: step code (reducers, plans) imports nothing that
// reads the clock, randomness, the environment, files or the network.
func TestDeterministic(t *testing.T) {
	checked := 0
	for _, p := range list(t) {
		if !matchesAny(Deterministic, p.Path) || matchesAny(NotDeterministic, p.Path) {
			continue
		}
		checked++
		for _, imp := range p.Imports {
			std, ok := strings.CutPrefix(imp, "std:")
			if !ok {
				continue
			}
			if why, bad := Nondeterministic[std]; bad {
				t.Errorf("%s imports %s: %s", p.Path, std, why)
			} else if strings.HasPrefix(std, "net/") {
				t.Errorf("%s imports %s: reducers and plans must not reach the network", p.Path, std)
			}
		}
	}
	if checked < 5 {
		t.Fatalf("checked %d deterministic packages; the patterns match too little", checked)
	}
}

// TestStoreDeps: the store depends on nothing of ours and only on the
// modules chosen for it.
func TestStoreDeps(t *testing.T) {
	for _, p := range list(t) {
		if p.Path != "cas" {
			continue
		}
		for _, d := range p.Deps {
			std, ok := strings.CutPrefix(d, "std:")
			if !ok {
				if !matchesAny([]string{"cas/..."}, d) {
					t.Errorf("cas depends on %s; it imports nothing of ours outside cas/", d)
				}
				continue
			}
			if !strings.Contains(strings.Split(std, "/")[0], ".") {
				continue // the standard library
			}
			if !slices.ContainsFunc(StoreDeps, func(m string) bool { return std == m || strings.HasPrefix(std, m+"/") }) {
				t.Errorf("cas depends on %s; it uses only %s", std, strings.Join(StoreDeps, ", "))
			}
		}
		return
	}
	t.Fatal("go list did not list cas")
}
