// Command mydemiurge is the demiurge command line with a Go tool of its
// own: every command demiurge has (run, trace, replay, sh, ui, worker, …),
// and get_weather, which the agent calls by itself or as a command of its
// bash scripts. Try it offline, from the repository's root:
//
//	go run ./examples/mydemiurge run examples/demiurge \
//	    --llm cassette:examples/embed/testdata/session \
//	    -m "What's the weather in Paris and in Oslo?"
//	go run ./examples/mydemiurge sh --manifest examples/demiurge -c 'get_weather --city Rome'
package main

import (
	"context"
	"fmt"

	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/cli"
)

// Weather is what get_weather is asked.
type Weather struct {
	City string `json:"city" jsonschema:"the city, e.g. Paris"`
}

// getWeather is the tool this command line adds.
var getWeather = agent.Func("get_weather", "The weather in a city now.",
	func(ctx context.Context, in Weather) (string, error) {
		return fmt.Sprintf("%s: sunny, 21°C", in.City), nil
	})

func main() { cli.Main(cli.WithName("mydemiurge"), cli.WithTools(getWeather)) }
