package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/scripted"
	"github.com/demiurge-dev/demiurge/adapters/toolcall"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/mcp"
	"github.com/demiurge-dev/demiurge/world"
)

// toolKit is what the agent of demiurge run can do: the world's tools
// (introspect, workspace, the tools of its MCP servers), the bash tool
// whose commands they are, the adapters that run them as effects, and
// their specs for the model. Close it when done: it stops the MCP
// servers.
type toolKit struct {
	ts       *toolset
	mcp      *mcp.Set // nil when the manifest declares no MCP servers
	bash     *bashfx.Adapter
	specs    []tools.SpecTool
	adapters map[string]effects.Adapter
}

// bashTimeout bounds a scripted.run call (above the demiurge manifest's
// max_timeout_ms of 2 minutes, so the script's own limit ends it first).
const bashTimeout = 130 * time.Second

// mcpEnv is what starting a world's MCP servers needs from the command.
type mcpEnv struct {
	// getenv reads the host's environment: secrets bound to env:VAR, and
	// the variables stdio servers inherit.
	getenv func(string) (string, bool)
	// manifest is the path of the world's AIR; its directory is where
	// stdio servers run.
	manifest string
	log      *slog.Logger
}

func newToolKit(ctx context.Context, name string, cat *schema.Catalog, st world.Storage, env mcpEnv) (k *toolKit, err error) {
	k = &toolKit{ts: newToolset(name, cat, st), adapters: map[string]effects.Adapter{}}
	tc := toolcall.New(k.ts.tools...)
	k.adapters["introspect.call"] = tc
	k.adapters["workspace.call"] = tc
	for _, t := range k.ts.tools {
		fam := tools.FamilyIntrospect
		if strings.HasPrefix(t.Name(), "workspace_") {
			fam = tools.FamilyWorkspace
		}
		k.specs = append(k.specs, tools.SpecFor(t, fam))
	}
	grants, err := bashfx.GrantsFromPlan(cat, demiurge.ToolPlan)
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	commands := k.ts.tools
	route := bashfx.DefaultRoute
	if len(cat.Manifest.MCPServers) > 0 {
		if _, ok := grants[mcp.Kind]; !ok {
			return nil, fmt.Errorf("run: the manifest declares MCP servers, but %s emits no %s effect to call their tools", demiurge.ToolPlan, mcp.Kind)
		}
		var reserved []string
		for _, t := range k.ts.tools {
			reserved = append(reserved, t.Name())
		}
		if _, ok := grants["scripted.run"]; ok {
			reserved = append(reserved, bashfx.ToolName)
		}
		set, err := startMCP(ctx, cat, st.CAS(), reserved, env)
		if err != nil {
			return nil, err
		}
		k.mcp = set
		defer func() {
			if err != nil {
				_ = set.Close()
			}
		}()
		k.adapters[mcp.Kind] = set.Adapter()
		k.specs = append(k.specs, set.Specs()...)
		commands = append(append([]tools.Tool(nil), commands...), set.Tools()...)
		route = mcpRouter(set)
	}
	if _, ok := grants["scripted.run"]; ok {
		ads := map[string]effects.Adapter{"introspect.call": tc, "workspace.call": tc}
		if k.mcp != nil {
			ads[mcp.Kind] = k.adapters[mcp.Kind]
		}
		opts := bashfx.Options{Catalog: cat, Tools: commands, Grants: grants, Adapters: ads, Route: route}
		if k.ts.svc != nil {
			opts.Workspace = k.ts.svc
		}
		bash, err := bashfx.New(opts)
		if err != nil {
			return nil, fmt.Errorf("run: the bash tool: %w", err)
		}
		k.bash = bash
		k.adapters["scripted.run"] = bash
		k.specs = append(k.specs, tools.SpecFor(bash.Shell().Tool(), tools.FamilyBash))
	}
	return k, nil
}

// startMCP starts the MCP servers of a world: their tool lists go to
// store, and a tool named like one of reserved is an error. A server that
// fails to start is reported on the log and left out.
func startMCP(ctx context.Context, cat *schema.Catalog, store cas.Putter, reserved []string, env mcpEnv) (*mcp.Set, error) {
	dir, err := manifestDir(env.manifest)
	if err != nil {
		return nil, err
	}
	servers, err := mcp.FromManifest(cat, env.getenv, dir)
	if err != nil {
		return nil, err
	}
	set, err := mcp.Connect(ctx, servers, &mcp.Options{Store: store, Reserved: reserved, Getenv: env.getenv, Logger: env.log})
	if err != nil {
		_ = set.Close()
		return nil, err
	}
	return set, nil
}

// manifestDir is the absolute directory of a world's AIR (a folder, or a
// manifest file in it).
func manifestDir(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
		abs = filepath.Dir(abs)
	}
	return abs, nil
}

// mcpRouter routes the MCP tools of set to mcp.call, and the others as
// bashfx.DefaultRoute does.
func mcpRouter(set *mcp.Set) bashfx.Router {
	return func(tool string) (bashfx.Route, bool) {
		if server, serverTool, ok := set.Route(tool); ok {
			return bashfx.Route{Kind: mcp.Kind, Params: func(_, args string) schema.Value {
				return mcp.Params(server, serverTool, args)
			}}, true
		}
		return bashfx.DefaultRoute(tool)
	}
}

// lookupEnv turns a command's getenv into a lookup: an empty variable is
// unset.
func lookupEnv(getenv func(string) string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v := getenv(k)
		return v, v != ""
	}
}

// reportMCP tells the user about the MCP servers that are not up: their
// tools are not offered.
func reportMCP(w io.Writer, set *mcp.Set) {
	if set == nil {
		return
	}
	for _, si := range set.Servers() {
		if si.Status != mcp.StatusConnected && si.Err != nil {
			fmt.Fprintf(w, "demiurge: %s; its tools are not offered\n", strings.TrimPrefix(si.Err.Error(), mcp.ErrServerDown.Error()+": "))
		}
		for _, sk := range si.Skipped {
			fmt.Fprintf(w, "demiurge: MCP server %s: tool %s; it is not offered\n", si.Name, sk)
		}
	}
}

// close stops the MCP servers.
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

// bind connects the tools to the open world.
func (k *toolKit) bind(w *world.World) { k.ts.attach(w) }

// timeoutFor is the dispatcher's per-kind timeout.
func (k *toolKit) timeoutFor(kind string) time.Duration {
	switch {
	case kind == "scripted.run":
		return bashTimeout
	case kind == mcp.Kind && k.mcp != nil:
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
		b.WriteString(k.bash.Shell().Tool().SystemPrompt())
	}
	return b.String()
}
