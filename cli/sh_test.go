package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/bashfx"
	"github.com/demiurge-dev/demiurge/agent/worldtools"
	"github.com/demiurge-dev/demiurge/examples"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/reducer/builtin"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/world"
)

const noWorldNote = "demiurge sh: no --manifest: the script has no world tools, only the shell and its utilities, and an empty in-memory workspace\n"

// TestSh runs scripts without a world: the script comes from -c, a file
// or stdin; its output is printed; demiurge exits with its status.
func TestSh(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "script.sh")
	if err := os.WriteFile(file, []byte("seq 3 | jq -s add\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		stdin          string
		args           []string
		code           int
		stdout, stderr string
	}{
		{"-c", "", []string{"-c", "echo hi | tr a-z A-Z"}, 0, "HI\n", noWorldNote},
		{"file", "", []string{file}, 0, "6\n", noWorldNote},
		{"stdin", `printf '%s\n' "$((6*7))"`, nil, 0, "42\n", noWorldNote},
		{"stdin as -", "echo dash", []string{"-"}, 0, "dash\n", noWorldNote},
		{"exit status", "", []string{"-c", "echo out; echo err >&2; exit 3"}, 3, "out\n", noWorldNote + "err\n"},
		{"unknown command", "", []string{"-c", "curl example.com"}, 127, "", noWorldNote + "bash: line 1: curl: command not found"},
		{"syntax error", "", []string{"-c", "if then"}, 2, "", noWorldNote + "bash: line 1: syntax error"},
		{"no host files", "", []string{"-c", "cat /etc/passwd"}, 1, "", noWorldNote + "cat: /etc/passwd: No such file or directory\n"},
		{"missing file", "", []string{"nope.sh"}, 1, "", "demiurge: sh: read the script: open nope.sh"},
		{"-c and FILE", "", []string{"-c", "true", file}, 2, "", "demiurge: sh: give the script with -c or as FILE, not both\n"},
		{"--prompt with a script", "", []string{"--prompt", "-c", "true"}, 2, "", "demiurge: sh: --prompt runs nothing; give no script with it\n"},
		{"--world without --manifest", "", []string{"--world", "w", "-c", "true"}, 2, "", "demiurge: sh: --world needs --manifest"},
		{"bad --timeout", "", []string{"--timeout", "0s", "-c", "true"}, 2, "", "demiurge: sh: --timeout must be positive, got 0s\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"--store", filepath.Join(t.TempDir(), "store"), "sh"}, tc.args...)
			r := run(t, nil, tc.stdin, args...)
			if r.code != tc.code || r.stdout != tc.stdout || !strings.HasPrefix(r.stderr, tc.stderr) {
				t.Errorf("demiurge %q: exit %d, stdout %q, stderr %q; want %d, %q, %q...", args, r.code, r.stdout, r.stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

// TestShPrompt: --prompt prints the bash tool's system prompt, with the
// world's tools when there is a world, and runs nothing.
func TestShPrompt(t *testing.T) {
	t.Parallel()
	r := mustRun(t, exitOK, "", "--store", filepath.Join(t.TempDir(), "store"), "sh", "--prompt")
	if !strings.HasPrefix(r.stdout, "# bash\n") || !strings.Contains(r.stdout, "Utilities besides the shell's builtins:") || strings.Contains(r.stdout, "introspect_") || r.stderr != "" {
		t.Errorf("prompt without a world: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	counter := filepath.Join("..", "examples", "counter")
	r = mustRun(t, exitOK, "", "--store", filepath.Join(t.TempDir(), "store"), "sh", "--prompt", "--manifest", counter)
	for _, name := range []string{"introspect_manifest", "introspect_state"} {
		if !strings.Contains(r.stdout, name) {
			t.Errorf("prompt with the counter world lacks %s: %q", name, r.stdout)
		}
	}
}

// TestShWorld: with --manifest, the world's introspect tools are
// commands.
func TestShWorld(t *testing.T) {
	t.Parallel()
	store := filepath.Join(t.TempDir(), "store")
	counter := filepath.Join("..", "examples", "counter")
	r := mustRun(t, exitOK, "", "--store", store, "sh", "--manifest", counter, "--world", "c1", "-c",
		`introspect_journal_head | jq -r '"\(.world) \(.height)"'`)
	if r.stdout != "c1 1\n" || r.stderr != "" {
		t.Errorf("stdout %q, stderr %q", r.stdout, r.stderr)
	}
}

// shWorkspaceManifest is a world that keeps workspaces and nothing else.
const shWorkspaceManifest = `{"$kind": "manifest", "air_version": "1",
 "schemas": [{"name": "sys/WorkspaceCommit@1"}, {"name": "sys/WorkspaceHistory@1"}, {"name": "sys/WorkspaceName@1"}, {"name": "sys/WorkspaceCommitMeta@1"}],
 "modules": [{"name": "sys/Workspace@1"}], "plans": [], "effects": [], "caps": [], "policies": [],
 "routing": {"events": [{"event": "sys/WorkspaceCommit@1", "reducer": "sys/Workspace@1", "key_field": "workspace"}], "inboxes": []}}`

// TestWorldTools: a world that keeps workspaces has the introspect and the
// workspace tools, one that does not only the introspect tools; what a
// script writes is recorded in the world (recordCommits) and read back by
// the tools of a later run.
func TestWorldTools(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	reg := reducer.NewRegistry()
	builtin.Register(reg)
	examples.RegisterAll(reg)
	open := func(dir string) *world.World {
		cat, err := schema.Load(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		w, err := world.Open(ctx, world.Options{Name: "w", Catalog: cat, Reducers: reg, Storage: world.NewMemoryStorage()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		return w
	}
	names := func(ts []tools.Tool) string {
		var out []string
		for _, tl := range ts {
			out = append(out, tl.Info().Name)
		}
		return strings.Join(out, " ")
	}
	introspectTools := "introspect_manifest introspect_schemas introspect_module introspect_state introspect_journal_head"

	if wt := worldtools.WorldTools(open(filepath.Join("..", "examples", "counter"))); names(wt.Tools()) != introspectTools || wt.Workspace() != nil {
		t.Errorf("counter world tools: %q (workspace service %v)", names(wt.Tools()), wt.Workspace())
	}

	w := open(writeWorld(t, map[string]string{"manifest.air.json": shWorkspaceManifest}))
	runScript := func(script string) bashfx.Result {
		t.Helper()
		wt := worldtools.WorldTools(w)
		ts, svc := wt.Tools(), wt.Workspace()
		if want := introspectTools + " workspace_list workspace_read workspace_write workspace_edit workspace_remove workspace_diff"; names(ts) != want {
			t.Fatalf("tools %q; want %q", names(ts), want)
		}
		sh, err := bashfx.NewShell(ts, bashfx.ShellOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res := sh.Run(ctx, tools.Request{Commands: script}, bashfx.RunOptions{Mount: bashfx.Mount{Workspace: svc}})
		if res.ExitCode != 0 {
			t.Fatalf("%s: exit %d, stderr %q", script, res.ExitCode, res.Stderr)
		}
		if err := recordCommits(ctx, w, res.Commits); err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := runScript(`workspace_write --path a.txt --content one | jq .version`)
	if res.Stdout != "1\n" || len(res.Commits) != 1 {
		t.Errorf("write: stdout %q, %d commits", res.Stdout, len(res.Commits))
	}
	// The workspace commands of a script and its own file operations see
	// one workspace, which becomes one version.
	res = runScript(`workspace_write --path a.txt --content zwei >/dev/null && sed -i s/zwei/two/ a.txt && workspace_read --path a.txt && workspace_list | jq .version`)
	if res.Stdout != "two2\n" || len(res.Commits) != 1 {
		t.Errorf("write and sed: stdout %q, %d commits", res.Stdout, len(res.Commits))
	}
	res = runScript(`workspace_read --path a.txt; echo; workspace_read --path a.txt --version 1; echo; workspace_list | jq .version`)
	if res.Stdout != "two\none\n2\n" || len(res.Commits) != 0 {
		t.Errorf("read back: stdout %q, %d commits", res.Stdout, len(res.Commits))
	}
	// Files the script writes are one new version, which tools and later
	// scripts see.
	res = runScript(`cat a.txt; echo; mkdir -p notes && echo hi > notes/b.md && mv a.txt c.txt`)
	if res.Stdout != "two\n" || len(res.Commits) != 1 || res.Commits[0].Version != 3 ||
		!strings.Contains(res.Stderr, "[workspace default: version 2 -> 3: -a.txt +c.txt +notes/b.md]") {
		t.Errorf("files: stdout %q, stderr %q, commits %+v", res.Stdout, res.Stderr, res.Commits)
	}
	res = runScript(`workspace_read --path notes/b.md; ls; cat c.txt`)
	if res.Stdout != "hi\nc.txt\nnotes\ntwo" || len(res.Commits) != 0 || res.Stderr != "" {
		t.Errorf("files read back: stdout %q, stderr %q", res.Stdout, res.Stderr)
	}
	if err := recordCommits(ctx, nil, []tools.Commit{{}}); err == nil {
		t.Error("recordCommits without a world succeeded")
	}
}
