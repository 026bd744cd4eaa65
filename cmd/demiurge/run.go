package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
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
		Args: wantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.manifest = args[0]
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
	fl.DurationVar(&f.wait, "wait", 10*time.Minute, "how long one turn may take")
	return cmd
}

// chatWorld is the world a chat talks to: open in this process
// (*world.World), or run by a worker (*cluster.Remote).
type chatWorld interface {
	SendJSON(ctx context.Context, schemaName string, js []byte) (journal.Head, error)
	WaitIdle(ctx context.Context) error
	State(module string, key schema.Value) (schema.Value, cas.Ref, bool)
}

// agent is a running chat.
type agent struct {
	a     *app
	f     *runFlags
	w     chatWorld
	st    world.Storage
	chat  string
	shown uint64 // entries of the chat's timeline printed (see demiurge.StateView.Since)
	// module and event are the chat module of the world's manifest and
	// the event schema it takes (demiurge/Chat@2 takes ChatEvent@2).
	module, event string
	// model is what is known of the chat's model: its window and what to
	// do when a request would not fit go into the settings.
	model llm.Model

	// newSettings, if set, go with the next message: the chat's tools
	// changed since it began.
	newSettings map[string]any

	mu        sync.Mutex
	streamed  bool // text was streamed in this model call
	callStart map[string]time.Time
}

func (a *app) run(ctx context.Context, f *runFlags, getenv func(string) string) (err error) {
	cat, err := loadCatalog(f.manifest)
	if err != nil {
		return err
	}
	module, ok := demiurge.ModuleIn(func(n string) bool { _, ok := cat.Module(n); return ok })
	if !ok {
		return fmt.Errorf("run: %s is not an agent world: it has no module %s (see examples/demiurge)", f.manifest, demiurge.ModuleName)
	}
	def, _ := cat.Module(module)
	if def.Reducer == nil {
		return fmt.Errorf("run: %s: module %s is not a reducer", f.manifest, module)
	}
	remote := store.IsURL(a.storeDir) // the world's worker calls the model
	ms, err := newModelSetup(cat, modelFlags{llm: f.llm, model: f.model, baseURL: f.baseURL, options: f.modelOptions}, getenv, a.log, "run", !remote)
	if err != nil {
		return err
	}
	model, provider, known := ms.model, ms.provider, ms.known
	if m := known; f.temperature != "" && ms.checkTemperature && !m.Temperature {
		return usagef("--temperature: model %s does not take a temperature (it reasons); drop the flag, or say that it does with --model-option temperature=true", model)
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
	ag := &agent{a: a, f: f, st: st, chat: f.chat, callStart: map[string]time.Time{}, module: module, event: def.Reducer.Event, model: known}
	if pg := s.Postgres(); pg != nil {
		return ag.runRemote(ctx, pg, cat, getenv, provider, model)
	}
	progress := ag.progress
	if f.noStream {
		progress = nil // the adapter then asks for one whole answer
	}
	kit, err := newToolKit(ctx, f.world, cat, st, mcpEnv{getenv: lookupEnv(getenv), manifest: f.manifest, log: a.log})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := kit.close(); err == nil {
			err = cerr
		}
	}()
	reportMCP(a.err, kit.mcp)
	adapters := adapters()
	for k, v := range kit.adapters {
		adapters[k] = v
	}
	adapters["llm.generate"] = ms.adapter
	w, err := world.Open(ctx, world.Options{
		Name: f.world, Catalog: cat, Reducers: newRegistry(), Storage: st, Adapters: adapters, Logger: a.log,
		Dispatch: effects.DispatcherOptions{Getenv: ms.getSecret, Progress: progress, TimeoutFor: kit.timeoutFor},
		OnCommit: ag.commit,
	})
	if err != nil {
		return explainMissing(ctx, s, fmt.Errorf("open world %s: %w", f.world, describe(err)))
	}
	defer func() {
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}()
	ag.w = w
	kit.bind(w)
	return ag.talk(ctx, kit, provider, model)
}

// talk sets the chat up and talks: one message (-m) or a prompt.
func (ag *agent) talk(ctx context.Context, kit *toolKit, provider, model string) error {
	settings, err := ag.settings(ctx, kit, provider, model)
	if err != nil {
		return err
	}
	if err := ag.ensureChat(ctx, settings); err != nil {
		return err
	}
	f := ag.f
	if f.message != "" {
		outcome, err := ag.say(ctx, f.message)
		if err != nil {
			return err
		}
		if code := outcome.exitCode(); code != exitOK {
			return &exitStatus{code: code}
		}
		return nil
	}
	return ag.repl(ctx)
}

// settings stores the tools blob and returns the chat's settings.
func (ag *agent) settings(ctx context.Context, kit *toolKit, provider, model string) (map[string]any, error) {
	blob, err := kit.spec().Encode()
	if err != nil {
		return nil, err
	}
	ref, err := ag.st.CAS().Put(ctx, blob)
	if err != nil {
		return nil, err
	}
	instructions := ag.f.instructions
	if instructions == "" {
		instructions = kit.systemPrompt()
	}
	s := map[string]any{
		"provider": provider, "model": model, "max_tokens": ag.f.maxTokens, "tools_ref": ref.String(),
		"instructions": instructions, "max_rounds": ag.f.maxRounds, "max_repeats": ag.f.maxRepeats,
		"output_limit": ag.f.outputLimit,
	}
	if ag.module == demiurge.ModuleName {
		// Chat@2 names the system prompt by ref: it is not written into
		// every state and request of the chat.
		iref, err := ag.st.CAS().Put(ctx, []byte(instructions))
		if err != nil {
			return nil, err
		}
		delete(s, "instructions")
		s["instructions_ref"] = iref.String()
	}
	if ag.f.temperature != "" {
		s["temperature"] = ag.f.temperature
	}
	if ag.f.tokenBudget > 0 {
		s["token_budget"] = ag.f.tokenBudget
	}
	if ag.module == demiurge.ModuleName { // Chat@1's settings have none of these
		m := ag.model
		if m.ContextWindow > 0 {
			s["context_window"] = m.ContextWindow
		}
		if m.CompactAt > 0 {
			s["compact_at"] = m.CompactAt
		}
		if m.OnOverflow != "" {
			s["on_overflow"] = m.OnOverflow
		}
	}
	return s, nil
}

// state returns the chat's state, if the chat exists.
func (ag *agent) state() (*demiurge.StateView, bool) {
	v, _, ok := ag.w.State(ag.module, ag.chat)
	if !ok {
		return nil, false
	}
	var st demiurge.StateView
	if err := reducer.ToGo(v, &st); err != nil {
		return nil, false
	}
	return &st, true
}

func (ag *agent) send(ctx context.Context, tag string, value map[string]any) error {
	js, err := json.Marshal(map[string]any{tag: value})
	if err != nil {
		return err
	}
	_, err = ag.w.SendJSON(ctx, ag.event, js)
	return err
}

func (ag *agent) ensureChat(ctx context.Context, settings map[string]any) error {
	if st, ok := ag.state(); ok {
		_, ag.shown = st.Since(0)
		window, _ := settings["context_window"].(uint64)
		if set := st.Settings; set == nil || set.ToolsRef == nil || set.ToolsRef.String() != settings["tools_ref"] ||
			set.Model != settings["model"] || set.Provider != settings["provider"] || (set.ContextWindow == nil) != (window == 0) ||
			set.ContextWindow != nil && *set.ContextWindow != window {
			// The tools (an MCP server was added, say) or the model
			// changed since the chat began: the next message carries the
			// new settings.
			ag.newSettings = settings
		}
		return nil
	}
	return ag.send(ctx, "Created", map[string]any{"chat_id": ag.chat, "title": ag.chat, "settings": settings})
}

// turnOutcome is how a turn ended, read from its timeline.
type turnOutcome string

// The outcomes of a turn.
const (
	outcomeAnswer  turnOutcome = "answer"  // the model answered (or refused)
	outcomeFailed  turnOutcome = "failed"  // a failure ended it
	outcomeStopped turnOutcome = "stopped" // a guard ended it
	outcomeCut     turnOutcome = "cut"     // the answer was cut off
)

// Exit codes of run -m beyond those of every command (see root.go).
const (
	exitGuardStop  = 3 // a guard stopped the turn
	exitIncomplete = 4 // the answer was cut off
)

// exitCode is the exit code of run -m for a turn that ended so.
func (o turnOutcome) exitCode() int {
	switch o {
	case outcomeAnswer:
		return exitOK
	case outcomeStopped:
		return exitGuardStop
	case outcomeCut:
		return exitIncomplete
	}
	return exitFailure
}

// outcomeOf reads how the turn of request id ended from the chat's
// timeline entries.
func outcomeOf(entries []demiurge.Entry, id uint64) turnOutcome {
	out := outcomeFailed // no end recorded: the turn did not finish
	for _, e := range entries {
		if e.RequestID != id {
			continue
		}
		switch e.Kind {
		case demiurge.EntryError:
			return outcomeFailed
		case demiurge.EntryStop:
			out = outcomeStopped
		case demiurge.EntryDone:
			switch f := deref(e.Status); {
			case f == "length" || f == "content_filter" || strings.HasPrefix(f, "incomplete"):
				out = outcomeCut
			default:
				out = outcomeAnswer
			}
		}
	}
	return out
}

// say sends one user message, waits for the turn to end, and says how it
// ended.
func (ag *agent) say(ctx context.Context, text string) (turnOutcome, error) {
	msg, err := json.Marshal(map[string]string{"role": "user", "content": text})
	if err != nil {
		return "", err
	}
	ref, err := ag.st.CAS().Put(ctx, msg)
	if err != nil {
		return "", err
	}
	var last uint64
	before := demiurge.StateView{}
	if st, ok := ag.state(); ok {
		last, before = st.LastRequestID, *st
	}
	user := map[string]any{"chat_id": ag.chat, "request_id": last + 1, "text": text, "message_ref": ref.String()}
	if ag.newSettings != nil {
		user["settings"] = ag.newSettings
	}
	if err := ag.send(ctx, "User", user); err != nil {
		return "", err
	}
	ag.newSettings = nil
	wctx, cancel := context.WithTimeout(ctx, ag.f.wait)
	defer cancel()
	if err := ag.w.WaitIdle(wctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return "", fmt.Errorf("run: the turn took longer than --wait %s; its effects resume when the world reopens", ag.f.wait)
		}
		return "", err
	}
	st, ok := ag.state()
	if !ok {
		return outcomeFailed, nil
	}
	fmt.Fprintf(ag.a.out, "  [%s]\n", usageLine(&before, st))
	return outcomeOf(st.Entries, last+1), nil
}

// compact asks the chat to compact its transcript now (/compact), and
// waits for it.
func (ag *agent) compact(ctx context.Context) error {
	if ag.module != demiurge.ModuleName {
		fmt.Fprintf(ag.a.out, "  this world's chat (%s) cannot compact; %s can\n", ag.module, demiurge.ModuleName)
		return nil
	}
	var last uint64
	before := demiurge.StateView{}
	if st, ok := ag.state(); ok {
		last, before = st.LastRequestID, *st
	}
	if err := ag.send(ctx, "Compact", map[string]any{"chat_id": ag.chat, "request_id": last + 1}); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, ag.f.wait)
	defer cancel()
	if err := ag.w.WaitIdle(wctx); err != nil {
		return err
	}
	if st, ok := ag.state(); ok {
		fmt.Fprintf(ag.a.out, "  [%s]\n", usageLine(&before, st))
	}
	return nil
}

// usageLine says what the calls between two states of a chat used and
// cost: "1200 tokens in (200 cached), 300 out (0 reasoning), $0.0042".
func usageLine(before, after *demiurge.StateView) string {
	u, u0 := after.Usage, before.Usage
	tokens := fmt.Sprintf("%d tokens in (%d cached), %d out (%d reasoning)",
		u.Prompt-u0.Prompt, u.Cached-u0.Cached, u.Completion-u0.Completion, u.Reasoning-u0.Reasoning)
	if n := after.UsageUnknown - before.UsageUnknown; n > 0 {
		tokens += fmt.Sprintf(", usage unknown for %d call(s): the provider reported none", n)
	}
	cost := costText(after.CostMicroUSD-before.CostMicroUSD, after.CostUnknown > before.CostUnknown)
	return tokens + ", " + cost
}

// repl reads messages from stdin until /quit, EOF or Ctrl-C.
func (ag *agent) repl(ctx context.Context) error {
	in := bufio.NewScanner(ag.a.in)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	fmt.Fprintf(ag.a.out, "demiurge: world %s, chat %s. Type a message; /quit to stop.\n", ag.f.world, ag.chat)
	lines := make(chan string)
	go func() {
		defer close(lines)
		for in.Scan() {
			lines <- in.Text()
		}
	}()
	for {
		fmt.Fprint(ag.a.out, "> ")
		var line string
		var ok bool
		select {
		case line, ok = <-lines:
		case <-ctx.Done():
			fmt.Fprintln(ag.a.out)
			return nil
		}
		if !ok {
			fmt.Fprintln(ag.a.out)
			return nil
		}
		line = strings.TrimSpace(line)
		switch line {
		case "":
			continue
		case "/quit", "/exit":
			return nil
		case "/compact":
			if err := ag.compact(ctx); err != nil {
				return err
			}
			continue
		}
		if _, err := ag.say(ctx, line); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// progress prints the model's text as it streams.
func (ag *agent) progress(in *effects.Intent, text string) {
	if ag.f.noStream || in.Kind != "llm.generate" || isCompaction(in) {
		return
	}
	ag.mu.Lock()
	defer ag.mu.Unlock()
	if !ag.streamed {
		fmt.Fprint(ag.a.out, "\n")
	}
	ag.streamed = true
	fmt.Fprint(ag.a.out, text)
}

// isAzureURL reports whether a base URL names an Azure OpenAI resource.
func isAzureURL(base string) bool {
	for _, s := range []string{".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com"} {
		if strings.Contains(base, s) {
			return true
		}
	}
	return false
}

// isCompaction reports whether an llm.generate intent is a compaction
// call of the chat (its summary is not the model's answer to the user).
func isCompaction(in *effects.Intent) bool {
	m, ok := in.Params.(*schema.Map)
	if !ok {
		return false
	}
	v, _ := m.Get("instructions")
	s, _ := v.(string)
	return s == demiurge.CompactInstructions
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

// commit prints the chat's new timeline entries.
func (ag *agent) commit(recs []journal.Record) {
	// Each entry is timed by the ingress stamp of the input whose step
	// wrote it (a tool that runs inside the step that asks for it has its
	// call and its output in one commit).
	var at time.Time
	for _, r := range recs {
		if r.Kind == world.KindEvent || r.Kind == world.KindReceipt {
			if in, err := world.DecodeInput(r); err == nil {
				at = time.Unix(0, int64(in.Stamp.NowNS))
			}
		}
		if r.Kind != world.KindState {
			continue
		}
		sr, err := world.DecodeState(r)
		if err != nil || sr.Reducer != ag.module || sr.Key != ag.chat || !sr.State.Valid() {
			continue
		}
		var st demiurge.StateView
		if err := cas.GetNode(context.Background(), ag.st.CAS(), sr.State, &st); err != nil {
			continue
		}
		var unseen []demiurge.Entry
		unseen, ag.shown = st.Since(ag.shown)
		for _, e := range unseen {
			ag.print(e, at)
		}
	}
}

func (ag *agent) print(e demiurge.Entry, at time.Time) {
	ag.mu.Lock()
	defer ag.mu.Unlock()
	out := ag.a.out
	tool, call, status := deref(e.Tool), deref(e.CallID), deref(e.Status)
	switch e.Kind {
	case demiurge.EntryUser:
		if ag.f.message != "" {
			fmt.Fprintf(out, "> %s\n", e.Text)
		}
	case demiurge.EntryAssistant:
		if ag.streamed {
			fmt.Fprint(out, "\n")
		} else {
			fmt.Fprintf(out, "\n%s\n", e.Text)
		}
		ag.streamed = false
	case demiurge.EntryToolCall:
		switch status {
		case "requested":
			ag.callStart[call] = at
			fmt.Fprintf(out, "  → %s %s\n", tool, clipLine(e.Text, 160))
		case "rejected":
			fmt.Fprintf(out, "  ✗ %s %s (rejected before running)\n", tool, clipLine(e.Text, 160))
		case "cut":
			fmt.Fprintf(out, "  ✗ %s %s (cut off with the reply; not run)\n", tool, clipLine(e.Text, 160))
		default:
			fmt.Fprintf(out, "  · %s %s (%s)\n", tool, clipLine(e.Text, 160), status)
		}
	case demiurge.EntryToolOutput:
		d := ""
		if t0, ok := ag.callStart[call]; ok && !t0.IsZero() && !at.IsZero() {
			d = " in " + roundDuration(at.Sub(t0))
			delete(ag.callStart, call)
		}
		if status == "ok" {
			size := len(e.Text)
			if whole, err := demiurge.ToolOutputOf(context.Background(), ag.st.CAS(), e); err == nil {
				size = len(whole) // the entry may keep a preview
			}
			fmt.Fprintf(out, "  ✓ %s%s (%d bytes)\n", tool, d, size)
		} else {
			fmt.Fprintf(out, "  ✗ %s %s%s: %s\n", tool, status, d, clipLine(e.Text, 200))
		}
	case demiurge.EntryNotice:
		fmt.Fprintf(out, "  ! %s\n", e.Text)
	case demiurge.EntryCompact:
		fmt.Fprintf(out, "  ⇢ %s\n", e.Text)
	case demiurge.EntryStop:
		fmt.Fprintf(out, "  ■ turn stopped: %s\n", e.Text)
	case demiurge.EntryError:
		ag.streamed = false
		fmt.Fprintf(out, "  ✗ %s\n", e.Text)
	case demiurge.EntryDone:
		ag.streamed = false
		switch f := deref(e.Status); f {
		case "", "stop":
			fmt.Fprintf(out, "  — %s\n", e.Text)
		case "refusal":
			fmt.Fprintf(out, "  — the model refused; %s\n", e.Text)
		default:
			fmt.Fprintf(out, "  ✗ the answer is incomplete: %s; %s\n", finishText(f), e.Text)
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
