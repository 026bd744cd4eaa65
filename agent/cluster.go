package agent

import (
	"context"
	"fmt"
	"net/http"

	"github.com/demiurge-dev/demiurge/adapters/builtin"
	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/cluster"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/world"
)

// ClusterOpen returns what a worker of a PostgreSQL store (cluster.Worker,
// demiurge worker) runs each world with: for an agent world, the model,
// the built-in tools, the program's (WithTools) and the MCP servers of its
// manifest, as Open gives them; for any other world, the built-in adapters
// and the model's. The options are Open's; those about a store, a world's
// name, a clock or a chat do not apply (the worker sets them). Stdio MCP
// servers run in the worker's directory.
func ClusterOpen(opts ...Option) cluster.OpenFunc {
	return func(ctx context.Context, env cluster.Env) (*cluster.Runtime, error) {
		c := newConfig(opts)
		c.name = env.Name
		overrides, problems := llm.ManifestModels(env.Catalog)
		if len(problems) > 0 {
			return nil, fmt.Errorf("world %s: the manifest's models: %w", env.Name, problems)
		}
		m, err := c.model.resolve(overrides, c, true)
		if err != nil {
			return nil, fmt.Errorf("world %s: %w", env.Name, err)
		}
		ads := builtin.Adapters(&http.Client{})
		ads[llm.EffectKind] = m.adapter
		for k, v := range c.adapters {
			ads[k] = v
		}
		rt := &cluster.Runtime{Options: world.Options{Adapters: ads, Logger: c.log,
			Dispatch: effects.DispatcherOptions{Getenv: m.secret}}}
		module, isAgent := demiurge.ModuleIn(func(n string) bool { _, ok := env.Catalog.Module(n); return ok })
		if !isAgent {
			return rt, nil
		}
		rt.Options.Abandoned = abandonedCalls(module)
		kit, err := newToolKit(ctx, env.Name, env.Catalog, env.Storage, c.tools, mcpEnv{getenv: c.getenv, manifest: ".", log: c.log})
		if err != nil {
			return nil, fmt.Errorf("world %s: %w", env.Name, err)
		}
		for k, v := range kit.adapters {
			ads[k] = v
		}
		rt.Options.Dispatch.TimeoutFor = kit.timeoutFor
		rt.Attach = kit.ts.Attach
		rt.Close = kit.close
		if m.stream && env.Store != nil {
			// The model's answers stream to the clients that follow
			// the world (see streamPublisher).
			pub := newStreamPublisher(env.Store, env.Name, c.log)
			rt.Options.Dispatch.Progress = pub.progress
			rt.Attach = func(w *world.World) {
				kit.ts.Attach(w)
				pub.attach(w)
			}
			rt.Close = func() error {
				pub.close()
				return kit.close()
			}
		}
		return rt, nil
	}
}
