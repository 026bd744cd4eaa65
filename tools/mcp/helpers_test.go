package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools/mcp"
)

// The test binary is also a stdio MCP server (see serveStdio) when this
// variable is set.
const stdioServerEnv = "DEMIURGE_MCP_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(stdioServerEnv) == "1" {
		serveStdio()
		return
	}
	os.Exit(m.Run())
}

// serveStdio runs testServer on stdin/stdout, as a stdio server would, and
// exits when its client closes stdin.
func serveStdio() {
	s := testServer()
	addStdioTools(s)
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "test server:", err)
		os.Exit(1)
	}
}

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

type bigIn struct {
	N    int    `json:"n"`
	Unit string `json:"unit"`
}

type emptyIn struct{}

// testServer is an MCP server with a tool for each behaviour the tests
// need.
func testServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "testserver", Version: "1.2.3"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo the text.\nSecond line."}, func(ctx context.Context, r *sdk.CallToolRequest, in textIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Add two integers."}, func(ctx context.Context, r *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, sumOut, error) {
		return nil, sumOut{Sum: in.A + in.B}, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails."}, func(ctx context.Context, r *sdk.CallToolRequest, in emptyIn) (*sdk.CallToolResult, any, error) {
		return nil, nil, errors.New("it failed on purpose")
	})
	sdk.AddTool(s, &sdk.Tool{Name: "big", Description: "Repeat unit n times.", Annotations: &sdk.ToolAnnotations{}}, func(ctx context.Context, r *sdk.CallToolRequest, in bigIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Repeat(in.Unit, in.N)}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "read_big", Description: "Repeat unit n times, read-only.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, func(ctx context.Context, r *sdk.CallToolRequest, in bigIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Repeat(in.Unit, in.N)}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "wait", Description: "Wait until cancelled."}, func(ctx context.Context, r *sdk.CallToolRequest, in emptyIn) (*sdk.CallToolResult, any, error) {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	sdk.AddTool(s, &sdk.Tool{Name: "mixed", Description: "Text, an image, a resource and structured content."}, func(ctx context.Context, r *sdk.CallToolRequest, in emptyIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{
			Content: []sdk.Content{
				&sdk.TextContent{Text: "summary"},
				&sdk.ImageContent{MIMEType: "image/png", Data: []byte{1, 2, 3}},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///a.txt", MIMEType: "text/plain", Text: "inside a"}},
				&sdk.ResourceLink{URI: "file:///b.txt", Name: "b"},
			},
			StructuredContent: map[string]any{"n": 1, "ok": true},
		}, nil, nil
	})
	return s
}

// addStdioTools adds the tools only a server in its own process has.
func addStdioTools(s *sdk.Server) {
	type envIn struct {
		Name string `json:"name"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "env", Description: "Read an environment variable."}, func(ctx context.Context, r *sdk.CallToolRequest, in envIn) (*sdk.CallToolResult, any, error) {
		v, ok := os.LookupEnv(in.Name)
		if !ok {
			return nil, nil, fmt.Errorf("%s is not set", in.Name)
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Name + "=" + v}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Exit at once."}, func(ctx context.Context, r *sdk.CallToolRequest, in emptyIn) (*sdk.CallToolResult, any, error) {
		fmt.Fprintln(os.Stderr, "crashing with token", os.Getenv("TOKEN"))
		os.Exit(3)
		return nil, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "pwd", Description: "The working directory."}, func(ctx context.Context, r *sdk.CallToolRequest, in emptyIn) (*sdk.CallToolResult, any, error) {
		wd, err := os.Getwd()
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: wd}}}, nil, err
	})
}

// memServers are in-memory connections to servers made by build: each
// connection (a restart makes a new one) gets a fresh server. Kill ends
// the live sessions, as if the server died.
type memServers struct {
	build func() *sdk.Server
	mu    sync.Mutex
	live  []*sdk.ServerSession
	dials int
}

func (m *memServers) transport(ctx context.Context) (sdk.Transport, error) {
	st, ct := sdk.NewInMemoryTransports()
	ss, err := m.build().Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.live = append(m.live, ss)
	m.dials++
	m.mu.Unlock()
	return ct, nil
}

// kill closes the server side of every live session.
func (m *memServers) kill() {
	m.mu.Lock()
	live := m.live
	m.live = nil
	m.mu.Unlock()
	for _, ss := range live {
		_ = ss.Close()
	}
}

// memServer returns a server config named name over in-memory transports
// to testServer.
func memServer(name string) (mcp.Server, *memServers) {
	m := &memServers{build: testServer}
	return mcp.Server{Name: name, Transport: m.transport}, m
}

// connect connects to servers and closes them when the test ends; it
// fails the test on a configuration error.
func connect(t testing.TB, opts *mcp.Options, servers ...mcp.Server) *mcp.Set {
	t.Helper()
	set, err := mcp.Connect(context.Background(), servers, opts)
	t.Cleanup(func() { _ = set.Close() })
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return set
}

// call runs a tool of set by the model's name.
func call(t testing.TB, set *mcp.Set, name, args string) (out, errText string, code int, category string) {
	t.Helper()
	tool, ok := set.Tool(name)
	if !ok {
		t.Fatalf("no tool %s; tools: %v", name, toolNames(set))
	}
	r := tool.Run(context.Background(), toolsRequest(args), nil)
	out, cut := strings.CutSuffix(r.Stdout, "\n")
	if r.Stdout != "" && !cut {
		t.Errorf("%s: stdout %q does not end with a newline", name, r.Stdout)
	}
	return out, r.Stderr, r.ExitCode, r.Error
}

func toolNames(set *mcp.Set) []string {
	var out []string
	for _, t := range set.Tools() {
		out = append(out, t.Info().Name)
	}
	return out
}

// effectsCall builds the effects.Call of an mcp.call intent.
type effectsCall struct{ params schema.Value }

func (e effectsCall) call() *effects.Call {
	return &effects.Call{Intent: &effects.Intent{Kind: mcp.EffectKind}, Params: e.params, CAS: cas.NewMemory()}
}

// receiptFields returns the fields of a sys/ToolResponse@1 value, with
// exit_code as an int64.
func receiptFields(t testing.TB, v schema.Value) map[string]any {
	t.Helper()
	m, ok := v.(*schema.Map)
	if !ok {
		t.Fatalf("receipt payload %s is not a record", schema.String(v))
	}
	out := map[string]any{}
	for _, e := range m.Entries() {
		k, _ := e.Key.(string)
		out[k] = e.Value
	}
	code, _ := schema.AsInt64(out["exit_code"])
	out["exit_code"] = code
	return out
}
