package mcp_test

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/mcp"
)

// An MCP server's tools as demiurge tools: here a server in the same
// process, over the SDK's in-memory transport (a manifest's servers are
// commands or URLs, see FromManifest).
func Example() {
	type in struct {
		Name string `json:"name"`
	}
	server := sdk.NewServer(&sdk.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	sdk.AddTool(server, &sdk.Tool{Name: "greet", Description: "Greet someone."}, func(ctx context.Context, r *sdk.CallToolRequest, in in) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Hello, " + in.Name + "!"}}}, nil, nil
	})
	dial := func(ctx context.Context) (sdk.Transport, error) {
		serverSide, clientSide := sdk.NewInMemoryTransports()
		if _, err := server.Connect(ctx, serverSide, nil); err != nil {
			return nil, err
		}
		return clientSide, nil
	}

	ctx := context.Background()
	set, err := mcp.Connect(ctx, []mcp.Server{{Name: "hi", Transport: dial}}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer set.Close()
	for _, spec := range set.Specs() {
		fmt.Println(spec.Name, spec.Family, spec.Server, spec.ServerTool, spec.Strict)
	}
	tool, _ := set.Tool("hi_greet")
	fmt.Print(tool.Run(ctx, tools.Request{Arguments: []byte(`{"name": "world"}`)}, nil).Stdout)
	r := tool.Run(ctx, tools.Request{Arguments: []byte(`{"name": 42}`)}, nil)
	fmt.Println(r.ExitCode, r.Error)
	// Output:
	// hi_greet mcp hi greet false
	// Hello, world!
	// 2 invalid_arguments
}
