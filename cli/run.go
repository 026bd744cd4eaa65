package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/agent/worldtools"
	"github.com/demiurge-dev/demiurge/examples"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/pgstore"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/tools"
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
	json         bool
	// requireApproval names the tools whose calls wait for the user;
	// approve is how they are answered: ask, always or never.
	requireApproval []string
	approve         string
	// approvalTimeout is how long a call waits for approval (0: as long
	// as it takes); then it is denied.
	approvalTimeout time.Duration
	// cassetteLoose answers from the cassette though a request differs.
	cassetteLoose bool
	// raw prints the model's text, tools' outputs and errors as they are,
	// control characters included (default: escaped, escapeControls).
	raw bool
	// worldChosen is whether --world was given: without it, a strict
	// cassette's run goes to a new world when the default one has a
	// session already (freshWorld).
	worldChosen bool
	// decide, if set, answers a call that waits (approve and deny)
	// instead of sending a message.
	decide *decision
}

// decision is what demiurge approve or deny answers.
type decision struct {
	call string
	agent.Decision
}

func newRunCommand(a *app, getenv func(string) string) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run MANIFEST [-m TEXT] [--world W] [--chat ID] [--llm PROVIDER|cassette:DIR]",
		Short: "Chat with the Demiurge agent of a world",
		Long: `Run the agent world at MANIFEST (examples/demiurge, or your own AIR built on
it) and chat with it: each line you type is a user message (a line editor:
arrows, history kept in the store's directory, a trailing \ goes on on the
next line); the model's text streams as it comes, a progress line says what
runs and for how long, each tool call shows its name, arguments, ok or error,
duration and the first lines of its result (all of it with -v, or /show N),
and each turn ends with its tokens and cost. Lines that start with / are
commands, never sent to the model: /help lists them (/tools, /model, /cost,
/trace, /show, /compact, /world, /quit). Esc or Ctrl-C during a turn stops
the turn (the journal records it; a second Ctrl-C within a second quits),
as the progress line says; what you type while a turn runs waits in the
next prompt. Ctrl-D, or Ctrl-C twice at the prompt, quits. With -m the
one message is sent, answered, and run exits (-m /compact runs the command,
as at the prompt, and -m "/show 3" shows a call of the chat's last turn,
needing no key as no model is called: the hint a -m run prints names
--world and --chat when they are not main; an unknown command exits 2; -m //TEXT
sends /TEXT); with stdin not a terminal
each line is a message, with no banner or prompts. A turn a killed
process left running is resumed first; one whose calls wait for approval
that this run cannot give is stopped by -m's message, and run says so
(--json: its turn_end, outcome stopped) before the new turn. --json
prints each turn's events as JSON Lines instead
(docs/run-json.schema.json).

--require-approval TOOL (repeatable; * for every tool) makes the chat's calls
of TOOL wait for your approval before they run (and calls of bash, which can
run TOOL as a command): --approve ask (the default) asks at the terminal
(y, n REASON, or a: always for this tool in this run; Ctrl-D says no and
the turn goes on, Ctrl-C stops the turn), or "demiurge approve"
or "deny" from another terminal answers, and run stops asking; without a
terminal the call waits in the world (run -m exits 5), and "demiurge approve"
or "deny" answers it, now or later (through the run that holds the store,
if one does). --approve always and never answer alone.
--approval-timeout D denies a call that waits longer than D: the deadline is
kept in the world, so a decision that comes later denies it too.

Everything is journaled in the store (--store) under world W (--world,
default main), chat ID (--chat, default main). Running again with the same
world continues the session; "demiurge replay" and "demiurge trace" show it.
A world that ran another MANIFEST runs this one from then on: the change is
recorded in its journal, and a note on stderr says so.

On a PostgreSQL store (--store postgres://…) the world runs on a worker
(demiurge worker): each message goes to the world's inbox, and the turn is
read from the journal as the worker runs it (run says so if no worker
holds the world). The chat keeps the API (--llm) and the model (--model)
that run names; the worker calls them at its own base URL with its own key
(the worker's --base-url and $OPENAI_API_KEY, $ANTHROPIC_API_KEY or
$GOOGLE_API_KEY; run needs none).

The model is reached through the API --llm names, by default the one of
its name: claude-* through Anthropic's Messages API (--llm anthropic, key
$ANTHROPIC_API_KEY, base URL $ANTHROPIC_BASE_URL, else
https://api.anthropic.com), gemini-* through the Gemini API (--llm gemini,
key $GOOGLE_API_KEY or $GEMINI_API_KEY, base URL $GOOGLE_GEMINI_BASE_URL,
else https://generativelanguage.googleapis.com), any other through the
OpenAI Responses API (--llm openai-responses) or Chat Completions (--llm
openai-chat) at --base-url (default $OPENAI_BASE_URL, else
https://api.openai.com/v1), with the API key from $OPENAI_API_KEY (none is
sent without a key: a local server needs none). An Azure OpenAI resource
is reached from its URL as base URL (https://NAME.openai.azure.com,
…/openai/v1 or …/openai/deployments/DEPLOYMENT), or from
$AZURE_OPENAI_ENDPOINT, with $AZURE_OPENAI_API_KEY and
$AZURE_OPENAI_API_VERSION (default v1).
--llm cassette:DIR answers from the model outputs recorded in a session
bundle instead (no network, no key), while the tools run for real: the
offline demo. Each model call must make the recorded request (the same
messages, tools and system prompt; tool outputs may name other hashes,
and this world where the recording names its own): one that does not
fails, showing what differs. A recording begins with a new world: without
--world, a world that already has a session is left as it is and the run
goes to the first of W-2, W-3, … that has none (run says which).
--cassette-loose answers it with the recorded answer all the same, with a
one-line warning naming what differs (-v logs the diff).

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
  5  a call waits for approval (demiurge approve or deny answers it):
     --approve ask without a terminal, or with --json; --approve never
     denies the call instead, and the turn goes on to end as above
  130  Esc or Ctrl-C stopped the turn
  143  SIGTERM (kill) stopped the turn, as Ctrl-C does

The agent's tools: introspect_* (the world's manifest, schemas, modules,
state, journal head), workspace_* (versioned files in the store), the tools
of the MCP servers the manifest declares (mcp_servers: started with the run,
named <server>_<tool> unless aliased; "demiurge mcp ls" lists them) and bash
(a sandboxed script in which every tool is a command).`,
		Example: `  # offline: the model's answers come from the demo session's recording
  demiurge run examples/demiurge --llm cassette:testdata/sessions/demo -m "Write a hello note and show it to me."
  # chat at the prompt, with $OPENAI_API_KEY set
  demiurge run examples/demiurge --model gpt-5-mini
  # Claude through Anthropic's API ($ANTHROPIC_API_KEY), Gemini through Google's ($GEMINI_API_KEY)
  demiurge run examples/demiurge --model claude-sonnet-5 -m "What does the manifest define?"
  demiurge run examples/demiurge --model gemini-3.5-flash -m "What does the manifest define?"
  # a local OpenAI-compatible server; another world and chat
  demiurge run examples/demiurge --llm openai-chat --base-url http://localhost:11434/v1 --model qwen3 --world w2 --chat review -m "What is in the workspace?"`,
		Args: wantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.manifest = args[0]
			a.raw = f.raw
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
	fl.StringVarP(&f.message, "message", "m", "", "send this one message, print the answer and exit")
	f.addFlags(cmd)
	return cmd
}

// addFlags adds the flags run, approve and deny share: the world and chat,
// the model, the limits, how the turn is shown.
func (f *runFlags) addFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.world, "world", defaultWorld, "the world's `NAME` in the store")
	fl.StringVar(&f.chat, "chat", defaultChat, "the chat's `ID` in the world")
	fl.StringVar(&f.llm, "llm", "", "the model's `PROVIDER`: openai-responses, openai-chat, anthropic, gemini, or cassette:DIR (default: by the model's name: claude-* anthropic, gemini-* gemini, else openai-responses)")
	fl.StringVar(&f.model, "model", "", "the model `NAME` (default $DEMIURGE_MODEL, else gpt-5-mini)")
	fl.StringVar(&f.baseURL, "base-url", "", "the API's base `URL` (default the provider's $OPENAI_BASE_URL, $ANTHROPIC_BASE_URL or $GOOGLE_GEMINI_BASE_URL)")
	fl.Uint64Var(&f.maxTokens, "max-tokens", 4096, "output tokens per model call")
	fl.Uint64Var(&f.maxRounds, "max-rounds", demiurge.DefaultMaxRounds, "model calls per user message")
	fl.Uint64Var(&f.maxRepeats, "max-repeats", demiurge.DefaultMaxRepeats, "times the same tool call may be made in a turn")
	fl.Uint64Var(&f.tokenBudget, "token-budget", 0, "tokens per turn (0: no budget)")
	fl.Uint64Var(&f.outputLimit, "output-limit", demiurge.DefaultOutputLimit, "bytes of a tool's output the model sees")
	fl.StringVar(&f.temperature, "temperature", "", "sampling temperature, e.g. 0.2 (default: the provider's)")
	fl.StringVar(&f.instructions, "instructions", "", "the system prompt (default: one built from the tools)")
	fl.BoolVar(&f.cassetteLoose, "cassette-loose", false, "with --llm cassette:DIR, answer a model call whose request is not the recorded one all the same, with a one-line warning; -v logs the diff (default: the call fails, showing what differs)")
	fl.BoolVar(&f.noStream, "no-stream", false, "ask the model for one whole answer, not a stream (for servers that cannot stream)")
	fl.StringArrayVar(&f.modelOptions, "model-option", nil, "override what demiurge knows of the model, as `KEY=VALUE` (repeatable): "+strings.Join(llm.ModelOptionKeys, ", "))
	fl.StringVar(&f.toolChoice, "tool-choice", "auto", "whether the model must call a tool in each message's first round: auto, none, required, or a tool's `NAME`")
	fl.DurationVar(&f.wait, "wait", 10*time.Minute, "how long one turn may take (then it is stopped)")
	fl.BoolVar(&f.raw, "raw", false, "print the model's text, tools' outputs and errors as they are, terminal control sequences included (default: shown escaped, as \\x1b)")
	fl.BoolVar(&f.json, "json", false, "print each turn's events as JSON Lines on stdout (see docs/agent.md, \"run --json\")")
	fl.StringArrayVar(&f.requireApproval, "require-approval", nil, "calls of the tool `NAME` wait for the user's approval before they run (repeatable; * for every tool)")
	fl.StringVar(&f.approve, "approve", "ask", "how calls that wait for approval are answered: ask (at the terminal; without one they wait for demiurge approve), always, or never")
	fl.DurationVar(&f.approvalTimeout, "approval-timeout", 0, "how long a call may wait for approval before it is denied, by the world's clock, e.g. 10m (0: as long as it takes)")
}

func (a *app) run(ctx context.Context, f *runFlags, getenv func(string) string) (err error) {
	choice, err := agent.ParseToolChoice(f.toolChoice)
	if err != nil {
		return usagef("--tool-choice: %v", err)
	}
	switch f.approve {
	case "ask", "always", "never":
	default:
		return usagef("--approve %q: want ask, always or never", f.approve)
	}
	if f.approvalTimeout < 0 {
		return usagef("--approval-timeout %s: want a duration of 0 or more", f.approvalTimeout)
	}
	m, err := f.agentModel(getenv)
	if err != nil {
		return err
	}
	// What is wrong with the command line is said before anything is
	// done: the MANIFEST, the cassette, then the model's key.
	// approve and deny get to the key once no process that runs the
	// world took the decision (another user's is said so before): the
	// rest of the turn runs here, and needs a key. A slash command that
	// calls no model (-m "/show 3") needs none: the world opens, and a
	// turn it would resume fails on the missing key (keyErr).
	var keyErr error
	if err := a.checkModel(f.command(), f.manifest, m, f.baseURL, getenv); err != nil {
		var ke *keyError
		if !errors.As(err, &ke) || !f.callsNoModel() {
			return err
		}
		keyErr, m.KeyLater = err, true
	}
	s, err := a.openStore(ctx, false)
	if err != nil {
		return err
	}
	defer closeStore(s, &err)
	st, err := storage(s)
	if err != nil {
		return err
	}
	// A slash command that calls no model (-m "/show 3") is about the
	// world the user ran: the cassette does not move it to a new one.
	if f.decide == nil && !f.callsNoModel() && !f.worldChosen && strings.HasPrefix(f.llm, "cassette:") && !f.cassetteLoose && s.Bolt() != nil {
		if f.world, err = freshWorld(ctx, a, s, f.world, strings.TrimPrefix(f.llm, "cassette:")); err != nil {
			return err
		}
	}
	if f.decide != nil { // approve and deny answer a world's calls: it must be there
		head, err := s.Journal().Head(ctx, f.world)
		if err != nil {
			return err
		}
		if head.Seq == 0 {
			return fmt.Errorf("%s: %w", f.command(), noRecords(ctx, s, f.world))
		}
	}
	var r *chatRun // the approver asks through it, once it exists
	var noWorker atomic.Bool
	where := agent.WithStorage(st)
	if pg := s.Postgres(); pg != nil {
		where = agent.WithRemote(pg) // a worker runs the world (demiurge worker)
		if strings.HasPrefix(f.llm, "cassette:") {
			// The worker that runs the world calls its own model: run's
			// cassette only names the recorded model for the chat.
			a.notef("on a PostgreSQL store the workers answer with their own --llm: %s names the chat's model only (for an offline run, start the workers with --llm %s)", f.llm, f.llm)
		}
		defer watchWorker(ctx, a, pg, f.world, noWorkerAfter, &noWorker)()
	}
	w, err := agent.Open(ctx, f.manifest, append([]agent.Option{
		where, agent.WithWorld(f.world), agent.WithModel(m), agent.WithLogger(a.log),
		agent.WithEnv(lookupEnv(getenv)), agent.WithReducers(examples.RegisterAll), agent.WithReducers(a.runWASM), agent.WithInstructions(f.instructions),
		agent.WithLimits(agent.Limits{MaxTokens: f.maxTokens, MaxRounds: f.maxRounds, MaxRepeats: f.maxRepeats,
			TokenBudget: f.tokenBudget, OutputLimit: f.outputLimit}),
		agent.WithClock(a.clock, a.entropy), agent.WithApprover(func(ctx context.Context, ar agent.ApprovalRequested) (agent.Decision, bool) {
			return r.approver(ctx, ar)
		})}, a.ext.agentOptions()...)...)
	if err != nil {
		var oe *agent.OpenError
		switch {
		case errors.As(err, &oe):
			return explainMissing(ctx, s, fmt.Errorf("open world %s: %w", oe.World, describe(oe.Err)))
		case errors.Is(err, agent.ErrTemperature):
			return usagef("--temperature: model %s does not take a temperature (it reasons); drop the flag, or say that it does with --model-option temperature=true", m.Name)
		}
		return fmt.Errorf("%s: %w", f.command(), err)
	}
	defer func() {
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}()
	a.noteMove(w.World(), f.manifest)
	a.rememberManifest(f.world, f.manifest)
	errOut := textOut(a.err, f.raw) // MCP servers' messages
	worldtools.ReportMCP(errOut, a.progName()+": warning: ", w.MCPServers())
	flushOut(errOut)
	if err := checkToolChoice(choice, w.Tools()); err != nil {
		return err
	}
	r = newChatRun(a, f, w, choice)
	r.keyErr = keyErr
	r.noWorker = &noWorker
	if b := s.Bolt(); b != nil {
		// Decisions that other processes send on calls that wait
		// (demiurge approve beside this run) come through the store's
		// socket: this process, the world's one writer, journals them.
		if err := b.HandleApprovals(r.remoteDecision); err == nil {
			defer b.HandleApprovals(nil)
		}
	}
	return r.run(ctx)
}

// freshWorld returns the world a strict cassette's run goes to when
// --world is not given: name if it has no records yet, else the first of
// name-2, name-3, … that has none, said on stderr. A cassette answers a
// run's k-th model call with the recording's k-th answer, only if the
// call's request is the recorded one; a recording starts from a new world,
// so in a world with a session already (the README's demo run a second
// time) its first call could never match: the transcript holds the earlier
// turns, the tools report another journal height. Running the demo again
// runs it again, in a world of its own.
func freshWorld(ctx context.Context, a *app, s *store.Handle, name, cassette string) (string, error) {
	for n := 1; ; n++ {
		w := name
		if n > 1 {
			w = fmt.Sprintf("%s-%d", name, n)
		}
		head, err := s.Journal().Head(ctx, w)
		if err != nil {
			return "", err
		}
		if head.Seq > 0 {
			continue
		}
		if n > 1 {
			a.notef("world %s already holds a session, and the cassette %s replays its recording from a new world: this run is world %s (give --world %s to trace or replay it; --world picks the world)",
				name, cassette, w, w)
		}
		return w, nil
	}
}

// checkToolChoice refuses --tool-choice NAME when the model is offered no
// tool NAME: each turn's first model call would fail on it.
func checkToolChoice(choice agent.ToolChoice, offered []tools.SpecTool) error {
	switch choice {
	case agent.ToolChoiceAuto, agent.ToolChoiceNone, agent.ToolChoiceRequired:
		return nil
	}
	names := make([]string, len(offered))
	for i, t := range offered {
		if t.Name == choice.String() {
			return nil
		}
		names[i] = t.Name
	}
	return usagef("--tool-choice %s: the model is offered no tool %s; want auto, none, required or one of: %s", choice, choice, strings.Join(names, ", "))
}

// command is the name of the command the flags are of: run, approve or
// deny.
func (f *runFlags) command() string {
	switch {
	case f.decide == nil:
		return "run"
	case f.decide.Approve:
		return "approve"
	}
	return "deny"
}

// keyError is checkModel's error for a model without a key.
type keyError struct{ err error }

func (e *keyError) Error() string { return e.err.Error() }
func (e *keyError) Unwrap() error { return e.err }

// checkModel checks, for command (run, serve, approve, deny), what would
// stop a world at manifest from running model m before the store is
// opened: a MANIFEST that is not there; a cassette (--llm cassette:DIR)
// that is no session bundle; a model without a key (checkAPIKey, a
// *keyError) — unless the manifest does not load, which is then what
// is said (the key would not have helped). On a PostgreSQL store a worker
// calls the model: no key is needed here.
func (a *app) checkModel(command, manifest string, m agent.Model, baseURL string, getenv func(string) string) error {
	if _, err := os.Stat(manifest); err != nil {
		return fmt.Errorf("%s: load AIR: %w", command, err)
	}
	if store.IsURL(a.storeDir) {
		return nil
	}
	if m.IsCassette() {
		if err := m.CheckCassette(); err != nil {
			return fmt.Errorf("%s: %w", command, err)
		}
		return nil
	}
	kerr := checkAPIKey(m.Provider, m.Name, baseURL, getenv)
	if kerr == nil {
		return nil
	}
	// Load the AIR (as validate does, without the store): an AIR that
	// does not load is the first thing to fix.
	noCache := a.noWASMCache
	a.noWASMCache = true
	_, lerr := a.loadCatalog(manifest)
	a.noWASMCache = noCache
	if lerr != nil {
		return fmt.Errorf("%s: %w", command, lerr)
	}
	return &keyError{fmt.Errorf("%s: %w", command, kerr)}
}

// callsNoModel reports whether run's -m is a slash command that calls no
// model (/show, /trace, /cost, …; /compact does).
func (f *runFlags) callsNoModel() bool {
	if f.decide != nil || !isCommand(f.message) {
		return false
	}
	name, _, _ := strings.Cut(strings.TrimSpace(f.message), " ")
	return name != "/compact"
}

// checkAPIKey refuses a model that could not be reached: a remote API
// (no --base-url nor the provider's base URL variable) without a key. A
// cassette needs none, nor does a server at a base URL (a local one may
// take none; one that wants a key answers 401, which says so). provider
// "" is the model's by its name.
func checkAPIKey(provider, model, baseURL string, getenv func(string) string) error {
	if strings.HasPrefix(provider, "cassette:") {
		return nil
	}
	if provider == "" {
		provider = llm.ProviderFor(model)
	}
	if baseURL == "" {
		baseURL = getenv(llm.BaseURLEnv(provider))
	}
	for _, k := range llm.KeyEnv(provider) {
		if getenv(k) != "" {
			return nil
		}
	}
	switch provider {
	case llm.ProviderAnthropic, llm.ProviderGemini:
		if baseURL == "" {
			return fmt.Errorf("no API key: set %s for model %s (or point --base-url at a server that speaks its API, or use --llm cassette:DIR for the offline demo)", strings.Join(llm.KeyEnv(provider), " or "), model)
		}
		return nil
	}
	if getenv("AZURE_OPENAI_API_KEY") == "" && baseURL == "" && getenv("AZURE_OPENAI_ENDPOINT") == "" {
		return errors.New("no API key: set OPENAI_API_KEY (or point --base-url at an OpenAI-compatible server, or use --llm cassette:DIR for the offline demo)")
	}
	return nil
}

// agentModel is the model the flags and the environment name.
func (f *runFlags) agentModel(getenv func(string) string) (agent.Model, error) {
	if f.cassetteLoose && !strings.HasPrefix(f.llm, "cassette:") {
		return agent.Model{}, usagef("--cassette-loose: only with --llm cassette:DIR")
	}
	m, err := modelOf(f.llm, f.model, f.baseURL, f.modelOptions, f.temperature, f.noStream, getenv)
	if err == nil && f.cassetteLoose {
		m = m.Loose()
	}
	return m, err
}

// modelOf is the model of the flags --llm, --model, --base-url,
// --model-option, --temperature and --no-stream.
func modelOf(provider, model, baseURL string, options []string, temperature string, noStream bool, getenv func(string) string) (agent.Model, error) {
	name := model
	if name == "" {
		name = getenv("DEMIURGE_MODEL")
	}
	if name == "" {
		name = agent.DefaultModel
	}
	var m agent.Model
	switch {
	case strings.HasPrefix(provider, "cassette:"):
		m = agent.Cassette(strings.TrimPrefix(provider, "cassette:"))
		m.Name = model // the cassette answers whatever the model is called
	case provider == "" || llm.IsProvider(provider):
		m = agent.Model{Name: name, Provider: provider, BaseURL: baseURL}
	default:
		return m, usagef("--llm %q: want %s or cassette:DIR", provider, strings.Join(llm.Providers(), ", "))
	}
	m.Temperature, m.NoStream = temperature, noStream
	if len(options) > 0 {
		o := llm.ModelOptions{Match: name}
		for _, kv := range options {
			if err := o.ParseModelOption(kv); err != nil {
				return m, usagef("--model-option: %v", err)
			}
		}
		m.Options = append(m.Options, o)
	}
	return m, nil
}

// noWorkerAfter is how long run waits for a worker to hold its world
// before it says that none does, and how often it looks again.
const noWorkerAfter = 3 * time.Second

// watchWorker says on stderr when no worker holds world name of the
// PostgreSQL store pg, looking every d (first after d): a run's message
// waits in the world's inbox until one takes it, which would otherwise
// look like a hang (no worker started yet, or the only one died). Once a
// worker takes the world again (looking every d/10 meanwhile), it says
// which. While none holds it, noWorker is set (the progress line says so
// instead of waiting for the model). The returned func stops watching.
func watchWorker(ctx context.Context, a *app, pg *pgstore.Store, name string, d time.Duration, noWorker *atomic.Bool) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The progress line says at once that no worker holds the world;
		// stderr says it only after d (a worker may be about to take it).
		t := time.NewTimer(0)
		defer t.Stop()
		since := time.Now()
		said := false // that no worker holds the world, on stderr
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			owner, ok := holder(ctx, pg, name)
			switch {
			case !ok: // the run itself reports what is wrong with the store
			case owner == "":
				noWorker.Store(true)
				if !said && time.Since(since) >= d {
					said = true
					a.notef("no worker holds world %s of %s: the message waits in its inbox until one takes it (start one: demiurge worker --store …)", name, a.storeName())
				}
			default:
				noWorker.Store(false)
				if said {
					said = false
					a.notef("worker %s took world %s", owner, name)
				}
			}
			if noWorker.Load() { // look more often for the worker that takes it
				t.Reset(d / 10)
			} else {
				t.Reset(d)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// holder returns the worker whose lease on world name is live, "" if
// none, and false if the store could not say.
func holder(ctx context.Context, pg *pgstore.Store, name string) (string, bool) {
	worlds, err := pg.Worlds(ctx)
	if err != nil {
		return "", false
	}
	now, err := pg.Now(ctx)
	if err != nil {
		return "", false
	}
	for _, wi := range worlds {
		if wi.World == name && wi.Owner != "" && wi.Expires.After(now) {
			return wi.Owner, true
		}
	}
	return "", true
}
