// Package agent is the door to demiurge for programs that embed it, and
// for the demiurge command, which is a shell over it: open an agent
// world, give it a model and tools, and chat with it, every step
// journaled and replayable.
//
// # Opening a world
//
// An agent world is one whose AIR has the chat module demiurge/Chat@2
// (examples/demiurge is one; copy it and add your own defs). The manifest
// is a path, relative to the working directory: a program outside this
// repository passes the path of its copy. Open loads the AIR, opens or
// creates the world in its store, starts the MCP servers the manifest
// declares, and returns a World; Close stops it:
//
//	w, err := agent.Open(ctx, "examples/demiurge",
//		agent.WithDir(".demiurge"),                         // a store on disk; default: memory
//		agent.WithModel(agent.Model{Name: "gpt-5-mini"}),   // $OPENAI_API_KEY, $OPENAI_BASE_URL
//		agent.WithTools(getWeather))                        // the program's own tools
//	if err != nil { ... }
//	defer w.Close()
//
// Everything that is wrong is an error that says what and where (AIR that
// does not load, a world without a chat module, a model without a key, a
// tool whose definition is wrong), and leaves the store as it was.
//
// The model is a Model: OpenAI's Responses API (the default), Chat
// Completions for other OpenAI-compatible servers (Provider), an Azure
// OpenAI resource (its URL as BaseURL), or Cassette(dir), which answers
// from a recorded session: tests and the offline demo run without a
// network. What each request holds (the token-limit field, temperature,
// reasoning) follows what demiurge knows of the model (package
// adapters/llm), which Model.Options override.
//
// # Tools
//
// The model has the world's built-in tools as its manifest grants them:
// introspect_* (read the world), workspace_* (versioned files in the
// store), bash (a sandboxed script in which every other tool is a command,
// and the workspace is the file system), and the tools of its MCP servers.
// WithTools adds the program's own: any tools.Tool, or one made by Func
// from a Go function (its input schema inferred from the input type) or by
// FromDef from the bash tool's command definitions. A program's tool is a
// tool the model calls by itself and a command of its bash scripts,
// checked against its schema and journaled like the built-in ones. It runs
// as a custom.call effect (sys/custom.call@1) under the cap sys/custom@1,
// which the manifest grants once (examples/demiurge's tool plan routes the
// tool family "custom" there): the manifest stays the same whatever tools
// a program registers, and a grant's tools_allow still limits them.
//
// # Chats and events
//
// World.Chat returns a chat by id (created by its first message);
// ChatOptions set its settings (AllowTools, DefaultToolChoice, UseModel,
// RequireApproval). Chat.Send sends a message and returns the turn as an
// iter.Seq2[Event, error]: TextDelta as the model streams, Message,
// ModelCall (usage, cost), ToolCallStarted and ToolCallFinished,
// ApprovalRequested and ApprovalDecided, Notice, Compacted, GuardStop,
// TurnError, and last TurnEnd, yielded once the turn's records are
// committed. Every event but TextDelta comes from a journal record and
// carries its seq; MarshalEvent writes the JSON form `demiurge run --json`
// prints.
//
//	for e, err := range w.Chat("main").Send(ctx, "What's the weather in Paris?") {
//		if err != nil { ... }
//		switch e := e.(type) {
//		case agent.TextDelta:
//			fmt.Print(e.Text)
//		case agent.ToolCallFinished:
//			fmt.Println(e.Tool, e.Status)
//		case agent.TurnEnd:
//			fmt.Println(e.Outcome, e.Usage, e.CostMicroUSD)
//		}
//	}
//
// Cancelling the context, or breaking out of the loop, stops the turn: the
// chat records that the user stopped it, so that it is not taken up again.
// Chat.Follow follows a turn a process left running (its effects run again
// when the world reopens); Chat.Compact summarizes the oldest part of the
// transcript now. Chat.Watch only watches a turn, from its start, wherever
// it runs: the same events for every watcher, from the journal and then as
// they are committed; it stops nothing when its reader goes away, so a
// server resumes with it a stream a client lost.
//
// # Approvals
//
// Calls of the tools RequireApproval names wait for the user, durably in
// the world. An Approver (WithApprover) answers them as they come; without
// one the turn's stream ends with OutcomeAwaitingApproval, Chat.Pending
// lists what waits, and Chat.Decide answers, from this process or another,
// now or after a restart. Chat.Answer journals a decision without following
// the turn: what the process that runs the world does with one another
// process sends it (demiurge approve beside a demiurge run); an approver
// still waiting for that call is then called off (its context ends) and
// the turn's stream goes on with the decision.
// ApprovalTimeout bounds the wait: the call's deadline is kept in the
// world (ApprovalRequested.Deadline), the approver is asked with a context
// that ends there, and a call nobody answered in time is denied
// (ApprovalDecided.TimedOut), also when the answer comes later from
// elsewhere.
//
// A program whose decisions come from elsewhere (a web form that calls
// Chat.Answer, demiurge approve, the timeout) makes its chat await
// approval: with AwaitApproval, Send's, Decide's and Follow's streams stay
// open while calls wait, yield each ApprovalRequested once, then the
// ApprovalDecided and the rest of the turn as the decision lands, and end
// with the turn, or with ctx (then as awaiting approval, the turn still
// waiting in the world):
//
//	c := w.Chat("main", agent.RequireApproval("bash"), agent.AwaitApproval())
//	for e, err := range c.Follow(ctx) { ... } // another goroutine calls c.Answer
//
// A stream that picks up a turn it did not start (Follow after a restart,
// Decide) still ends with the whole turn's usage and cost in TurnEnd.
//
// # Testing a program that embeds the agent
//
// Record a session once (against a fake model such as adapters/llm/llmtest,
// or a real one), export it with World.Export, and keep it under
// testdata: replaytest.CheckGolden replays it byte for byte with the code
// as it is (a divergence shows what differs, a state by field; its first
// run with update set writes the bundle's trace.txt), and
// Cassette(dir) runs the program against its model answers. The cassette
// is strict: a model call whose request is not the recorded one (another
// message, other tools) fails, showing what differs; CassetteLoose
// answers it all the same, with a Notice. examples/embed does both.
//
// # Forks
//
// World.Fork makes a new world of the first records of a world (checked
// by replay as they are copied, up to the end of a step) and opens it: it
// goes on from there with another message, model or options, and its
// journal says where it came from (world.Fork, demiurge fork).
//
// # More than one machine
//
// With WithRemote, a chat reaches a world of a PostgreSQL store that
// workers run (cluster.Worker, demiurge worker); ClusterOpen gives the
// workers the same runtime Open gives a world in this process.
package agent
