package main

import (
	"context"
	"fmt"

	"github.com/demiurge-dev/demiurge/cluster"
	"github.com/demiurge-dev/demiurge/pgstore"
	"github.com/demiurge-dev/demiurge/schema"
)

// runRemote chats with a world of a PostgreSQL store, wherever it runs:
// the messages go to its inbox, a worker (demiurge worker) that holds its
// lease runs the turn, and what happened is read from its journal. The
// tool kit is built here only for the tools' specs and the system prompt
// (the worker runs the tools), so its MCP servers are started only to
// list their tools.
func (ag *agent) runRemote(ctx context.Context, pg *pgstore.Store, cat *schema.Catalog, getenv func(string) string, provider, model string) (err error) {
	kit, err := newToolKit(ctx, ag.f.world, cat, ag.st, mcpEnv{getenv: lookupEnv(getenv), manifest: ag.f.manifest, log: ag.a.log})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := kit.close(); err == nil {
			err = cerr
		}
	}()
	reportMCP(ag.a.err, kit.mcp)
	r, err := cluster.Attach(ctx, cluster.RemoteOptions{Store: pg, Name: ag.f.world, Catalog: cat, Reducers: newRegistry(), OnCommit: ag.commit})
	if err != nil {
		return fmt.Errorf("open world %s: %w", ag.f.world, describe(err))
	}
	ag.w = r
	return ag.talk(ctx, kit, provider, model)
}
