package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/replay/replaytest"
)

// helperMCPServer is an MCP server on stdin/stdout, for the scripts and
// tests that run demiurge with MCP servers:
//
//	demiurge-mcp-server
//
// Its tools: echo {text}, add {a, b} (structured {sum}), fail (isError),
// env {name} (a variable of its environment).
func helperMCPServer(ctx context.Context, args []string) error {
	type textIn struct {
		Text string `json:"text" jsonschema:"the text to echo"`
	}
	type addIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	type sumOut struct {
		Sum int `json:"sum"`
	}
	type envIn struct {
		Name string `json:"name"`
	}
	type none struct{}
	s := sdk.NewServer(&sdk.Implementation{Name: "demiurge-mcp-server", Version: "1.0.0"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo the text back."}, func(ctx context.Context, r *sdk.CallToolRequest, in textIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Add two integers."}, func(ctx context.Context, r *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, sumOut, error) {
		return nil, sumOut{Sum: in.A + in.B}, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails."}, func(ctx context.Context, r *sdk.CallToolRequest, in none) (*sdk.CallToolResult, any, error) {
		return nil, nil, errors.New("it failed on purpose")
	})
	sdk.AddTool(s, &sdk.Tool{Name: "env", Description: "Read a variable of the server's environment."}, func(ctx context.Context, r *sdk.CallToolRequest, in envIn) (*sdk.CallToolResult, any, error) {
		v, ok := os.LookupEnv(in.Name)
		if !ok {
			return nil, nil, fmt.Errorf("%s is not set", in.Name)
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Name + "=" + v}}}, nil, nil
	})
	return s.Run(ctx, &sdk.StdioTransport{})
}

// mcpWorld writes an agent world in a new directory: examples/mcp's AIR
// with the given mcp_servers (JSON), and the mcp grant allowing them all,
// or with the given params (a sys/mcp@1 record in AIR JSON).
func mcpWorld(t *testing.T, servers string, grant ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "world")
	if err := copyAIR(filepath.Join("..", "examples", "mcp"), dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "manifest.air.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var sv []any
	if err := json.Unmarshal([]byte(servers), &sv); err != nil {
		t.Fatalf("servers %s: %v", servers, err)
	}
	m["mcp_servers"] = sv
	for _, g := range m["defaults"].(map[string]any)["cap_grants"].([]any) {
		if g := g.(map[string]any); g["name"] == "mcp" {
			g["params"] = map[string]any{"record": map[string]any{}}
			if len(grant) > 0 {
				var p any
				if err := json.Unmarshal([]byte(grant[0]), &p); err != nil {
					t.Fatal(err)
				}
				g["params"] = p
			}
		}
	}
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// outputs returns the function_call_output items of a model request, by
// call id, and the tools it offered, by name.
func outputs(t *testing.T, r llmtest.Request) (map[string]string, map[string]map[string]any) {
	t.Helper()
	outs := map[string]string{}
	items, _ := r.JSON()["input"].([]any)
	for _, it := range items {
		m, _ := it.(map[string]any)
		if m["type"] == "function_call_output" {
			outs[m["call_id"].(string)], _ = m["output"].(string)
		}
	}
	tools := map[string]map[string]any{}
	list, _ := r.JSON()["tools"].([]any)
	for _, it := range list {
		m, _ := it.(map[string]any)
		name, _ := m["name"].(string)
		tools[name] = m
	}
	return outs, tools
}

// TestRunMCPTurn runs whole agent turns with a Go MCP server over stdio:
// the fake model calls its tools directly and from bash, with bad
// arguments and an unknown tool; every output goes back to the model; the
// session replays without the server.
func TestRunMCPTurn(t *testing.T) {
	dir := mcpWorld(t, `[{"name": "demo", "command": "demiurge-mcp-server", "env": {"GREETING": "hi there"}}]`)
	turns := []llmtest.Turn{
		{Calls: []llmtest.Call{
			{Name: "demo_echo", Arguments: `{"text": "hello"}`, CallID: "c1"},
			{Name: "demo_add", Arguments: `{"a": "two", "b": 3}`, CallID: "c2"},
			{Name: "demo_nope", Arguments: `{}`, CallID: "c3"},
			{Name: "demo_fail", Arguments: `{}`, CallID: "c4"},
			{Name: "bash", Arguments: `{"commands": "demo_add --a 2 --b 3 | jq .sum; demo_env --name GREETING; demo_env --name OPENAI_API_KEY || echo no key: $?"}`, CallID: "c5"},
		}},
		{Text: "All done."},
	}
	srv := llmtest.NewServer(llmtest.Script{Turns: turns})
	defer srv.Close()
	store := filepath.Join(t.TempDir(), "store")
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL, "PATH": os.Getenv("PATH")}
	r := run(t, env, "", "--store", store, "run", dir, "--model", "gpt-test", "-m", "Use the demo server.")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests; want 2", len(reqs))
	}
	_, offered := outputs(t, reqs[0])
	echo, ok := offered["demo_echo"]
	if !ok || echo["strict"] != false || !strings.Contains(fmt.Sprint(echo["parameters"]), "text") {
		t.Errorf("demo_echo offered as %v", echo)
	}
	for _, name := range []string{"demo_add", "demo_fail", "demo_env", "bash", "workspace_read"} {
		if _, ok := offered[name]; !ok {
			t.Errorf("%s not offered; tools %v", name, offered)
		}
	}
	outs, _ := outputs(t, reqs[1])
	for id, want := range map[string]string{
		"c1": "echo: hello\n",
		"c2": "error: the arguments of demo_add do not fit its parameters schema: at /a: got string, want integer",
		"c3": `error: there is no tool named "demo_nope"`,
		"c4": "error (exit 1, tool_error)\ndemo_fail: it failed on purpose",
		"c5": "5\nGREETING=hi there\nno key: 1\n",
	} {
		if !strings.HasPrefix(outs[id], want) {
			t.Errorf("output of %s: %q; want it to start %q", id, outs[id], want)
		}
	}
	if !strings.Contains(r.stdout, "✓ demo_echo") || !strings.Contains(r.stdout, "All done.") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
	// The session replays byte for byte, with no server running.
	if rr := run(t, nil, "", "--store", store, "replay", "--manifest", dir, "--from-genesis"); rr.code != 0 || !strings.Contains(rr.stdout, "replays to the same bytes") {
		t.Errorf("replay: exit %d\n%s\n%s", rr.code, rr.stdout, rr.stderr)
	}
	tr := run(t, nil, "", "--store", store, "trace")
	for _, want := range []string{"demo_echo {\"text\": \"hello\"} → ok", "demo_fail {} → error"} {
		if !strings.Contains(tr.stdout, want) {
			t.Errorf("trace lacks %q:\n%s", want, tr.stdout)
		}
	}
	// The server's tool list is reached from the journal (by the tools
	// blob's mcp_lists), so an export carries it.
	bundle := filepath.Join(t.TempDir(), "bundle")
	if r := run(t, nil, "", "--store", store, "export", "--manifest", dir, bundle); r.code != 0 {
		t.Fatalf("export: %s", r.stderr)
	}
	blobs, err := os.ReadDir(filepath.Join(bundle, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	listRef := ""
	for _, e := range blobs {
		b, _ := os.ReadFile(filepath.Join(bundle, "blobs", e.Name()))
		var spec struct {
			Demiurge struct {
				MCPLists map[string]string `json:"mcp_lists"`
			} `json:"demiurge"`
		}
		if json.Unmarshal(b, &spec) == nil && spec.Demiurge.MCPLists["demo"] != "" {
			listRef = spec.Demiurge.MCPLists["demo"]
		}
	}
	if listRef == "" {
		t.Fatal("no tools blob in the bundle names the demo server's tool list")
	}
	if _, err := os.Stat(filepath.Join(bundle, "blobs", strings.TrimPrefix(listRef, "blake3:"))); err != nil {
		t.Errorf("the bundle lacks the tool list %s: %v", listRef, err)
	}
}

// TestRunMCPRefusesCollisions checks that run stops when an MCP tool would
// shadow a built-in one, and names the fix.
func TestRunMCPRefusesCollisions(t *testing.T) {
	dir := mcpWorld(t, `[{"name": "workspace", "command": "demiurge-mcp-server", "aliases": {"add": "bash"}}]`)
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "PATH": os.Getenv("PATH")}
	r := run(t, env, "", "--store", filepath.Join(t.TempDir(), "store"), "run", dir, "-m", "hi")
	if r.code != 1 || !strings.Contains(r.stderr, `two tools would be named "bash": the built-in tool "bash" and tool "add" of MCP server "workspace"`) {
		t.Errorf("exit %d\n%s", r.code, r.stderr)
	}
}

// TestRunMCPServerDown checks that a server that does not start leaves
// the others, and the agent, running.
func TestRunMCPServerDown(t *testing.T) {
	dir := mcpWorld(t, `[{"name": "gone", "command": "/nonexistent/mcp-server"}, {"name": "demo", "command": "demiurge-mcp-server"}]`)
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "demo_echo", Arguments: `{"text": "still here"}`}}},
		{Text: "The demo server works."},
	}})
	defer srv.Close()
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL, "PATH": os.Getenv("PATH")}
	r := run(t, env, "", "--store", filepath.Join(t.TempDir(), "store"), "run", dir, "--model", "gpt-test", "-m", "hi")
	if r.code != 0 || !strings.Contains(r.stderr, "demiurge: warning: MCP server gone (/nonexistent/mcp-server): start:") || !strings.Contains(r.stderr, "its tools are not offered") {
		t.Errorf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	outs, _ := outputs(t, srv.Requests()[1])
	for _, o := range outs {
		if o != "echo: still here\n" {
			t.Errorf("output %q", o)
		}
	}
}

// TestRunMCPNpmServers runs a whole agent turn against the MCP servers
// tools/mcp's interop tests use (skipped when they are not installed).
func TestRunMCPNpmServers(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("interop: node is not on PATH; install Node.js (20 or later) to run the MCP interop tests")
	}
	bin := func(name string) string {
		p, err := filepath.Abs(filepath.Join("..", "tools", "mcp", "testdata", "npm", "node_modules", ".bin", name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(p); err != nil {
			t.Skipf("interop: %s is not installed; run `npm ci` in tools/mcp/testdata/npm (.ci/run does)", name)
		}
		return p
	}
	servers, _ := json.Marshal([]map[string]any{
		{"name": "everything", "command": bin("mcp-server-everything"), "args": []string{"stdio"}, "aliases": map[string]string{"get-sum": "add_numbers"}},
		{"name": "fs", "command": bin("mcp-server-filesystem"), "args": []string{"."}},
	})
	dir := mcpWorld(t, string(servers))
	outside := filepath.Join(filepath.Dir(dir), "outside.txt")
	if err := os.WriteFile(outside, []byte("not for the agent"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{
			{Name: "add_numbers", Arguments: `{"a": 2, "b": 3}`, CallID: "sum"},
			{Name: "add_numbers", Arguments: `{"a": "two", "b": 3}`, CallID: "bad"},
			{Name: "fs_read_text_file", Arguments: `{"path": "manifest.air.json", "head": 2}`, CallID: "inside"},
			{Name: "fs_read_text_file", Arguments: fmt.Sprintf(`{"path": %q}`, outside), CallID: "outside"},
			{Name: "everything_get-sum", Arguments: `{"a": 1, "b": 1}`, CallID: "unaliased"},
			{Name: "bash", Arguments: `{"commands": "everything_echo --message 'from bash'; fs_list_allowed_directories"}`, CallID: "bash"},
		}},
		{Text: "Done."},
	}})
	defer srv.Close()
	store := filepath.Join(t.TempDir(), "store")
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL, "PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME")}
	r := run(t, env, "", "--store", store, "run", dir, "--model", "gpt-test", "-m", "Add 2 and 3, and read your folder.")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	outs, _ := outputs(t, srv.Requests()[1])
	for id, want := range map[string]string{
		"sum":       "The sum of 2 and 3 is 5.",
		"bad":       "error: the arguments of add_numbers do not fit its parameters schema: at /a: got string, want number",
		"inside":    "{\n  \"$kind\": \"manifest\",",
		"outside":   "error (exit 1, tool_error)\nfs_read_text_file: Access denied - path outside allowed directories",
		"unaliased": `error: there is no tool named "everything_get-sum"`,
		"bash":      "Echo: from bash\nAllowed directories:\n" + dir,
	} {
		if !strings.HasPrefix(outs[id], want) {
			t.Errorf("output of %s: %q; want it to start %q", id, outs[id], want)
		}
	}
	if strings.Contains(outs["outside"], "not for the agent") {
		t.Error("the filesystem server read outside its root")
	}
	if rr := run(t, nil, "", "--store", store, "replay", "--manifest", dir, "--from-genesis"); rr.code != 0 {
		t.Errorf("replay: exit %d\n%s\n%s", rr.code, rr.stdout, rr.stderr)
	}
}

// TestRunMCPCap checks that the mcp cap decides every call, direct or
// from a bash script.
func TestRunMCPCap(t *testing.T) {
	dir := mcpWorld(t, `[{"name": "demo", "command": "demiurge-mcp-server"}]`,
		`{"record": {"tools_allow": {"set": [{"text": "demo/echo"}]}}}`)
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{
			{Name: "demo_echo", Arguments: `{"text": "allowed"}`, CallID: "ok"},
			{Name: "demo_add", Arguments: `{"a": 1, "b": 2}`, CallID: "denied"},
			{Name: "bash", Arguments: `{"commands": "demo_echo --text fine; demo_add --a 1 --b 2 || echo refused $?"}`, CallID: "bash"},
		}},
		{Text: "Some were refused."},
	}})
	defer srv.Close()
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL, "PATH": os.Getenv("PATH")}
	r := run(t, env, "", "--store", filepath.Join(t.TempDir(), "store"), "run", dir, "--model", "gpt-test", "-m", "hi")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	outs, _ := outputs(t, srv.Requests()[1])
	for id, want := range map[string]string{
		"ok":     "echo: allowed\n",
		"denied": "MCP tool demo/add is not in tools_allow [demo/echo]",
		"bash":   "echo: fine\nrefused 1\n",
	} {
		if !strings.Contains(outs[id], want) {
			t.Errorf("output of %s: %q; want it to hold %q", id, outs[id], want)
		}
	}
}

// mcpSessionTurns is the fake model of the recorded MCP session.
var mcpSessionTurns = []llmtest.Turn{
	{Calls: []llmtest.Call{
		{Name: "demo_echo", Arguments: `{"text": "hello"}`},
		{Name: "demo_add", Arguments: `{"a": "two", "b": 3}`},
		{Name: "demo_nope", Arguments: `{}`},
		{Name: "demo_fail", Arguments: `{}`},
	}},
	{Calls: []llmtest.Call{{Name: "bash", Arguments: `{"commands": "demo_add --a 2 --b 3 | jq .sum; demo_env --name GREETING"}`}}},
	{Text: "The demo server echoes, adds and fails as asked."},
}

// TestRecordedMCPSession replays the recorded session of an agent with a
// Go MCP server (testdata/sessions/mcp), byte for byte, without the
// server. -record records it again (the server is demiurge-mcp-server).
func TestRecordedMCPSession(t *testing.T) {
	dir := filepath.Join("..", "testdata", "sessions", "mcp")
	if *record {
		world := mcpWorld(t, `[{"name": "demo", "command": "demiurge-mcp-server", "env": {"GREETING": "hi there"}}]`)
		srv := llmtest.NewServer(llmtest.Script{Turns: mcpSessionTurns})
		defer srv.Close()
		store := filepath.Join(t.TempDir(), "store")
		env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL, "PATH": os.Getenv("PATH")}
		r := run(t, env, "", "--store", store, "run", world, "--model", "gpt-test", "-m", "Try the demo server's tools.")
		if r.code != 0 {
			t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		if n := srv.Remaining(); n != 0 {
			t.Fatalf("the session used %d turns fewer than its script", n)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if r := run(t, nil, "", "--store", store, "export", "--manifest", world, dir); r.code != 0 {
			t.Fatalf("export: %s", r.stderr)
		}
		_ = os.Remove(filepath.Join(dir, "trace.txt"))
	}
	replaytest.CheckGolden(t, dir, (&app{}).registry(), *update || *record)
}
