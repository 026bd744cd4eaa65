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
		for i, n := range BuiltinNames(s.kind) {
			if i > 0 {
				b.WriteString(",")
			}
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
