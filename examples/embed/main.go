// Command embed embeds the demiurge agent with a tool of its own and asks
// it one question, offline: the model's answers come from a recorded
// session, the tools run for real. Run it with go run ./examples/embed.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/demiurge-dev/demiurge/agent"
)

// Weather is what get_weather is asked.
type Weather struct {
	City string `json:"city" jsonschema:"the city, e.g. Paris"`
}

// getWeather is the program's tool: a Go function the model calls by
// itself or as a command of its bash scripts (get_weather --city Paris).
var getWeather = agent.Func("get_weather", "The weather in a city now.",
	func(ctx context.Context, in Weather) (string, error) {
		return fmt.Sprintf("%s: sunny, 21°C", in.City), nil
	})

func main() {
	manifest := flag.String("manifest", "examples/demiurge", "the agent world's AIR")
	session := flag.String("session", "examples/embed/testdata/session", "the recorded session that answers for the model")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *manifest, agent.Cassette(*session)); err != nil {
		log.Fatal(err)
	}
}

// run opens the world in memory with the model m, sends one message, and
// prints the answer and the tool calls as they happen.
func run(ctx context.Context, out io.Writer, manifest string, m agent.Model, opts ...agent.Option) error {
	w, err := agent.Open(ctx, manifest, append(opts, agent.WithModel(m), agent.WithTools(getWeather))...)
	if err != nil {
		return err
	}
	defer w.Close()
	for e, err := range w.Chat("main").Send(ctx, "What's the weather in Paris and in Oslo?") {
		if err != nil {
			return err
		}
		switch e := e.(type) {
		case agent.ToolCallStarted:
			fmt.Fprintf(out, "→ %s %s\n", e.Tool, e.Arguments)
		case agent.Message:
			fmt.Fprintf(out, "%s: %s\n", e.Role, e.Text)
		}
	}
	return nil
}
