package bashfx

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/bash"
	"github.com/demiurge-dev/demiurge/tools/mcp"
)

// TestPipesAndJq: a script calls several tools, pipes their output through
// jq, sort and head, keeps results in variables, and writes a file; every
// call is in the receipt with its arguments as JSON with sorted keys.
func TestPipesAndJq(t *testing.T) {
	f := newFixture(t, nil)
	got := f.run(t, f.call(t, "bash", `
n=$(introspect_state --module counter | jq '.count')
echo "count=$n"
introspect_state | jq -r '.items[]' | sort | head -2
workspace_write --path notes/a.txt --content "hello $n"
workspace_read --path notes/a.txt | tr a-z A-Z
echo
`, nil))
	if got.ExitCode != 0 || got.Error != nil || got.Stderr != "" {
		t.Fatalf("exit %d, error %v, stderr %q", got.ExitCode, got.Error, got.Stderr)
	}
	want := "count=3\napple\nfig\n{\"version\":1}\nHELLO 3\n"
	if got.Stdout != want {
		t.Errorf("stdout = %q; want %q", got.Stdout, want)
	}
	var calls []string
	for _, c := range got.Calls {
		calls = append(calls, fmt.Sprintf("%d %s %s %d", c.Seq, c.Tool, c.ArgumentsJSON, c.ExitCode))
		if c.Error != nil {
			t.Errorf("call %d has error %q", c.Seq, *c.Error)
		}
	}
	wantCalls := []string{
		`1 introspect_state {"module":"counter"} 0`,
		`2 introspect_state {} 0`,
		`3 workspace_write {"content":"hello 3","path":"notes/a.txt"} 0`,
		`4 workspace_read {"path":"notes/a.txt"} 0`,
	}
	if !reflect.DeepEqual(calls, wantCalls) {
		t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(calls, "\n"), strings.Join(wantCalls, "\n"))
	}
	if len(got.Commits) != 1 || got.Commits[0].Workspace != "default" || got.Commits[0].ExpectedHead == nil || *got.Commits[0].ExpectedHead != 0 ||
		got.Commits[0].Meta.RootHash != cas.Sum([]byte("notes/a.txt=hello 3")).String() || got.Commits[0].Meta.Owner != "test" {
		t.Errorf("commits = %+v", got.Commits)
	}
}

// TestDenied: a command the world refuses fails with a message naming the
// cap or policy that refused; the tool does not run; `||` carries the
// script on; the call is in the receipt with its error.
func TestDenied(t *testing.T) {
	for _, tc := range []struct {
		name    string
		grant   string
		mutate  func(*Options)
		script  string
		tool    string
		message string
	}{
		{
			name: "cap path prefix", grant: "bash", tool: "workspace_write",
			script:  `workspace_write --path secret.txt --content x`,
			message: `workspace_write: denied: cap sys/workspace@1 (grant "notes") refuses workspace.call: path "secret.txt" is not under the allowed path prefixes [notes]`,
		},
		{
			name: "policy", grant: "bash", tool: "docs_search",
			script:  `docs_search --query x`,
			message: `docs_search: denied: policy test/policy@1 rule 3 denies mcp.call from plan test/tool_plan@1`,
		},
		{
			name: "tools_allow of the scripted grant", grant: "bash_readonly", tool: "workspace_write",
			script:  `workspace_write --path notes/x --content x`,
			message: `workspace_write: denied: cap sys/scripted@1 (grant "bash_readonly") does not allow workspace_write in scripts (tools_allow [workspace_read introspect_state])`,
		},
		{
			name: "no grant for the family", grant: "bash", tool: "introspect_state",
			mutate:  func(o *Options) { delete(o.Grants, KindIntrospect) },
			script:  `introspect_state`,
			message: `introspect_state: denied: no cap grant for introspect.call effects is configured for scripts (the world's tool plan emits none)`,
		},
		{
			name: "grant of the wrong cap type", grant: "bash", tool: "introspect_state",
			mutate:  func(o *Options) { o.Grants[KindIntrospect] = "notes" },
			script:  `introspect_state`,
			message: `introspect_state: denied: grant "notes" is a workspace cap but introspect.call needs query`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.mutate)
			got := f.run(t, f.call(t, tc.grant, tc.script+` || echo "fallback $?"`+"\necho after\n", nil))
			if got.ExitCode != 0 {
				t.Errorf("exit %d; want 0 (the script goes on)", got.ExitCode)
			}
			if got.Stdout != "fallback 1\nafter\n" {
				t.Errorf("stdout = %q", got.Stdout)
			}
			if got.Stderr != tc.message+"\n" {
				t.Errorf("stderr = %q\nwant     %q", got.Stderr, tc.message+"\n")
			}
			if n := f.fw.tools[tc.tool].calls.Load(); n != 0 {
				t.Errorf("%s ran %d times", tc.tool, n)
			}
			if len(f.rec.seen()) != 0 {
				t.Errorf("adapters ran: %+v", f.rec.seen())
			}
			if len(got.Calls) != 1 || got.Calls[0].Tool != tc.tool || got.Calls[0].ExitCode != 1 ||
				got.Calls[0].Error == nil || *got.Calls[0].Error != tc.message {
				t.Errorf("calls = %+v", got.Calls)
			}
		})
	}
}

// TestSubCalls: each command runs as an effect of its family with the
// family's grant, the scripted.run intent's origin and logical time, and
// the idempotency key "<intent hash>/<seq>" — the same on a second run.
func TestSubCalls(t *testing.T) {
	f := newFixture(t, nil)
	c := f.call(t, "bash", `introspect_state; workspace_write --path notes/b --content 'a "quoted" <b>'`, nil)
	f.run(t, c)
	first := f.rec.seen()
	want := []subCall{
		{Kind: KindIntrospect, Grant: "query", Key: c.Intent.Hash.String() + "/1", Origin: c.Intent.Origin,
			LogicalNowNS: logicalNow, Params: `{"tool":"introspect_state","arguments_json":"{}"}`},
		{Kind: KindWorkspace, Grant: "notes", Key: c.Intent.Hash.String() + "/2", Origin: c.Intent.Origin,
			LogicalNowNS: logicalNow, Params: `{"tool":"workspace_write","arguments_json":"{\"content\":\"a \\\"quoted\\\" \\u003cb\\u003e\",\"path\":\"notes/b\"}"}`},
	}
	if !reflect.DeepEqual(first, want) {
		t.Errorf("sub-calls:\n%+v\nwant\n%+v", first, want)
	}
	f.rec.calls = nil
	f.run(t, c)
	if again := f.rec.seen(); !reflect.DeepEqual(again, first) {
		t.Errorf("second run:\n%+v\nfirst\n%+v", again, first)
	}
}

// TestCommits: the receipt's commits are every commit of every command,
// in call order, a failed command's included; a failed command reports
// its exit code and its stderr on one line.
func TestCommits(t *testing.T) {
	f := newFixture(t, nil)
	got := f.run(t, f.call(t, "bash", `
workspace_write --path notes/1 --content one
workspace_twice --path notes/2
workspace_fail_after --path notes/3 || echo "failed $?"
workspace_read --path notes/nope
`, nil))
	if got.ExitCode != 1 || got.Stdout != "{\"version\":1}\n{\"version\":3}\nfailed 3\n" {
		t.Errorf("exit %d, stdout %q", got.ExitCode, got.Stdout)
	}
	wantErr := "workspace_fail_after: disk on fire second line\nworkspace_read: no such file: notes/nope\n"
	if got.Stderr != wantErr {
		t.Errorf("stderr = %q; want %q", got.Stderr, wantErr)
	}
	var heads []string
	for _, c := range got.Commits {
		h := "nil"
		if c.ExpectedHead != nil {
			h = fmt.Sprint(*c.ExpectedHead)
		}
		heads = append(heads, h)
	}
	if fmt.Sprint(heads) != "[0 1 2 3]" {
		t.Errorf("commits' expected heads = %v; want [0 1 2 3]", heads)
	}
	if got.Commits[3].Meta.RootHash != cas.Sum([]byte("notes/3=partial")).String() {
		t.Errorf("the failed command's commit is %+v", got.Commits[3])
	}
	codes := []int{}
	for _, c := range got.Calls {
		codes = append(codes, c.ExitCode)
	}
	if fmt.Sprint(codes) != "[0 0 3 1]" {
		t.Errorf("calls' exit codes = %v", codes)
	}
}

// TestTimeout: a script that never ends stops at its timeout_ms with exit
// status 124, as does one whose call's context ends first; in a synctest
// bubble, so the limit is exact.
func TestTimeout(t *testing.T) {
	for _, tc := range []struct {
		name      string
		timeoutMS any
		ctx       time.Duration
		stderr    string
		elapsed   time.Duration
		tickMS    int
	}{
		{"timeout_ms", uint64(300), 0, "bash: execution timed out after 0.3s\n", 300 * time.Millisecond, 40},
		{"caller's deadline", uint64(5000), 200 * time.Millisecond, "bash: execution timed out (deadline of the caller)\n", 200 * time.Millisecond, 30},
		{"default timeout", nil, 0, "bash: execution timed out after 30s\n", DefaultTimeout, 700},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFixture(t, nil)
				c := f.call(t, "bash", fmt.Sprintf(`while true; do introspect_tick --ms %d >/dev/null; done`, tc.tickMS), tc.timeoutMS)
				ctx := t.Context()
				if tc.ctx > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.ctx)
					defer cancel()
				}
				start := time.Now()
				r := f.a.Run(ctx, c)
				elapsed := time.Since(start)
				got := checkReceipt(t, f.cat, r)
				if got.ExitCode != 124 || got.Error == nil || *got.Error != bash.ErrorTimeout {
					t.Errorf("exit %d, error %v; want 124 timeout", got.ExitCode, got.Error)
				}
				if !strings.HasSuffix(got.Stderr, tc.stderr) {
					t.Errorf("stderr = %q; want it to end with %q", got.Stderr, tc.stderr)
				}
				if elapsed != tc.elapsed {
					t.Errorf("ran for %s; want %s", elapsed, tc.elapsed)
				}
				if n, want := len(got.Calls), int(tc.elapsed)/(tc.tickMS*int(time.Millisecond))+1; n != want {
					t.Errorf("%d calls recorded; want %d", n, want)
				}
			})
		})
	}
}

// TestDate: date reads the intent's logical time, not the host clock.
func TestDate(t *testing.T) {
	f := newFixture(t, nil)
	got := f.run(t, f.call(t, "bash", `date +%s; date -u +%Y-%m-%dT%H:%M:%SZ`, nil))
	if want := "1700000000\n2023-11-14T22:13:20Z\n"; got.Stdout != want {
		t.Errorf("stdout = %q; want %q (stderr %q)", got.Stdout, want, got.Stderr)
	}
}

// TestFailingAdapters: an adapter's error receipt, timeout receipt, panic
// or malformed receipt fails the command with a message saying so.
func TestFailingAdapters(t *testing.T) {
	for _, tc := range []struct {
		name    string
		adapter effects.AdapterFunc
		stderr  string
		code    int
	}{
		{"error receipt", func(ctx context.Context, c *effects.Call) effects.Receipt {
			return effects.Errorf("x", "the service is down")
		}, "introspect_state: introspect.call failed: the service is down", 1},
		{"timeout receipt", func(ctx context.Context, c *effects.Call) effects.Receipt {
			return effects.Receipt{Status: effects.StatusTimeout, Error: "took too long"}
		}, "introspect_state: introspect.call timed out: took too long", 124},
		{"panic", func(ctx context.Context, c *effects.Call) effects.Receipt {
			panic("boom")
		}, "introspect_state: introspect_state failed: panic: boom", 1},
		{"receipt of the wrong shape", func(ctx context.Context, c *effects.Call) effects.Receipt {
			return effects.OK("x", schema.Record("stdout", "hi"))
		}, "introspect_state: the introspect.call receipt does not fit sys/ToolResponse@1: ", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(o *Options) { o.Adapters[KindIntrospect] = tc.adapter })
			got := f.run(t, f.call(t, "bash", `introspect_state`, nil))
			if got.ExitCode != tc.code || !strings.HasPrefix(got.Stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want %d, %q", got.ExitCode, got.Stderr, tc.code, tc.stderr)
			}
		})
	}
	t.Run("no adapter", func(t *testing.T) {
		f := newFixture(t, func(o *Options) { delete(o.Adapters, KindIntrospect) })
		got := f.run(t, f.call(t, "bash", `introspect_state`, nil))
		if want := "introspect_state: no adapter runs introspect.call effects in this world\n"; got.ExitCode != 1 || got.Stderr != want {
			t.Errorf("exit %d, stderr %q; want 1, %q", got.ExitCode, got.Stderr, want)
		}
	})
}

// TestScriptErrors: the script's own failures are in an ok receipt: a
// syntax error, an unknown command, a flag that does not fit the schema
// (recorded as a call that did not run).
func TestScriptErrors(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		script, errCat string
		code           int
		stderr         string
		calls          int
	}{
		{`echo "unterminated`, bash.ErrorParse, 2, "bash: line 1: syntax error", 0},
		{`nosuchtool`, "", 127, "nosuchtool: command not found", 0},
		{`workspace_read --nope 1`, "", 2, "workspace_read: unknown flag --nope; valid flags: --path, --workspace", 1},
	} {
		got := f.run(t, f.call(t, "bash", tc.script, nil))
		gotCat := ""
		if got.Error != nil {
			gotCat = *got.Error
		}
		if got.ExitCode != tc.code || gotCat != tc.errCat || !strings.Contains(got.Stderr, tc.stderr) || len(got.Calls) != tc.calls {
			t.Errorf("%s: exit %d, error %q, stderr %q, %d calls; want %d, %q, %q, %d",
				tc.script, got.ExitCode, gotCat, got.Stderr, len(got.Calls), tc.code, tc.errCat, tc.stderr, tc.calls)
		}
	}
}

// TestHelpNotRecorded: help, discover and --dry-run are answered by the
// shell and are not sub-calls of the receipt.
func TestHelpNotRecorded(t *testing.T) {
	f := newFixture(t, nil)
	got := f.run(t, f.call(t, "bash", `help >/dev/null; discover --categories; workspace_read --path notes/a --dry-run >/dev/null`, nil))
	if got.ExitCode != 0 || len(got.Calls) != 0 || len(f.rec.seen()) != 0 {
		t.Errorf("exit %d, calls %+v, adapters saw %+v", got.ExitCode, got.Calls, f.rec.seen())
	}
	if want := "docs (1 tool)\nintrospect (2 tools)\nworkspace (4 tools)\n"; got.Stdout != want {
		t.Errorf("stdout = %q; want %q", got.Stdout, want)
	}
}

// TestSetTools: the shell is rebuilt only when the tool set changes; a
// tool without a family is refused.
func TestSetTools(t *testing.T) {
	f := newFixture(t, nil)
	sh := f.a.Shell()
	if err := f.a.SetTools(f.fw.all()); err != nil || f.a.Shell() != sh {
		t.Errorf("same tools: err %v, rebuilt %v", err, f.a.Shell() != sh)
	}
	if err := f.a.SetTools(f.fw.list("introspect_state")); err != nil || f.a.Shell() == sh {
		t.Errorf("fewer tools: err %v, rebuilt %v", err, f.a.Shell() != sh)
	}
	if got := len(f.a.Shell().Tool().Tools()); got != 1 {
		t.Errorf("%d commands; want 1", got)
	}
	_, err := New(Options{Catalog: f.cat, Tools: append(f.fw.all(), &fakeTool{name: "mystery"})})
	if err == nil || !strings.Contains(err.Error(), "no effect family for tools docs_search, mystery") {
		t.Errorf("New with unrouted tools: %v", err)
	}
	if _, err := New(Options{}); err == nil {
		t.Error("New without a catalog succeeded")
	}
}

// TestPrompt: the bash tool's prompt and schema list the world's tools.
func TestPrompt(t *testing.T) {
	f := newFixture(t, nil)
	bt := f.a.Shell().Tool()
	info := bt.Info()
	if info.Name != "bash" {
		t.Errorf("name %q", info.Name)
	}
	p := info.SystemPrompt
	for _, name := range []string{"introspect_state", "workspace_write", "docs_search", "--path"} {
		if !strings.Contains(p, name) {
			t.Errorf("system prompt lacks %s:\n%s", name, p)
		}
	}
	if !json.Valid(info.InputSchema) || !strings.Contains(string(info.InputSchema), "commands") {
		t.Errorf("input schema %s", info.InputSchema)
	}
	// Outside Shell.Run the tool commands are unavailable, the shell works.
	resp := bt.Run(t.Context(), tools.Request{Commands: `echo hi; introspect_state`}, nil)
	if resp.Stdout != "hi\n" || resp.ExitCode != 1 || !strings.Contains(resp.Stderr, "not available outside a world run") {
		t.Errorf("Run outside a run: %+v", resp)
	}
}

// TestGrantsFromPlan reads the grants of a tool plan and refuses plans
// that are missing or ambiguous.
func TestGrantsFromPlan(t *testing.T) {
	cat := loadCatalog(t)
	got, err := GrantsFromPlan(cat, "test/tool_plan@1")
	want := map[string]string{KindIntrospect: "query", KindWorkspace: "notes", KindScripted: "bash", KindMCP: "mcp"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("GrantsFromPlan = %v, %v; want %v", got, err, want)
	}
	if _, err := GrantsFromPlan(cat, "test/nope@1"); err == nil || !strings.Contains(err.Error(), "plan test/nope@1 is not in the manifest (its plans: test/tool_plan@1)") {
		t.Errorf("missing plan: %v", err)
	}
	var srcs []schema.Source
	for _, s := range cat.Sources() {
		if strings.HasSuffix(s.Name, "tool_plan.air.json") {
			s.Data = []byte(strings.Replace(string(s.Data), `"cap": "bash"`, `"cap": "bash_readonly"`, 1))
			var plan map[string]any
			if err := json.Unmarshal(s.Data, &plan); err != nil {
				t.Fatal(err)
			}
			steps := plan["steps"].([]any)
			extra := map[string]any{}
			b, _ := json.Marshal(steps[7]) // bash_call
			json.Unmarshal(b, &extra)
			extra["id"], extra["cap"] = "bash_again", "bash"
			extra["bind"] = map[string]any{"effect_id_as": "bash_again_h"}
			plan["steps"] = append(steps, extra)
			plan["edges"] = append(plan["edges"].([]any), map[string]any{"from": "bash_call", "to": "bash_again"})
			s.Data, _ = json.Marshal(plan)
		}
		srcs = append(srcs, s)
	}
	cat2, err := schema.LoadSources(srcs, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = GrantsFromPlan(cat2, "test/tool_plan@1")
	if err == nil || !strings.Contains(err.Error(), `emits scripted.run with grant "bash_readonly" at step bash_call and with grant "bash" at step bash_again`) {
		t.Errorf("ambiguous plan: %v", err)
	}
}

// TestDirect: Shell.Run with Direct calls the tools themselves and
// collects their commits, with no gate.
func TestDirect(t *testing.T) {
	fw := newFakeWorld()
	sh, err := NewShell(fw.list("workspace_write", "workspace_read"), ShellOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res := sh.Run(t.Context(), tools.Request{Commands: `workspace_write --path /anywhere --content x && workspace_read --path /anywhere`}, RunOptions{})
	if res.ExitCode != 0 || res.Stdout != "{\"version\":1}\nx" || len(res.Commits) != 1 || res.Commits[0].Version != 1 {
		t.Errorf("result %+v, commits %+v", res.Response, res.Commits)
	}
	if len(res.Calls) != 2 {
		t.Errorf("calls %+v", res.Calls)
	}
}

// TestDrain: a command that ignores its context still runs when the
// script times out; Run waits for it (up to Drain) so that its commit is
// in the result, and gives up after Drain.
func TestDrain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sleep   time.Duration
		elapsed time.Duration
		commits int
	}{
		{"returns within Drain", 2 * time.Second, 2 * time.Second, 1},
		{"outlives Drain", time.Minute, 100*time.Millisecond + DefaultDrain, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fw := newFakeWorld()
				stubborn := &fakeTool{name: "workspace_stubborn", desc: "Ignore cancellation, then write",
					schema: `{"type":"object"}`,
					fn: func(ctx context.Context, args map[string]any) tools.Response {
						time.Sleep(tc.sleep)
						fw.write(ctx, "late", "x")
						return tools.Response{}
					}}
				sh, err := NewShell([]tools.Tool{stubborn}, ShellOptions{})
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				res := sh.Run(t.Context(), tools.Request{Commands: "workspace_stubborn", TimeoutMS: 100}, RunOptions{})
				if elapsed := time.Since(start); elapsed != tc.elapsed {
					t.Errorf("Run took %s; want %s", elapsed, tc.elapsed)
				}
				if res.ExitCode != 124 || len(res.Commits) != tc.commits {
					t.Errorf("exit %d, %d commits; want 124, %d", res.ExitCode, len(res.Commits), tc.commits)
				}
				time.Sleep(tc.sleep) // let the stubborn command end inside the bubble
				synctest.Wait()
			})
		})
	}
}

// TestJSONNewline: the stdout of a tool whose output is a JSON object ends
// with a newline; other output is passed on byte for byte.
func TestJSONNewline(t *testing.T) {
	out := func(name, schema, stdout string) *fakeTool {
		return &fakeTool{name: name, desc: name, schema: `{"type":"object"}`, output: schema,
			fn: func(context.Context, map[string]any) tools.Response { return tools.Response{Stdout: stdout} }}
	}
	sh, err := NewShell([]tools.Tool{
		out("obj", `{"type":"object","properties":{"a":{"type":"integer"}}}`, `{"a":1}`),
		out("objnl", `{"type":"object"}`, "{}\n"),
		out("text", `{"type":"string"}`, "no newline"),
	}, ShellOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res := sh.Run(t.Context(), tools.Request{Commands: `obj; objnl; obj | while read -r l; do echo "line $l"; done; text; text | base64`}, RunOptions{})
	want := "{\"a\":1}\n{}\nline {\"a\":1}\nno newlinebm8gbmV3bGluZQ==\n"
	if res.ExitCode != 0 || res.Stdout != want {
		t.Errorf("exit %d, stdout %q; want %q (stderr %q)", res.ExitCode, res.Stdout, want, res.Stderr)
	}
}

// TestOutputCut: a script's output past DefaultOutputBytes is counted, not
// kept, and the receipt says where it was cut and how much there was.
func TestOutputCut(t *testing.T) {
	f := newFixture(t, nil)
	got := f.run(t, f.call(t, "bash", `seq 1 20000; seq 1 10000 >&2`, nil))
	stdout := 108894 // the bytes of seq 1 20000
	wantOut := fmt.Sprintf("\n[output cut at %d of %d bytes]", DefaultOutputBytes, stdout)
	if !got.StdoutTruncated || !strings.HasSuffix(got.Stdout, wantOut) || len(got.Stdout) != DefaultOutputBytes+len(wantOut) {
		t.Errorf("stdout of %d bytes, truncated %v, ends %q; want %d bytes ending %q",
			len(got.Stdout), got.StdoutTruncated, got.Stdout[max(0, len(got.Stdout)-60):], DefaultOutputBytes+len(wantOut), wantOut)
	}
	if !got.StderrTruncated || !strings.HasSuffix(got.Stderr, fmt.Sprintf("\n[stderr cut at %d of 48894 bytes]", DefaultOutputBytes)) {
		t.Errorf("stderr ends %q", got.Stderr[max(0, len(got.Stderr)-60):])
	}
	if got.ExitCode != 0 {
		t.Errorf("exit %d: a cut does not change the exit code", got.ExitCode)
	}
}

// TestKindMCP: KindMCP, spelled out to keep the MCP SDK out of bashfx, is
// the kind tools/mcp's adapter runs.
func TestKindMCP(t *testing.T) {
	if KindMCP != mcp.EffectKind {
		t.Errorf("KindMCP = %q; tools/mcp's EffectKind is %q", KindMCP, mcp.EffectKind)
	}
}
