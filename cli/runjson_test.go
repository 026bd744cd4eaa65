package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/internal/jsonschema"
)

// runJSONSchema compiles docs/run-json.schema.json.
func runJSONSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	schemaFile := filepath.Join("..", "docs", "run-json.schema.json")
	f, err := os.Open(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("%s: %v", schemaFile, err)
	}
	c := jsonschema.NewCompiler()
	const u = "mem:///docs/run-json.schema.json"
	if err := c.AddResource(u, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(u)
	if err != nil {
		t.Fatalf("compile %s: %v", schemaFile, err)
	}
	return sch
}

// TestRunJSON: every line run --json prints, for every fake-model
// scenario (an answer with tool calls, rejected calls, a guard stop, a
// failed model call, a cut answer), fits docs/run-json.schema.json, the
// last is the turn's end, and the exit code follows its outcome.
func TestRunJSON(t *testing.T) {
	sch := runJSONSchema(t)
	bin, err := exec.LookPath("demiurge")
	if err != nil {
		t.Fatal(err)
	}
	call := func(name, args string) llmtest.Call { return llmtest.Call{Name: name, Arguments: args} }
	for _, tc := range []struct {
		name    string
		turns   []llmtest.Turn
		code    int
		outcome string
		types   []string // that must appear
		answer  string   // turn_end's
	}{
		{"answer with tools", []llmtest.Turn{
			{Calls: []llmtest.Call{call("introspect_journal_head", `{}`), call("workspace_edit", `{"path": "a.md", "old_string": "x", "new_string": "y"}`)}},
			{Calls: []llmtest.Call{call("bash", `{"commands": "echo hi > a.md; workspace_list | jq -r '.entries[].path'"}`)}},
			{Text: "done"},
		}, 0, "answer", []string{"message", "text_delta", "model_call", "tool_call_started", "tool_call_finished", "turn_end"}, "done"},
		{"rejected calls", []llmtest.Turn{
			{Calls: []llmtest.Call{call("nope", `{}`), call("workspace_read", `{"path": 1}`)}},
			{Text: "sorry"},
		}, 0, "answer", []string{"tool_call_started", "tool_call_finished"}, "sorry"},
		{"guard stop", []llmtest.Turn{
			{Calls: []llmtest.Call{call("introspect_journal_head", `{}`)}},
			{Calls: []llmtest.Call{call("introspect_journal_head", `{}`)}},
			{Calls: []llmtest.Call{call("introspect_journal_head", `{}`)}},
		}, exitGuardStop, "stopped", []string{"guard_stop"}, ""},
		{"model failure", []llmtest.Turn{{Status: 401}}, exitFailure, "failed", []string{"turn_error"}, ""},
		{"cut answer", []llmtest.Turn{{Text: "this is cut", Incomplete: "max_output_tokens"}}, exitIncomplete, "cut", nil, "this is cut"},
		{"awaiting approval", []llmtest.Turn{
			{Calls: []llmtest.Call{call("workspace_write", `{"path": "a.md", "content": "hi"}`), call("introspect_journal_head", `{}`)}},
		}, exitAwaiting, "awaiting_approval", []string{"approval_requested"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(llmtest.Script{Turns: tc.turns})
			defer srv.Close()
			args := []string{"--store", t.TempDir(), "run", filepath.Join("..", "examples", "demiurge"), "--model", "gpt-test", "--json", "-m", "go"}
			if tc.code == exitAwaiting {
				args = append(args, "--require-approval", "workspace_write")
			}
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL)
			var out, errs bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errs
			err := cmd.Run()
			code := 0
			if xe, ok := err.(*exec.ExitError); ok {
				code = xe.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code {
				t.Errorf("exit %d; want %d\n%s", code, tc.code, errs.String())
			}
			seen := map[string]bool{}
			var last map[string]any
			sc := bufio.NewScanner(&out)
			sc.Buffer(nil, 1<<20)
			n := 0
			for sc.Scan() {
				n++
				inst, err := jsonschema.UnmarshalJSON(strings.NewReader(sc.Text()))
				if err != nil {
					t.Fatalf("line %d is not JSON: %v\n%s", n, err, sc.Text())
				}
				if err := sch.Validate(inst); err != nil {
					t.Errorf("line %d does not fit the schema: %v\n%s", n, err, sc.Text())
				}
				var m map[string]any
				_ = json.Unmarshal(sc.Bytes(), &m)
				seen[m["type"].(string)] = true
				last = m
			}
			if last == nil || last["type"] != "turn_end" || last["outcome"] != tc.outcome {
				t.Errorf("the last line is %v; want a turn_end with outcome %s", last, tc.outcome)
			}
			if got, _ := last["answer"].(string); got != tc.answer {
				t.Errorf("turn_end's answer is %q; want %q", got, tc.answer)
			}
			for _, typ := range tc.types {
				if !seen[typ] {
					t.Errorf("no %s event in:\n%s", typ, out.String())
				}
			}
		})
	}
}

// TestRunNewMessageWhileCallWaits: run -m while a call of the last turn
// waits for approval (after a run that exited 5 saying to approve it)
// answers that call, not run, and says so on the terminal and in the JSON
// stream, which reports the call decided and the earlier turn stopped
// instead of leaving it awaiting approval.
func TestRunNewMessageWhileCallWaits(t *testing.T) {
	sch := runJSONSchema(t)
	manifest := filepath.Join("..", "examples", "demiurge")
	for _, asJSON := range []bool{false, true} {
		srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
			{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "r.md", "content": "r"}`, CallID: "call_29_0"}}},
			{Text: "second answer"},
		}})
		defer srv.Close()
		env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL}
		dir := t.TempDir()
		args := func(msg string) []string {
			a := []string{"--store", dir, "run", manifest, "--model", "gpt-test", "--require-approval", "workspace_write", "-m", msg}
			if asJSON {
				a = append(a, "--json")
			}
			return a
		}
		if r := run(t, env, "", args("write r")...); r.code != exitAwaiting {
			t.Fatalf("json %v: first run: exit %d; want %d\n%s%s", asJSON, r.code, exitAwaiting, r.stdout, r.stderr)
		}
		r := run(t, env, "", args("never mind, say hi")...)
		if r.code != exitOK {
			t.Fatalf("json %v: second run: exit %d\n%s%s", asJSON, r.code, r.stdout, r.stderr)
		}
		// run -m stops the turn that waits (it cannot ask at a pipe or in
		// --json), says so once, and journals the call as not run.
		const why = "the user stopped the turn (a new message was sent while its calls waited for approval)"
		if !asJSON {
			if !strings.Contains(r.stdout, "turn 1 waited for approval of workspace_write (call_29_0); the new message stops it") ||
				!strings.Contains(r.stdout, "✗ workspace_write not_run: "+why+"\n") || !strings.Contains(r.stdout, "■ turn stopped: "+why+"\n") {
				t.Errorf("the terminal does not say what became of call_29_0 and turn 1:\n%s", r.stdout)
			}
			if strings.Contains(r.stdout, "demiurge approve") {
				t.Errorf("the terminal tells the user to approve a call the new message stops:\n%s", r.stdout)
			}
			continue
		}
		var finished, stopped, last map[string]any
		for i, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(line))
			if err != nil {
				t.Fatalf("line %d is not JSON: %v\n%s", i+1, err, line)
			}
			if err := sch.Validate(inst); err != nil {
				t.Errorf("line %d does not fit the schema: %v\n%s", i+1, err, line)
			}
			var m map[string]any
			_ = json.Unmarshal([]byte(line), &m)
			switch {
			case m["type"] == "tool_call_finished" && m["call_id"] == "call_29_0":
				finished = m
			case m["type"] == "turn_end" && m["request_id"] == 1.0:
				stopped = m
			case m["type"] == "turn_end" && m["outcome"] == "awaiting_approval":
				t.Errorf("a stale turn_end awaiting_approval: %s", line)
			}
			last = m
		}
		if finished == nil || finished["status"] != "not_run" || finished["output"] != "not run: "+why {
			t.Errorf("tool_call_finished %v; want call_29_0 not run\n%s", finished, r.stdout)
		}
		if stopped == nil || stopped["outcome"] != "stopped" {
			t.Errorf("turn_end of request 1 %v; want outcome stopped\n%s", stopped, r.stdout)
		}
		if last["type"] != "turn_end" || last["request_id"] != 2.0 || last["outcome"] != "answer" {
			t.Errorf("the last line is %v; want the new turn's end", last)
		}
	}
}
