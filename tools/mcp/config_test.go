package mcp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools/mcp"
)

// loadWorld loads a manifest with the given mcp_servers and defsecrets.
func loadWorld(t *testing.T, servers, secrets string) *schema.Catalog {
	t.Helper()
	dir := t.TempDir()
	manifest := `{"$kind": "manifest", "air_version": "1", "schemas": [{"name": "demo/E@1"}], "modules": [], "plans": [{"name": "demo/p@1"}], "effects": [{"name": "sys/mcp.call@1"}], "caps": [], "policies": [],
	  "secrets": [{"name": "mcp/token@1"}, {"name": "mcp/plans@1"}, {"name": "mcp/llm@1"}, {"name": "mcp/tools@1"}, {"name": "mcp/vault@1"}, {"name": "mcp/digest@1"}],
	  "defaults": {"cap_grants": [{"name": "tools", "cap": "sys/mcp@1", "params": {"record": {}}}, {"name": "llm", "cap": "sys/llm.basic@1", "params": {"record": {}}}]},
	  "mcp_servers": ` + servers + `}`
	for name, data := range map[string]string{"manifest.air.json": manifest, "defs.air.json": secrets} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := schema.Load(dir, nil)
	if err != nil {
		t.Fatalf("load:\n%v", err)
	}
	return cat
}

const testSecrets = `[
  {"$kind": "defschema", "name": "demo/E@1", "type": {"record": {}}},
  {"$kind": "defplan", "name": "demo/p@1", "input": "demo/E@1", "steps": [{"id": "e", "op": "end"}]},
  {"$kind": "defsecret", "name": "mcp/token@1", "binding_id": "env:MCP_TOKEN"},
  {"$kind": "defsecret", "name": "mcp/plans@1", "binding_id": "env:MCP_TOKEN", "allowed_plans": ["demo/p@1"]},
  {"$kind": "defsecret", "name": "mcp/llm@1", "binding_id": "env:MCP_TOKEN", "allowed_caps": ["llm"]},
  {"$kind": "defsecret", "name": "mcp/tools@1", "binding_id": "env:MCP_TOKEN", "allowed_caps": ["llm", "tools"]},
  {"$kind": "defsecret", "name": "mcp/vault@1", "binding_id": "vault:kv/token"},
  {"$kind": "defsecret", "name": "mcp/digest@1", "binding_id": "env:MCP_TOKEN", "expected_digest": "blake3:0000000000000000000000000000000000000000000000000000000000000000"}
]`

func TestFromManifest(t *testing.T) {
	cat := loadWorld(t, `[
	  {"name": "fs", "command": "npx", "args": ["-y", "server", "."], "env": {"DEBUG": "1", "TOKEN": {"secret": {"alias": "mcp/token", "version": 1}}, "T2": {"secret": {"alias": "mcp/tools", "version": 1}}},
	   "aliases": {"read_file": "fs_read"}, "timeout_ms": 5000},
	  {"name": "web", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": {"literal": "Bearer open"}}}
	]`, testSecrets)
	getenv := func(k string) (string, bool) {
		if k == "MCP_TOKEN" {
			return "tok-1", true
		}
		return "", false
	}
	servers, err := mcp.FromManifest(cat, getenv, "/world")
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 2 {
		t.Fatalf("%d servers", len(servers))
	}
	fs, web := servers[0], servers[1]
	if fs.Name != "fs" || fs.Command != "npx" || strings.Join(fs.Args, " ") != "-y server ." || fs.Dir != "/world" || fs.Timeout != 5*time.Second {
		t.Errorf("fs %+v", fs)
	}
	if fs.Env["DEBUG"] != "1" || fs.Env["TOKEN"] != "tok-1" || fs.Env["T2"] != "tok-1" || len(fs.Secrets) != 2 || fs.Aliases["read_file"] != "fs_read" {
		t.Errorf("fs env %v, secrets %d, aliases %v", fs.Env, len(fs.Secrets), fs.Aliases)
	}
	if fs.ToolName("read_file") != "fs_read" || fs.ToolName("write_file") != "fs_write_file" {
		t.Errorf("tool names %s %s", fs.ToolName("read_file"), fs.ToolName("write_file"))
	}
	if web.URL != "https://mcp.example.com/mcp" || web.Headers["Authorization"] != "Bearer open" || len(web.Secrets) != 0 || web.Timeout != 0 {
		t.Errorf("web %+v", web)
	}
}

func TestFromManifestSecretErrors(t *testing.T) {
	for _, tc := range []struct {
		name, secret, env, want string
	}{
		{"unset", "mcp/token", "", "environment variable MCP_TOKEN is not set"},
		{"restricted to plans", "mcp/plans", "tok", "secret mcp/plans@1 may be used only by plans demo/p@1, not by an MCP server"},
		{"restricted to other grants", "mcp/llm", "tok", "secret mcp/llm@1 may be used only with grants llm, none of which is a grant of an mcp cap"},
		{"not an env binding", "mcp/vault", "tok", `secret mcp/vault@1 is bound to "vault:kv/token"; demiurge resolves only env:VARIABLE bindings`},
		{"wrong digest", "mcp/digest", "tok", "does not match its expected_digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cat := loadWorld(t, `[{"name": "s", "command": "x", "env": {"K": {"secret": {"alias": "`+tc.secret+`", "version": 1}}}}]`, testSecrets)
			_, err := mcp.FromManifest(cat, func(string) (string, bool) { return tc.env, tc.env != "" }, "")
			if err == nil || !strings.Contains(err.Error(), `MCP server "s": env K: `) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "tok") && tc.env != "" && !strings.Contains(tc.want, "tok") {
				t.Errorf("the error shows the secret: %v", err)
			}
		})
	}
}

func TestDigestThatMatches(t *testing.T) {
	secrets := strings.Replace(testSecrets, "blake3:0000000000000000000000000000000000000000000000000000000000000000", cas.Sum([]byte("tok")).String(), 1)
	cat := loadWorld(t, `[{"name": "s", "command": "x", "env": {"K": {"secret": {"alias": "mcp/digest", "version": 1}}}}]`, secrets)
	servers, err := mcp.FromManifest(cat, func(string) (string, bool) { return "tok", true }, "")
	if err != nil || servers[0].Env["K"] != "tok" {
		t.Errorf("%v %v", servers, err)
	}
}
