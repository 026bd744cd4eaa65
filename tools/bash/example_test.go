package bash_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/bash"
)

func Example() {
	tool := bash.NewBuilder("ecommerce_api").
		ShortDescription("E-commerce API").
		Tool(bash.ToolDef{
			Name:        "get_user",
			Description: "Fetch user by ID",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`),
		}, func(ctx context.Context, args bash.ToolArgs) (string, error) {
			id, _ := args.ParamInt64("id")
			return fmt.Sprintf(`{"id":%d,"name":"user%d"}`+"\n", id, id), nil
		}).
		MustBuild()

	resp := tool.Run(context.Background(), tools.Request{
		Commands: `for id in 1 2; do get_user --id $id | jq -r .name; done; get_user --id x`,
	}, nil)
	fmt.Print(resp.Stdout)
	fmt.Print(resp.Stderr)
	fmt.Println("exit", resp.ExitCode)
	// Output:
	// user1
	// user2
	// get_user: schema error: input.id must be integer
	// exit 2
}

func ExampleTool_RunScript() {
	tool := bash.NewBuilder("api").
		Tool(bash.ToolDef{Name: "ping", Description: "Answer pong"},
			func(ctx context.Context, args bash.ToolArgs) (string, error) { return "pong\n", nil }).
		MustBuild()
	res := tool.RunScript(context.Background(), tools.Request{Commands: "ping --times 2 | tr a-z A-Z"}, bash.RunOptions{})
	fmt.Print(res.Stdout)
	for _, c := range res.Calls {
		fmt.Println(c.Seq, c.Tool, c.Kind, c.Params, c.ExitCode)
	}
	// Output:
	// PONG
	// 1 ping tool map[times:2] 0
}
