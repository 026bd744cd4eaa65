package bashfx_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/demiurge-dev/demiurge/adapters/bashfx"
	"github.com/demiurge-dev/demiurge/tools"
)

// greeter is a minimal tools.Tool: greet --name NAME.
type greeter struct{}

func (greeter) Info() tools.Info {
	return tools.Info{Name: "greet", ShortDescription: "Greet someone",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
		OutputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (greeter) Run(ctx context.Context, req tools.Request, _ tools.StatusFunc) tools.Response {
	var args struct{ Name string }
	if err := json.Unmarshal(req.Arguments, &args); err != nil {
		return tools.Response{Stderr: err.Error(), ExitCode: 2}
	}
	return tools.Response{Stdout: fmt.Sprintf(`{"greeting":"hello, %s"}`+"\n", args.Name)}
}

// A Shell whose one command is a tool, run with Direct (the tool is called
// as it is; in a world, the Adapter asks the gate first). Every call is in
// the result's trace.
func ExampleShell_Run() {
	sh, err := bashfx.NewShell([]tools.Tool{greeter{}}, bashfx.ShellOptions{})
	if err != nil {
		panic(err)
	}
	res := sh.Run(context.Background(), tools.Request{Commands: `
for who in ada grace; do
  greet --name "$who" | jq -r .greeting
done`}, bashfx.RunOptions{Call: bashfx.Direct})
	fmt.Print(res.Stdout)
	for _, c := range res.Calls {
		fmt.Println(c.Seq, c.Tool, c.Arguments, c.ExitCode)
	}
	// Output:
	// hello, ada
	// hello, grace
	// 1 greet {"name":"ada"} 0
	// 2 greet {"name":"grace"} 0
}
