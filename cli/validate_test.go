package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// writeWorld writes AIR files into a new temporary folder.
func writeWorld(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const counterManifest = `{"$kind": "manifest", "air_version": "1",
 "schemas": [{"name": "counter/Event@1"}], "modules": [{"name": "counter/Counter@1"}],
 "plans": [], "effects": [], "caps": [], "policies": []}`

func TestValidate(t *testing.T) {
	t.Parallel()
	example := filepath.Join("..", "examples", "counter")
	okLine := regexp.MustCompile(`^ok \S+: manifest blake3:[0-9a-f]{64}: 5 schemas, 1 module, 0 plans, 0 effects, 0 caps, 0 policies, 0 secrets\n$`)
	for _, path := range []string{example, filepath.Join(example, "manifest.air.json")} {
		r := mustRun(t, exitOK, "", "validate", path)
		if !okLine.MatchString(r.stdout) || r.stderr != "" {
			t.Errorf("validate %s: stdout %q, stderr %q", path, r.stdout, r.stderr)
		}
	}

	bad := writeWorld(t, map[string]string{
		"manifest.air.json": counterManifest,
		"defs.air.json": `[
  {"$kind": "defschema", "name": "counter/Event@1", "type": {"variant": {"Go": {"ref": "counter/Nowhere@1"}}}},
  {"$kind": "defmodule", "name": "counter/Counter@1", "module_kind": "reducer",
   "abi": {"reducer": {"state": "counter/Event@1", "event": "counter/Event@1"}}},
  {"$kind": "defmodule", "name": "counter/Other@1", "module_kind": "reducer",
   "abi": {"reducer": {"state": "counter/Event@1", "event": "counter/Event@1"}}}
]`,
	})
	r := mustRun(t, exitFailure, "", "validate", bad)
	f := filepath.Join(bad, "defs.air.json")
	want := f + ": /0/type: type reference counter/Nowhere@1 is not a known schema\n" +
		f + ": /2: warning: defmodule counter/Other@1 is defined but not listed in the manifest; it is ignored\n" +
		"demiurge: validate " + bad + ": 1 error, 1 warning\n"
	if r.stderr != want || r.stdout != "" {
		t.Errorf("validate bad:\nstdout %q\nstderr:\n%s\nwant stderr:\n%s", r.stdout, r.stderr, want)
	}
}

func TestValidateJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		path     func(t *testing.T) string
		code     int
		ok       bool
		errors   int
		errorMsg string
	}{
		{"ok", func(*testing.T) string { return filepath.Join("..", "examples", "counter") }, exitOK, true, 0, ""},
		{"unregistered reducer", func(t *testing.T) string {
			return writeWorld(t, map[string]string{"m.air.json": strings.Replace(counterManifest, "counter/Counter@1", "x/Y@1", 1),
				"d.air.json": `[{"$kind": "defschema", "name": "counter/Event@1", "type": {"text": {}}},
 {"$kind": "defmodule", "name": "x/Y@1", "module_kind": "reducer", "abi": {"reducer": {"state": "counter/Event@1", "event": "counter/Event@1"}}}]`})
		}, exitFailure, false, 1, ""},
		{"missing", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") }, exitFailure, false, 0, "no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := mustRun(t, tc.code, "", "validate", "--json", tc.path(t))
			var res validateResult
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
			}
			if res.OK != tc.ok || len(res.Errors) != tc.errors || !strings.Contains(res.Error, tc.errorMsg) {
				t.Errorf("got %+v", res)
			}
			if tc.ok && (!strings.HasPrefix(res.Manifest, "blake3:") || res.Defs == nil || res.Defs.Schemas != 5) {
				t.Errorf("ok result lacks the manifest or counts: %+v", res)
			}
			if res.Errors == nil || res.Warnings == nil {
				t.Errorf("errors and warnings must be arrays, not null: %s", r.stdout)
			}
		})
	}
}

func TestPlural(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n    int
		noun string
		want string
	}{
		{0, "schema", "0 schemas"}, {1, "module", "1 module"}, {2, "policy", "2 policies"}, {1, "policy", "1 policy"},
	} {
		if got := plural(tc.n, tc.noun); got != tc.want {
			t.Errorf("plural(%d, %q) = %q; want %q", tc.n, tc.noun, got, tc.want)
		}
	}
}
