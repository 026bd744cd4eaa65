package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/scripted"
	"github.com/demiurge-dev/demiurge/adapters/toolcall"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/world"
)

// toolKit is what the agent of demiurge run can do: the world's tools
// (introspect, workspace), the bash tool whose commands they are, the
// adapters that run them as effects, and their specs for the model.
type toolKit struct {
	ts       *toolset
	bash     *bashfx.Adapter
	specs    []tools.SpecTool
	adapters map[string]effects.Adapter
}

// bashTimeout bounds a scripted.run call (above the demiurge manifest's
// max_timeout_ms of 2 minutes, so the script's own limit ends it first).
const bashTimeout = 130 * time.Second

func newToolKit(name string, cat *schema.Catalog, st world.Storage) (*toolKit, error) {
	k := &toolKit{ts: newToolset(name, cat, st), adapters: map[string]effects.Adapter{}}
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
	if _, ok := grants["scripted.run"]; ok {
		bash, err := bashfx.New(bashfx.Options{Catalog: cat, Tools: k.ts.tools, Grants: grants,
			Adapters: map[string]effects.Adapter{"introspect.call": tc, "workspace.call": tc}})
		if err != nil {
			return nil, fmt.Errorf("run: the bash tool: %w", err)
		}
		k.bash = bash
		k.adapters["scripted.run"] = bash
		k.specs = append(k.specs, tools.SpecFor(bash.Shell().Tool(), tools.FamilyBash))
	}
	return k, nil
}

// bind connects the tools to the open world.
func (k *toolKit) bind(w *world.World) { k.ts.attach(w) }

// timeoutFor is the dispatcher's per-kind timeout.
func (k *toolKit) timeoutFor(kind string) time.Duration {
	if kind == "scripted.run" {
		return bashTimeout
	}
	return 0
}

// systemPrompt is the agent's default instructions: who it is and how to
// use its tools.
func (k *toolKit) systemPrompt() string {
	var b strings.Builder
	b.WriteString(`You are Demiurge, an agent living in a demiurge world: a deterministic, event-sourced engine where every step you take is journaled and can be replayed. You can inspect the world (introspect_* tools) and read and write the files of its versioned workspace (workspace_* tools). Prefer one bash script that calls several tools as commands (with pipes, loops and jq) over many separate calls. Be concise; say what you did.

`)
	if k.bash != nil {
		b.WriteString(k.bash.Shell().Tool().SystemPrompt())
	}
	return b.String()
}
