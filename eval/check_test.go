package eval

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/agent"
)

// parseOne reads one check written in YAML.
func parseOne(t *testing.T, yamlText string) *Check {
	t.Helper()
	d, lerr := readDoc("case.yaml", []byte("user: x\nchecks:\n  - "+yamlText+"\n"))
	if lerr != nil {
		t.Fatal(lerr)
	}
	if errs := validate(d, false); len(errs) > 0 {
		t.Fatal(errs)
	}
	c, lerr := parseCheck(d, "/checks/0", valueAt(d.value, "/checks/0"), t.TempDir())
	if lerr != nil {
		t.Fatal(lerr)
	}
	return c
}

// turnSubject is a turn: it called bash twice (each script ran
// workspace_read: a.md, then b.md, which failed), wrote a.md with hello,
// and answered.
func turnSubject() *subject {
	files := map[string]string{"a.md": "hello\nworld\n"}
	return &subject{
		events: []agent.Event{
			agent.Message{Seq: 1, Role: "user", Text: "go"},
			agent.ToolCallStarted{Seq: 2, Tool: "bash", CallID: "c1", Arguments: `{"commands":"ls"}`, Status: "requested"},
			agent.ToolCallFinished{Seq: 3, Tool: "bash", CallID: "c1", Status: "ok", Output: "a.md"},
			agent.TextDelta{Round: 2, Text: "Done: "},
			agent.Message{Seq: 4, Role: "assistant", Text: `Done: {"n": 2}`},
			agent.TurnEnd{Seq: 4, Outcome: agent.OutcomeAnswer, Finish: "stop", Answer: `Done: {"n": 2}`},
		},
		answer: `Done: {"n": 2}`, outcome: "answer", finish: "stop", rounds: 3, tokens: 1200, cost: 1500, latency: 2 * time.Second,
		calls: []call{
			{tool: "bash", args: map[string]any{"commands": "ls -l", "timeout_ms": float64(100)}, raw: `{"commands":"ls -l","timeout_ms":100}`, status: "ok", id: "c1", via: viaDirect},
			{tool: "workspace_read", args: map[string]any{"path": "a.md"}, raw: `{"path":"a.md"}`, status: "ok", id: "c1", via: viaBash, in: "bash"},
			{tool: "bash", args: map[string]any{"commands": "cat a.md"}, raw: `{"commands":"cat a.md"}`, status: "error", id: "c2", via: viaDirect},
			{tool: "workspace_read", args: map[string]any{"path": "b.md"}, raw: `{"path":"b.md"}`, status: "error", id: "c2", via: viaBash, in: "bash"},
			{tool: "workspace_write", args: map[string]any{"path": "a.md", "content": "hello\nworld\n"}, raw: `{}`, status: "ok", id: "c3", via: viaDirect},
		},
		readFile: func(_ context.Context, ws, p string) ([]byte, bool, error) {
			if ws != "default" {
				return nil, false, errors.New("no workspace " + ws)
			}
			c, ok := files[p]
			return []byte(c), ok, nil
		},
		judge: func(_ context.Context, criteria, model string) (bool, string, error) {
			return strings.Contains(criteria, "good"), "it is " + map[bool]string{true: "good", false: "bad"}[strings.Contains(criteria, "good")], nil
		},
	}
}

func TestChecks(t *testing.T) {
	for _, tc := range []struct {
		check string
		want  string // "" passes; else a part of the problem
	}{
		{`answer_contains: Done`, ""},
		{`answer_contains: [Done, "n"]`, ""},
		{`answer_contains: [Done, nope]`, `the answer does not contain "nope": "Done: {\"n\": 2}"`},
		{`answer_not_contains: nope`, ""},
		{`answer_not_contains: [nope, Done]`, `the answer contains "Done"`},
		{`answer_matches: '(?i)^done'`, ""},
		{`answer_matches: '^\d+$'`, `the answer does not match ^\d+$`},
		{`answer_equals: '  Done: {"n": 2} '`, ""},
		{`answer_equals: Done`, `the answer is "Done: {\"n\": 2}", want "Done"`},
		{`answer_json: true`, `the answer is not JSON`},
		{`file_exists: a.md`, ""},
		{`file_exists: [a.md, b.md]`, "the workspace has no file b.md"},
		{`file_absent: b.md`, ""},
		{`file_absent: a.md`, "the workspace has a.md"},
		{`file_equals: {path: a.md, content: "hello\nworld\n"}`, ""},
		{`file_equals: {path: a.md, content: "hello"}`, `a.md holds "hello\nworld\n", want "hello"`},
		{`file_equals: {path: a.md, content: "x", workspace: other}`, "could not check: no workspace other"},
		{`file_contains: {path: a.md, text: [hello, world]}`, ""},
		{`file_contains: {path: a.md, text: bye}`, `a.md does not contain "bye"`},
		{`file_matches: {path: a.md, pattern: '(?m)^world$'}`, ""},
		{`file_matches: {path: b.md, pattern: x}`, "the workspace has no file b.md"},
		{`tool_called: bash`, ""},
		{`tool_called: introspect_manifest`, "no call of introspect_manifest; the model called bash (its script ran workspace_read), bash (its script ran workspace_read), workspace_write"},
		{`tool_called: {name: bash, args: {commands: ls -l}}`, ""},
		{`tool_called: {name: bash, args: {commands: {contains: cat}}}`, ""},
		{`tool_called: {name: bash, args: {commands: {matches: '^rm'}}}`, `no call of bash with commands matching ^rm; the calls of bash were: bash {"commands":"ls -l","timeout_ms":100}; bash {"commands":"cat a.md"}`},
		{`tool_called: {name: bash, args: {timeout_ms: 100}}`, ""},
		{`tool_called: {name: bash, args: {timeout_ms: {exists: false}}}`, ""},
		{`tool_called: {name: bash, status: ok, max: 1}`, ""},
		{`tool_called: {name: bash, max: 1}`, "2 calls of bash, want at most 1"},
		{`tool_called: {name: bash, min: 3}`, "2 calls of bash, want at least 3"},
		{`tool_called: {name: bash, max: 0}`, "2 matching calls of bash: want none"},
		{`tool_not_called: workspace_edit`, ""},
		{`tool_not_called: {name: workspace_write, args: {path: a.md}}`, `1 matching call of workspace_write with path = "a.md": want none`},
		{`max_tool_calls: 3`, ""},
		{`max_tool_calls: 2`, "3 tool calls, want at most 2 (bash (its script ran workspace_read), bash (its script ran workspace_read), workspace_write)"},
		{`max_tool_calls: {tool: bash, max: 1}`, "2 calls of bash, want at most 1"},
		{`max_tool_calls: {max: 5, via: any}`, ""},
		{`max_tool_calls: {max: 4, via: any}`, "5 tool calls and script commands, want at most 4"},
		{`max_tool_calls: {max: 1, via: bash}`, "2 script commands, want at most 1"},
		{`max_tool_calls: {tool: workspace_read, max: 1}`, "2 calls of workspace_read, want at most 1"},
		{`max_tool_calls: {tool: workspace_read, max: 1, via: bash}`, "2 calls of workspace_read, want at most 1"},
		{`max_tool_calls: {tool: workspace_read, max: 0, via: direct}`, ""},
		// The commands a script ran are tool calls too, unless via says.
		{`tool_called: workspace_read`, ""},
		{`tool_called: {name: workspace_read, args: {path: a.md}, status: ok, via: bash}`, ""},
		{`tool_called: {name: workspace_read, args: {path: b.md}, status: error}`, ""},
		{`tool_called: {name: workspace_read, via: direct}`, "no call of workspace_read (by the model); the calls of workspace_read were: workspace_read {\"path\":\"a.md\"} (in a bash script); workspace_read {\"path\":\"b.md\"} (in a bash script)"},
		{`tool_called: {name: workspace_write, via: bash}`, "no call of workspace_write (in a script); the calls of workspace_write were: workspace_write {}"},
		{`tool_called: {name: workspace_read, max: 1}`, "2 calls of workspace_read, want at most 1"},
		{`tool_not_called: workspace_read`, `2 matching calls of workspace_read: want none: workspace_read {"path":"a.md"} (in a bash script); workspace_read {"path":"b.md"} (in a bash script)`},
		{`tool_not_called: {name: workspace_read, via: direct}`, ""},
		{`tool_not_called: {name: workspace_read, args: {path: c.md}}`, ""},
		{`tool_not_called: {name: workspace_write, via: bash}`, ""},
		{`outcome: answer`, ""},
		{`outcome: stopped`, "the turn ended answer, want stopped"},
		{`finish: stop`, ""},
		{`finish: refusal`, "the model's finish reason is stop, want refusal"},
		{`max_rounds: 3`, ""},
		{`max_rounds: 2`, "3 rounds, want at most 2"},
		{`max_tokens: 1000`, "1200 tokens, want at most 1000"},
		{`max_cost_usd: 0.0015`, ""},
		{`max_cost_usd: 0.001`, "cost $0.0015, want at most $0.001"},
		{`max_latency: 2s`, ""},
		{`max_latency: 1500ms`, "took 2s, want at most 1.5s"},
		{`jq: 'map(select(.type == "tool_call_finished")) | length == 1'`, ""},
		{`jq: '$answer | test("Done")'`, ""},
		{`jq: '.[0].text == "stop"'`, "the jq expression gave false"},
		{`jq: 'empty'`, "the jq expression gave no value, want true"},
		{`jq: '.[0].nope.deeper | error("boom")'`, "the jq expression failed"},
		{`jq: '{a: 1}'`, `the jq expression gave {"a":1}, want true or false`},
		// The events are those run --json prints: text deltas too, and
		// turn_end with the answer.
		{`jq: 'map(select(.type == "text_delta")) | length == 1'`, ""},
		{`jq: 'last | .type == "turn_end" and .answer == $answer'`, ""},
		{`rubric: a good answer`, ""},
		{`rubric: {criteria: a bad answer, model: judge-1}`, "the judge says it fails: it is bad"},
	} {
		t.Run(tc.check, func(t *testing.T) {
			c := parseOne(t, tc.check)
			problem, err := c.run(t.Context(), turnSubject())
			if err != nil {
				problem = "could not check: " + err.Error()
			}
			switch {
			case tc.want == "" && problem != "":
				t.Errorf("%s: %s; want a pass", tc.check, problem)
			case tc.want != "" && !strings.Contains(problem, tc.want):
				t.Errorf("%s: %q; want a problem saying %q", tc.check, problem, tc.want)
			}
		})
	}
}

func TestAnswerJSON(t *testing.T) {
	schema := `answer_json: {schema: {type: object, required: [n], properties: {n: {type: integer}}}}`
	for _, tc := range []struct{ answer, want string }{
		{`{"n": 2}`, ""},
		{"Here:\n```json\n{\"n\": 3}\n```\n", ""},
		{`{"n": "two"}`, "not valid against the schema"},
		{`{}`, "not valid against the schema"},
		{`n = 2`, "the answer is not JSON"},
	} {
		s := turnSubject()
		s.answer = tc.answer
		problem, _ := parseOne(t, schema).run(t.Context(), s)
		if (tc.want == "") != (problem == "") || !strings.Contains(problem, tc.want) {
			t.Errorf("answer %q: %q; want %q", tc.answer, problem, tc.want)
		}
	}
}

func TestParseVerdict(t *testing.T) {
	for _, tc := range []struct {
		answer string
		pass   bool
		err    bool
	}{
		{`{"pass": true, "reason": "ok"}`, true, false},
		{"```json\n{\"pass\": false, \"reason\": \"no\"}\n```", false, false},
		{`Sure! {"pass": true} Hope that helps.`, true, false},
		{`PASS`, false, true},
		{`{"reason": "no verdict"}`, false, true},
	} {
		pass, _, err := parseVerdict(tc.answer)
		if pass != tc.pass || (err != nil) != tc.err {
			t.Errorf("parseVerdict(%q) = %v, %v", tc.answer, pass, err)
		}
	}
}
