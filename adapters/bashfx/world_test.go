package bashfx

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/toolcall"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools/introspect"
	"github.com/demiurge-dev/demiurge/tools/workspace"
	"github.com/demiurge-dev/demiurge/world"
	"github.com/demiurge-dev/demiurge/world/worldview"
)

// TestWorld runs the test world's tool plan in a real world: a
// scripted.run whose commands are decided by the world's gate and run by
// the toolcall adapter, beside a direct workspace.call. The journal holds
// one intent per tool call of the plan (none for the script's commands,
// which its receipt records) and replays from genesis without divergence.
func TestWorld(t *testing.T) {
	ctx := t.Context()
	cat := loadCatalog(t)
	fw := newFakeWorld()
	tc := toolcall.New(fw.all()...)
	grants, err := GrantsFromPlan(cat, "test/tool_plan@1")
	if err != nil {
		t.Fatal(err)
	}
	bash, err := New(Options{Catalog: cat, Tools: fw.all(), Route: mcpRoute, Grants: grants,
		Adapters: map[string]effects.Adapter{KindIntrospect: tc, KindWorkspace: tc}})
	if err != nil {
		t.Fatal(err)
	}
	st := world.NewMemoryStorage()
	clock := time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC)
	w, err := world.Open(ctx, world.Options{
		Name: "bash", Catalog: cat, Reducers: reducer.NewRegistry(), Storage: st,
		Adapters: map[string]effects.Adapter{KindScripted: bash, KindIntrospect: tc, KindWorkspace: tc},
		Now:      func() time.Time { return clock },
		Entropy:  bytes.NewReader(make([]byte, 1<<16)),
	})
	if err != nil {
		t.Fatal(err)
	}
	script := `n=$(introspect_state | jq .count)
workspace_write --path notes/n.txt --content "n=$n"
workspace_write --path private/x --content y || echo "denied, going on"
docs_search --query q || true
date -u +%FT%TZ`
	send := func(js string) {
		t.Helper()
		if _, err := w.SendJSON(ctx, "test/ToolCall@1", []byte(js)); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := w.WaitIdle(wctx); err != nil {
			t.Fatal(err)
		}
	}
	send(fmt.Sprintf(`{"id": "c1", "family": "bash", "tool": "bash", "arguments_json": "", "script": %q, "timeout_ms": 10000}`, script))
	send(`{"id": "c2", "family": "workspace", "tool": "workspace_read", "arguments_json": "{\"path\": \"notes/n.txt\"}", "script": "", "timeout_ms": null}`)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	var intents []string
	done := map[string]schema.Value{}
	err = st.Journal().Read(ctx, "bash", 1, func(r journal.Record) error {
		switch r.Kind {
		case world.KindIntent:
			v, err := schema.Decode(r.Payload)
			if err != nil {
				return err
			}
			intents = append(intents, fmt.Sprint(schema.FieldPath(v, "kind")))
		case world.KindRaised:
			v, err := schema.Decode(r.Payload)
			if err != nil {
				return err
			}
			if schema.FieldPath(v, "schema") == "test/ToolDone@1" {
				ev := schema.FieldPath(v, "value")
				done[schema.FieldPath(ev, "id").(string)] = schema.FieldPath(ev, "response")
			}
		case world.KindDenied, world.KindRejected, world.KindReducerError:
			return fmt.Errorf("record %d is %s: %s", r.Seq, r.Kind, payloadJSON(r))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(intents) != "[scripted.run workspace.call]" {
		t.Errorf("intents %v; want [scripted.run workspace.call]", intents)
	}
	if len(done) != 2 {
		t.Fatalf("ToolDone events for %d calls; want 2", len(done))
	}
	got := checkReceipt(t, cat, effects.OK(AdapterID, done["c1"]))
	wantOut := "{\"version\":1}\ndenied, going on\n2023-11-14T22:13:20Z\n"
	if got.ExitCode != 0 || got.Stdout != wantOut {
		t.Errorf("bash: exit %d, stdout %q; want 0, %q (stderr %q)", got.ExitCode, got.Stdout, wantOut, got.Stderr)
	}
	for _, want := range []string{`workspace_write: denied: cap sys/workspace@1 (grant "notes") refuses workspace.call: path "private/x"`,
		`docs_search: denied: policy test/policy@1 rule 3 denies mcp.call`} {
		if !strings.Contains(got.Stderr, want) {
			t.Errorf("stderr %q lacks %q", got.Stderr, want)
		}
	}
	var calls []string
	for _, c := range got.Calls {
		calls = append(calls, fmt.Sprintf("%s:%d", c.Tool, c.ExitCode))
	}
	if fmt.Sprint(calls) != "[introspect_state:0 workspace_write:0 workspace_write:1 docs_search:1]" {
		t.Errorf("calls %v", calls)
	}
	if len(got.Commits) != 1 {
		t.Errorf("commits %+v; want the one write", got.Commits)
	}
	read := checkReceipt(t, cat, effects.OK(AdapterID, done["c2"]))
	if read.ExitCode != 0 || read.Stdout != "n=3" {
		t.Errorf("workspace_read after the script: exit %d, stdout %q, stderr %q", read.ExitCode, read.Stdout, read.Stderr)
	}

	res, err := world.Rerun(ctx, world.RerunOptions{Name: "bash", Catalog: cat, Reducers: reducer.NewRegistry(), Storage: st, FromGenesis: true})
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if res.Inputs < 5 || len(res.Machine.RunningPlans()) != 0 {
		t.Errorf("replay applied %d inputs, %d plans still running", res.Inputs, len(res.Machine.RunningPlans()))
	}
}

func payloadJSON(r journal.Record) string {
	v, err := schema.Decode(r.Payload)
	if err != nil {
		return err.Error()
	}
	return string(schema.ValueJSON(v))
}

// TestWorldRealTools runs a script with the real introspect and workspace
// tools in the test world: the workspace cap's path_prefixes allow notes/
// only, introspect reads the world the script runs in.
func TestWorldRealTools(t *testing.T) {
	ctx := t.Context()
	cat := loadCatalog(t)
	st := world.NewMemoryStorage()
	view := worldview.New("real", cat, st)
	svc := workspace.NewService(st.CAS(), workspace.CellHeads(func(string) (schema.Value, bool) { return nil, false }), nil)
	ts := append(introspect.Tools(view, nil), workspace.Tools(svc)...)
	tc := toolcall.New(ts...)
	grants, err := GrantsFromPlan(cat, "test/tool_plan@1")
	if err != nil {
		t.Fatal(err)
	}
	bash, err := New(Options{Catalog: cat, Tools: ts, Grants: grants,
		Adapters: map[string]effects.Adapter{KindIntrospect: tc, KindWorkspace: tc}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := world.Open(ctx, world.Options{
		Name: "real", Catalog: cat, Reducers: reducer.NewRegistry(), Storage: st,
		Adapters: map[string]effects.Adapter{KindScripted: bash, KindIntrospect: tc, KindWorkspace: tc},
		Entropy:  bytes.NewReader(make([]byte, 1<<16)),
	})
	if err != nil {
		t.Fatal(err)
	}
	view.Attach(w)
	script := `introspect_journal_head | jq -r .world
workspace_write --path notes/todo.md --content "- ship it" | jq .version
workspace_edit --path notes/todo.md --old_string ship --new_string test | jq .version
workspace_read --path notes/todo.md; echo
workspace_write --path README.md --content no || echo "refused: $?"
introspect_state --reducer nope/Nope@1 || echo "no such reducer: $?"`
	if _, err := w.SendJSON(ctx, "test/ToolCall@1", fmt.Appendf(nil, `{"id": "r1", "family": "bash", "tool": "bash", "arguments_json": "", "script": %q, "timeout_ms": null}`, script)); err != nil {
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
	var resp schema.Value
	err = st.Journal().Read(ctx, "real", 1, func(r journal.Record) error {
		if r.Kind == world.KindRaised {
			v, err := schema.Decode(r.Payload)
			if err != nil {
				return err
			}
			if schema.FieldPath(v, "schema") == "test/ToolDone@1" {
				resp = schema.FieldPath(schema.FieldPath(v, "value"), "response")
			}
		}
		return nil
	})
	if err != nil || resp == nil {
		t.Fatalf("no ToolDone event (%v)", err)
	}
	got := checkReceipt(t, cat, effects.OK(AdapterID, resp))
	want := "real\n1\n2\n- test it\nrefused: 1\nno such reducer: 1\n"
	if got.Stdout != want || got.ExitCode != 0 {
		t.Errorf("exit %d, stdout %q; want 0, %q\nstderr %s", got.ExitCode, got.Stdout, want, got.Stderr)
	}
	if !strings.Contains(got.Stderr, `workspace_write: denied: cap sys/workspace@1 (grant "notes") refuses workspace.call: path "README.md" is not under the allowed path prefixes [notes]`) {
		t.Errorf("stderr %q lacks the denial", got.Stderr)
	}
	if len(got.Commits) != 2 || got.Commits[1].ExpectedHead == nil || *got.Commits[1].ExpectedHead != 1 || got.Commits[1].Meta.Owner != workspace.DefaultOwner {
		t.Errorf("commits %+v", got.Commits)
	}
	if _, err := world.Rerun(ctx, world.RerunOptions{Name: "real", Catalog: cat, Reducers: reducer.NewRegistry(), Storage: st, FromGenesis: true}); err != nil {
		t.Fatalf("replay: %v", err)
	}
}
