package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
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

// A tool whose argument takes a few values only: the jsonschema tag is a
// description, so the enum goes into a schema given with WithInputSchema.
// A call with another value never reaches the function: the model reads
// why, and can call again. The model here is adapters/llm/llmtest, a fake
// server that answers with a script.
func ExampleWithInputSchema() {
	type In struct {
		Celsius float64 `json:"celsius"`
		To      string  `json:"to"`
	}
	convert := agent.Func("convert", "Convert a temperature from Celsius.",
		func(ctx context.Context, in In) (string, error) {
			if in.To == "F" {
				return fmt.Sprint(in.Celsius*9/5+32, " F"), nil
			}
			return fmt.Sprint(in.Celsius+273.15, " K"), nil
		},
		agent.WithInputSchema(json.RawMessage(`{"type": "object",
			"properties": {"celsius": {"type": "number"}, "to": {"type": "string", "enum": ["F", "K"]}},
			"required": ["celsius", "to"], "additionalProperties": false}`)))

	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "convert", Arguments: `{"celsius": 20, "to": "R"}`}}},
		{Calls: []llmtest.Call{{Name: "convert", Arguments: `{"celsius": 20, "to": "F"}`}}},
		{Text: "20 °C is 68 °F."},
	}})
	defer srv.Close()
	ctx := context.Background()
	w, err := agent.Open(ctx, "../examples/demiurge", agent.WithTools(convert),
		agent.WithModel(agent.Model{Name: "gpt-test", BaseURL: srv.URL, APIKey: "sk-test"}))
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	for e, err := range w.Chat("main").Send(ctx, "20 °C in Fahrenheit?") {
		if err != nil {
			log.Fatal(err)
		}
		if e, ok := e.(agent.ToolCallFinished); ok {
			fmt.Println(e.Status+":", e.Output)
		}
	}
	// Output:
	// error: error: the arguments of convert do not fit its parameters schema: at /to: value must be one of 'F', 'K'. Fix the arguments and call again.
	// ok: 68 F
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

// Wait through an approval decided elsewhere: with AwaitApproval the
// stream stays open while the write waits, and goes on with the turn once
// the decision lands; here another goroutine answers it with Chat.Answer,
// as a web form's handler or demiurge approve (through the process that
// holds the world) would.
func ExampleAwaitApproval() {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "hi"}`}}},
		{Text: "I wrote a.md."},
	}})
	defer srv.Close()
	ctx := context.Background()
	w, err := agent.Open(ctx, "../examples/demiurge",
		agent.WithModel(agent.Model{Name: "gpt-test", BaseURL: srv.URL, APIKey: "sk-test"}))
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	c := w.Chat("main", agent.RequireApproval("workspace_write"), agent.AwaitApproval())
	for e, err := range c.Send(ctx, "Write a.md.") {
		if err != nil {
			log.Fatal(err)
		}
		switch e := e.(type) {
		case agent.ApprovalRequested:
			fmt.Println("waits:", e.Tool, e.Arguments)
			go func() { // elsewhere
				if _, _, err := c.Answer(ctx, e.CallID, agent.Decision{Approve: true}); err != nil {
					log.Fatal(err)
				}
			}()
		case agent.ApprovalDecided:
			fmt.Println("approved:", e.Approved)
		case agent.ToolCallFinished:
			fmt.Println(e.Tool, e.Status)
		case agent.Message:
			fmt.Printf("%s: %s\n", e.Role, e.Text)
		case agent.TurnEnd:
			fmt.Println("turn:", e.Outcome)
		}
	}
	// Output:
	// user: Write a.md.
	// waits: workspace_write {"content":"hi","path":"a.md"}
	// approved: true
	// workspace_write ok
	// assistant: I wrote a.md.
	// turn: answer
}
