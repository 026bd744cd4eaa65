package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/eval"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/ui"
)

func newUICommand(a *app) *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "ui [--addr HOST:PORT]",
		Short: "Watch and debug the store's worlds in a web browser",
		Long: `Serve a web view of the store on this machine and print its link; open
the link in a browser. The view lists the worlds and their chats (turns,
last activity, tokens, cost); shows each session as a timeline (turns, model
calls with latency, tokens, cost and how they ended, tool calls with their
arguments, results, errors, approvals and guard stops, bash scripts with
the commands they ran and the workspace changes they made); shows any
record decoded to JSON, its refs linked to their blobs; and replays a world
from the page, a divergence shown side by side. A session that is running
grows in the page as its records land.

The view only reads the store, and reads it while another process writes
it (a demiurge run in another terminal): through that process, or from the
file while none writes it, never keeping a writer from starting. A call
that waits for approval shows Approve and Deny buttons: the decision goes
to the process that runs the world (a demiurge run, at its terminal or on
a pipe), which journals it as it does one from demiurge approve and goes
on with the turn; when none runs it, the page says which command does.
The filters of a timeline show one chat's turns, or the failed ones; the
list of worlds shows the world last active first, with where it stands
and how many of its turns and tool calls failed.

It listens on 127.0.0.1 on a port the system picks (--addr chooses another
loopback address or port), answers only requests addressed to the
host:port of its link, and only those that carry the link's token (the
first request sets it as a cookie). Anyone else on the machine or the
network is refused, and so are the requests that a page of another site
(another port of 127.0.0.1 included) makes of it. What acts (replay,
approve, deny) is a POST from the view's own forms, with a token those
pages hold; a GET changes nothing.

It runs until Ctrl-C.`,
		Example: `  demiurge ui
  demiurge ui --addr 127.0.0.1:8600
  demiurge --store /path/to/.demiurge ui`,
		Args: wantArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			ctx := cmd.Context()
			ln, err := ui.Listen(addr)
			if err != nil {
				if errors.Is(err, ui.ErrBadAddr) {
					return usagef("--addr: %v", err)
				}
				return err
			}
			// Live reads: through the process that writes the store, or
			// from its file while none does, never holding it for long.
			a.usedStore = true
			l, err := store.OpenLive(ctx, a.storeDir, &store.LiveOptions{OnSource: func(msg string) {
				fmt.Fprintf(a.err, "ui: %s\n", msg)
			}})
			if err != nil {
				ln.Close()
				if errors.Is(err, store.ErrNotExist) {
					return notWritten(err)
				}
				return err
			}
			defer func() {
				if cerr := l.Close(); err == nil {
					err = cerr
				}
			}()
			o := ui.Options{Source: l, Name: l.Dir(), Reducers: a.registry(), Log: a.log, Decide: a.uiDecide, Manifest: a.manifestOf}
			// The eval runs the store keeps: files beside a store on disk,
			// a table of a PostgreSQL store.
			if pg := l.Postgres(); pg != nil {
				o.Evals = eval.PostgresRuns{Store: pg}
			} else {
				o.Evals = eval.Runs{Dir: filepath.Join(a.storeDir, "evals")}
			}
			srv, err := ui.New(ln, o)
			if err != nil {
				ln.Close()
				return err
			}
			fmt.Fprintf(a.out, "demiurge ui: the store %s at\n  %s\nCtrl-C stops it\n", l.Dir(), srv.URL())
			return srv.Serve(ctx)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", ui.DefaultAddr, "the loopback `HOST:PORT` to listen on (port 0: one the system picks)")
	return cmd
}

// uiDecide answers a call that waits for approval from the buttons of
// demiurge ui, as demiurge approve and deny do beside a running world:
// the decision goes to the process that runs it, which journals it and
// goes on with the turn. With no such process, the error says which
// command answers the call (it needs the model and the tools, which the
// view does not have).
func (a *app) uiDecide(ctx context.Context, d ui.Decision) (ui.DecisionResult, error) {
	verb := "deny"
	if d.Approve {
		verb = "approve"
	}
	if store.IsURL(a.storeDir) {
		return ui.DecisionResult{}, fmt.Errorf("on a PostgreSQL store the view does not answer calls: demiurge %s %s %s --world %s --chat %s does", verb, a.manifestArg(d.World), d.Call, d.World, d.Chat)
	}
	ctx, cancel := context.WithTimeout(ctx, decisionWait)
	defer cancel()
	res, err := store.SendApproval(ctx, a.storeDir, store.Approval{World: d.World, Chat: d.Chat, Call: d.Call, Approve: d.Approve, Reason: d.Reason})
	switch {
	case errors.Is(err, store.ErrNoWriter):
		return ui.DecisionResult{}, fmt.Errorf("no process runs world %s now to go on with the turn: demiurge %s %s %s --world %s --chat %s journals the decision and runs the rest of the turn, or answer here while demiurge run runs the world", d.World, verb, a.manifestArg(d.World), d.Call, d.World, d.Chat)
	case errors.Is(err, context.DeadlineExceeded):
		return ui.DecisionResult{}, fmt.Errorf("the process that writes store %s did not journal the decision within %s", a.storeName(), decisionWait)
	case err != nil:
		return ui.DecisionResult{}, err
	}
	return ui.DecisionResult{Tool: res.Tool, Seq: res.Seq, Writer: res.Writer}, nil
}
