package agent_test

import (
	"context"
	"fmt"
	"log"

	"github.com/demiurge-dev/demiurge/agent"
)

// Open an agent world and send it a message: here the model's answers
// come from a recorded session (agent.Cassette), so it runs offline; with
// agent.Model{Name: "gpt-5-mini"} it would ask OpenAI, with the key in
// $OPENAI_API_KEY. The world lives in memory; agent.WithDir keeps it in a
// store on disk.
func Example() {
	ctx := context.Background()
	w, err := agent.Open(ctx, "../examples/demiurge", agent.WithModel(agent.Cassette("../testdata/sessions/demo")))
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	for e, err := range w.Chat("main").Send(ctx, "Write a hello note and show it to me.") {
		if err != nil {
			log.Fatal(err)
		}
		switch e := e.(type) {
		case agent.ToolCallStarted:
			fmt.Println("calls", e.Tool)
		case agent.ToolCallFinished:
			fmt.Println(e.Tool, e.Status)
		case agent.Message:
			fmt.Printf("%s: %s\n", e.Role, e.Text)
		case agent.TurnEnd:
			fmt.Println("turn:", e.Outcome)
		}
	}
	// Output:
	// user: Write a hello note and show it to me.
	// calls introspect_journal_head
	// calls workspace_write
	// introspect_journal_head ok
	// workspace_write ok
	// calls bash
	// bash ok
	// assistant: I wrote notes/hello.md in the workspace and read it back: it says hello.
	// turn: answer
}

// A tool of the program's own: a Go function whose input type gives the
// tool's JSON Schema. The model calls it by itself, or as a command of its
// bash scripts (get_weather --city Paris).
func ExampleFunc() {
	type In struct {
		City string `json:"city" jsonschema:"the city, e.g. Paris"`
	}
	weather := agent.Func("get_weather", "The weather in a city now.", func(ctx context.Context, in In) (string, error) {
		return in.City + ": sunny", nil
	})
	fmt.Println(weather.Info().Name)
	fmt.Println(string(weather.Info().InputSchema))
	// Open(ctx, manifest, agent.WithTools(weather), ...) offers it to the model.

	// Output:
	// get_weather
	// {"type":"object","properties":{"city":{"type":"string","description":"the city, e.g. Paris"}},"required":["city"],"additionalProperties":false}
}

// Stop a turn: cancelling the context (or breaking out of the loop) makes
// the chat record that the user stopped it, so it is not taken up again.
func ExampleChat_Send_stop() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := agent.Open(ctx, "../examples/demiurge", agent.WithModel(agent.Cassette("../testdata/sessions/demo")))
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	c := w.Chat("main")
	for e := range c.Send(ctx, "Write a hello note and show it to me.") {
		if _, ok := e.(agent.ToolCallStarted); ok {
			break // enough
		}
	}
	st, _ := c.State()
	fmt.Println("turn running:", st.Turn != nil)
	// Output:
	// turn running: false
}
