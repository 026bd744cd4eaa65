package bashfx

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/bash"
	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
	"github.com/demiurge-dev/demiurge/tools/introspect"
	"github.com/demiurge-dev/demiurge/tools/workspace"
)

// Effect kinds of the tool families.
const (
	KindIntrospect = introspect.EffectCall
	KindWorkspace  = workspace.EffectCall
	// KindMCP is mcp.EffectKind, spelled out so that bashfx does not
	// link the MCP SDK: demiurge-sh (cmd/demiurge-sh) runs this shell and
	// must start fast (a test holds the two equal).
	KindMCP      = "mcp.call"
	KindScripted = "scripted.run"
)

// AdapterID is the adapter id of scripted.run receipts.
const AdapterID = "scripted"

// Route says how a command runs in a world: as an effect of Kind with the
// params Params builds from the tool's name and its JSON arguments.
type Route struct {
	Kind   string
	Params func(tool, argumentsJSON string) schema.Value
}

// Router finds the route of a tool; ok is false when the tool cannot run
// inside a script.
type Router func(tool string) (r Route, ok bool)

// ToolCallParams builds sys/ToolCallParams@1 {tool, arguments_json}, the
// params of introspect.call and workspace.call.
func ToolCallParams(tool, argumentsJSON string) schema.Value {
	return schema.Record("tool", tool, "arguments_json", argumentsJSON)
}

// DefaultRoute routes introspect_* tools to introspect.call and
// workspace_* tools to workspace.call, with ToolCallParams. MCP tools need
// a Router that knows their servers (mcp.call takes {server, tool,
// arguments_json}).
func DefaultRoute(tool string) (Route, bool) {
	switch {
	case strings.HasPrefix(tool, "introspect_"):
		return Route{Kind: KindIntrospect, Params: ToolCallParams}, true
	case strings.HasPrefix(tool, "workspace_"):
		return Route{Kind: KindWorkspace, Params: ToolCallParams}, true
	}
	return Route{}, false
}

// Options configure an Adapter.
type Options struct {
	// Catalog is the world's loaded manifest: the gate decides each command
	// against its caps and policy, and each sub-receipt is checked against
	// its effect's receipt schema. Required.
	Catalog *schema.Catalog
	// Tools are the commands of the scripts: the world's tools. A tool
	// that Route does not route is an error.
	Tools []tools.Tool
	// Adapters run the commands' effects, by kind: the same adapters a
	// direct call of each kind uses (adapters/toolcall for introspect.call
	// and workspace.call). A command of a kind without one fails.
	Adapters map[string]effects.Adapter
	// Grants name the cap grant a command of each effect kind uses: the
	// grant the world's tool plan uses for that family (GrantsFromPlan). A
	// command of a kind without one is denied.
	Grants map[string]string
	// Route finds a tool's family (default DefaultRoute).
	Route Router
	// Shell configures the bash tool (its name, limits and timeouts).
	Shell ShellOptions
	// Workspace, if set, is mounted as the scripts' /workspace (the
	// world's default workspace); every file operation there is decided
	// by the gate as a workspace tool call (workspace_read, _list,
	// _write, _remove) with the world's workspace.call grant. Without
	// it, scripts get an empty in-memory workspace.
	Workspace Workspace
}

// Adapter runs scripted.run effects. It is safe for concurrent use.
type Adapter struct {
	cat      *schema.Catalog
	gate     *effects.Gate
	adapters map[string]effects.Adapter
	grants   map[string]string
	route    Router
	shellOpt ShellOptions
	ws       Workspace

	mu    sync.RWMutex
	shell *Shell
	key   string // fingerprint of the tool set shell was built from
}

// New returns the scripted.run adapter of a world.
func New(opts Options) (*Adapter, error) {
	if opts.Catalog == nil {
		return nil, errors.New("bashfx: Options.Catalog is required")
	}
	if opts.Route == nil {
		opts.Route = DefaultRoute
	}
	a := &Adapter{
		cat: opts.Catalog, gate: effects.NewGate(opts.Catalog), route: opts.Route, shellOpt: opts.Shell,
		adapters: maps.Clone(opts.Adapters), grants: maps.Clone(opts.Grants), ws: opts.Workspace,
	}
	if err := a.SetTools(opts.Tools); err != nil {
		return nil, err
	}
	return a, nil
}

// SetTools replaces the commands of the scripts (when an MCP server adds
// tools, say). The shell is rebuilt only if the tool set changed (names,
// versions, descriptions or schemas); runs in flight keep the shell they
// started with.
func (a *Adapter) SetTools(ts []tools.Tool) error {
	var unrouted []string
	for _, t := range ts {
		name := t.Info().Name
		if _, ok := a.route(name); !ok {
			unrouted = append(unrouted, name)
		}
	}
	if len(unrouted) > 0 {
		return fmt.Errorf("bashfx: no effect family for tools %s (DefaultRoute knows introspect_* and workspace_*; give Options.Route for others)", strings.Join(unrouted, ", "))
	}
	key := fingerprint(ts)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.shell != nil && key == a.key {
		return nil
	}
	sh, err := NewShell(ts, a.shellOpt)
	if err != nil {
		return err
	}
	a.shell, a.key = sh, key
	return nil
}

// fingerprint identifies what a shell built from ts looks like.
func fingerprint(ts []tools.Tool) string {
	var b strings.Builder
	for _, t := range ts {
		i := t.Info()
		fmt.Fprintf(&b, "%q %q %q %q %s\n", i.Name, i.Version, i.ShortDescription, i.Description, i.InputSchema)
	}
	return cas.Sum([]byte(b.String())).String()
}

// Shell returns the shell scripts run in: its Tool is the bash tool the
// model sees (name, description, system prompt, input schema).
func (a *Adapter) Shell() *Shell {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.shell
}

// Run runs a scripted.run intent's script ({script, timeout_ms?}) and
// returns a sys/ToolResponse@1 receipt. The script's failures (a non-zero
// exit, a timeout, a denied command) are in the receipt, whose status is
// ok; a call without an intent is an error receipt.
func (a *Adapter) Run(ctx context.Context, c *effects.Call) effects.Receipt {
	if c == nil || c.Intent == nil {
		return effects.Errorf(AdapterID, "scripted.run: a call without an intent")
	}
	script, _ := schema.FieldPath(c.Params, "script").(string)
	req := tools.Request{Commands: script}
	if ms, ok := schema.AsUint64(schema.FieldPath(c.Params, "timeout_ms")); ok {
		// 0 is the default, as in tools.Request; the shell bounds the rest.
		req.TimeoutMS = int64(min(ms, 1<<40))
	}
	logical := time.Unix(0, int64(c.Intent.LogicalNowNS)).UTC()
	// The script's randomness is the intent's: a replay of the call draws
	// what the recorded call drew.
	d := c.Intent.Hash.Digest()
	opts := RunOptions{Call: a.gated(c), Clock: func() time.Time { return logical }, Seed: binary.LittleEndian.Uint64(d[:8])}
	if a.ws != nil {
		opts.Mount = Mount{Workspace: a.ws, Name: effects.DefaultWorkspace, Check: a.fileCheck(c)}
	}
	if c.Progress != nil {
		opts.Status = func(s tools.Status) {
			if s.Phase == tools.PhaseOutput && s.Output != "" {
				c.Progress(s.Output)
			}
		}
	}
	return effects.OK(AdapterID, a.Shell().Run(ctx, req, opts).Receipt())
}

// Denied is the error of a command the world refused to run: the gate's
// decision (or the scripted grant's tools_allow).
type Denied struct {
	Tool   string
	Kind   string // the command's effect kind
	Stage  string // effects.Stage* where it was refused
	Reason string // the gate's reason, naming the cap, grant or policy rule
}

func (e *Denied) Error() string { return "denied: " + e.Reason }

// gated returns the CallFunc of one scripted.run call: each command is
// decided by the gate and run by its kind's adapter.
func (a *Adapter) gated(parent *effects.Call) CallFunc {
	in := parent.Intent
	allow, restricted := textSet(schema.FieldPath(in.GrantParams, "tools_allow"))
	return func(ctx context.Context, cmd Command) (tools.Response, error) {
		name := cmd.Tool.Info().Name
		if restricted && !slices.Contains(allow, name) {
			return tools.Response{}, &Denied{Tool: name, Kind: in.Kind, Stage: effects.StageCap,
				Reason: fmt.Sprintf("cap %s (grant %q) does not allow %s in scripts (tools_allow %v)", in.Cap, in.Grant, name, allow)}
		}
		route, _ := a.route(name)
		grant, ok := a.grants[route.Kind]
		if !ok {
			return tools.Response{}, &Denied{Tool: name, Kind: route.Kind, Stage: effects.StageGrant,
				Reason: fmt.Sprintf("no cap grant for %s effects is configured for scripts (the world's tool plan emits none)", route.Kind)}
		}
		d := a.gate.Check(effects.Request{
			Kind: route.Kind, Params: route.Params(name, cmd.Arguments), Grant: grant,
			IdempotencyKey: fmt.Appendf(nil, "%s/%d", in.Hash, cmd.Seq),
			Origin:         in.Origin, LogicalNowNS: in.LogicalNowNS,
		})
		if !d.Allowed {
			return tools.Response{}, &Denied{Tool: name, Kind: route.Kind, Stage: d.Stage, Reason: d.Reason}
		}
		ad, ok := a.adapters[route.Kind]
		if !ok {
			return tools.Response{}, fmt.Errorf("no adapter runs %s effects in this world", route.Kind)
		}
		sub := &effects.Call{Intent: d.Intent, Params: d.Intent.Params, CAS: parent.CAS, Now: parent.Now,
			Sleep: parent.Sleep, Progress: parent.Progress, Attempt: parent.Attempt}
		r := ad.Run(ctx, sub)
		switch r.Status {
		case effects.StatusOK:
		case effects.StatusTimeout:
			return tools.Response{}, &bash.UserError{Msg: fmt.Sprintf("%s timed out: %s", route.Kind, r.Error), Code: 124}
		default:
			return tools.Response{}, fmt.Errorf("%s failed: %s", route.Kind, r.Error)
		}
		return a.response(ctx, d.Intent, r.Payload)
	}
}

// fileCheck returns the checker of one scripted.run call's file
// operations: each is decided as the workspace tool call it amounts to
// (workspace_<op> {"path": p}), by the scripted grant's tools_allow and by
// the gate with the world's workspace.call grant. Decisions are kept for
// the run: a path is asked about once per operation.
func (a *Adapter) fileCheck(parent *effects.Call) vfs.Checker {
	in := parent.Intent
	allow, restricted := textSet(schema.FieldPath(in.GrantParams, "tools_allow"))
	grant, hasGrant := a.grants[KindWorkspace]
	var mu sync.Mutex
	decided := map[string]error{}
	return func(op vfs.Op, p string) error {
		key := string(op) + "\x00" + p
		mu.Lock()
		err, ok := decided[key]
		mu.Unlock()
		if ok {
			return err
		}
		tool := "workspace_" + string(op)
		switch {
		case restricted && !slices.Contains(allow, tool):
			err = fmt.Errorf("cap %s (grant %q) does not allow %s in scripts (tools_allow %v)", in.Cap, in.Grant, tool, allow)
		case !hasGrant:
			err = errNoWorkspaceGrant
		default:
			args, _ := json.Marshal(map[string]string{"path": p})
			d := a.gate.Check(effects.Request{Kind: KindWorkspace, Params: ToolCallParams(tool, string(args)), Grant: grant,
				Origin: in.Origin, LogicalNowNS: in.LogicalNowNS})
			if !d.Allowed {
				err = errors.New(d.Reason)
			}
		}
		mu.Lock()
		decided[key] = err
		mu.Unlock()
		return err
	}
}

// response reads a sub-receipt: it must fit its effect's receipt schema
// (sys/ToolResponse@1 for the tool families); its commits go to the
// recorder in ctx.
func (a *Adapter) response(ctx context.Context, in *effects.Intent, payload schema.Value) (tools.Response, error) {
	ef, ok := a.cat.Effect(in.Effect)
	if !ok {
		return tools.Response{}, fmt.Errorf("effect %s is not in the manifest", in.Effect)
	}
	v, err := schema.Normalize(a.cat, schema.RefType(ef.ReceiptSchema), payload)
	if err != nil {
		return tools.Response{}, fmt.Errorf("the %s receipt does not fit %s: %v", in.Kind, ef.ReceiptSchema, err)
	}
	var resp tools.Response
	resp.Stdout, _ = schema.FieldPath(v, "stdout").(string)
	resp.Stderr, _ = schema.FieldPath(v, "stderr").(string)
	code, _ := schema.AsInt64(schema.FieldPath(v, "exit_code"))
	resp.ExitCode = int(code)
	resp.Error, _ = schema.FieldPath(v, "error").(string)
	resp.StdoutTruncated, _ = schema.FieldPath(v, "stdout_truncated").(bool)
	resp.StderrTruncated, _ = schema.FieldPath(v, "stderr_truncated").(bool)
	commits, _ := schema.FieldPath(v, "commits").([]schema.Value)
	rec := tools.RecorderFrom(ctx)
	for i, cv := range commits {
		c, err := commitFromValue(cv)
		if err != nil {
			return resp, fmt.Errorf("the %s receipt's commit %d: %v", in.Kind, i, err)
		}
		rec.AddCommit(c)
	}
	return resp, nil
}

// commitFromValue reads a sys/WorkspaceCommit@1 value as tools.Response.Value
// writes it.
func commitFromValue(v schema.Value) (tools.Commit, error) {
	var c tools.Commit
	c.Workspace, _ = schema.FieldPath(v, "workspace").(string)
	c.ExpectedHead, _ = schema.AsUint64(schema.FieldPath(v, "expected_head"))
	c.Version = c.ExpectedHead + 1
	meta := schema.FieldPath(v, "meta")
	c.Owner, _ = schema.FieldPath(meta, "owner").(string)
	root, _ := schema.FieldPath(meta, "root_hash").(string)
	ref, err := cas.ParseRef(root)
	if err != nil {
		return c, fmt.Errorf("root_hash: %v", err)
	}
	c.Root = ref
	return c, nil
}

// textSet reads an option<set<text>>; ok is false when it is null.
func textSet(v schema.Value) (out []string, ok bool) {
	l, ok := v.([]schema.Value)
	if !ok {
		return nil, false
	}
	for _, e := range l {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out, true
}

// GrantsFromPlan returns, by effect kind, the cap grant each emit_effect
// step of a plan uses: the grants a world's tool plan (demiurge/tool_plan@1)
// gives each tool family, for Options.Grants. A plan that uses two grants
// for one kind is an error naming both steps, as is a missing plan.
func GrantsFromPlan(cat *schema.Catalog, plan string) (map[string]string, error) {
	p, ok := cat.Plan(plan)
	if !ok {
		return nil, fmt.Errorf("bashfx: plan %s is not in the manifest (its plans: %s)", plan, strings.Join(cat.Names(schema.KindDefPlan), ", "))
	}
	grants := map[string]string{}
	steps := map[string]string{}
	for _, s := range p.Steps {
		if s.Op != schema.OpEmitEffect {
			continue
		}
		if g, ok := grants[s.Kind]; ok && g != s.Cap {
			return nil, fmt.Errorf("bashfx: plan %s emits %s with grant %q at step %s and with grant %q at step %s; scripts need one grant per kind",
				plan, s.Kind, g, steps[s.Kind], s.Cap, s.ID)
		}
		grants[s.Kind], steps[s.Kind] = s.Cap, s.ID
	}
	return grants, nil
}
