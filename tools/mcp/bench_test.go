package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/demiurge-dev/demiurge/tools/mcp"
)

// benchServer is a server to measure: how to reach it through this
// package, and the same server through the SDK alone (the baseline), and
// a call to make.
type benchServer struct {
	name      string
	server    func(b *testing.B) mcp.Server
	transport func(b *testing.B) sdk.Transport
	tool      string // the server's name of the tool
	args      string
}

func benchServers() []benchServer {
	mem := func(b *testing.B) (mcp.Server, *memServers) { return memServer("mem") }
	cmd := func(s mcp.Server) sdk.Transport {
		c := exec.Command(s.Command, s.Args...)
		env := []string{}
		for k, v := range s.Env {
			env = append(env, k+"="+v)
		}
		c.Env = env
		return &sdk.CommandTransport{Command: c, TerminateDuration: mcp.DefaultTerminate}
	}
	return []benchServer{
		{
			name:   "memory",
			server: func(b *testing.B) mcp.Server { s, _ := mem(b); return s },
			transport: func(b *testing.B) sdk.Transport {
				_, m := mem(b)
				t, err := m.transport(b.Context())
				if err != nil {
					b.Fatal(err)
				}
				return t
			},
			tool: "echo", args: `{"text": "hi"}`,
		},
		{
			name:      "stdio-go",
			server:    func(b *testing.B) mcp.Server { return stdioServer(b, "go", nil) },
			transport: func(b *testing.B) sdk.Transport { return cmd(stdioServer(b, "go", nil)) },
			tool:      "echo", args: `{"text": "hi"}`,
		},
		{
			name:      "filesystem",
			server:    func(b *testing.B) mcp.Server { return filesystem(b, benchRoot(b)) },
			transport: func(b *testing.B) sdk.Transport { return cmd(filesystem(b, benchRoot(b))) },
			tool:      "list_allowed_directories", args: `{}`,
		},
		{
			name:      "everything",
			server:    func(b *testing.B) mcp.Server { return everything(b) },
			transport: func(b *testing.B) sdk.Transport { return cmd(everything(b)) },
			tool:      "echo", args: `{"message": "hi"}`,
		},
	}
}

// BenchmarkConnect measures starting a server and listing its tools:
// mcp.Connect (which also makes the tools and encodes the tool list)
// beside the SDK's Connect and ListTools. Closing is not timed.
func BenchmarkConnect(b *testing.B) {
	for _, bs := range benchServers() {
		b.Run(bs.name+"/set", func(b *testing.B) {
			srv := bs.server(b)
			for b.Loop() {
				set, err := mcp.Connect(b.Context(), []mcp.Server{srv}, nil)
				if err != nil || set.Servers()[0].Status != mcp.StatusConnected {
					b.Fatalf("connect: %v %+v", err, set.Servers())
				}
				b.StopTimer()
				_ = set.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/connect")
		})
		b.Run(bs.name+"/sdk", func(b *testing.B) {
			for b.Loop() {
				t := bs.transport(b) // an in-memory server connects here; a command starts in Connect
				c := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "0"}, nil)
				s, err := c.Connect(b.Context(), t, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.ListTools(b.Context(), nil); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				_ = s.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/connect")
		})
	}
}

// BenchmarkCall measures one tool call on a connected server: a Tool's
// Run (arguments checked against the schema, timeout, result
// rendered) beside the SDK's CallTool with the same arguments.
func BenchmarkCall(b *testing.B) {
	for _, bs := range benchServers() {
		b.Run(bs.name+"/tool", func(b *testing.B) {
			srv := bs.server(b)
			set := connect(b, nil, srv)
			server, _ := set.Lookup(srv.Name, bs.tool)
			if server == nil {
				b.Fatalf("no tool %s", bs.tool)
			}
			req := toolsRequest(bs.args)
			b.ReportAllocs()
			for b.Loop() {
				if r := server.Run(b.Context(), req, nil); r.ExitCode != 0 {
					b.Fatalf("call: %+v", r)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/call")
		})
		b.Run(bs.name+"/sdk", func(b *testing.B) {
			c := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "0"}, nil)
			s, err := c.Connect(b.Context(), bs.transport(b), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			params := &sdk.CallToolParams{Name: bs.tool, Arguments: rawArgs(b, bs.args)}
			b.ReportAllocs()
			for b.Loop() {
				res, err := s.CallTool(context.Background(), params)
				if err != nil || res.IsError {
					b.Fatalf("call: %v %+v", err, res)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/call")
		})
	}
}

func rawArgs(b *testing.B, js string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		b.Fatal(err)
	}
	return m
}

// benchRoot is the filesystem server's root: a directory that outlives
// the sub-benchmarks that share it.
func benchRoot(b *testing.B) string {
	return os.TempDir()
}
