package bashfx

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/toolcall"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/workspace"
	"github.com/demiurge-dev/demiurge/world"
)

// newPendingService is a workspace Service whose world records nothing:
// its own commits are the versions it knows.
func newPendingService() *workspace.Service {
	return workspace.NewService(cas.NewMemory(), workspace.CellHeads(func(string) (schema.Value, bool) { return nil, false }), nil)
}

// seed commits files as one version of the default workspace.
func seed(t testing.TB, ctx context.Context, svc *workspace.Service, files map[string]string) {
	t.Helper()
	if len(files) == 0 {
		return
	}
	_, _, err := svc.Update(ctx, effects.DefaultWorkspace, func(ctx context.Context, root cas.Ref) (cas.Ref, error) {
		for _, p := range slices.Sorted(maps.Keys(files)) {
			nr, _, err := workspace.WriteBytes(ctx, svc.Store(), root, p, []byte(files[p]), 0)
			if err != nil {
				return cas.Ref{}, err
			}
			root = nr
		}
		return root, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// contents returns the files of the newest version of a workspace, with
// "/" after each directory's path (its contents are "").
func contents(t testing.TB, ctx context.Context, svc *workspace.Service, name string) map[string]string {
	t.Helper()
	h, err := svc.Head(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	res, err := workspace.List(ctx, svc.Store(), h.Root, workspace.ListOptions{Recursive: true, Limit: workspace.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range res.Entries {
		if e.Kind == workspace.KindDir {
			out[e.Path+"/"] = ""
			continue
		}
		data, _, err := workspace.ReadBytes(ctx, svc.Store(), h.Root, e.Path, nil)
		if err != nil {
			t.Fatal(err)
		}
		out[e.Path] = string(data)
	}
	return out
}

// TestOneWorkspace runs scripts that mix the workspace commands with the
// script's own file operations: each sees what the other wrote, in the
// order the script wrote it, and the script's changes, both kinds, are
// one new version when it ends. Commands that name a version or another
// workspace read and change the store as before.
func TestOneWorkspace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		seed   map[string]string // version 1, if any
		script string
		code   int
		stdout string
		stderr string // a part of it
		// files is the default workspace after the script; commits the
		// commits it made, and version the newest version.
		files   map[string]string
		commits int
		version uint64
	}{
		{name: "tool write then cat",
			script: `workspace_write --path x --content hi >/dev/null; cat x`,
			stdout: "hi", files: map[string]string{"x": "hi"}, commits: 1, version: 1},
		{name: "echo then workspace_read",
			script: `echo hi > f; workspace_read --path f`,
			stdout: "hi\n", files: map[string]string{"f": "hi\n"}, commits: 1, version: 1},
		{name: "sed -i on a tool-written file",
			script: `workspace_write --path x --content 'a b' >/dev/null; sed -i s/a/A/ x; workspace_read --path x`,
			stdout: "A b", files: map[string]string{"x": "A b"}, commits: 1, version: 1},
		{name: "workspace_list after mkdir and touch",
			script: `mkdir -p d/e; touch d/f; workspace_list --recursive | jq -r '.entries[] | "\(.kind) \(.path)"'`,
			stdout: "dir d\ndir d/e\nfile d/f\n", files: map[string]string{"d/": "", "d/e/": "", "d/f": ""}, commits: 1, version: 1},
		{name: "mv of a tool-written file",
			script: `workspace_write --path a --content x >/dev/null; mv a b; workspace_list | jq -r '.entries[].path'; cat b`,
			stdout: "b\nx", files: map[string]string{"b": "x"}, commits: 1, version: 1},
		{name: "the tool writes last",
			script: `echo mine > x; workspace_write --path x --content tool >/dev/null; cat x`,
			stdout: "tool", files: map[string]string{"x": "tool"}, commits: 1, version: 1},
		{name: "the script writes last",
			script: `workspace_write --path x --content tool >/dev/null; echo mine > x; workspace_read --path x`,
			stdout: "mine\n", files: map[string]string{"x": "mine\n"}, commits: 1, version: 1},
		{name: "workspace_edit of a script's file",
			script: `printf 'one two' > f; workspace_edit --path f --old_string two --new_string 2 >/dev/null; cat f`,
			stdout: "one 2", files: map[string]string{"f": "one 2"}, commits: 1, version: 1},
		{name: "workspace_remove of a script's file changes nothing",
			seed:   map[string]string{"keep": "k"},
			script: `echo x > f; workspace_remove --path f >/dev/null; ls`,
			stdout: "keep\n", files: map[string]string{"keep": "k"}, commits: 0, version: 1},
		{name: "rm then workspace_read",
			seed:   map[string]string{"keep": "k", "gone": "g"},
			script: `rm gone; workspace_read --path gone`,
			code:   1, stderr: "workspace_read: gone not found in workspace \"default\" (version 2)",
			files: map[string]string{"keep": "k"}, commits: 1, version: 2},
		{name: "stdout of a tool redirected to a file",
			script: `workspace_write --path a --content x > out.json; jq .changed out.json`,
			stdout: "true\n", files: map[string]string{"a": "x", "out.json": `{"workspace":"default","version":1,"path":"a","bytes":1,"changed":true}` + "\n"},
			commits: 1, version: 1},
		{name: "pipeline stages beside a tool",
			seed:   map[string]string{"a": "A"},
			script: `workspace_read --path a | tee b | wc -c; workspace_write --path c --content C | jq -r .path > d; cp -r . /tmp/all; ls /tmp/all`,
			stdout: "1\na\nb\nc\nd\n", files: map[string]string{"a": "A", "b": "A", "c": "C", "d": "c\n"}, commits: 1, version: 2},
		{name: "two tools at once",
			script: `workspace_write --path x --content 1 | workspace_write --path y --content 2 >/dev/null; ls`,
			stdout: "x\ny\n", files: map[string]string{"x": "1", "y": "2"}, commits: 1, version: 1},
		{name: "a directory the tool made",
			script: `workspace_write --path d/e/f --content 1 >/dev/null; echo 2 > d/e/g; ls d/e; workspace_remove --path d/e/f >/dev/null; ls d/e`,
			stdout: "f\ng\ng\n", files: map[string]string{"d/": "", "d/e/": "", "d/e/g": "2\n"}, commits: 1, version: 1},
		{name: "versions: the script's changes are the next one",
			seed:   map[string]string{"a": "1"},
			script: `workspace_list | jq .version; echo x > f; workspace_list | jq .version; workspace_write --path g --content y | jq .version`,
			stdout: "1\n2\n2\n", files: map[string]string{"a": "1", "f": "x\n", "g": "y"}, commits: 1, version: 2},
		{name: "workspace_diff shows the script's changes",
			seed:   map[string]string{"a": "1"},
			script: `echo x > f; workspace_diff | jq -c '[.from_version, .to_version, [.changes[].path]]'; workspace_diff --to_version 2 | jq -c .to_version`,
			stdout: "[1,2,[\"f\"]]\n2\n", files: map[string]string{"a": "1", "f": "x\n"}, commits: 1, version: 2},
		{name: "a version reads the store",
			seed:   map[string]string{"a": "old"},
			script: `echo new > a; workspace_read --path a --version 1; echo; cat a`,
			stdout: "old\nnew\n", files: map[string]string{"a": "new\n"}, commits: 1, version: 2},
		{name: "another workspace commits on its own",
			seed:   map[string]string{"keep": "k"},
			script: `workspace_write --workspace other --path a --content x | jq .version; ls; workspace_read --workspace other --path a`,
			stdout: "1\nkeep\nx", files: map[string]string{"keep": "k"}, commits: 1, version: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			svc := newPendingService()
			seed(t, ctx, svc, tc.seed)
			sh, err := NewShell(workspace.Tools(svc), ShellOptions{})
			if err != nil {
				t.Fatal(err)
			}
			res := sh.Run(ctx, tools.Request{Commands: tc.script}, RunOptions{Mount: Mount{Workspace: svc}})
			if res.ExitCode != tc.code || res.Stdout != tc.stdout || !strings.Contains(res.Stderr, tc.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", res.ExitCode, res.Stdout, res.Stderr, tc.code, tc.stdout, tc.stderr)
			}
			if got := contents(t, ctx, svc, effects.DefaultWorkspace); !maps.Equal(got, tc.files) {
				t.Errorf("files %q; want %q", got, tc.files)
			}
			if len(res.Commits) != tc.commits {
				t.Errorf("%d commits %+v; want %d", len(res.Commits), res.Commits, tc.commits)
			}
			if h, err := svc.Head(ctx, effects.DefaultWorkspace); err != nil || h.Version != tc.version {
				t.Errorf("head %+v, %v; want version %d", h, err, tc.version)
			}
		})
	}
}

// TestOneWorkspaceWorld runs a mixed script in a world, where each
// workspace command is a gated workspace.call: the command still asks the
// cap (a path outside notes/ is refused), reads and changes the script's
// files, and the receipt carries one commit for all of it, which the
// journal replays.
func TestOneWorkspaceWorld(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cat := loadCatalog(t)
	st := world.NewMemoryStorage()
	svc := workspace.NewService(st.CAS(), workspace.CellHeads(func(string) (schema.Value, bool) { return nil, false }), nil)
	ts := workspace.Tools(svc)
	tc := toolcall.New(ts...)
	grants, err := GrantsFromPlan(cat, "test/tool_plan@1")
	if err != nil {
		t.Fatal(err)
	}
	bash, err := New(Options{Catalog: cat, Tools: ts, Grants: grants, Workspace: svc,
		Adapters: map[string]effects.Adapter{KindWorkspace: tc}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := world.Open(ctx, world.Options{
		Name: "one", Catalog: cat, Reducers: reducer.NewRegistry(), Storage: st,
		Adapters: map[string]effects.Adapter{KindScripted: bash, KindWorkspace: tc},
		Entropy:  bytes.NewReader(make([]byte, 1<<16)),
	})
	if err != nil {
		t.Fatal(err)
	}
	script := `workspace_write --path notes/a.md --content one >/dev/null
cat notes/a.md; echo
echo two > notes/b.md
workspace_read --path notes/b.md
sed -i s/one/uno/ notes/a.md
workspace_edit --path notes/a.md --old_string uno --new_string eins | jq .version
workspace_write --path README.md --content no || echo "refused: $?"
workspace_list --path notes | jq -r '.entries[].path'`
	if _, err := w.SendJSON(ctx, "test/ToolCall@1", bashCall("r1", script)); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := w.WaitIdle(wctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	resp := toolDone(t, ctx, st, "one")["r1"]
	if resp == nil {
		t.Fatal("no ToolDone event for r1")
	}
	got := checkReceipt(t, cat, effects.OK(AdapterID, resp))
	want := "one\ntwo\n1\nrefused: 1\nnotes/a.md\nnotes/b.md\n"
	if got.Stdout != want || got.ExitCode != 0 {
		t.Errorf("exit %d, stdout %q; want 0, %q\nstderr %s", got.ExitCode, got.Stdout, want, got.Stderr)
	}
	if !strings.Contains(got.Stderr, `refuses workspace.call: path "README.md" is not under the allowed path prefixes [notes]`) ||
		!strings.Contains(got.Stderr, "[workspace default: version 0 -> 1: +notes/a.md +notes/b.md]") {
		t.Errorf("stderr %q lacks the denial or the commit note", got.Stderr)
	}
	if len(got.Commits) != 1 || got.Commits[0].ExpectedHead == nil || *got.Commits[0].ExpectedHead != 0 {
		b, _ := json.Marshal(got.Commits)
		t.Errorf("commits %s; want one on version 0", b)
	}
	if files := contents(t, ctx, svc, effects.DefaultWorkspace); !maps.Equal(files, map[string]string{"notes/": "", "notes/a.md": "eins", "notes/b.md": "two\n"}) {
		t.Errorf("files %q", files)
	}
	if _, err := world.Rerun(ctx, world.RerunOptions{Name: "one", Catalog: cat, Reducers: reducer.NewRegistry(), Storage: st, FromGenesis: true}); err != nil {
		t.Fatalf("replay: %v", fmt.Errorf("rerun: %w", err))
	}
}
