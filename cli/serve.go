package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/examples"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/serve"
)

// serveFlags are the flags of demiurge serve.
type serveFlags struct {
	addr, name, world, tokenFile string
	cors                         []string
	maxBody                      int64
	rate                         float64
	burst                        int
	grace                        time.Duration
	writeTimeout                 time.Duration
	worldIdle                    time.Duration
	maxWorlds                    int
	// The model and the chats' settings, as run's flags say them.
	llm, model, baseURL, temperature, instructions string
	modelOptions                                   []string
	noStream                                       bool
	maxTokens, maxRounds, maxRepeats               uint64
	tokenBudget, outputLimit                       uint64
	toolChoice                                     string
	requireApproval                                []string
	approvalTimeout                                time.Duration
}

func newServeCommand(a *app, getenv func(string) string) *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve MANIFEST [--addr HOST:PORT] [--token-file FILE] [--llm PROVIDER|cassette:DIR] [--model NAME]",
		Short: "Serve the agent of a world over HTTP: a JSON + SSE API, and OpenAI's",
		Long: `Serve the agent at MANIFEST (examples/demiurge, or your own AIR built on it)
over HTTP (HTTP/1.1, and HTTP/2 without TLS, h2c), for programs in any
language and any chat front end (docs/api.md):

- its own API: worlds and chats (list, create, read), a message whose turn
  streams as Server-Sent Events carrying the events of "run --json" (or
  comes back as JSON), a running turn followed, a broken stream resumed
  with Last-Event-ID without losing or repeating an event, approvals
  answered, a turn stopped, a world forked, its trace and state read;
- OpenAI's: POST /v1/responses (previous_response_id continues a chat; the
  agent's tool calls run on the server and come back as mcp_call items),
  POST /v1/chat/completions (the conversation's messages find its chat),
  GET /v1/models (the agent, named --name, default the manifest's folder).
  An OpenAI SDK pointed at http://HOST:PORT/v1 talks to the agent as if
  it were a model. What cannot map (client-side function tools, a system
  prompt) is refused with OpenAI's error shape, saying why.

A turn runs on the server to its end, whatever becomes of the request that
sent it; the store journals everything, so "demiurge replay" and "demiurge
trace" show it. On a PostgreSQL store (--store postgres://…) the server runs
no world: workers do (demiurge worker), and many servers share the worlds.

Security: the server listens on 127.0.0.1:8700 by default. Any other
address needs --token-file: every request then carries a bearer token
("demiurge serve token create" makes one, scoped to worlds; the file keeps
its SHA-256 only). Pages of other sites are refused unless --cors-origin
names them. Bodies are bounded (--max-body), each token has a rate limit
(--rate, --burst), slow clients are cut off. Logs (JSON lines on stderr)
name tokens by id, never their secret, and no message text.

Operations: GET /healthz, GET /readyz, GET /metrics (Prometheus). Ctrl-C
or SIGTERM shuts down gracefully: no new requests; the turns under way get
--grace to finish, then their streams end (clients resume them, with
Last-Event-ID, on the next server) and the worlds close: what was still
running goes on when the world opens again.

The model flags are run's (--llm, --model, --base-url, --model-option,
…): with --llm cassette:DIR the agent answers from a recorded session,
offline. A recording begins with a new world: without --world, each
conversation an OpenAI client begins then goes to a world of its own
(main while it is new, else main-2, main-3, …), as run picks one.`,
		Example: `  # offline: the model's answers come from the demo session's recording
  demiurge serve examples/demiurge --llm cassette:testdata/sessions/demo
  curl -N -H 'Accept: text/event-stream' -H 'Content-Type: application/json' \
    -d '{"text": "Write a hello note and show it to me."}' \
    http://127.0.0.1:8700/v1/worlds/demo-$(date +%s)/chats/demo/messages   # a new world: the recording begins with one
  # on the network, with tokens
  demiurge serve token create --token-file tokens.json --world main --name web
  OPENAI_API_KEY=sk-… demiurge serve examples/demiurge --addr 0.0.0.0:8700 --token-file tokens.json`,
		Args: wantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			return a.serve(cmd, args[0], f, getenv)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", serve.DefaultAddr, "the `HOST:PORT` to listen on (off loopback only with --token-file)")
	fl.StringVar(&f.name, "name", "", "the agent's `NAME`: the model OpenAI clients name (default: the manifest's folder)")
	fl.StringVar(&f.world, "world", agent.DefaultWorld, "the world OpenAI-compatible requests reach when they name none (header Demiurge-World); with --llm cassette:DIR and no --world, each conversation begins in a new world, NAME or NAME-2, NAME-3, …")
	fl.StringVar(&f.tokenFile, "token-file", "", "require bearer tokens from this `FILE` (demiurge serve token create)")
	fl.StringArrayVar(&f.cors, "cors-origin", nil, "let pages of this `ORIGIN` (https://app.example.com, or *) call the API from a browser (repeatable)")
	fl.Int64Var(&f.maxBody, "max-body", serve.DefaultMaxBody, "the largest request body, in `BYTES`")
	fl.Float64Var(&f.rate, "rate", serve.DefaultRate, "requests per second each token (or, without tokens, each address) may send; -1: no limit")
	fl.IntVar(&f.burst, "burst", serve.DefaultBurst, "requests a token may send at once, above --rate")
	fl.DurationVar(&f.grace, "grace", serve.DefaultGrace, "how long a shutdown lets the turns under way finish")
	fl.DurationVar(&f.writeTimeout, "write-timeout", serve.DefaultWriteTimeout, "how long one write to a client may take before it is cut off")
	fl.DurationVar(&f.worldIdle, "world-idle", serve.DefaultWorldIdle, "how long a world nothing uses (no request, no turn under way) stays open; it opens again on the next request")
	fl.IntVar(&f.maxWorlds, "max-worlds", serve.DefaultMaxWorlds, "how many worlds nothing uses stay open at most (those unused longest close first)")
	fl.StringVar(&f.llm, "llm", "", "the model's `PROVIDER`: openai-responses, openai-chat, anthropic, gemini, or cassette:DIR (default: by the model's name)")
	fl.StringVar(&f.model, "model", "", "the model `NAME` (default $DEMIURGE_MODEL, else gpt-5-mini)")
	fl.StringVar(&f.baseURL, "base-url", "", "the API's base `URL` (default $OPENAI_BASE_URL)")
	fl.StringArrayVar(&f.modelOptions, "model-option", nil, "override what demiurge knows of the model, as `KEY=VALUE` (repeatable): "+strings.Join(llm.ModelOptionKeys, ", "))
	fl.StringVar(&f.temperature, "temperature", "", "sampling temperature, e.g. 0.2 (default: the provider's)")
	fl.StringVar(&f.instructions, "instructions", "", "the system prompt (default: one built from the tools)")
	fl.BoolVar(&f.noStream, "no-stream", false, "ask the model for one whole answer, not a stream")
	fl.Uint64Var(&f.maxTokens, "max-tokens", 4096, "output tokens per model call")
	fl.Uint64Var(&f.maxRounds, "max-rounds", demiurge.DefaultMaxRounds, "model calls per user message")
	fl.Uint64Var(&f.maxRepeats, "max-repeats", demiurge.DefaultMaxRepeats, "times the same tool call may be made in a turn")
	fl.Uint64Var(&f.tokenBudget, "token-budget", 0, "tokens per turn (0: no budget)")
	fl.Uint64Var(&f.outputLimit, "output-limit", demiurge.DefaultOutputLimit, "bytes of a tool's output the model sees")
	fl.StringVar(&f.toolChoice, "tool-choice", "auto", "whether the model must call a tool in each message's first round: auto, none, required, or a tool's `NAME`")
	fl.StringArrayVar(&f.requireApproval, "require-approval", nil, "calls of the tool `NAME` wait for approval (POST …/approvals/CALL, or mcp_approval_response) before they run (repeatable; * for every tool)")
	fl.DurationVar(&f.approvalTimeout, "approval-timeout", 0, "how long a call may wait for approval before it is denied (0: as long as it takes)")
	cmd.AddCommand(newServeTokenCommand(a))
	return cmd
}

// serve runs demiurge serve.
func (a *app) serve(cmd *cobra.Command, manifest string, f *serveFlags, getenv func(string) string) (err error) {
	ctx := cmd.Context()
	for _, n := range []struct {
		flag string
		v    uint64
	}{{"max-tokens", f.maxTokens}, {"max-rounds", f.maxRounds}, {"max-repeats", f.maxRepeats}, {"output-limit", f.outputLimit}} {
		if n.v == 0 {
			return usagef("--%s 0: it must be at least 1", n.flag)
		}
	}
	if f.maxBody <= 0 || f.burst <= 0 || f.grace <= 0 || f.writeTimeout <= 0 || f.worldIdle <= 0 || f.maxWorlds <= 0 {
		return usagef("--max-body, --burst, --grace, --write-timeout, --world-idle and --max-worlds must be positive")
	}
	choice, err := agent.ParseToolChoice(f.toolChoice)
	if err != nil {
		return usagef("--tool-choice: %v", err)
	}
	m, err := modelOf(f.llm, f.model, f.baseURL, f.modelOptions, f.temperature, f.noStream, getenv)
	if err != nil {
		return err
	}
	if err := a.checkModel("serve", manifest, m, f.baseURL, getenv); err != nil {
		return err
	}
	var tokens *serve.TokenFile
	if f.tokenFile != "" {
		if tokens, err = serve.OpenTokenFile(f.tokenFile); err != nil {
			return err
		}
	}
	ln, err := serve.Listen(f.addr, tokens != nil)
	if err != nil {
		if errors.Is(err, serve.ErrNotLoopback) {
			return usagef("--addr: %v", err)
		}
		return err
	}
	defer ln.Close()
	s, err := a.openStore(ctx, false)
	if err != nil {
		return err
	}
	defer closeStore(s, &err)
	level := slog.LevelInfo
	if a.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewJSONHandler(a.err, &slog.HandlerOptions{Level: level}))
	opts := serve.Options{
		Manifest: manifest, Name: f.name, World: f.world, Tokens: tokens, CORSOrigins: f.cors, MaxBody: f.maxBody,
		Rate: f.rate, Burst: f.burst, Grace: f.grace, WriteTimeout: f.writeTimeout, Log: log,
		WorldIdle: f.worldIdle, MaxWorlds: f.maxWorlds,
		Reducers: func(r *reducer.Registry) {
			examples.RegisterAll(r)
			if a.ext != nil {
				for _, register := range a.ext.reducers {
					register(r)
				}
			}
		},
		Agent: append([]agent.Option{agent.WithModel(m), agent.WithLogger(log), agent.WithEnv(lookupEnv(getenv)),
			agent.WithInstructions(f.instructions), agent.WithClock(a.clock, a.entropy),
			agent.WithLimits(agent.Limits{MaxTokens: f.maxTokens, MaxRounds: f.maxRounds, MaxRepeats: f.maxRepeats,
				TokenBudget: f.tokenBudget, OutputLimit: f.outputLimit})}, a.ext.agentOptions()...),
		Chat: []agent.ChatOption{agent.DefaultToolChoice(choice)},
	}
	if len(f.requireApproval) > 0 {
		opts.Chat = append(opts.Chat, agent.RequireApproval(f.requireApproval...))
	}
	if f.approvalTimeout > 0 {
		opts.Chat = append(opts.Chat, agent.ApprovalTimeout(f.approvalTimeout))
	}
	// A strict cassette's recording begins with a new world: as run
	// picks one when the default world holds a session, each OpenAI
	// conversation then begins in a world of its own (--world names the
	// one they all go to).
	newWorlds := strings.HasPrefix(f.llm, "cassette:") && !cmd.Flags().Changed("world") && s.Bolt() != nil
	opts.NewWorlds = newWorlds
	if pg := s.Postgres(); pg != nil {
		opts.Postgres = pg
		if strings.HasPrefix(f.llm, "cassette:") {
			a.notef("on a PostgreSQL store the workers answer with their own --llm: %s names the chats' model only", f.llm)
		}
	} else {
		if opts.Storage, err = storage(s); err != nil {
			return err
		}
	}
	srv, err := serve.New(ctx, opts)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if b := s.Bolt(); b != nil {
		// demiurge approve and deny beside this server hand their
		// decisions to it through the store's socket: this process, the
		// worlds' one writer, journals them, as POST …/approvals/CALL does.
		if err := b.HandleApprovals(serveDecision(srv)); err == nil {
			defer b.HandleApprovals(nil)
		}
	}
	where := "the store " + s.Dir()
	auth := "no token needed (loopback only)"
	if tokens != nil {
		auth = "bearer tokens of " + tokens.Path()
	}
	fmt.Fprintf(a.out, "demiurge serve: the agent %s of %s on %s, at\n  http://%s/v1  (%s)\nCtrl-C stops it\n",
		srv.Name(), manifest, where, ln.Addr(), auth)
	if newWorlds {
		fmt.Fprintf(a.out, "The cassette %s replays its recording from a new world: each OpenAI conversation\nbegins in world %s, or the first of %s-2, %s-3, … with no records (--world: all in one)\n",
			strings.TrimPrefix(f.llm, "cassette:"), f.world, f.world, f.world)
	}
	go srv.Recover(ctx)
	if err := srv.Serve(ctx, ln); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// serveDecision journals, in srv, a decision that demiurge approve or
// deny sends through the store's socket.
func serveDecision(srv *serve.Server) store.ApprovalHandler {
	return func(ctx context.Context, ap store.Approval) (store.ApprovalResult, error) {
		ar, head, err := srv.Decide(ctx, ap.World, ap.Chat, ap.Call, agent.Decision{Approve: ap.Approve, Reason: ap.Reason})
		switch {
		case errors.Is(err, agent.ErrNotWaiting):
			return store.ApprovalResult{}, fmt.Errorf("%w: call %s of chat %s in world %s (demiurge serve, process %d, runs the world)", store.ErrNotWaiting, ap.Call, ap.Chat, ap.World, os.Getpid())
		case errors.Is(err, serve.ErrNoChat):
			return store.ApprovalResult{}, fmt.Errorf("%w: %v", store.ErrNotRunning, err)
		case err != nil:
			return store.ApprovalResult{}, err
		}
		return store.ApprovalResult{Tool: ar.Tool, Seq: head.Seq}, nil
	}
}

// newServeTokenCommand is demiurge serve token.
func newServeTokenCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token create|list|revoke --token-file FILE",
		Short: "Make, list and revoke the bearer tokens of demiurge serve",
		Long: `Manage the tokens a server started with --token-file FILE takes. The file
keeps each token's id, name, worlds and SHA-256, never the token: create
prints the token once. A running server reads the file again when it
changes, so a token made or revoked takes effect within a second.`,
		Args: cobra.ArbitraryArgs,
		Example: `  demiurge serve token create --token-file tokens.json --world main --name web-app
  demiurge serve token list --token-file tokens.json
  demiurge serve token revoke --token-file tokens.json 3f9a1c07d2e4`,
		RunE: groupRunE,
	}
	var file, name string
	var worlds []string
	create := &cobra.Command{
		Use:   "create --token-file FILE --world NAME [--world NAME…] [--name TEXT]",
		Short: "Make a token that may reach the worlds named, and print it once",
		Args:  wantArgs(0, 0),
		Example: `  demiurge serve token create --token-file tokens.json --world main --name web-app
  demiurge serve token create --token-file tokens.json --world '*' --name admin`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return usagef("--token-file is required")
			}
			tok, t, err := serve.CreateToken(file, name, worlds)
			if err != nil {
				return usagef("token create: %v", err)
			}
			fmt.Fprintf(a.out, "%s\n", tok)
			a.notef("token %s (%s) may reach %s; it is shown once: keep it now", t.ID, orDash(t.Name), strings.Join(t.Worlds, ", "))
			return nil
		},
	}
	create.Flags().StringVar(&file, "token-file", "", "the token `FILE` (made if need be, mode 0600)")
	create.Flags().StringVar(&name, "name", "", "a `NAME` for people (who holds it)")
	create.Flags().StringArrayVar(&worlds, "world", nil, "a world the token may reach (repeatable; * for every world)")
	list := &cobra.Command{
		Use:     "list --token-file FILE",
		Short:   "List the tokens (ids, names, worlds; never the tokens)",
		Args:    wantArgs(0, 0),
		Example: `  demiurge serve token list --token-file tokens.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return usagef("--token-file is required")
			}
			ts, err := serve.ListTokens(file)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(a.out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tWORLDS\tCREATED")
			for _, t := range ts {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.ID, orDash(t.Name), strings.Join(t.Worlds, ","), t.Created.Format(time.RFC3339))
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&file, "token-file", "", "the token `FILE`")
	revoke := &cobra.Command{
		Use:     "revoke --token-file FILE ID",
		Short:   "Revoke a token: servers refuse it within a second",
		Args:    wantArgs(1, 1),
		Example: `  demiurge serve token revoke --token-file tokens.json 3f9a1c07d2e4`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return usagef("--token-file is required")
			}
			t, err := serve.RevokeToken(file, args[0])
			if err != nil {
				return err
			}
			a.notef("token %s (%s) revoked", t.ID, orDash(t.Name))
			return nil
		},
	}
	revoke.Flags().StringVar(&file, "token-file", "", "the token `FILE`")
	cmd.AddCommand(create, list, revoke)
	return cmd
}

// orDash is s, or - for nothing.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
