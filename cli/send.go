package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/agent/session"
	"github.com/demiurge-dev/demiurge/cluster"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/pgstore"
	"github.com/demiurge-dev/demiurge/replay"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

func newSendCommand(a *app) *cobra.Command {
	var (
		wf      worldFlags
		schemaN string
		value   string
		wait    time.Duration
		quiet   bool
		asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "send --manifest M [--world W] --schema S --value JSON [-q] [--json]",
		Short: "Send a domain event to a world and run it until idle",
		Long: `Open world W (creating it on first use) with the AIR at M, send one domain
event of schema S, and run the world until no effect is in flight, or until
--wait has passed. A world that ran another AIR runs M from then on: the
change is recorded in its journal, and a note on stderr says so.

The value is JSON in either AIR form: tagged ({"record": {...}},
{"nat": 3}, ...) or sugar (plain JSON read through the schema). A value that
does not fit the schema is refused and nothing is journaled.

What the event caused is printed as a timeline, one record a line (see
"demiurge trace"); -q prints only the new journal head. Reopening a world
re-derives its journal first; if the code no longer derives the same records,
the divergence is reported and nothing is sent.

With --json, each record is one JSON object a line, as "demiurge trace
--records --json" prints it but without the hash: {"seq", "kind",
"payload"} ("demiurge journal dump --json" has the hashes); with -q too,
one object {"world", "head": {"seq", "hash"}} for the new head. If
effects are still in flight after --wait, a note says so on stderr.`,
		Example: `  demiurge send --manifest examples/counter --schema counter/Event@1 --value '{"Start": {"target": 2}}'
  demiurge send --manifest examples/counter --schema counter/Event@1 --value '"Tick"' -q
  demiurge send --manifest examples/timer --world t1 --schema timer/Event@1 --value '{"Start": {"deliver_at_ns": 1000000, "key": "hello"}}' --json`,
		Args: wantArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if err := wf.check(true); err != nil {
				return err
			}
			if schemaN == "" || !cmd.Flags().Changed("value") {
				return usagef("send: --schema and --value are required")
			}
			cat, err := a.loadCatalog(wf.manifest)
			if err != nil {
				return err
			}
			// Check the value before touching the store: bad input changes
			// nothing, not even by creating the world.
			if _, ok := cat.SchemaType(schemaN); !ok {
				return fmt.Errorf("send: schema %s is not in the manifest %s", schemaN, wf.manifest)
			}
			if _, err := schema.NormalizeJSON(cat, schema.RefType(schemaN), []byte(value)); err != nil {
				return fmt.Errorf("send: %s does not fit %s: %v", value, schemaN, err)
			}
			s, err := a.openStore(cmd.Context(), false)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			tr := replay.NewTracer(a.out, replay.TraceOptions{CAS: s.CAS(), JSON: asJSON})
			ctx := cmd.Context()
			if pg := s.Postgres(); pg != nil {
				return sendRemote(ctx, a, pg, cat, wf.world, schemaN, value, wait, quiet, asJSON, tr)
			}
			st, err := storage(s)
			if err != nil {
				return err
			}
			w, err := world.Open(ctx, world.Options{
				Name: wf.world, Catalog: cat, Reducers: a.registry(), Storage: st, Adapters: a.adapters(),
				Logger: a.log,
				OnCommit: func(recs []journal.Record) {
					if quiet {
						return
					}
					for _, r := range recs {
						_ = tr.Record(r)
					}
				},
			})
			if err != nil {
				return explainMissing(ctx, s, fmt.Errorf("open world %s: %w", wf.world, describe(err)))
			}
			defer func() {
				if cerr := w.Close(); err == nil {
					err = cerr
				}
			}()
			a.noteMove(w, wf.manifest)
			a.rememberManifest(wf.world, wf.manifest)
			if _, err := w.SendJSON(ctx, schemaN, []byte(value)); err != nil {
				return fmt.Errorf("send: %w", err)
			}
			wctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			if err := w.WaitIdle(wctx); err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					var n int
					w.View(func(m *world.Machine) { n = len(m.Pending()) })
					note := a.out
					if asJSON {
						note = a.err
					}
					fmt.Fprintf(note, "still running after %s: %s in flight (they resume when the world reopens)\n", wait, plural(n, "effect"))
					if quiet && asJSON {
						writeJSONLine(a.out, headJSON{World: wf.world, Head: session.Head{Seq: w.Head().Seq, Hash: w.Head().Hash.String()}})
					}
					return nil
				}
				return err
			}
			switch {
			case quiet && asJSON:
				writeJSONLine(a.out, headJSON{World: wf.world, Head: session.Head{Seq: w.Head().Seq, Hash: w.Head().Hash.String()}})
			case quiet:
				fmt.Fprintf(a.out, "%s\n", w.Head())
			}
			return nil
		},
	}
	wf.add(cmd, "the world's AIR: manifest.air, manifest.air.json or its `PATH`")
	cmd.Long += `

In a PostgreSQL store (--store postgres://…) the world runs on a worker
(demiurge worker): the event goes to the world's inbox, send waits until
the world's worker journaled it, and prints what followed as the journal
shows it, wherever the world runs. If no worker journaled it within --wait,
send says so and exits 6: the event stays in the inbox, and a worker
journals it when it takes the world (sending it again would send it twice).`
	cmd.Flags().StringVar(&schemaN, "schema", "", "the event's `SCHEMA` name, e.g. counter/Event@1")
	cmd.Flags().StringVar(&value, "value", "", "the event's value as `JSON`")
	cmd.Flags().DurationVar(&wait, "wait", 30*time.Second, "how long to run the world after sending")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the journal head")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (the shapes are above)")
	return cmd
}

// headJSON is a world's journal head in JSON.
type headJSON struct {
	World string       `json:"world"`
	Head  session.Head `json:"head"`
}

// sendRemote sends an event to a world of a PostgreSQL store through its
// inbox and follows its journal until the world is idle.
func sendRemote(ctx context.Context, a *app, pg *pgstore.Store, cat *schema.Catalog, name, schemaN, value string, wait time.Duration, quiet, asJSON bool, tr *replay.Tracer) error {
	note := a.out
	if asJSON {
		note = a.err
	}
	r, err := cluster.Attach(ctx, cluster.RemoteOptions{Store: pg, Name: name, Catalog: cat, Reducers: a.registry(),
		OnCommit: func(recs []journal.Record) {
			if quiet {
				return
			}
			for _, rec := range recs {
				_ = tr.Record(rec)
			}
		}})
	if err != nil {
		return fmt.Errorf("open world %s: %w", name, describe(err))
	}
	// Posting is bounded by the command's context only: an event cut off
	// by --wait while it was being posted might be in the inbox or not,
	// and only one that is there may be called queued.
	id, err := r.PostJSON(ctx, schemaN, []byte(value))
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if _, err := r.Await(wctx, id); err != nil {
		switch {
		case errors.Is(err, cluster.ErrNotJournaled) && errors.Is(err, context.DeadlineExceeded):
			fmt.Fprintf(note, "not journaled after %s: no worker took world %s yet (start one: demiurge worker --store …); the message waits in its inbox, and a worker journals it when it takes the world: do not send it again\n", wait, name)
			return &exitStatus{code: exitQueued}
		case errors.Is(err, context.DeadlineExceeded):
			fmt.Fprintf(note, "still running after %s on the world's worker\n", wait)
			return nil
		}
		return fmt.Errorf("send: %w", err)
	}
	if err := r.WaitIdle(wctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			fmt.Fprintf(note, "still running after %s on the world's worker\n", wait)
			return nil
		}
		return err
	}
	switch {
	case quiet && asJSON:
		writeJSONLine(a.out, headJSON{World: name, Head: session.Head{Seq: r.Head().Seq, Hash: r.Head().Hash.String()}})
	case quiet:
		fmt.Fprintf(a.out, "%s\n", r.Head())
	}
	return nil
}
