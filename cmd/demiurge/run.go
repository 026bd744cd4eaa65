package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/examples"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
)

// runFlags are the flags of demiurge run.
type runFlags struct {
	worldFlags
	chat         string
	message      string
	llm          string
	model        string
	baseURL      string
	maxTokens    uint64
	maxRounds    uint64
	maxRepeats   uint64
	tokenBudget  uint64
	outputLimit  uint64
	temperature  string
	instructions string
	noStream     bool
	modelOptions []string
	toolChoice   string
	wait         time.Duration
}

func newRunCommand(a *app, getenv func(string) string) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run MANIFEST [-m TEXT] [--world W] [--chat ID] [--llm PROVIDER|cassette:DIR]",
		Short: "Chat with the Demiurge agent of a world",
		Long: `Run the agent world at MANIFEST (examples/demiurge, or your own AIR built on
it) and chat with it: each line you type is a user message; the model's text
streams as it comes, each tool call shows its name, arguments, ok or error
and duration, and each turn ends with its tokens and cost. /compact
summarizes the oldest part of the transcript now (the chat does so by
itself when a request would fill most of the model's window). /quit or Ctrl-C
stops cleanly; the journal keeps everything. With -m the one message is
sent, answered, and run exits.

Everything is journaled in the store (--store) under world W (--world,
default main), chat ID (--chat, default main). Running again with the same
world continues the session; "demiurge replay" and "demiurge trace" show it.

The model is reached through the OpenAI Responses API (--llm
openai-responses, the default) or Chat Completions (--llm openai-chat) at
--base-url (default $OPENAI_BASE_URL, else https://api.openai.com/v1), with
the API key from $OPENAI_API_KEY (none is sent without it: a local server
needs none). An Azure OpenAI resource is reached from its URL as base URL
(https://NAME.openai.azure.com, …/openai/v1 or
…/openai/deployments/DEPLOYMENT), or from $AZURE_OPENAI_ENDPOINT, with
$AZURE_OPENAI_API_KEY and $AZURE_OPENAI_API_VERSION (default v1).
--llm cassette:DIR answers from the model outputs recorded in a session
bundle instead (no network, no key), while the tools run for real: the
offline demo.

What is sent follows what demiurge knows of the model (docs/agent.md,
"Models"): the token-limit field, whether it takes a temperature, a
reasoning effort, encrypted reasoning, and its reasoning sent back; its
prices give each turn's cost. A model it does not know gets a
conservative default and "cost unknown". --model-option KEY=VALUE
overrides any of it (repeatable; also the manifest's "models").

With -m, the exit code says how the turn ended:
  0  the model answered (a refusal is an answer)
  1  a failure ended the turn (the model call failed, a tool run failed)
  3  a guard stopped the turn (max_rounds, max_repeats, token_budget)
  4  the answer is incomplete: cut by the output token limit or a
     content filter

The agent's tools: introspect_* (the world's manifest, schemas, modules,
state, journal head), workspace_* (versioned files in the store), the tools
of the MCP servers the manifest declares (mcp_servers: started with the run,
named <server>_<tool> unless aliased; "demiurge mcp ls" lists them) and bash
(a sandboxed script in which every tool is a command).`,
		Example: `  # offline: the model's answers come from the demo session's recording
  demiurge run examples/demiurge --llm cassette:testdata/sessions/demo -m "Write a hello note and show it to me."
  # chat at the prompt, with $OPENAI_API_KEY set
  demiurge run examples/demiurge --model gpt-5-mini
  # a local OpenAI-compatible server; another world and chat
  demiurge run examples/demiurge --llm openai-chat --base-url http://localhost:11434/v1 --model qwen3 --world w2 --chat review -m "What is in the workspace?"`,
		Args: wantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.manifest = args[0]
			if err := f.validate(cmd); err != nil {
				return err
			}
			if err := f.check(true); err != nil {
				return err
			}
			return a.run(cmd.Context(), f, getenv)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.world, "world", defaultWorld, "the world's `NAME` in the store")
	fl.StringVar(&f.chat, "chat", "main", "the chat's `ID` in the world")
	fl.StringVarP(&f.message, "message", "m", "", "send this one message, print the answer and exit")
	fl.StringVar(&f.llm, "llm", llm.ProviderResponses, "the model's `PROVIDER`: openai-responses, openai-chat, or cassette:DIR")
	fl.StringVar(&f.model, "model", "", "the model `NAME` (default $DEMIURGE_MODEL, else gpt-5-mini)")
	fl.StringVar(&f.baseURL, "base-url", "", "the API's base `URL` (default $OPENAI_BASE_URL)")
	fl.Uint64Var(&f.maxTokens, "max-tokens", 4096, "output tokens per model call")
	fl.Uint64Var(&f.maxRounds, "max-rounds", demiurge.DefaultMaxRounds, "model calls per user message")
	fl.Uint64Var(&f.maxRepeats, "max-repeats", demiurge.DefaultMaxRepeats, "times the same tool call may be made in a turn")
	fl.Uint64Var(&f.tokenBudget, "token-budget", 0, "tokens per turn (0: no budget)")
	fl.Uint64Var(&f.outputLimit, "output-limit", demiurge.DefaultOutputLimit, "bytes of a tool's output the model sees")
	fl.StringVar(&f.temperature, "temperature", "", "sampling temperature, e.g. 0.2 (default: the provider's)")
	fl.StringVar(&f.instructions, "instructions", "", "the system prompt (default: one built from the tools)")
	fl.BoolVar(&f.noStream, "no-stream", false, "ask the model for one whole answer, not a stream (for servers that cannot stream)")
	fl.StringArrayVar(&f.modelOptions, "model-option", nil, "override what demiurge knows of the model, as `KEY=VALUE` (repeatable): "+strings.Join(llm.ModelOptionKeys, ", "))
	fl.StringVar(&f.toolChoice, "tool-choice", "auto", "whether the model must call a tool in each message's first round: auto, none, required, or a tool's `NAME`")
	fl.DurationVar(&f.wait, "wait", 10*time.Minute, "how long one turn may take (then it is stopped)")
	return cmd
}

// chatRun is a chat at the terminal: it sends the user's messages and
// prints their turns' events.
type chatRun struct {
	a      *app
	f      *runFlags
	w      *agent.World
	chat   *agent.Chat
	choice agent.ToolChoice

	streamed bool            // text was streamed in this model call
	started  map[string]bool // calls requested (their results are timed)
}

func (a *app) run(ctx context.Context, f *runFlags, getenv func(string) string) (err error) {
	choice, err := agent.ParseToolChoice(f.toolChoice)
	if err != nil {
		return usagef("--tool-choice: %v", err)
	}
	m, err := f.agentModel(getenv)
	if err != nil {
		return err
	}
	s, err := a.openStore(false)
	if err != nil {
		return err
	}
	defer closeStore(s, &err)
	st, err := storage(s)
	if err != nil {
		return err
	}
	w, err := agent.Open(ctx, f.manifest,
		agent.WithStorage(st), agent.WithWorld(f.world), agent.WithModel(m), agent.WithLogger(a.log),
		agent.WithEnv(lookupEnv(getenv)), agent.WithReducers(examples.RegisterAll), agent.WithInstructions(f.instructions),
		agent.WithLimits(agent.Limits{MaxTokens: f.maxTokens, MaxRounds: f.maxRounds, MaxRepeats: f.maxRepeats,
			TokenBudget: f.tokenBudget, OutputLimit: f.outputLimit}),
		agent.WithClock(a.clock, a.entropy))
	if err != nil {
		var oe *agent.OpenError
		switch {
		case errors.As(err, &oe):
			return explainMissing(ctx, s, fmt.Errorf("open world %s: %w", oe.World, describe(oe.Err)))
		case errors.Is(err, agent.ErrTemperature):
			return usagef("--temperature: model %s does not take a temperature (it reasons); drop the flag, or say that it does with --model-option temperature=true", m.Name)
		}
		return fmt.Errorf("run: %w", err)
	}
	defer func() {
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}()
	agent.ReportMCP(a.err, w.MCPServers())
	r := &chatRun{a: a, f: f, w: w, chat: w.Chat(f.chat), choice: choice, started: map[string]bool{}}
	if f.message != "" {
		outcome, err := r.say(ctx, f.message)
		if err != nil {
			return err
		}
		if code := exitCode(outcome); code != exitOK {
			return &exitStatus{code: code}
		}
		return nil
	}
	return r.repl(ctx)
}

// agentModel is the model the flags and the environment name.
func (f *runFlags) agentModel(getenv func(string) string) (agent.Model, error) {
	name := f.model
	if name == "" {
		name = getenv("DEMIURGE_MODEL")
	}
	if name == "" {
		name = agent.DefaultModel
	}
	var m agent.Model
	switch {
	case strings.HasPrefix(f.llm, "cassette:"):
		m = agent.Cassette(strings.TrimPrefix(f.llm, "cassette:"))
		m.Name = f.model // the cassette answers whatever the model is called
	case f.llm == llm.ProviderResponses || f.llm == llm.ProviderChat:
		m = agent.Model{Name: name, Provider: f.llm, BaseURL: f.baseURL}
	default:
		return m, usagef("--llm %q: want openai-responses, openai-chat or cassette:DIR", f.llm)
	}
	m.Temperature, m.NoStream = f.temperature, f.noStream
	if len(f.modelOptions) > 0 {
		o := llm.ModelOptions{Match: name}
		for _, kv := range f.modelOptions {
			if err := o.ParseModelOption(kv); err != nil {
				return m, usagef("--model-option: %v", err)
			}
		}
		m.Options = append(m.Options, o)
	}
	return m, nil
}

// Exit codes of run -m beyond those of every command (see root.go).
const (
	exitGuardStop  = 3 // a guard stopped the turn
	exitIncomplete = 4 // the answer was cut off
)

// exitCode is the exit code of run -m for a turn that ended so.
func exitCode(o agent.Outcome) int {
	switch o {
	case agent.OutcomeAnswer:
		return exitOK
	case agent.OutcomeStopped:
		return exitGuardStop
	case agent.OutcomeCut:
		return exitIncomplete
	}
	return exitFailure
}

// say sends one user message, prints its turn, and says how it ended.
func (r *chatRun) say(ctx context.Context, text string) (agent.Outcome, error) {
	wctx, cancel := context.WithTimeout(ctx, r.f.wait)
	defer cancel()
	var opts []agent.SendOption
	if r.choice != agent.ToolChoiceAuto {
		opts = append(opts, agent.WithToolChoice(r.choice))
	}
	end, err := r.show(wctx, r.chat.Send(wctx, text, opts...))
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return end.Outcome, fmt.Errorf("run: the turn took longer than --wait %s; it was stopped", r.f.wait)
	}
	return end.Outcome, err
}

// show prints a turn's events, then what it used, and returns its end.
func (r *chatRun) show(ctx context.Context, turn iter.Seq2[agent.Event, error]) (agent.TurnEnd, error) {
	var end agent.TurnEnd
	for e, err := range turn {
		if err != nil {
			return end, err
		}
		if te, ok := e.(agent.TurnEnd); ok {
			end = te
		}
		r.print(e)
	}
	fmt.Fprintf(r.a.out, "  [%s]\n", usageLine(end))
	return end, nil
}

// compact asks the chat to compact its transcript now (/compact).
func (r *chatRun) compact(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, r.f.wait)
	defer cancel()
	if r.w.Module() != demiurge.ModuleName {
		fmt.Fprintf(r.a.out, "  this world's chat (%s) cannot compact; %s can\n", r.w.Module(), demiurge.ModuleName)
		return nil
	}
	_, err := r.show(wctx, r.chat.Compact(wctx))
	return err
}

// usageLine says what a turn's model calls used and cost: "1200 tokens
// in (200 cached), 300 out (0 reasoning), $0.0042".
func usageLine(e agent.TurnEnd) string {
	u := e.Usage
	tokens := fmt.Sprintf("%d tokens in (%d cached), %d out (%d reasoning)", u.Prompt, u.Cached, u.Completion, u.Reasoning)
	if e.UsageUnknown > 0 {
		tokens += fmt.Sprintf(", usage unknown for %d call(s): the provider reported none", e.UsageUnknown)
	}
	return tokens + ", " + costText(e.CostMicroUSD, e.CostUnknown > 0)
}

// repl reads messages from stdin until /quit, EOF or Ctrl-C.
func (r *chatRun) repl(ctx context.Context) error {
	in := bufio.NewScanner(r.a.in)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	fmt.Fprintf(r.a.out, "demiurge: world %s, chat %s. Type a message; /quit to stop.\n", r.f.world, r.chat.ID())
	lines := make(chan string)
	go func() {
		defer close(lines)
		for in.Scan() {
			lines <- in.Text()
		}
	}()
	for {
		fmt.Fprint(r.a.out, "> ")
		var line string
		var ok bool
		select {
		case line, ok = <-lines:
		case <-ctx.Done():
			fmt.Fprintln(r.a.out)
			return nil
		}
		if !ok {
			fmt.Fprintln(r.a.out)
			return nil
		}
		line = strings.TrimSpace(line)
		switch line {
		case "":
			continue
		case "/quit", "/exit":
			return nil
		case "/compact":
			if err := r.compact(ctx); err != nil {
				return err
			}
			continue
		}
		if _, err := r.say(ctx, line); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// roundDuration formats d to a precision that fits it: 2ms, 0.35ms, 41µs.
func roundDuration(d time.Duration) string {
	switch {
	case d >= time.Millisecond:
		return d.Round(time.Millisecond).String()
	case d >= 100*time.Microsecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
	return d.Round(time.Microsecond).String()
}

// print prints one event of a turn.
func (r *chatRun) print(e agent.Event) {
	out := r.a.out
	switch e := e.(type) {
	case agent.TextDelta:
		if !r.streamed {
			fmt.Fprint(out, "\n")
		}
		r.streamed = true
		fmt.Fprint(out, e.Text)
	case agent.Message:
		switch {
		case e.Role == "user":
			if r.f.message != "" {
				fmt.Fprintf(out, "> %s\n", e.Text)
			}
		case r.streamed:
			fmt.Fprint(out, "\n")
		default:
			fmt.Fprintf(out, "\n%s\n", e.Text)
		}
		if e.Role == "assistant" {
			r.streamed = false
		}
	case agent.ToolCallStarted:
		switch e.Status {
		case "requested":
			r.started[e.CallID] = true
			fmt.Fprintf(out, "  → %s %s\n", e.Tool, clipLine(e.Arguments, 160))
		case "rejected":
			fmt.Fprintf(out, "  ✗ %s %s (rejected before running)\n", e.Tool, clipLine(e.Arguments, 160))
		case "cut":
			fmt.Fprintf(out, "  ✗ %s %s (cut off with the reply; not run)\n", e.Tool, clipLine(e.Arguments, 160))
		default:
			fmt.Fprintf(out, "  · %s %s (%s)\n", e.Tool, clipLine(e.Arguments, 160), e.Status)
		}
	case agent.ToolCallFinished:
		d := ""
		if r.started[e.CallID] {
			d = " in " + roundDuration(e.Duration)
			delete(r.started, e.CallID)
		}
		if e.Status == "ok" {
			fmt.Fprintf(out, "  ✓ %s%s (%d bytes)\n", e.Tool, d, e.Size)
		} else {
			fmt.Fprintf(out, "  ✗ %s %s%s: %s\n", e.Tool, e.Status, d, clipLine(statusDetail(e.Status, e.Output), 200))
		}
	case agent.Notice:
		fmt.Fprintf(out, "  ! %s\n", e.Text)
	case agent.Compacted:
		fmt.Fprintf(out, "  ⇢ %s\n", e.Text)
	case agent.GuardStop:
		fmt.Fprintf(out, "  ■ turn stopped: %s\n", e.Reason)
	case agent.TurnError:
		r.streamed = false
		fmt.Fprintf(out, "  ✗ %s\n", e.Text)
	case agent.TurnEnd:
		r.streamed = false
		switch f := e.Finish; f {
		case "":
		case "stop":
			fmt.Fprintf(out, "  — %s\n", e.Summary)
		case "refusal":
			fmt.Fprintf(out, "  — the model refused; %s\n", e.Summary)
		default:
			fmt.Fprintf(out, "  ✗ the answer is incomplete: %s; %s\n", finishText(f), e.Summary)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func clipLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ⏎ ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
