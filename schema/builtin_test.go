package schema

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestBuiltinsLoad lists every built-in def in a manifest: all their
// references resolve and they hash.
func TestBuiltinsLoad(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"$kind":"manifest","air_version":"1"`)
	for _, s := range []struct{ kind, section string }{
		{KindDefSchema, "schemas"}, {KindDefEffect, "effects"}, {KindDefCap, "caps"}, {KindDefModule, "modules"},
	} {
		b.WriteString(`,"` + s.section + `":[`)
		kinds := map[string]bool{} // a manifest lists one version of an effect kind
		i := 0
		for _, n := range BuiltinNames(s.kind) {
			if d, ok := Builtin(s.kind, n); ok {
				if ef, ok := d.(*DefEffect); ok {
					if kinds[ef.Kind] {
						continue
					}
					kinds[ef.Kind] = true
				}
			}
			if i > 0 {
				b.WriteString(",")
			}
			i++
			b.WriteString(`{"name":"` + n + `"}`)
		}
		b.WriteString("]")
	}
	b.WriteString(`,"plans":[],"policies":[]}`)
	c, err := LoadSources([]Source{{Name: "manifest.air.json", Data: []byte(b.String())}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.Names(KindDefSchema)); n < 80 {
		t.Fatalf("only %d built-in schemas", n)
	}
	for _, name := range []string{"sys/LlmToolChoice@1", "sys/LlmGenerateParams@1", "sys/LlmGenerateReceipt@1", "sys/LlmToolCall@1", "sys/LlmOutputItem@1", "sys/LlmTextFormat@1"} {
		if _, ok := c.SchemaType(name); !ok {
			t.Errorf("built-in %s missing", name)
		}
		if _, ok := c.DefRef(KindDefSchema, name); !ok {
			t.Errorf("built-in %s has no hash", name)
		}
	}
	for _, kind := range []string{"llm.generate", "http.request", "blob.put", "blob.get", "timer.set", "workspace.resolve", "workspace.read_bytes", "workspace.write_bytes", "introspect.manifest", "introspect.journal_head"} {
		if _, ok := c.EffectKind(kind); !ok {
			t.Errorf("built-in effect %s missing", kind)
		}
	}
}

// demiurgeChanged are the built-in schemas demiurge defines differently
// from AgentOS v0.9 (seed 004 and the agent issue: tools_ref, tool_choice,
// tool call blobs, token usage details).
var demiurgeChanged = map[string]bool{
	"sys/LlmGenerateParams@1":  true,
	"sys/LlmGenerateReceipt@1": true,
}

// TestAgentOSBuiltinDefs parses AgentOS's built-in defs: every one of them
// is well formed for our parser, and ours match them except where demiurge
// deliberately differs.
func TestAgentOSBuiltinDefs(t *testing.T) {
	dir := AgentOSDir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "spec", "defs", "*.air.json"))
	if len(files) == 0 {
		t.Fatal("no AgentOS built-in defs")
	}
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		errs := newProblems(f)
		defs := parseSource(Source{Name: f, Data: data}, errs)
		if !errs.empty() {
			t.Fatalf("%s:\n%v", f, errs.sorted())
		}
		for _, d := range defs {
			names = append(names, d.DefName())
			ours, ok := Builtin(d.DefKind(), d.DefName())
			if !ok {
				t.Errorf("AgentOS built-in %s %s is missing from ours", d.DefKind(), d.DefName())
				continue
			}
			if m, ok := d.(*DefModule); ok {
				m.WasmHash = "" // ours run in Go
			}
			same := Equal(ours.node(), d.node())
			switch {
			case demiurgeChanged[d.DefName()] && same:
				t.Errorf("%s is listed as changed but equals AgentOS's", d.DefName())
			case !demiurgeChanged[d.DefName()] && !same:
				t.Errorf("%s differs from AgentOS's:\nours   %s\nagentos %s", d.DefName(), ValueJSON(ours.node()), ValueJSON(d.node()))
			}
		}
	}
	sort.Strings(names)
	if len(names) < 100 {
		t.Fatalf("parsed only %d AgentOS built-in defs", len(names))
	}
}

// TestEffectVersions checks which version of an effect kind a manifest
// gets: the one it lists, else the first built-in one (the version that
// was there when a manifest that lists none was written); two versions of
// one kind cannot both be listed.
func TestEffectVersions(t *testing.T) {
	load := func(effects string) (*Catalog, error) {
		src := `{"$kind":"manifest","air_version":"1","schemas":[],"modules":[],"plans":[],"caps":[],"policies":[],"effects":[` + effects + `]}`
		return LoadSources([]Source{{Name: "manifest.air.json", Data: []byte(src)}}, nil)
	}
	for effects, want := range map[string]string{
		``:                              "sys/llm.generate@1",
		`{"name":"sys/llm.generate@1"}`: "sys/llm.generate@1",
		`{"name":"sys/llm.generate@2"}`: "sys/llm.generate@2",
	} {
		c, err := load(effects)
		if err != nil {
			t.Fatalf("%s: %v", effects, err)
		}
		if d, ok := c.EffectKind("llm.generate"); !ok || d.Name != want {
			t.Errorf("effects [%s]: llm.generate is %v; want %s", effects, d, want)
		}
	}
	if _, err := load(`{"name":"sys/llm.generate@1"},{"name":"sys/llm.generate@2"}`); err == nil || !strings.Contains(err.Error(), `effect kind "llm.generate" is declared by both`) {
		t.Errorf("both versions listed: %v", err)
	}
}
