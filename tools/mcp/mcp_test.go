package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/mcp"
)

func toolsRequest(args string) tools.Request { return tools.Request{Arguments: json.RawMessage(args)} }

func TestToolsAndSpecs(t *testing.T) {
	srv, _ := memServer("demo")
	set := connect(t, nil, srv)
	want := []string{"demo_add", "demo_big", "demo_echo", "demo_fail", "demo_mixed", "demo_read_big", "demo_wait"} // the server's order
	got := toolNames(set)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("tools %v; want %v", got, want)
	}
	specs := set.Specs()
	for _, sp := range specs {
		if sp.Family != tools.FamilyMCP || sp.Server != "demo" || sp.Strict || !strings.HasPrefix(sp.Name, "demo_") || sp.ServerTool != strings.TrimPrefix(sp.Name, "demo_") {
			t.Errorf("spec %+v: want family mcp, server demo, strict false, server_tool without the prefix", sp)
		}
	}
	blob, err := tools.EncodeSpec(specs)
	if err != nil {
		t.Fatal(err)
	}
	back, err := tools.DecodeSpec(blob)
	if err != nil || len(back) != len(specs) {
		t.Fatalf("decode spec: %v, %d tools", err, len(back))
	}
	echo, _ := set.Tool("demo_echo")
	info := echo.Info()
	if got := info.ShortDescription; got != "Echo the text." {
		t.Errorf("short description %q", got)
	}
	if got := info.Description; got != "Echo the text.\nSecond line." {
		t.Errorf("description %q", got)
	}
	var schema map[string]any
	if err := json.Unmarshal(info.InputSchema, &schema); err != nil || schema["type"] != "object" {
		t.Errorf("input schema %s: %v", info.InputSchema, err)
	}
	if got := info.Version; got != "testserver 1.2.3" {
		t.Errorf("version %q", got)
	}
	for _, want := range []string{"DEMO_ECHO(1)", "NAME", "demo_echo - Echo the text.", "text           string, required", "EXIT STATUS", "SEE ALSO", "demo_add"} {
		if !strings.Contains(info.Help, want) {
			t.Errorf("help lacks %q:\n%s", want, info.Help)
		}
	}
	if got, want := info.SystemPrompt, `demo_echo: Echo the text. (MCP server demo). Input {"text": string}. Output text.`; got != want {
		t.Errorf("system prompt %q; want %q", got, want)
	}
	add, _ := set.Tool("demo_add")
	if !strings.Contains(string(add.Info().OutputSchema), `"sum"`) {
		t.Errorf("add's output schema %s lacks the server's", add.Info().OutputSchema)
	}
	if string(info.OutputSchema) == string(add.Info().OutputSchema) {
		t.Error("a tool without an output schema has the schema of one with")
	}
}

func TestCall(t *testing.T) {
	srv, _ := memServer("demo")
	set := connect(t, nil, srv)
	for _, tc := range []struct {
		name, tool, args string
		out, errText     string
		code             int
		category         string
	}{
		{"text", "demo_echo", `{"text": "héllo"}`, "echo: héllo", "", 0, ""},
		{"structured content is kept once", "demo_add", `{"a": 2, "b": 3}`, `{"sum":5}`, "", 0, ""},
		{"text, image, resources, structured", "demo_mixed", `{}`,
			"summary\n[image image/png, 3 bytes]\n[resource file:///a.txt]\ninside a\n[resource link file:///b.txt (b)]\n{\"n\":1,\"ok\":true}", "", 0, ""},
		{"isError is an error the model reads", "demo_fail", `{}`, "", "demo_fail: it failed on purpose", 1, mcp.ErrorTool},
		{"wrong type", "demo_echo", `{"text": 3}`, "", "demo_echo: the arguments do not fit the input schema: at /text: got number, want string", 2, mcp.ErrorInvalidArguments},
		{"missing property", "demo_add", `{"a": 2}`, "", "demo_add: the arguments do not fit the input schema: at /: missing property 'b'", 2, mcp.ErrorInvalidArguments},
		{"not an object", "demo_echo", `["x"]`, "", "demo_echo: the arguments must be a JSON object", 2, mcp.ErrorInvalidArguments},
		{"not JSON", "demo_echo", `{"text": `, "", "demo_echo: the arguments are not valid JSON (unexpected EOF); send one JSON object that fits the input schema", 2, mcp.ErrorInvalidArguments},
		{"empty arguments are {}", "demo_mixed", ``, "summary", "", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errText, code, cat := call(t, set, tc.tool, tc.args)
			if !strings.HasPrefix(out, tc.out) || (tc.out == "" && out != "") {
				t.Errorf("stdout %q; want %q", out, tc.out)
			}
			if errText != tc.errText || code != tc.code || cat != tc.category {
				t.Errorf("stderr %q, exit %d, error %q; want %q, %d, %q", errText, code, cat, tc.errText, tc.code, tc.category)
			}
		})
	}
}

func TestServerErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A tool whose advertised schema is looser than what the server
		// checks: the server's JSON-RPC error becomes invalid_arguments.
		picky := sdk.NewServer(&sdk.Implementation{Name: "strict", Version: "1"}, nil)
		picky.AddTool(&sdk.Tool{Name: "picky", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "picky wants x"}
		})
		picky.AddTool(&sdk.Tool{Name: "oops", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "database on fire"}
		})
		// The second server the tool set dials has dropped picky (a restart
		// after an upgrade, say).
		dropped := sdk.NewServer(&sdk.Implementation{Name: "strict", Version: "2"}, nil)
		dropped.AddTool(&sdk.Tool{Name: "oops", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{}, nil
		})
		n := 0
		m := &memServers{build: func() *sdk.Server {
			n++
			if n == 1 {
				return picky
			}
			return dropped
		}}
		set := connect(t, nil, mcp.Server{Name: "p", Transport: m.transport})
		for _, tc := range []struct {
			tool, errText string
			code          int
			category      string
		}{
			{"p_picky", "p_picky: the server refused the arguments: picky wants x", 2, mcp.ErrorInvalidArguments},
			{"p_oops", "p_oops: the server answered error -32603: database on fire", 1, mcp.ErrorServer},
		} {
			if _, errText, code, cat := call(t, set, tc.tool, `{"y": 1}`); errText != tc.errText || code != tc.code || cat != tc.category {
				t.Errorf("%s: %q, exit %d, %q; want %q, %d, %q", tc.tool, errText, code, cat, tc.errText, tc.code, tc.category)
			}
		}
		m.kill()
		synctest.Wait()
		wantStatus(t, set, "p", mcp.StatusDied)
		_, errText, code, cat := call(t, set, "p_picky", `{}`)
		if code != 127 || cat != mcp.ErrorUnknownTool || !strings.Contains(errText, `p_picky: the server does not know the tool "picky" any more: unknown tool "picky"`) {
			t.Errorf("a tool the restarted server dropped: %q, exit %d, %q", errText, code, cat)
		}
	})
}

func TestOutputLimit(t *testing.T) {
	srv, _ := memServer("demo")
	set := connect(t, &mcp.Options{OutputLimit: 10, ReadLimit: 20}, srv)
	for _, tc := range []struct {
		name, tool, args, want string
	}{
		{"fits", "demo_big", `{"n": 10, "unit": "a"}`, "aaaaaaaaaa\n"},
		{"ascii", "demo_big", `{"n": 11, "unit": "a"}`, "aaaaaaaaaa\n[output cut at 10 of 11 bytes]\n"},
		{"cut on a character boundary", "demo_big", `{"n": 4, "unit": "€"}`, "€€€\n[output cut at 9 of 12 bytes]\n"},
		{"read-only tools get the read limit", "demo_read_big", `{"n": 30, "unit": "é"}`, "éééééééééé\n[output cut at 20 of 60 bytes]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool, _ := set.Tool(tc.tool)
			r := tool.Run(t.Context(), toolsRequest(tc.args), nil)
			if r.Stdout != tc.want || r.StdoutTruncated != strings.Contains(tc.want, "cut at") {
				t.Errorf("stdout %q (truncated %v); want %q", r.Stdout, r.StdoutTruncated, tc.want)
			}
			if !utf8.ValidString(r.Stdout) {
				t.Errorf("stdout %q is not valid UTF-8", r.Stdout)
			}
		})
	}
	def := connect(t, nil, srv)
	if tool, _ := def.Tool("demo_big"); tool.OutputLimit() != mcp.DefaultOutputLimit {
		t.Errorf("default limit %d", tool.OutputLimit())
	}
	if tool, _ := def.Tool("demo_read_big"); tool.OutputLimit() != mcp.DefaultReadLimit {
		t.Errorf("default read limit %d", tool.OutputLimit())
	}
	tool, _ := def.Tool("demo_big")
	r := tool.Run(t.Context(), toolsRequest(`{"n": 40000, "unit": "ab"}`), nil)
	if len(r.Stdout) > mcp.DefaultOutputLimit+100 || !strings.HasSuffix(r.Stdout, "[output cut at 30000 of 80000 bytes]\n") {
		t.Errorf("stdout of %d bytes ends %q", len(r.Stdout), r.Stdout[max(0, len(r.Stdout)-60):])
	}
}

func TestTimeout(t *testing.T) {
	// In a bubble, time moves only when every goroutine waits: the
	// timeouts are exact and take no wall time.
	synctest.Test(t, func(t *testing.T) {
		srv, _ := memServer("demo")
		srv.Timeout = 50 * time.Millisecond
		set := connect(t, nil, srv)
		tool, _ := set.Tool("demo_wait")
		start := time.Now()
		r := tool.Run(t.Context(), toolsRequest(`{}`), nil)
		if r.ExitCode != 124 || r.Error != mcp.ErrorTimeout || !strings.Contains(r.Stderr, "did not answer within 50ms") || time.Since(start) != 50*time.Millisecond {
			t.Errorf("got %+v after %s; want a timeout after 50ms", r, time.Since(start))
		}
		// A request can lower the server's timeout, not raise it.
		start = time.Now()
		r = tool.Run(t.Context(), tools.Request{Arguments: json.RawMessage(`{}`), TimeoutMS: 20}, nil)
		if r.ExitCode != 124 || !strings.Contains(r.Stderr, "within 20ms") || time.Since(start) != 20*time.Millisecond {
			t.Errorf("got %+v after %s; want a timeout after 20ms", r, time.Since(start))
		}
		r = tool.Run(t.Context(), tools.Request{Arguments: json.RawMessage(`{}`), TimeoutMS: 5000}, nil)
		if !strings.Contains(r.Stderr, "within 50ms") {
			t.Errorf("got %+v; want the server's 50ms", r)
		}
		// The server still answers after a timed-out call.
		if out, _, code, _ := call(t, set, "demo_echo", `{"text": "still here"}`); code != 0 || out != "echo: still here" {
			t.Errorf("after a timeout: %q, exit %d", out, code)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		r = tool.Run(ctx, toolsRequest(`{}`), nil)
		if r.ExitCode != 130 || r.Error != mcp.ErrorCancelled {
			t.Errorf("cancelled call: %+v", r)
		}
	})
}

func TestRestartOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, m := memServer("demo")
		set := connect(t, nil, srv)
		if out, _, code, _ := call(t, set, "demo_echo", `{"text": "1"}`); code != 0 || out != "echo: 1" {
			t.Fatalf("first call: %q, exit %d", out, code)
		}
		m.kill()
		synctest.Wait() // the SDK notices the end of the session
		wantStatus(t, set, "demo", mcp.StatusDied)
		if out, errText, code, _ := call(t, set, "demo_echo", `{"text": "2"}`); code != 0 || out != "echo: 2" {
			t.Fatalf("call after the server died: %q %q, exit %d; want it restarted", out, errText, code)
		}
		if si := set.Servers()[0]; si.Status != mcp.StatusConnected || si.Restarts != 1 || m.dials != 2 {
			t.Errorf("after the restart: status %s, restarts %d, dials %d", si.Status, si.Restarts, m.dials)
		}
		m.kill()
		synctest.Wait()
		wantStatus(t, set, "demo", mcp.StatusDown)
		_, errText, code, cat := call(t, set, "demo_echo", `{"text": "3"}`)
		if code != 1 || cat != mcp.ErrorUnavailable || !strings.Contains(errText, "died again after its restart") {
			t.Errorf("call after a second death: %q, exit %d, %q; want unavailable", errText, code, cat)
		}
		if m.dials != 2 {
			t.Errorf("dials %d; the server was restarted more than once", m.dials)
		}
		if si := set.Servers()[0]; si.Status != mcp.StatusDown || !errors.Is(si.Err, mcp.ErrServerDown) {
			t.Errorf("status %s, err %v", si.Status, si.Err)
		}
	})
}

// wantStatus checks a server's status.
func wantStatus(t *testing.T, set *mcp.Set, server, want string) {
	t.Helper()
	for _, si := range set.Servers() {
		if si.Name == server && si.Status != want {
			t.Fatalf("server %s is %s; want %s (%v)", server, si.Status, want, si.Err)
		}
	}
}

func TestOneFailingServerDoesNotStopTheOthers(t *testing.T) {
	good, _ := memServer("good")
	bad := mcp.Server{Name: "bad", Command: "/nonexistent/mcp-server", Args: []string{"--flag"}}
	broken := mcp.Server{Name: "broken", Transport: func(ctx context.Context) (sdk.Transport, error) {
		return nil, errors.New("no way in")
	}}
	set := connect(t, nil, bad, good, broken)
	if got := toolNames(set); len(got) != 7 || got[0] != "good_add" {
		t.Errorf("tools %v; want good's", got)
	}
	ss := set.Servers()
	if ss[0].Status != mcp.StatusFailed || !strings.Contains(ss[0].Err.Error(), "/nonexistent/mcp-server --flag") {
		t.Errorf("bad: %s %v", ss[0].Status, ss[0].Err)
	}
	if ss[1].Status != mcp.StatusConnected || len(ss[1].Tools) != 7 || ss[1].Protocol == "" || ss[1].ServerName != "testserver" {
		t.Errorf("good: %+v", ss[1])
	}
	if ss[2].Status != mcp.StatusFailed || !strings.Contains(ss[2].Err.Error(), "no way in") {
		t.Errorf("broken: %s %v", ss[2].Status, ss[2].Err)
	}
}

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		name     string
		servers  func() []mcp.Server
		reserved []string
		wantErr  []string
		want     []string // tools present
	}{
		{
			name: "two servers, distinct prefixes",
			servers: func() []mcp.Server {
				a, _ := memServer("a")
				b, _ := memServer("b")
				return []mcp.Server{a, b}
			},
			want: []string{"a_echo", "b_echo"},
		},
		{
			name: "an alias that collides with another server's tool",
			servers: func() []mcp.Server {
				a, _ := memServer("a")
				b, _ := memServer("b")
				b.Aliases = map[string]string{"echo": "a_echo"}
				return []mcp.Server{a, b}
			},
			wantErr: []string{`two tools would be named "a_echo": tool "echo" of MCP server "a" and tool "echo" of MCP server "b"; give one an alias`},
		},
		{
			name: "a built-in name",
			servers: func() []mcp.Server {
				w, _ := memServer("workspace")
				return []mcp.Server{w}
			},
			reserved: []string{"workspace_echo", "bash"},
			wantErr:  []string{`two tools would be named "workspace_echo": the built-in tool "workspace_echo" and tool "echo" of MCP server "workspace"`},
		},
		{
			name: "an alias fixes it",
			servers: func() []mcp.Server {
				w, _ := memServer("workspace")
				w.Aliases = map[string]string{"echo": "ws_echo", "missing": "x"}
				return []mcp.Server{w}
			},
			reserved: []string{"workspace_echo"},
			want:     []string{"ws_echo", "workspace_add"},
		},
		{
			name: "an alias that is no tool name",
			servers: func() []mcp.Server {
				a, _ := memServer("a")
				a.Aliases = map[string]string{"echo": "say it"}
				return []mcp.Server{a}
			},
			wantErr: []string{`MCP server "a": the alias "say it" of tool "echo" is not a valid tool name`},
		},
		{
			name: "a name that starts with a digit",
			servers: func() []mcp.Server {
				a, _ := memServer("9lives")
				return []mcp.Server{a}
			},
			wantErr: []string{`the tool "echo" of MCP server "9lives" would be named "9lives_echo", which is not a valid tool name`, `aliases {"echo": "..."}`},
		},
		{
			name: "a server twice",
			servers: func() []mcp.Server {
				a, _ := memServer("a")
				return []mcp.Server{a, a}
			},
			wantErr: []string{`MCP server "a" is declared twice`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := mcp.Connect(t.Context(), tc.servers(), &mcp.Options{Reserved: tc.reserved})
			t.Cleanup(func() { _ = set.Close() })
			if len(tc.wantErr) == 0 && err != nil {
				t.Fatalf("connect: %v", err)
			}
			for _, w := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v; want it to say %q", err, w)
				}
			}
			for _, w := range tc.want {
				if _, ok := set.Tool(w); !ok {
					t.Errorf("no tool %s; tools %v", w, toolNames(set))
				}
			}
		})
	}
}

func TestRouteAndLookup(t *testing.T) {
	srv, _ := memServer("demo")
	srv.Aliases = map[string]string{"echo": "say"}
	set := connect(t, nil, srv)
	if server, tool, ok := set.Route("say"); !ok || server != "demo" || tool != "echo" {
		t.Errorf("route say: %s %s %v", server, tool, ok)
	}
	if _, _, ok := set.Route("demo_echo"); ok {
		t.Error("an aliased tool is also known by its default name")
	}
	if tl, ok := set.Lookup("demo", "echo"); !ok || tl.Info().Name != "say" {
		t.Errorf("lookup: %v %v", tl, ok)
	}
}

func TestToolListInCAS(t *testing.T) {
	store := cas.NewMemory()
	srv, _ := memServer("demo")
	set := connect(t, &mcp.Options{Store: store}, srv)
	si := set.Servers()[0]
	if !si.ListRef.Valid() {
		t.Fatal("no list ref")
	}
	b, err := store.Get(t.Context(), si.ListRef)
	if err != nil {
		t.Fatal(err)
	}
	l, err := mcp.DecodeToolList(b)
	if err != nil {
		t.Fatal(err)
	}
	if l.Server != "demo" || l.Name != "testserver" || l.Version != "1.2.3" || len(l.Tools) != 7 || l.Protocol == "" {
		t.Errorf("list %+v", l)
	}
	echo := l.Tools[2]
	tool, _ := set.Tool("demo_echo")
	if echo.Name != "echo" || echo.As != "demo_echo" || echo.InputSchema != string(tool.Info().InputSchema) || echo.OutputSchema != "" {
		t.Errorf("echo %+v; input schema the model sees %s", echo, tool.Info().InputSchema)
	}
	if l.Tools[5].Annotations == "" || !strings.Contains(l.Tools[5].Annotations, `"readOnlyHint":true`) {
		t.Errorf("read_big's annotations %q", l.Tools[5].Annotations)
	}
	// The same server lists the same blob.
	srv2, _ := memServer("demo")
	again := connect(t, &mcp.Options{Store: store}, srv2)
	if r := again.Servers()[0].ListRef; r != si.ListRef {
		t.Errorf("a second connection stored %s; the first %s", r, si.ListRef)
	}
	if _, err := mcp.DecodeToolList(append(b[:len(b):len(b)], 0)); err == nil {
		t.Error("trailing bytes decoded")
	}
}

func TestAdapter(t *testing.T) {
	srv, _ := memServer("demo")
	bad := mcp.Server{Name: "down", Command: "/nonexistent/x"}
	set := connect(t, nil, srv, bad)
	ad := set.Adapter()
	for _, tc := range []struct {
		name, server, tool, args string
		stdout, stderr           string
		code                     int64
		category                 any
	}{
		{"ok", "demo", "echo", `{"text":"hi"}`, "echo: hi\n", "", 0, nil},
		{"tool error", "demo", "fail", `{}`, "", "demo_fail: it failed on purpose", 1, mcp.ErrorTool},
		{"bad arguments", "demo", "echo", `{"text":1}`, "", "demo_echo: the arguments do not fit the input schema: at /text: got number, want string", 2, mcp.ErrorInvalidArguments},
		{"unknown server", "nope", "echo", `{}`, "", `there is no MCP server named "nope" in this world (servers: demo, down)`, 127, mcp.ErrorUnknownTool},
		{"unknown tool", "demo", "nope", `{}`, "", `the MCP server demo has no tool "nope" (its tools: add, big, echo, fail, mixed, read_big, wait)`, 127, mcp.ErrorUnknownTool},
		{"server down", "down", "x", `{}`, "", "MCP server down (/nonexistent/x): start:", 1, mcp.ErrorUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ad.Run(t.Context(), effectsCall{params: mcp.Params(tc.server, tc.tool, tc.args)}.call())
			if r.Status != "ok" || r.AdapterID != mcp.AdapterID {
				t.Fatalf("receipt %+v", r)
			}
			v := receiptFields(t, r.Payload)
			if v["stdout"] != tc.stdout || !strings.HasPrefix(v["stderr"].(string), tc.stderr) || v["exit_code"] != tc.code || v["error"] != tc.category {
				t.Errorf("receipt %v; want stdout %q, stderr %q…, exit %d, error %v", v, tc.stdout, tc.stderr, tc.code, tc.category)
			}
		})
	}
}

func TestUnusableSchemaIsNotOffered(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "odd", Version: "1"}, nil)
	ok := func(ctx context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{}, nil
	}
	s.AddTool(&sdk.Tool{Name: "fine", InputSchema: json.RawMessage(`{"type":"object"}`)}, ok)
	s.AddTool(&sdk.Tool{Name: "remote", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"https://example.invalid/a.json"}}}`)}, ok)
	s.AddTool(&sdk.Tool{Name: "nonsense", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"colour"}}}`)}, ok)
	m := &memServers{build: func() *sdk.Server { return s }}
	set := connect(t, nil, mcp.Server{Name: "odd", Transport: m.transport})
	if got := toolNames(set); strings.Join(got, " ") != "odd_fine" {
		t.Errorf("tools %v; want only odd_fine", got)
	}
	si := set.Servers()[0]
	if len(si.Skipped) != 2 || !strings.HasPrefix(si.Skipped[0], "nonsense: its input schema does not compile: ") || !strings.HasPrefix(si.Skipped[1], "remote: its input schema does not compile: ") {
		t.Errorf("skipped %q", si.Skipped)
	}
	if strings.Join(si.Tools, " ") != "odd_fine" {
		t.Errorf("server's tools %v", si.Tools)
	}
}
