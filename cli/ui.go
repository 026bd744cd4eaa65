package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

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
file while none writes it, never keeping a writer from starting.

It listens on 127.0.0.1 on a port the system picks (--addr chooses another
loopback address or port), answers only requests addressed to the
host:port of its link, and only those that carry the link's token (the
first request sets it as a cookie). Anyone else on the machine or the
network is refused.

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
			o := ui.Options{Source: l, Name: l.Dir(), Reducers: a.registry(), Log: a.log}
			if runs, err := a.evalRuns(); err == nil {
				o.Evals = runs // the eval runs kept beside a store on disk
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
