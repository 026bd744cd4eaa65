package agent

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/bashfx"
	"github.com/demiurge-dev/demiurge/adapters/toolcall"
	"github.com/demiurge-dev/demiurge/agent/worldtools"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/introspect"
	"github.com/demiurge-dev/demiurge/tools/mcp"
	"github.com/demiurge-dev/demiurge/tools/workspace"
	"github.com/demiurge-dev/demiurge/world"
)

// toolKit is what the agent can do: the world's tools (introspect,
// workspace, the program's, the tools of its MCP servers), the bash tool
// whose commands they are, the adapters that run them as effects, and
// their specs for the model. close stops the MCP servers.
type toolKit struct {
	ts       *worldtools.Toolset
	custom   []tools.Tool
	mcp      *mcp.Set // nil when the manifest declares no MCP servers
	bash     *bashfx.Adapter
	specs    []tools.SpecTool
	adapters map[string]effects.Adapter
}

// bashTimeout bounds a scripted.run call (above the demiurge manifest's
// max_timeout_ms of 2 minutes, so the script's own limit ends it first).
const bashTimeout = 130 * time.Second

// mcpEnv is what starting a world's MCP servers needs.
type mcpEnv struct {
	// getenv reads the host's environment: secrets bound to env:VAR, and
	// the variables stdio servers inherit.
	getenv func(string) (string, bool)
	// manifest is the path of the world's AIR; stdio servers run in its
	// directory.
	manifest string
	log      *slog.Logger
}

func newToolKit(ctx context.Context, name string, cat *schema.Catalog, st world.Storage, custom []tools.Tool, env mcpEnv) (k *toolKit, err error) {
	k = &toolKit{ts: worldtools.NewToolset(name, cat, st), custom: custom, adapters: map[string]effects.Adapter{}}
	tc := toolcall.New(k.ts.Tools()...)
	k.adapters[introspect.EffectCall] = tc
	k.adapters[workspace.EffectCall] = tc
	for _, t := range k.ts.Tools() {
		fam := tools.FamilyIntrospect
		if strings.HasPrefix(t.Info().Name, "workspace_") {
			fam = tools.FamilyWorkspace
		}
		k.specs = append(k.specs, tools.SpecFor(t, fam))
	}
	module, _ := demiurge.ModuleIn(func(n string) bool { _, ok := cat.Module(n); return ok })
	_, toolPlan := demiurge.Plans(module)
	grants, err := bashfx.GrantsFromPlan(cat, toolPlan)
	if err != nil {
		return nil, err
	}
	reserved := make([]string, 0, len(k.ts.Tools())+len(custom)+1)
	for _, t := range k.ts.Tools() {
		reserved = append(reserved, t.Info().Name)
	}
	if _, ok := grants[bashfx.KindScripted]; ok {
		reserved = append(reserved, bashfx.ToolName)
	}
	commands := k.ts.Tools()
	if len(custom) > 0 {
		if _, ok := grants[toolcall.EffectCustom]; !ok {
			return nil, fmt.Errorf("the program has tools of its own (%s), but %s emits no %s effect to run them: route the tool family %q to it (see examples/demiurge/tool_plan.air.json)",
				names(custom), toolPlan, toolcall.EffectCustom, tools.FamilyCustom)
		}
		for _, t := range custom {
			name := t.Info().Name
			if slices.Contains(reserved, name) {
				return nil, fmt.Errorf("tool %s: a built-in tool has that name", name)
			}
			reserved = append(reserved, name)
			k.specs = append(k.specs, tools.SpecFor(t, tools.FamilyCustom))
		}
		k.adapters[toolcall.EffectCustom] = toolcall.New(custom...)
		commands = append(slices.Clone(commands), custom...)
	}
	route := customRouter(custom, bashfx.DefaultRoute)
	if len(cat.Manifest.MCPServers) > 0 {
		if _, ok := grants[mcp.EffectKind]; !ok {
			return nil, fmt.Errorf("the manifest declares MCP servers, but %s emits no %s effect to call their tools", toolPlan, mcp.EffectKind)
		}
		set, err := worldtools.StartMCP(ctx, cat, env.manifest, mcp.Options{Store: st.CAS(), Reserved: reserved, Getenv: env.getenv, Logger: env.log})
		if err != nil {
			_ = set.Close()
			return nil, err
		}
		k.mcp = set
		defer func() {
			if err != nil {
				_ = set.Close()
			}
		}()
		k.adapters[mcp.EffectKind] = set.Adapter()
		k.specs = append(k.specs, set.Specs()...)
		commands = append(slices.Clone(commands), set.Tools()...)
		route = mcpRouter(set, route)
	}
	if _, ok := grants[bashfx.KindScripted]; ok {
		ads := map[string]effects.Adapter{introspect.EffectCall: tc, workspace.EffectCall: tc}
		for _, kind := range []string{mcp.EffectKind, toolcall.EffectCustom} {
			if a, ok := k.adapters[kind]; ok {
				ads[kind] = a
			}
		}
		opts := bashfx.Options{Catalog: cat, Tools: commands, Grants: grants, Adapters: ads, Route: route}
		if svc := k.ts.Workspace(); svc != nil {
			opts.Workspace = svc // the scripts' /workspace
		}
		bash, err := bashfx.New(opts)
		if err != nil {
			return nil, fmt.Errorf("the bash tool: %w", err)
		}
		k.bash = bash
		k.adapters[bashfx.KindScripted] = bash
		k.specs = append(k.specs, tools.SpecFor(bash.Shell().Tool(), tools.FamilyBash))
	}
	return k, nil
}

func names(ts []tools.Tool) string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Info().Name)
	}
	return strings.Join(out, ", ")
}

// customRouter routes the program's tools to custom.call, and the others
// as next does.
func customRouter(custom []tools.Tool, next bashfx.Router) bashfx.Router {
	if len(custom) == 0 {
		return next
	}
	set := map[string]bool{}
	for _, t := range custom {
		set[t.Info().Name] = true
	}
	return func(tool string) (bashfx.Route, bool) {
		if set[tool] {
			return bashfx.Route{Kind: toolcall.EffectCustom, Params: bashfx.ToolCallParams}, true
		}
		return next(tool)
	}
}

// mcpRouter routes the MCP tools of set to mcp.call, and the others as
// next does.
func mcpRouter(set *mcp.Set, next bashfx.Router) bashfx.Router {
	return func(tool string) (bashfx.Route, bool) {
		if server, serverTool, ok := set.Route(tool); ok {
			return bashfx.Route{Kind: mcp.EffectKind, Params: func(_, args string) schema.Value {
				return mcp.Params(server, serverTool, args)
			}}, true
		}
		return next(tool)
	}
}

// spec is the chat's tools blob: the tools, and the MCP servers' tool
// lists they came from (so the journal reaches them, by tools_ref).
func (k *toolKit) spec() tools.Spec {
	sp := tools.Spec{Tools: k.specs}
	if k.mcp != nil {
		for _, si := range k.mcp.Servers() {
			if si.ListRef.Valid() {
				if sp.MCPLists == nil {
					sp.MCPLists = map[string]string{}
				}
				sp.MCPLists[si.Name] = si.ListRef.String()
			}
		}
	}
	return sp
}

func (k *toolKit) close() error {
	if k.mcp == nil {
		return nil
	}
	return k.mcp.Close()
}

// timeoutFor is the dispatcher's per-kind timeout.
func (k *toolKit) timeoutFor(kind string) time.Duration {
	switch {
	case kind == bashfx.KindScripted:
		return bashTimeout
	case kind == mcp.EffectKind && k.mcp != nil:
		// Above the servers' own timeouts, which answer the model first.
		return k.mcp.MaxTimeout() + 10*time.Second
	}
	return 0
}

// systemPrompt is the agent's default instructions: who it is and how to
// use its tools.
func (k *toolKit) systemPrompt() string {
	var b strings.Builder
	b.WriteString(`You are Demiurge, an agent living in a demiurge world: a deterministic, event-sourced engine where every step you take is journaled and can be replayed. You can inspect the world (introspect_* tools) and read and write the files of its versioned workspace (workspace_* tools). Prefer one bash script that calls several tools as commands (with pipes, loops and jq) over many separate calls. Be concise; say what you did.

`)
	if len(k.custom) > 0 {
		fmt.Fprintf(&b, "The program you run in gives you tools of its own: %s; they are commands in bash scripts too.\n\n", names(k.custom))
	}
	if k.mcp != nil && len(k.mcp.Tools()) > 0 {
		var servers []string
		for _, si := range k.mcp.Servers() {
			if len(si.Tools) > 0 {
				servers = append(servers, si.Name)
			}
		}
		fmt.Fprintf(&b, "Some tools come from MCP servers (%s): they are named <server>_<tool> unless the manifest renames them, and are commands in bash scripts too.\n\n", strings.Join(servers, ", "))
	}
	if k.bash != nil {
		b.WriteString(k.bash.Shell().Tool().Info().SystemPrompt)
	}
	return b.String()
}
