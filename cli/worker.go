package cli

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/cluster"
	"github.com/demiurge-dev/demiurge/internal/store"
)

// workerFlags are the flags of demiurge worker.
type workerFlags struct {
	model     modelFlags
	maxWorlds int
	lease     time.Duration
	handover  time.Duration
	id        string
}

func newWorkerCommand(a *app, getenv func(string) string) *cobra.Command {
	f := &workerFlags{}
	cmd := &cobra.Command{
		Use:   "worker --store postgres://… [--max-worlds N] [--lease D] [--llm PROVIDER|cassette:DIR]",
		Short: "Run the worlds of a PostgreSQL store, with other workers",
		Long: `Run worlds of the PostgreSQL store --store (a postgres:// URL, or
$DEMIURGE_STORE): take the worlds no worker holds, up to --max-worlds, each
under a lease the worker renews; recover each from its journal, run its
effects, and feed it the messages "demiurge run" and "demiurge send" put in
its inbox. Start as many workers as you like, on as many machines: each
world has one owner at a time. When a worker dies, the others take its
worlds over once their leases run out (--lease, default 1s), and what was
in flight runs again there; a worker paused past its lease cannot write
any more (every commit carries the lease's fencing token).

A worker that joins takes free worlds, and the others give up worlds beyond
their share to it, each once the effects it has in flight are answered: a world
moves only when its worker is gone or hands it over, so no effect runs twice.

Ctrl-C (or SIGTERM) stops the worker cleanly: its worlds take no more messages,
their effects in flight finish (up to --handover, default 30s; the leases are
renewed meanwhile), and they close and their leases are released, so other
workers take them at once and run nothing twice. What still runs after
--handover is cut short and runs again on the next owner; a second Ctrl-C
stops at once.

The worker calls the model for the agent worlds it runs, at its --base-url
(default $OPENAI_BASE_URL) with its $OPENAI_API_KEY, as "demiurge run"
would. A chat's API and model are the ones its "demiurge run" named (run
--llm, --model): the worker's --llm and --model apply to a chat that names
none, and --llm cassette:DIR answers every chat from the recording.
Stdio MCP servers of a manifest run in the worker's directory.`,
		Example: `  OPENAI_API_KEY=sk-… demiurge worker --store postgres://localhost/demiurge
  # the offline demo: the model's answers come from the demo session's recording
  demiurge worker --store postgres://localhost/demiurge --llm cassette:testdata/sessions/demo --max-worlds 4`,
		Args: wantArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if !store.IsURL(a.storeDir) {
				return usagef("worker: --store must be a postgres:// URL (workers share worlds through a PostgreSQL database), got %q", a.storeName())
			}
			if f.maxWorlds <= 0 || f.lease <= 0 || f.handover <= 0 {
				return usagef("worker: --max-worlds, --lease and --handover must be positive")
			}
			if err := f.checkModel(getenv); err != nil {
				return err
			}
			ctx := cmd.Context()
			s, err := a.openStore(ctx, false)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			level := slog.LevelInfo
			if a.verbose {
				level = slog.LevelDebug
			}
			log := slog.New(slog.NewTextHandler(a.err, &slog.HandlerOptions{Level: level}))
			open, err := f.open(a, getenv, log)
			if err != nil {
				return err
			}
			wk, err := cluster.New(cluster.Options{Store: s.Postgres(), Reducers: a.registry(), Open: open,
				ID: f.id, MaxWorlds: f.maxWorlds, Lease: f.lease, Handover: f.handover, Logger: log})
			if err != nil {
				return err
			}
			// The first Ctrl-C (or SIGTERM) hands the worlds over; a
			// second Ctrl-C stops at once.
			wctx, stop := context.WithCancel(ctx)
			defer stop()
			var interrupts atomic.Int32
			defer a.interrupts.handle(func() {
				if interrupts.Add(1) == 1 {
					a.notef("worker %s stopping: handing its worlds over once their effects in flight are answered (up to %s); Ctrl-C again to stop now", wk.ID(), f.handover)
					stop()
					return
				}
				wk.Abort()
			})()
			a.notef("worker %s on %s: up to %s, lease %s; Ctrl-C stops it", wk.ID(), s.Dir(), plural(f.maxWorlds, "world"), f.lease)
			return wk.Run(wctx)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.maxWorlds, "max-worlds", cluster.DefaultMaxWorlds, "the most worlds this worker runs")
	fl.DurationVar(&f.lease, "lease", cluster.DefaultLease, "how long a lease lasts unless renewed (renewed every third of it)")
	fl.DurationVar(&f.handover, "handover", cluster.DefaultHandover, "when stopping, how long to wait for the worlds' effects in flight before handing them over")
	fl.StringVar(&f.id, "id", "", "the worker's `ID` in the leases (default: host-pid-random)")
	fl.StringVar(&f.model.llm, "llm", "", "the model's `PROVIDER`: openai-responses, openai-chat, anthropic, gemini, or cassette:DIR (default: by the model's name)")
	fl.StringVar(&f.model.model, "model", "", "the model `NAME` when a chat names none (default $DEMIURGE_MODEL, else gpt-5-mini)")
	fl.StringVar(&f.model.baseURL, "base-url", "", "the API's base `URL` (default the provider's $OPENAI_BASE_URL, $ANTHROPIC_BASE_URL or $GOOGLE_GEMINI_BASE_URL)")
	fl.StringArrayVar(&f.model.options, "model-option", nil, "override what demiurge knows of the model, as `KEY=VALUE` (repeatable)")
	return cmd
}

// checkModel refuses to start a worker that could not reach its model:
// an unknown provider, or no key for a remote API.
func (f *workerFlags) checkModel(getenv func(string) string) error {
	switch l := f.model.llm; {
	case strings.HasPrefix(l, "cassette:"), l == "", llm.IsProvider(l):
	default:
		return usagef("--llm %q: want %s or cassette:DIR", l, strings.Join(llm.Providers(), ", "))
	}
	model := f.model.model
	if model == "" {
		model = cmp.Or(getenv("DEMIURGE_MODEL"), agent.DefaultModel)
	}
	if err := checkAPIKey(f.model.llm, model, f.model.baseURL, getenv); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	return nil
}

// open returns what a world runs with on this worker: the door's runtime
// (agent.ClusterOpen) with the model of the flags.
func (f *workerFlags) open(a *app, getenv func(string) string, log *slog.Logger) (cluster.OpenFunc, error) {
	m, err := modelOf(f.model.llm, f.model.model, f.model.baseURL, f.model.options, "", false, getenv)
	if err != nil {
		return nil, err
	}
	return agent.ClusterOpen(append([]agent.Option{agent.WithModel(m), agent.WithEnv(lookupEnv(getenv)), agent.WithLogger(log)},
		a.ext.agentOptions()...)...), nil
}

// modelFlags are the flags that say how a world reaches its model.
type modelFlags struct {
	llm, model, baseURL string
	options             []string // --model-option KEY=VALUE
}
