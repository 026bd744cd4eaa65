package bash

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/internal/jsonschema"
	"github.com/demiurge-dev/demiurge/tools"
)

// shopTool builds the e-commerce tool of the seed, with a call counter
// shared by every execution.
func shopTool(t testing.TB, calls *atomic.Int64) *Tool {
	t.Helper()
	count := func() {
		if calls != nil {
			calls.Add(1)
		}
	}
	st, err := NewBuilder("ecommerce_api").
		ShortDescription("E-commerce API").
		Tool(ToolDef{
			Name:        "get_user",
			Description: "Fetch user by ID",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`),
			Category:    "users",
			Tags:        []string{"read"},
		}, func(ctx context.Context, args ToolArgs) (string, error) {
			count()
			id, ok := args.ParamInt64("id")
			if !ok {
				return "", errors.New("missing id")
			}
			if id == 404 {
				return "", errors.New("db password=hunter2: user not found")
			}
			return fmt.Sprintf(`{"id":%d,"name":"user%d","email":"user%d@example.com"}`+"\n", id, id, id), nil
		}).
		Tool(ToolDef{
			Name:        "list_orders",
			Description: "List orders for user",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"user_id":{"type":"integer"},"limit":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},"required":["user_id"]}`),
			Category:    "orders",
			Tags:        []string{"read"},
		}, func(ctx context.Context, args ToolArgs) (string, error) {
			count()
			uid, _ := args.ParamInt64("user_id")
			return fmt.Sprintf(`[{"id":1,"user_id":%d,"total":29.99},{"id":2,"user_id":%d,"total":49.5}]`+"\n", uid, uid), nil
		}).
		Tool(ToolDef{
			Name:        "upper",
			Description: "Upper-case stdin",
			Stdin:       true,
		}, func(ctx context.Context, args ToolArgs) (string, error) {
			count()
			if args.Stdin == nil {
				return "", &UserError{Msg: "no input", Code: 3}
			}
			return strings.ToUpper(*args.Stdin), nil
		}).
		PositionalTool(ToolDef{Name: "echo_args", Description: "Print argv as JSON", Stdin: true},
			func(ctx context.Context, argv []string, stdin *string) (string, error) {
				count()
				b, _ := json.Marshal(map[string]any{"argv": argv, "stdin": stdin})
				return string(b) + "\n", nil
			}).
		Env("API_KEY", "test-key").
		Env("USER_ID", "7").
		Build()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func run(t testing.TB, st *Tool, script string) Result {
	t.Helper()
	return st.RunScript(context.Background(), tools.Request{Commands: script}, RunOptions{})
}

func TestBuilder(t *testing.T) {
	st := shopTool(t, nil)
	info := st.Info()
	if info.Name != "ecommerce_api" || info.ShortDescription != "E-commerce API" || info.Version != Version {
		t.Fatalf("name/short/version: %q %q %q", info.Name, info.ShortDescription, info.Version)
	}
	if got, want := info.Description, "Compose tool callbacks through bash scripts: get_user, list_orders, upper, echo_args"; got != want {
		t.Errorf("Description() = %q; want %q", got, want)
	}
	def := NewBuilder("plain").MustBuild()
	if got := def.Info().ShortDescription; got != "ScriptedTool: plain" {
		t.Errorf("default short description = %q", got)
	}
	if l := def.Limits(); l != DefaultLimits() {
		t.Errorf("default limits = %+v", l)
	}
	custom := NewBuilder("x").Limits(Limits{MaxCommands: 5}).MustBuild().Limits()
	if custom.MaxCommands != 5 || custom.MaxToolCalls != DefaultLimits().MaxToolCalls {
		t.Errorf("partial limits not completed with defaults: %+v", custom)
	}
	if got := DefaultLimits().WithMaxCommands(500).MaxCommands; got != 500 {
		t.Errorf("WithMaxCommands = %d", got)
	}
	noop := func(context.Context, ToolArgs) (string, error) { return "", nil }
	bad := []struct {
		name string
		b    *Builder
		want string
	}{
		{"bad tool name", NewBuilder("x").Tool(ToolDef{Name: "no spaces"}, noop), "name must match"},
		{"builtin clash", NewBuilder("x").Tool(ToolDef{Name: "echo"}, noop), "clashes with a shell keyword or builtin"},
		{"keyword clash", NewBuilder("x").Tool(ToolDef{Name: "while"}, noop), "clashes"},
		{"utility clash", NewBuilder("x").Tool(ToolDef{Name: "jq"}, noop), "sandbox utility"},
		{"reserved", NewBuilder("x").Tool(ToolDef{Name: "__sh_x"}, noop), "reserved"},
		{"duplicate", NewBuilder("x").Tool(ToolDef{Name: "a"}, noop).Tool(ToolDef{Name: "a"}, noop), "registered twice"},
		{"nil callback", NewBuilder("x").Tool(ToolDef{Name: "a"}, nil), "nil callback"},
		{"schema not JSON", NewBuilder("x").Tool(ToolDef{Name: "a", InputSchema: json.RawMessage(`{`)}, noop), "input schema"},
		{"schema not object", NewBuilder("x").Tool(ToolDef{Name: "a", InputSchema: json.RawMessage(`[]`)}, noop), "must be a JSON object"},
		{"schema invalid", NewBuilder("x").Tool(ToolDef{Name: "a", InputSchema: json.RawMessage(`{"type":"nope"}`)}, noop), "input schema"},
		{"external ref", NewBuilder("x").Tool(ToolDef{Name: "a", InputSchema: json.RawMessage(`{"$ref":"file:///etc/passwd"}`)}, noop), "self-contained"},
		{"env name", NewBuilder("x").Env("1X", "v"), "invalid name"},
		{"env reserved", NewBuilder("x").Env("PATH", "/bin"), "set by the sandbox"},
		{"env twice", NewBuilder("x").Env("A", "1").Env("A", "2"), "set twice"},
		{"bad name", NewBuilder("has space"), "tool name"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.b.Build()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Build() error = %v; want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestIntrospection(t *testing.T) {
	st := shopTool(t, nil)
	prompt := st.Info().SystemPrompt
	for _, want := range []string{
		"# ecommerce_api\n\nE-commerce API.\n\nInput: {\"commands\": \"<bash script>\"}\nOutput: {stdout, stderr, exit_code}\n\n## Available tool commands\n\n",
		"- `get_user`: Fetch user by ID\n  Usage: `get_user --id <integer>`\n  Schema: {\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"integer\"}},\"required\":[\"id\"]}\n",
		"  Usage: `list_orders --limit <integer> --tags <json|a,b,c> --user_id <integer>`\n",
		"- `upper`: Upper-case stdin\n- `echo_args`: Print argv as JSON\n",
		"## Tips\n\n- Pass arguments as `--key value` or `--key=value` flags",
		"- Pipe tool output through `jq` for JSON processing\n- Use variables to pass data between tool calls\n",
		"- The working directory /workspace is the script's file system",
		"awk",
		"- A script runs at most 10000 commands, 10000 iterations of one loop (1000000 in all) and 1000 tool calls: past one it stops with \"resource limit exceeded\" and exit status 1",
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("SystemPrompt() lacks %q:\n%s", want, prompt)
		}
	}
	compact := NewBuilder("c").CompactPrompt(true).
		Tool(ToolDef{Name: "a", Description: "does A"}, func(context.Context, ToolArgs) (string, error) { return "", nil }).
		MustBuild().Info().SystemPrompt
	if !strings.Contains(compact, "- `a`: does A\n\n") || strings.Contains(compact, "Usage") {
		t.Errorf("compact prompt = %q", compact)
	}
	help := st.Info().Help
	for _, want := range []string{"ECOMMERCE_API(1)", "NAME", "ecommerce_api - E-commerce API", "SYNOPSIS", "TOOL COMMANDS",
		"get_user --id <integer>", "Fetch user by ID", "EXIT STATUS", "127", "Environment: API_KEY, USER_ID"} {
		if !strings.Contains(help, want) {
			t.Errorf("Help() lacks %q:\n%s", want, help)
		}
	}
	var in, out map[string]any
	if err := json.Unmarshal(st.Info().InputSchema, &in); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(st.Info().OutputSchema, &out); err != nil {
		t.Fatal(err)
	}
	if req := in["required"].([]any); len(req) != 1 || req[0] != "commands" {
		t.Errorf("input schema required = %v", req)
	}
	if _, ok := out["properties"].(map[string]any)["stdout_truncated"]; !ok {
		t.Errorf("output schema lacks stdout_truncated: %v", out)
	}
	defs := st.Tools()
	if len(defs) != 4 || defs[0].Name != "get_user" || defs[3].Name != "echo_args" {
		t.Errorf("Tools() = %+v", defs)
	}
}

func TestFlagParsing(t *testing.T) {
	schema := `{"type":"object","properties":{
		"id":{"type":"integer"},"price":{"type":"number"},"verbose":{"type":"boolean"},"name":{"type":"string"},
		"tags":{"type":"array","items":{"type":"string"}},"nums":{"type":"array","items":{"type":"integer"}},
		"filter":{"type":"object","properties":{"status":{"type":"string"},"min":{"type":"integer"}}},
		"rows":{"type":"array","items":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}}}},
		"ref":{"$ref":"#/$defs/n"},"maybe":{"type":["null","integer"]},"alt":{"oneOf":[{"type":"integer"},{"type":"string"}]},"user_id":{"type":"integer"}},
		"$defs":{"n":{"type":"integer"}}}`
	fs := &flagSchema{}
	if err := json.Unmarshal([]byte(schema), &fs.root); err != nil {
		t.Fatal(err)
	}
	lim := DefaultLimits()
	tests := []struct {
		name string
		argv []string
		want map[string]any
		err  string
	}{
		{"space", []string{"--id", "42"}, map[string]any{"id": int64(42)}, ""},
		{"equals", []string{"--id=42"}, map[string]any{"id": int64(42)}, ""},
		{"not an int stays string", []string{"--id", "abc"}, map[string]any{"id": "abc"}, ""},
		{"number", []string{"--price", "9.5"}, map[string]any{"price": 9.5}, ""},
		{"integral number", []string{"--price", "10"}, map[string]any{"price": int64(10)}, ""},
		{"bare bool", []string{"--verbose"}, map[string]any{"verbose": true}, ""},
		{"bool takes true or false", []string{"--verbose", "false", "--id", "1"}, map[string]any{"verbose": false, "id": int64(1)}, ""},
		{"bool TRUE", []string{"--verbose", "TRUE"}, map[string]any{"verbose": true}, ""},
		{"bool does not eat other words", []string{"--verbose", "maybe"}, nil, "expected --flag, got: maybe"},
		{"dashes name underscores", []string{"--user-id", "7"}, map[string]any{"user_id": int64(7)}, ""},
		{"bool with equals", []string{"--verbose=no"}, map[string]any{"verbose": false}, ""},
		{"bare unknown", []string{"--x"}, map[string]any{"x": true}, ""},
		{"unknown is string", []string{"--count", "3"}, map[string]any{"count": "3"}, ""},
		{"string keeps digits", []string{"--name", "007"}, map[string]any{"name": "007"}, ""},
		{"comma list", []string{"--tags", "a,b,c"}, map[string]any{"tags": []any{"a", "b", "c"}}, ""},
		{"repeats append", []string{"--tags", "a", "--tags", "b"}, map[string]any{"tags": []any{"a", "b"}}, ""},
		{"json array", []string{"--nums", "[1,2]"}, map[string]any{"nums": []any{int64(1), int64(2)}}, ""},
		{"int items", []string{"--nums", "1,2"}, map[string]any{"nums": []any{int64(1), int64(2)}}, ""},
		{"array equals json", []string{"--nums=[3]"}, map[string]any{"nums": []any{int64(3)}}, ""},
		{"array missing value", []string{"--tags"}, nil, "--tags: missing value"},
		{"object pairs", []string{"--filter", "status=open", "min=3", "--id", "1"}, map[string]any{"filter": map[string]any{"status": "open", "min": int64(3)}, "id": int64(1)}, ""},
		{"object json", []string{"--filter", `{"status":"x"}`}, map[string]any{"filter": map[string]any{"status": "x"}}, ""},
		{"object unknown key", []string{"--filter", "nope=1"}, nil, "--filter: unknown key 'nope'; valid keys: min, status"},
		{"object bad pair", []string{"--filter", "status=1", "oops"}, nil, "--filter: expected --flag or key=value, got 'oops'"},
		{"object bare", []string{"--filter"}, map[string]any{"filter": true}, ""},
		{"array of objects", []string{"--rows", "a=1", "b=x", "--rows", `{"a":2}`}, map[string]any{"rows": []any{map[string]any{"a": int64(1), "b": "x"}, map[string]any{"a": int64(2)}}}, ""},
		{"ref", []string{"--ref", "5"}, map[string]any{"ref": int64(5)}, ""},
		{"type array", []string{"--maybe", "5"}, map[string]any{"maybe": int64(5)}, ""},
		{"oneOf", []string{"--alt", "5"}, map[string]any{"alt": int64(5)}, ""},
		{"positional", []string{"42"}, nil, "expected --flag, got: 42"},
		{"dashes only", []string{"--"}, nil, "expected --flag, got: --"},
		{"last flag bare", []string{"--name"}, map[string]any{"name": true}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseFlags(fs, tc.argv, lim)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("parseFlags(%q) error = %v; want %q", tc.argv, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseFlags(%q): %v", tc.argv, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("parseFlags(%q) = %#v; want %#v", tc.argv, got, tc.want)
			}
		})
	}
	// A closed schema names the flags it has no property for, all of
	// them, before the schema check would report a required property
	// missing (one of them may misspell it).
	closed := &flagSchema{}
	if err := json.Unmarshal([]byte(`{"type":"object","required":["content","path"],"additionalProperties":false,
		"properties":{"content":{"type":"string"},"path":{"type":"string"},"user_id":{"type":"integer"}}}`), &closed.root); err != nil {
		t.Fatal(err)
	}
	empty := &flagSchema{root: schemaNode{"type": "object", "properties": map[string]any{}, "additionalProperties": false}}
	patterns := &flagSchema{root: schemaNode{"type": "object", "additionalProperties": false, "patternProperties": map[string]any{"^x": map[string]any{}}}}
	for _, tc := range []struct {
		fs   *flagSchema
		argv []string
		err  string
	}{
		{closed, []string{"--bogus", "1"}, "unknown flag --bogus; valid flags: --content, --path, --user_id"},
		{closed, []string{"--contents", "x", "--path", "a", "--x", "--contents=y"}, "unknown flags --contents, --x; valid flags: --content, --path, --user_id"},
		{closed, []string{"--content", "x", "--path", "a", "--user-id", "3"}, ""},
		{empty, []string{"--x"}, "unknown flag --x; the tool takes no flags"},
		{patterns, []string{"--xy", "1"}, ""},
	} {
		_, err := parseFlags(tc.fs, tc.argv, lim)
		if got := fmt.Sprint(err); tc.err == "" && err != nil || tc.err != "" && got != tc.err {
			t.Errorf("parseFlags(%q) error = %v; want %q", tc.argv, err, tc.err)
		}
	}

	small := lim
	small.MaxFlagBytes, small.MaxArrayItems = 16, 2
	if _, err := parseFlags(fs, []string{"--name", strings.Repeat("x", 40)}, small); err == nil || !strings.Contains(err.Error(), "parsed flag data exceeds 16 bytes") {
		t.Errorf("flag budget: %v", err)
	}
	if _, err := parseFlags(fs, []string{"--tags", "a,b,c"}, small); err == nil || err.Error() != "--tags: array flag has 3 items; maximum is 2" {
		t.Errorf("array items: %v", err)
	}
}

func TestRun(t *testing.T) {
	var calls atomic.Int64
	st := shopTool(t, &calls)
	tests := []struct {
		name, script, stdout, stderr string
		exit                         int
	}{
		{"empty", "", "", "", 0},
		{"single tool", "get_user --id 42", `{"id":42,"name":"user42","email":"user42@example.com"}` + "\n", "", 0},
		{"equals form", "get_user --id=42 | jq -r .name", "user42\n", "", 0},
		{"jq pipeline", `get_user --id 1 | jq -r '.email'`, "user1@example.com\n", "", 0},
		{"multi-step", `user=$(get_user --id 1 | jq -r .name)
total=$(list_orders --user_id 1 | jq '[.[].total] | add')
echo "User: $user, Total: $total"`, "User: user1, Total: 79.49\n", "", 0},
		{"fallback", `get_user --id 404 || echo fallback`, "fallback\n", "get_user: callback failed\n", 0},
		{"failure status", `get_user --id 404; echo rc=$?`, "rc=1\n", "get_user: callback failed\n", 0},
		{"stdin piping", `echo hello | upper`, "HELLO\n", "", 0},
		{"heredoc stdin", "upper <<EOF\nabc\nEOF", "ABC\n", "", 0},
		{"no stdin user error", `upper; echo rc=$?`, "rc=3\n", "upper: no input\n", 0},
		{"loop", `for id in 1 2 3; do get_user --id $id | jq -r .name; done`, "user1\nuser2\nuser3\n", "", 0},
		{"conditional", `n=$(list_orders --user_id 1 | jq length); if [ "$n" -gt 1 ]; then echo many; else echo few; fi`, "many\n", "", 0},
		{"while read", `printf '1\n2\n' | while read id; do get_user --id "$id" | jq .id; done`, "1\n2\n", "", 0},
		{"env", `echo "$API_KEY $USER_ID"; list_orders --user_id $USER_ID | jq '.[0].user_id'`, "test-key 7\n7\n", "", 0},
		{"no host env", `echo "[$SHELL][$USER][$GOPATH][$HOME][$PATH]"`, "[/bin/bash][agent][][/workspace][/usr/local/bin:/usr/bin:/bin]\n", "", 0},
		{"positional", `echo in | echo_args a --b "c d"`, `{"argv":["a","--b","c d"],"stdin":"in\n"}` + "\n", "", 0},
		{"flag error", `get_user 42`, "", "get_user: expected --flag, got: 42\n", 2},
		{"schema error", `get_user --id abc`, "", "get_user: schema error: input.id must be integer\n", 2},
		{"missing required", `get_user`, "", "get_user: schema error: required property 'id' is missing\n", 2},
		{"array flag", `list_orders --user_id 2 --tags a,b | jq -c '.[0].user_id'`, "2\n", "", 0},
		{"tool help", `get_user --help`, "get_user - Fetch user by ID\nUsage: get_user --id <integer>\nFlags:\n  --id <integer>  (required)\n", "", 0},
		{"help list", `help`, "get_user             Fetch user by ID\nlist_orders          List orders for user\nupper                Upper-case stdin\necho_args            Print argv as JSON\n", "", 0},
		{"help tool", `help upper`, "upper - Upper-case stdin\n", "", 0},
		{"help json", `help get_user --json | jq -c .input_schema.required`, "[\"id\"]\n", "", 0},
		{"help unknown", `help nope`, "", "help: unknown tool: nope\n", 1},
		{"help utility", `help sort | head -1; sort --help | head -1; [ "$(help sort)" = "$(sort --help)" ] && echo same`, "Usage: sort [OPTION]... [FILE]...\nUsage: sort [OPTION]... [FILE]...\nsame\n", "", 0},
		{"discover categories", `discover --categories`, "orders (1 tool)\nusers (1 tool)\n", "", 0},
		{"discover tag", `discover --tag read`, "get_user             Fetch user by ID\nlist_orders          List orders for user\n", "", 0},
		{"discover search json", `discover --search ORDERS --json | jq -c '.[].name'`, "\"list_orders\"\n", "", 0},
		{"discover usage", `discover`, "", discoverUsage, 1},
		{"dry run", `get_user --id 3 --dry-run`, `{"dry_run":true,"params":{"id":3},"tool":"get_user","valid":true}` + "\n", "", 0},
		{"dry run invalid", `get_user --dry-run --id x`, "", `{"dry_run":true,"error":"schema error: input.id must be integer","tool":"get_user","valid":false}` + "\n", 1},
		{"exit status", `exit 3`, "", "", 3},
		{"printf -v", `printf -v x '%.1f|%5s\n' 2.25 ab; echo "[$x]"; y=v; printf -v "$y" x; echo "[$v]"`, "[2.2|   ab\n]\n[x]\n", "", 0},
		{"printf float", `printf '%.2f|%e|%g|%5.1f|%s\n' 3.14159 1234.5 0.5 2 x`, "3.14|1.234500e+03|0.5|  2.0|x\n", "", 0},
		{"command -v", `command -v get_user jq; command -v nothere || echo absent`, "get_user\n/usr/bin/jq\nabsent\n", "", 0},
		{"command runs tool", `command get_user --id 5 | jq .id`, "5\n", "", 0},
		{"functions", `f() { local x=$1; get_user --id "$x" | jq -r .name; }; f 8; f 9`, "user8\nuser9\n", "", 0},
		{"tool beats function", `get_user() { echo shadow; }; get_user --id 1 | jq .id`, "1\n", "", 0},
		{"set -e", `set -e; false; echo unreachable`, "", "", 1},
		{"set -e with && list", `set -e; [ -n "" ] && echo no; for i in 1 2; do :; done; f() { :; }; f; echo end`, "end\n", "", 0},
		{"until loop status", `i=0; until [ $i -ge 2 ]; do i=$((i+1)); done; echo $i`, "2\n", "", 0},
		{"c-style loop", `for ((i=0;i<3;i++)); do echo $i; false; done`, "0\n1\n2\n", "", 1},
		{"c-style after failure", `false; for ((i=0;i<2;i++)); do echo $i; done`, "0\n1\n", "", 0},
		{"status of command substitutions and functions", `x=$(false); echo $?; f() { return 4; }; f; echo $?`, "1\n4\n", "", 0},
		{"pipeline status", `false | true; echo $?; set -o pipefail; false | true; echo $?`, "0\n1\n", "", 0},
		{"xargs tool", `printf '1\n2\n' | xargs -I{} get_user --id {} | jq -r .name`, "user1\nuser2\n", "", 0},
		{"date", `date -u -d @86400 +%Y-%m-%dT%H:%M:%S`, "1970-01-02T00:00:00\n", "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, st, tc.script)
			if res.Stdout != tc.stdout || res.Stderr != tc.stderr || res.ExitCode != tc.exit {
				t.Fatalf("script %q:\nstdout %q; want %q\nstderr %q; want %q\nexit %d; want %d",
					tc.script, res.Stdout, tc.stdout, res.Stderr, tc.stderr, res.ExitCode, tc.exit)
			}
		})
	}
	if calls.Load() == 0 {
		t.Fatal("callbacks never ran")
	}
}

func TestSanitizeErrors(t *testing.T) {
	fail := func(context.Context, ToolArgs) (string, error) { return "", errors.New("secret=hunter2") }
	for _, sanitize := range []bool{true, false} {
		st := NewBuilder("x").SanitizeErrors(sanitize).Tool(ToolDef{Name: "boom"}, fail).MustBuild()
		res := run(t, st, "boom")
		want := "boom: callback failed\n"
		if !sanitize {
			want = "boom: secret=hunter2\n"
		}
		if res.Stderr != want || res.ExitCode != 1 {
			t.Errorf("sanitize=%v: stderr %q exit %d; want %q 1", sanitize, res.Stderr, res.ExitCode, want)
		}
	}
	panicky := NewBuilder("x").Tool(ToolDef{Name: "boom"}, func(context.Context, ToolArgs) (string, error) { panic("oops") }).MustBuild()
	if res := run(t, panicky, "boom; echo after"); res.Stderr != "boom: callback failed\n" || res.Stdout != "after\n" {
		t.Errorf("panicking callback: %+v", res.Response)
	}
}

func TestRequestArguments(t *testing.T) {
	st := shopTool(t, nil)
	tests := []struct {
		name string
		req  tools.Request
		out  string
		exit int
		err  string
	}{
		{"arguments", tools.Request{Arguments: json.RawMessage(`{"commands":"echo hi"}`)}, "hi\n", 0, ""},
		{"arguments with timeout", tools.Request{Arguments: json.RawMessage(`{"commands":"echo hi","timeout_ms":5000}`)}, "hi\n", 0, ""},
		{"null timeout", tools.Request{Arguments: json.RawMessage(`{"commands":"echo hi","timeout_ms":null}`)}, "hi\n", 0, ""},
		{"not an object", tools.Request{Arguments: json.RawMessage(`[1]`)}, "", 2, ErrorInvalidArguments},
		{"missing commands", tools.Request{Arguments: json.RawMessage(`{}`)}, "", 2, ErrorInvalidArguments},
		{"unknown field", tools.Request{Arguments: json.RawMessage(`{"commands":"x","cmd":1}`)}, "", 2, ErrorInvalidArguments},
		{"negative timeout", tools.Request{Commands: "echo", TimeoutMS: -1}, "", 2, ErrorInvalidArguments},
		{"syntax error", tools.Request{Commands: "if then fi"}, "", 2, ErrorParse},
		{"too big", tools.Request{Commands: strings.Repeat("#", 70000)}, "", 2, ErrorRejected},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := st.Run(t.Context(), tc.req, nil)
			if resp.Stdout != tc.out || resp.ExitCode != tc.exit || resp.Error != tc.err {
				t.Fatalf("Run(%+v) = %+v; want stdout %q exit %d error %q", tc.req, resp, tc.out, tc.exit, tc.err)
			}
			if tc.err != "" && !strings.HasPrefix(resp.Stderr, "bash: ") {
				t.Errorf("stderr %q does not explain the failure", resp.Stderr)
			}
		})
	}
}

func TestStatusCallbacks(t *testing.T) {
	st := shopTool(t, nil)
	var mu sync.Mutex
	var phases []string
	var out, errOut strings.Builder
	resp := st.Run(t.Context(), tools.Request{Commands: `for i in 1 2 3; do echo $i; done; echo warn >&2`},
		func(s tools.Status) {
			mu.Lock()
			defer mu.Unlock()
			if s.Phase == tools.PhaseOutput {
				if s.Stream == "stdout" {
					out.WriteString(s.Output)
				} else {
					errOut.WriteString(s.Output)
				}
				return
			}
			phases = append(phases, s.Phase)
		})
	if want := []string{"validate", "parse", "execute", "complete"}; !slices.Equal(phases, want) {
		t.Errorf("phases = %v; want %v", phases, want)
	}
	if out.String() != resp.Stdout || resp.Stdout != "1\n2\n3\n" || errOut.String() != "warn\n" {
		t.Errorf("streamed %q/%q; response %q", out.String(), errOut.String(), resp.Stdout)
	}
	phases = nil
	st.Run(t.Context(), tools.Request{Commands: "  "}, func(s tools.Status) { phases = append(phases, s.Phase) })
	if want := []string{"validate", "complete"}; !slices.Equal(phases, want) {
		t.Errorf("empty script phases = %v; want %v", phases, want)
	}
}

func TestRepeatedExecuteSharesCallbacks(t *testing.T) {
	var n atomic.Int64
	st := NewBuilder("counter").Tool(ToolDef{Name: "next"}, func(context.Context, ToolArgs) (string, error) {
		return fmt.Sprintf("%d\n", n.Add(1)), nil
	}).MustBuild()
	for i := 1; i <= 3; i++ {
		res := run(t, st, "export LEAK=$LEAK.x; echo $LEAK; next")
		if want := fmt.Sprintf(".x\n%d\n", i); res.Stdout != want {
			t.Fatalf("run %d: %q; want %q (state leaked between runs, or callbacks not shared)", i, res.Stdout, want)
		}
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if res := run(t, st, "next >/dev/null; for i in 1 2; do next; done | wc -l"); strings.TrimSpace(res.Stdout) != "2" {
				t.Errorf("concurrent run: %+v", res.Response)
			}
		})
	}
	wg.Wait()
	if n.Load() != 3+8*3 {
		t.Errorf("callback ran %d times; want %d", n.Load(), 3+8*3)
	}
}

func TestTrace(t *testing.T) {
	st := shopTool(t, nil)
	res := run(t, st, `get_user --id 1 >/dev/null; get_user --id 404 2>/dev/null; get_user x 2>/dev/null; help >/dev/null; get_user --id 2 --dry-run >/dev/null; echo a | upper`)
	want := []Call{
		{Seq: 1, Tool: "get_user", Kind: CallTool, Argv: []string{"--id", "1"}, Params: map[string]any{"id": int64(1)}, Arguments: `{"id":1}`},
		{Seq: 2, Tool: "get_user", Kind: CallTool, Argv: []string{"--id", "404"}, Params: map[string]any{"id": int64(404)}, Arguments: `{"id":404}`, ExitCode: 1, Error: "get_user: callback failed"},
		{Seq: 3, Tool: "get_user", Kind: CallInvalid, Argv: []string{"x"}, ExitCode: 2, Error: "get_user: expected --flag, got: x"},
		{Seq: 4, Tool: "help", Kind: CallHelp},
		{Seq: 5, Tool: "get_user", Kind: CallDryRun, Argv: []string{"--id", "2", "--dry-run"}, Params: map[string]any{"id": int64(2)}, Arguments: `{"id":2}`},
		{Seq: 6, Tool: "upper", Kind: CallTool, Params: map[string]any{}, Arguments: `{}`},
	}
	for i := range res.Calls {
		res.Calls[i].Duration = 0
	}
	if !reflect.DeepEqual(res.Calls, want) {
		t.Fatalf("trace:\n%+v\nwant\n%+v", res.Calls, want)
	}
	// The trace encodes deterministically (what a receipt records).
	a, _ := json.Marshal(res.Calls)
	b, _ := json.Marshal(run(t, st, `get_user --id 1 >/dev/null; get_user --id 404 2>/dev/null; get_user x 2>/dev/null; help >/dev/null; get_user --id 2 --dry-run >/dev/null; echo a | upper`).Calls)
	strip := func(s []byte) string {
		var calls []map[string]any
		json.Unmarshal(s, &calls)
		for _, c := range calls {
			delete(c, "duration_ns")
		}
		out, _ := json.Marshal(calls)
		return string(out)
	}
	if strip(a) != strip(b) {
		t.Errorf("trace differs between identical runs:\n%s\n%s", a, b)
	}
	// A receipt can hold the trace as canonical CBOR, floats included.
	withFloat := run(t, st, "list_orders --user_id 1 --limit 2 --tags x; get_user --id 1.5")
	withFloat.Calls = append(withFloat.Calls, Call{Seq: 9, Tool: "f", Kind: CallTool, Params: map[string]any{"p": 9.5}, Arguments: `{"p":9.5}`})
	enc, err := cas.Marshal(withFloat.Calls)
	if err != nil {
		t.Fatalf("cas.Marshal(trace): %v", err)
	}
	var back []Call
	if err := cas.Unmarshal(enc, &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != 3 || back[2].Arguments != `{"p":9.5}` || back[0].Arguments != `{"limit":2,"tags":["x"],"user_id":1}` || back[0].Params != nil {
		t.Errorf("trace through canonical CBOR: %+v", back)
	}
	capped := NewBuilder("x").Limits(Limits{MaxTraceCalls: 2}).
		Tool(ToolDef{Name: "t"}, func(context.Context, ToolArgs) (string, error) { return "", nil }).MustBuild()
	if res := run(t, capped, "t; t; t; t"); len(res.Calls) != 2 || res.TraceDropped != 2 {
		t.Errorf("capped trace: %d calls, %d dropped", len(res.Calls), res.TraceDropped)
	}
	long := strings.Repeat("é", 600)
	if res := run(t, capped, "t --x "+long); len(res.Calls[0].Argv[1]) > maxTraceArgBytes {
		t.Errorf("argv word kept %d bytes", len(res.Calls[0].Argv[1]))
	}
}

func TestClock(t *testing.T) {
	fixed := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	st := NewBuilder("x").Clock(func() time.Time { return fixed }).MustBuild()
	if res := run(t, st, "date +%F_%T; date"); res.Stdout != "2026-03-04_05:06:07\nWed Mar  4 05:06:07 UTC 2026\n" {
		t.Errorf("date with builder clock: %q", res.Stdout)
	}
	other := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	res := st.RunScript(t.Context(), tools.Request{Commands: "date +%s"}, RunOptions{Clock: func() time.Time { return other }})
	if res.Stdout != "946684800\n" {
		t.Errorf("date with run clock: %q", res.Stdout)
	}
}

func TestNotFoundSuggests(t *testing.T) {
	st := shopTool(t, nil)
	res := run(t, st, "get_usr --id 1")
	if res.ExitCode != 127 || res.Stderr != "bash: line 1: get_usr: command not found; did you mean get_user?\n" {
		t.Errorf("not found: %q %d", res.Stderr, res.ExitCode)
	}
	for _, tc := range []struct{ script, stderr string }{
		{"kubectl", "bash: line 1: kubectl: command not found\n"},
		{"curl x", "bash: line 1: curl: command not found\n"},
		{"pyhton3", "bash: line 1: pyhton3: command not found\n"},
		{"grpe x", "bash: line 1: grpe: command not found; did you mean grep?\n"},
		{"jqq .", "bash: line 1: jqq: command not found; did you mean jq?\n"},
		{"mapfil -t a", "bash: line 1: mapfil: command not found; did you mean mapfile?\n"},
		// Two edits of a name this short are another word, not a typo.
		{"nosuch", "bash: line 1: nosuch: command not found\n"},
		{"toush x", "bash: line 1: toush: command not found; did you mean touch?\n"},
		{"get_uesr --id 1", "bash: line 1: get_uesr: command not found; did you mean get_user?\n"},
		{"get_uesr1 --id 1", "bash: line 1: get_uesr1: command not found; did you mean get_user?\n"},
		{strings.Repeat("x", 500), "bash: line 1: " + strings.Repeat("x", 40) + "...: command not found\n"},
	} {
		res := run(t, st, tc.script)
		if res.Stderr != tc.stderr || len(res.Stderr) >= 120 {
			t.Errorf("%.20q: stderr %q; want %q (under 120 bytes)", tc.script, res.Stderr, tc.stderr)
		}
	}
}

func TestTraceOrderOfPipedTools(t *testing.T) {
	st := shopTool(t, nil)
	for range 20 {
		res := run(t, st, "get_user --id 1 | upper | upper | jq -r .NAME")
		if len(res.Calls) != 3 || res.Calls[0].Tool != "get_user" || res.Calls[1].Tool != "upper" || res.Stdout != "USER1\n" {
			t.Fatalf("piped tools traced out of order: %+v", res.Calls)
		}
	}
}

func TestCallSeq(t *testing.T) {
	var seqs []int
	st := NewBuilder("x").Tool(ToolDef{Name: "t"}, func(ctx context.Context, _ ToolArgs) (string, error) {
		seq, ok := CallSeq(ctx)
		if !ok {
			return "", errors.New("no seq")
		}
		seqs = append(seqs, seq)
		return "", nil
	}).MustBuild()
	res := run(t, st, "help >/dev/null; t; t --x 1")
	if !slices.Equal(seqs, []int{2, 3}) || res.Calls[1].Seq != 2 || res.Calls[2].Seq != 3 {
		t.Errorf("CallSeq = %v; trace %+v", seqs, res.Calls)
	}
	if _, ok := CallSeq(t.Context()); ok {
		t.Error("CallSeq outside a callback")
	}
}

func TestToolArgsHelpers(t *testing.T) {
	a := ToolArgs{Params: map[string]any{"s": "x", "i": int64(3), "f": 2.5, "fi": 4.0, "b": true}}
	if v, ok := a.ParamString("s"); !ok || v != "x" {
		t.Error("ParamString")
	}
	if v, ok := a.ParamInt64("i"); !ok || v != 3 {
		t.Error("ParamInt64 int")
	}
	if v, ok := a.ParamInt64("fi"); !ok || v != 4 {
		t.Error("ParamInt64 integral float")
	}
	if _, ok := a.ParamInt64("f"); ok {
		t.Error("ParamInt64 accepted 2.5")
	}
	if v, ok := a.ParamFloat64("i"); !ok || v != 3 {
		t.Error("ParamFloat64 int")
	}
	if v, ok := a.ParamBool("b"); !ok || !v {
		t.Error("ParamBool")
	}
	if _, ok := a.ParamString("missing"); ok {
		t.Error("missing key reported present")
	}
}

func TestXtrace(t *testing.T) {
	st := shopTool(t, nil)
	res := run(t, st, "set -x; for i in 1; do x=$i; done; f() { echo $1; }; f a; :")
	want := "+ for i in 1\n+ x=1\n+ f a\n+ echo a\n+ :\n"
	if res.Stderr != want {
		t.Errorf("xtrace = %q; want %q", res.Stderr, want)
	}
	res = run(t, st, "set -x; f() { echo $1; }; f a | cat")
	if !strings.Contains(res.Stderr, "+ f a\n") || !strings.Contains(res.Stderr, "+ cat\n") {
		t.Errorf("xtrace of a pipeline = %q", res.Stderr)
	}
}

// TestFastSchemaAgrees checks the fast validator against the general one.
func TestFastSchemaAgrees(t *testing.T) {
	schemas := []string{
		`{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"},"ok":{"type":"boolean"},"x":{"type":"number"}},"required":["id"]}`,
		`{"type":"object","properties":{"s":{"type":"string","enum":["a","b"]},"n":{"type":"integer","enum":[1,2]}},"additionalProperties":false}`,
		`{"properties":{"id":{"type":"integer","description":"d"}}}`,
	}
	params := []map[string]any{
		{}, {"id": int64(1)}, {"id": "x"}, {"id": 1.5}, {"id": 2.0}, {"name": int64(3), "id": int64(1)},
		{"ok": "true", "id": int64(1)}, {"x": "1", "id": int64(1)}, {"x": int64(1), "id": int64(1)},
		{"s": "a"}, {"s": "c"}, {"n": int64(2)}, {"n": int64(3)}, {"n": 2.0}, {"other": true}, {"s": int64(1)},
	}
	for _, raw := range schemas {
		sch, doc, err := compileSchema("t", json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		fast := newFastSchema(doc)
		if fast == nil {
			t.Fatalf("schema %s not taken by the fast validator", raw)
		}
		for _, p := range params {
			full := validateParams(sch, nil, p)
			quick := validateParams(sch, fast, p)
			if (full == "") != (quick == "") || (countProblems(t, sch, p) == 1 && full != quick) {
				t.Errorf("schema %s, params %v: full %q, fast %q", raw, p, full, quick)
			}
		}
	}
	for _, raw := range []string{`{"type":"object","properties":{"a":{"type":"array"}}}`, `{"oneOf":[]}`, `{"properties":{"a":{"$ref":"#"}}}`, `{"type":"object","properties":{"a":{"type":"string","minLength":2}}}`} {
		var doc map[string]any
		json.Unmarshal([]byte(raw), &doc)
		if newFastSchema(doc) != nil {
			t.Errorf("fast validator took %s", raw)
		}
	}
}

// countProblems counts the leaf errors of the general validator.
func countProblems(t *testing.T, sch interface{ Validate(any) error }, p map[string]any) int {
	err := sch.Validate(any(p))
	if err == nil {
		return 0
	}
	var count func(e *jsonschema.ValidationError) int
	count = func(e *jsonschema.ValidationError) int {
		if len(e.Causes) == 0 {
			return 1
		}
		n := 0
		for _, c := range e.Causes {
			n += count(c)
		}
		return n
	}
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		return count(ve)
	}
	return 1
}

// TestFlagNormalizations: booleans take true/false, --a-b names a_b, an
// enum error lists the allowed values, --help describes every flag.
func TestFlagNormalizations(t *testing.T) {
	noop := func(ctx context.Context, args ToolArgs) (string, error) {
		b, _ := json.Marshal(args.Params)
		return string(b) + "\n", nil
	}
	st := NewBuilder("flags").Tool(ToolDef{Name: "orders", Description: "List orders",
		InputSchema: json.RawMessage(`{"type":"object","required":["user_id"],"properties":{
			"user_id":{"type":"integer","description":"The customer"},
			"status":{"type":"string","enum":["open","closed"],"description":"Which orders"},
			"verbose":{"type":"boolean"},
			"kind":{"type":"string","enum":["a","b"]},"deep":{"type":"object","properties":{"k":{"type":"string","enum":["x","y"]}}}}}`)}, noop).
		MustBuild()
	for _, tc := range []struct{ script, stdout, stderr string }{
		{"orders --user-id 3 --verbose false", `{"user_id":3,"verbose":false}` + "\n", ""},
		{"orders --user_id=3 --verbose", `{"user_id":3,"verbose":true}` + "\n", ""},
		{"orders --user-id 3 --status pending", "", `orders: schema error: input.status is not an allowed value; allowed: "open", "closed"`},
		{"orders --user-id 3 --deep k=z", "", `allowed: "x", "y"`},
		{"orders --help", "orders - List orders\nUsage: orders --deep <json|key=value...> --kind <string> --status <string> --user_id <integer> --verbose <boolean>\nFlags:\n" +
			"  --deep <json|key=value...>\n  --kind <string>             one of: \"a\", \"b\"\n  --status <string>           Which orders one of: \"open\", \"closed\"\n" +
			"  --user_id <integer>         (required) The customer\n  --verbose <boolean>\n", ""},
	} {
		res := run(t, st, tc.script)
		if res.Stdout != tc.stdout || !strings.Contains(res.Stderr, tc.stderr) {
			t.Errorf("%s:\nstdout %q; want %q\nstderr %q; want it to hold %q", tc.script, res.Stdout, tc.stdout, res.Stderr, tc.stderr)
		}
	}
}

// TestStreamsLines: output is streamed a line at a time (seed 002's
// contract), a partial last line at the end.
func TestStreamsLines(t *testing.T) {
	st := NewBuilder("lines").MustBuild()
	var chunks []string
	st.Run(t.Context(), tools.Request{Commands: `for i in 1 2 3; do echo $i; done; printf 'a\nb\nc'; printf 'd'`},
		func(s tools.Status) {
			if s.Phase == tools.PhaseOutput {
				chunks = append(chunks, s.Output)
			}
		})
	if want := []string{"1\n", "2\n", "3\n", "a\n", "b\n", "cd"}; !slices.Equal(chunks, want) {
		t.Errorf("chunks %q; want %q", chunks, want)
	}
}

// TestValidationMessageStable: when several properties fail, the message
// names the same one on every run (the validator lists them in map order;
// the message is a tool result the journal keeps, and a strict cassette
// compares the next request, which carries it).
func TestValidationMessageStable(t *testing.T) {
	raw := `{"type":"object","properties":{"a":{"type":"string","minLength":2},"b":{"type":"string","minLength":2},"c":{"type":"object","properties":{"d":{"type":"integer"},"e":{"type":"integer"}}}}}`
	sch, _, err := compileSchema("t", json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	names, _, err := compileSchema("t", json.RawMessage(`{"propertyNames":{"maxLength":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sch *jsonschema.Schema
		p   map[string]any
	}{
		{sch, map[string]any{"a": "x", "b": "y"}},
		{sch, map[string]any{"c": map[string]any{"d": "x", "e": "y"}}},
		{sch, map[string]any{"b": int64(1), "a": int64(2), "c": int64(3)}},
		{names, map[string]any{"aa": "1", "bbb": "2", "cccc": "3"}},
	} {
		sch, p := tc.sch, tc.p
		first := validateParams(sch, nil, p)
		if first == "" {
			t.Fatalf("%v passed", p)
		}
		for range 100 {
			if got := validateParams(sch, nil, p); got != first {
				t.Fatalf("params %v: %q, then %q", p, first, got)
			}
		}
		t.Logf("%v: %s", p, first)
	}
	// A missing required property is named before an unknown one, as
	// the fast validator names it (a schema it does not take here).
	slow, _, err := compileSchema("t", json.RawMessage(`{"properties":{"x":{"type":"string","minLength":1}},"required":["x"],"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := validateParams(slow, nil, map[string]any{"zz": "1"}); got != "required property 'x' is missing" {
		t.Errorf("required and unknown: %q; want the required property named", got)
	}
}
