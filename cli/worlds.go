package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/adapters/builtin"
	"github.com/demiurge-dev/demiurge/agent/session"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// defaultWorld is the world a command uses without --world.
const defaultWorld = "main"

// defaultChat is the chat run uses without --chat.
const defaultChat = "main"

// worldFlags are the flags of commands that work on one world.
type worldFlags struct {
	manifest string
	world    string
}

func (f *worldFlags) add(cmd *cobra.Command, manifestUsage string) {
	cmd.Flags().StringVar(&f.world, "world", defaultWorld, "the world's `NAME` in the store")
	if manifestUsage != "" {
		addManifestFlag(cmd, &f.manifest, manifestUsage)
	}
}

// addManifestFlag adds --manifest to cmd. It has no shorthand: -m is
// --message in run. The old spelling -m still sets it, with a warning on
// stderr, until the next release.
func addManifestFlag(cmd *cobra.Command, p *string, usage string) {
	cmd.Flags().StringVar(p, "manifest", "", usage)
	f := cmd.Flags().VarPF(&oldManifestFlag{p: p, cmd: cmd}, "manifest-m", "m", "deprecated spelling of --manifest")
	f.Hidden = true
}

// oldManifestFlag is -m where it meant --manifest: it sets the manifest and
// warns that the spelling is going away.
type oldManifestFlag struct {
	p   *string
	cmd *cobra.Command
}

func (f *oldManifestFlag) String() string { return *f.p }
func (f *oldManifestFlag) Type() string   { return "string" }

func (f *oldManifestFlag) Set(v string) error {
	fmt.Fprintf(f.cmd.ErrOrStderr(), "%s: warning: -m for --manifest is deprecated; use --manifest\n", f.cmd.Root().Name())
	*f.p = v
	return nil
}

func (f *worldFlags) check(needManifest bool) error {
	if err := checkWorldFlag(f.world); err != nil {
		return err
	}
	if needManifest && f.manifest == "" {
		return usagef("--manifest is required: the path of the world's AIR (manifest.air, manifest.air.json or its folder)")
	}
	return nil
}

// loadCatalog loads and validates a world's AIR with this binary's reducers.
func (a *app) loadCatalog(path string) (*schema.Catalog, error) {
	cat, err := schema.Load(path, a.registry().LoadOptions())
	if err != nil {
		if l, ok := err.(schema.ErrorList); ok {
			return nil, fmt.Errorf("%s does not load:\n%v", path, l)
		}
		return nil, err
	}
	return cat, nil
}

// storage returns world storage over an open store.
func storage(s *store.Handle) (world.Storage, error) {
	if pg := s.Postgres(); pg != nil {
		return pg.Storage(), nil
	}
	if s.Bolt() == nil { // read through the process that writes it
		return readStorage{s.CAS(), s.Journal()}, nil
	}
	return world.NewBoltStorage(s.Bolt().CAS(), s.Bolt().Journal())
}

// readStorage is the world storage of a store read through the process
// that writes it: what replay reads. It commits nothing.
type readStorage struct {
	cas     cas.Store
	journal journal.Store
}

func (s readStorage) CAS() cas.Store         { return s.cas }
func (s readStorage) Journal() journal.Store { return s.journal }
func (s readStorage) Commit(context.Context, string, journal.Head, []journal.Entry, [][]byte) (journal.Head, error) {
	return journal.Head{}, journal.ErrReadOnly
}

// adapters returns the effect adapters the command line runs: the
// built-in ones, and those a program extending it adds (WithAdapter).
func (a *app) adapters() map[string]effects.Adapter {
	m := builtin.Adapters(&http.Client{})
	if a.ext != nil {
		for kind, ad := range a.ext.adapters {
			m[kind] = ad
		}
	}
	return m
}

// noRecords is the error for world name, which has no records in store s.
// It names the worlds the store has (a misspelt --world then shows the
// right name), or says that it has none: a command that writes makes one.
func noRecords(ctx context.Context, s *store.Handle, name string) error {
	msg := fmt.Sprintf("world %s has no records in store %s", name, s.Dir())
	names, err := s.Journal().Worlds(ctx)
	switch {
	case err != nil: // what is reported is the world without records
		return errors.New(msg)
	case len(names) == 0:
		return fmt.Errorf("%s, which has no worlds yet (demiurge run or send makes one)", msg)
	}
	const shown = 8
	list := strings.Join(names[:min(len(names), shown)], ", ")
	if len(names) > shown {
		list += fmt.Sprintf(" and %d more", len(names)-shown)
	}
	return fmt.Errorf("%s; its worlds: %s (--world picks one; demiurge worlds lists them)", msg, list)
}

// storedCatalog rebuilds, from the store, the catalog of the manifest
// world name last recorded: a world stores its manifest and every def it
// pins when it records it (schema.LoadFromCAS). A world without records
// is an error.
func (a *app) storedCatalog(ctx context.Context, s *store.Handle, name string) (*schema.Catalog, error) {
	ref, err := worldManifest(ctx, s.Journal(), name)
	if err != nil {
		return nil, err
	}
	if ref == "" {
		return nil, noRecords(ctx, s, name)
	}
	r, err := cas.ParseRef(ref)
	if err != nil {
		return nil, fmt.Errorf("world %s: manifest record: %w", name, err)
	}
	cat, err := schema.LoadFromCAS(ctx, s.CAS(), r, a.registry().LoadOptions())
	if err != nil {
		return nil, fmt.Errorf("world %s: %w (give the world's AIR with --manifest)", name, err)
	}
	return cat, nil
}

// worldManifest returns the manifest ref a world last recorded, or the
// zero ref if it has none.
func worldManifest(ctx context.Context, j journal.Reader, name string) (ref string, err error) {
	err = j.Read(ctx, name, 1, func(r journal.Record) error {
		if r.Kind == world.KindManifest {
			in, err := world.DecodeInput(r)
			if err != nil {
				return err
			}
			ref = in.Manifest.String()
		}
		return nil
	})
	return ref, err
}

// localStorage returns the storage op runs a world on in this process. In
// a PostgreSQL store a world runs on the worker that holds its lease,
// never beside it in a command, so op refuses one.
func localStorage(s *store.Handle, op string) (world.Storage, error) {
	if s.Postgres() != nil {
		return nil, fmt.Errorf("%s runs the world in this process, but in a PostgreSQL store (%s) worlds run on workers (demiurge worker), one owner each: send events with demiurge send, chat with demiurge run", op, s.Dir())
	}
	return storage(s)
}

func newWorldsCommand(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "worlds [--json]",
		Short: "List the worlds of the store, and the chats of agent worlds",
		Long: `List every world of the store, in name order: its records, its journal head,
the manifest it last ran, and its last activity (the stamp of its newest
input: an event sent to it or an effect's receipt). For an agent world, each
chat follows on its own line: its model, its turns (user messages and
compactions), the tokens its model calls used and what they cost, and
whether a turn is open (not ended: a process runs it, or the next one to
open the world resumes it). It reads the chats' states; run "demiurge trace"
for the turns themselves.

With --json, one JSON document: an array of worlds ([] for none),
  [{"world", "records", "head": {"seq", "hash"}, "manifest",
    "last_activity" (RFC 3339, UTC; absent if the world had no input),
    "last_activity_ns",
    "chats": [{"chat", "provider", "model", "turns", "running" (a turn is
               open), "usage": {"input_tokens", "cached_tokens",
               "output_tokens", "reasoning_tokens"}, "cost_microusd",
               "calls_cost_unknown" (model calls without a price),
               "calls_usage_unknown" (model calls without usage)}]}]
"chats" is empty for a world without chats (docs/cli.md). Opens the store
read-only.
In a PostgreSQL store each world's text also says which worker holds it,
and its JSON has "worker": the id of the worker whose lease on it is live
("" when none is).`,
		Example: `  demiurge worlds
  demiurge worlds --json | jq -c '{world, records, chats: [.chats[].chat]}'`,
		Args: wantArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			s, err := a.openStore(cmd.Context(), true)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			defer func() { err = explainMissing(cmd.Context(), s, err) }()
			ctx := cmd.Context()
			names, err := s.Journal().Worlds(ctx)
			if err != nil {
				return fmt.Errorf("worlds: %w", err)
			}
			reports := []any{} // --json: the worlds, one document
			leases, workers, err := leasesOf(ctx, s)
			if err != nil {
				return fmt.Errorf("worlds: %w", err)
			}
			// Worlds registered with the workers whose first message
			// waits in the inbox: no records yet.
			var waiting []string
			for name := range leases {
				if !slices.Contains(names, name) {
					waiting = append(waiting, name)
				}
			}
			slices.Sort(waiting)
			if !asJSON {
				for _, name := range waiting {
					fmt.Fprintf(a.out, "%s: no records yet (its first message waits for a worker)\n  %s\n", name, leases[name])
				}
			}
			if asJSON {
				defer func() {
					if err == nil {
						err = writeJSON(a.out, reports)
					}
				}()
			}
			if len(names)+len(waiting) == 0 && !asJSON {
				_, err := fmt.Fprintf(a.out, "no worlds in store %s\n", s.Dir())
				return err
			}
			// Who could be running an open turn: a process that holds
			// the store (a bbolt store read through its writer), a
			// worker (PostgreSQL: the lease line says which), or none.
			holder := holderNone
			switch {
			case s.Postgres() != nil:
				holder = holderWorkers
			case s.Served() != 0:
				holder = fmt.Sprintf("process %d holds the store", s.Served())
			}
			for _, name := range names {
				ws, err := session.Summarize(ctx, s.Journal(), s.CAS(), name)
				if err != nil {
					return fmt.Errorf("worlds: %w", err)
				}
				if asJSON {
					var v any = ws
					if workers != nil {
						v = struct {
							*session.WorldSummary
							Worker string `json:"worker"`
						}{ws, workers[name]}
					}
					reports = append(reports, v)
					continue
				}
				writeWorldSummary(a.out, ws, holder)
				if leases != nil {
					l, ok := leases[name]
					if !ok { // imported: no run or send registered it yet
						l = noWorker
					}
					fmt.Fprintf(a.out, "  %s\n", l)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document, an array of worlds (the shape is above)")
	return cmd
}

// Holders of a store, for writeWorldSummary.
const (
	holderNone    = ""        // no process holds it: an open turn waits to be resumed
	holderWorkers = "workers" // a PostgreSQL store: its worlds run on workers
)

// writeWorldSummary prints a world's summary for people. holder says what
// could be running an open turn: holderNone, holderWorkers, or which
// process holds the store.
func writeWorldSummary(w io.Writer, ws *session.WorldSummary, holder string) {
	last := "no input yet"
	if ws.LastActivity != "" {
		last = "last activity " + time.Unix(0, int64(ws.LastActivityNS)).UTC().Format("2006-01-02 15:04:05 UTC")
	}
	manifest := ""
	if r, err := cas.ParseRef(ws.Manifest); err == nil {
		manifest = ", manifest " + r.Short()
	}
	fmt.Fprintf(w, "%s: %s, %s%s\n", ws.World, plural(int(ws.Records), "record"), last, manifest)
	for _, c := range ws.Chats {
		model := ""
		if c.Model != "" {
			model = " (" + c.Model + ")"
		}
		u := c.Usage
		line := fmt.Sprintf("  chat %s%s: %s, %d tokens in (%s), %d out (%d reasoning), %s",
			c.Chat, model, plural(int(c.Turns), "turn"), u.Prompt, cachedText(u.Cached, u.CacheWrite), u.Completion, u.Reasoning, costText(c.CostMicroUSD, c.CostUnknown > 0))
		if u == (session.TokenUsage{}) && c.CostMicroUSD == 0 && c.CostUnknown == 0 && c.UsageUnknown == 0 {
			// No model call answered (each that does has tokens, or
			// counts as unknown): a $0.0000 would read as a price.
			line = fmt.Sprintf("  chat %s%s: %s, no model call answered", c.Chat, model, plural(int(c.Turns), "turn"))
		}
		if c.UsageUnknown > 0 {
			line += fmt.Sprintf(", usage unknown for %s", plural(int(c.UsageUnknown), "model call"))
		}
		if c.Running {
			// A turn not ended is open; it runs only if a process runs
			// the world (a fork made mid-turn, or a world whose process
			// died, holds one that nothing runs).
			switch holder {
			case holderNone:
				flag := ""
				if ws.World != "main" {
					flag = " --world " + ws.World
				}
				line += fmt.Sprintf("; a turn is open (not running: demiurge run MANIFEST%s resumes it)", flag)
			case holderWorkers:
				line += "; a turn is open"
			default:
				line += fmt.Sprintf("; a turn is open (%s)", holder)
			}
		}
		fmt.Fprintln(w, line)
	}
}

// noWorker is what worlds says of a world no worker holds.
const noWorker = "no worker holds it (start one: demiurge worker)"

// leasesOf says, for each world of a PostgreSQL store, which worker holds
// it: "on worker ID", or that none does (a world whose worker died is
// taken over once its lease runs out); workers maps each world to the id
// of the worker whose lease is live, "" when none is. Both are nil for a
// bbolt store.
func leasesOf(ctx context.Context, s *store.Handle) (lines, workers map[string]string, err error) {
	pg := s.Postgres()
	if pg == nil {
		return nil, nil, nil
	}
	infos, err := pg.Worlds(ctx)
	if err != nil {
		return nil, nil, err
	}
	now, err := pg.Now(ctx)
	if err != nil {
		return nil, nil, err
	}
	lines, workers = map[string]string{}, map[string]string{}
	for _, wi := range infos {
		workers[wi.World] = ""
		switch {
		case wi.Owner == "":
			lines[wi.World] = noWorker
		case !wi.Expires.After(now):
			lines[wi.World] = fmt.Sprintf("no worker holds it: the lease of worker %s ran out %s ago", wi.Owner, now.Sub(wi.Expires).Round(time.Second))
		default:
			lines[wi.World] = "on worker " + wi.Owner
			workers[wi.World] = wi.Owner
		}
	}
	return lines, workers, nil
}
