package effects

import (
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/schema"
)

// TestEnforceWorkspaceTool checks the workspace cap on workspace.call: the
// op is the tool name without "workspace_", the workspace and the path or
// prefix come from the arguments, paths are checked after cleaning.
func TestEnforceWorkspaceTool(t *testing.T) {
	grant := schema.Record("workspaces", []schema.Value{"default", "notes"}, "path_prefixes", []schema.Value{"src", "docs/"},
		"ops", []schema.Value{"list", "read", "write", "diff"})
	call := func(tool, args string) schema.Value {
		return schema.Record("tool", tool, "arguments_json", args)
	}
	for _, tc := range []struct {
		tool, args string
		err        string // "" allowed
	}{
		{"workspace_read", `{"path": "src/main.go"}`, ""},
		{"workspace_read", `{"path": "./src//main.go"}`, ""},
		{"workspace_read", `{"path": "src"}`, ""},
		{"workspace_write", `{"path": "docs/a.md", "content": "x"}`, ""},
		{"workspace_list", `{"path": "src", "workspace": "notes"}`, ""},
		{"workspace_diff", `{"prefix": "docs"}`, ""},
		{"workspace_read", `{"path": "srcx/main.go"}`, `path "srcx/main.go" is not under the allowed path prefixes`},
		{"workspace_read", `{"path": "src/../etc/passwd"}`, `escapes the workspace`},
		{"workspace_read", `{"path": "/etc/passwd"}`, `is absolute`},
		{"workspace_read", `{"path": "src\\..\\x"}`, `NUL or backslash`},
		{"workspace_list", `{"path": ""}`, `the whole workspace is not under the allowed path prefixes`},
		{"workspace_list", `{"recursive": true}`, `the whole workspace is not under the allowed path prefixes`},
		{"workspace_diff", `{}`, `the whole workspace is not under the allowed path prefixes`},
		{"workspace_diff", `{"prefix": "secret"}`, `path "secret" is not under the allowed path prefixes`},
		{"workspace_read", `{"path": "src/a", "workspace": "other"}`, `workspace "other" is not in the allowed workspaces`},
		{"workspace_edit", `{"path": "src/a", "old_string": "a", "new_string": "b"}`, `operation "edit" is not in the allowed ops`},
		{"workspace_remove", `{"path": "src/a"}`, `operation "remove" is not in the allowed ops`},
		{"bash", `{"path": "src/a"}`, `"bash" is not a workspace tool`},
		{"workspace_read", `not json`, `arguments of workspace_read are not a JSON object`},
	} {
		err := enforceWorkspaceTool(grant, call(tc.tool, tc.args))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s %s: %v", tc.tool, tc.args, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s %s: %v; want %q", tc.tool, tc.args, err, tc.err)
		}
	}
	// No lists in the grant: anything goes, except paths that escape.
	open := schema.Record()
	if err := enforceWorkspaceTool(open, call("workspace_write", `{"path": "any/where"}`)); err != nil {
		t.Errorf("open grant: %v", err)
	}
	if err := enforceWorkspaceTool(open, call("workspace_write", `{"path": "../x"}`)); err == nil {
		t.Error("open grant allowed ../x")
	}
}
