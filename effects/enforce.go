package effects

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/demiurge-dev/demiurge/schema"
)

// Built-in enforcer modules: a defcap names one (defcap.enforcer.module) to
// check effect params against a grant's params. A cap without an enforcer
// allows any params.
const (
	EnforceHTTPOut    = "sys/CapEnforceHttpOut@1"
	EnforceLLMBasic   = "sys/CapEnforceLlmBasic@1"
	EnforceWorkspace  = "sys/CapEnforceWorkspace@1"
	EnforceGovernance = "sys/CapEnforceGovernance@1"
	EnforceScripted   = "sys/CapEnforceScripted@1"
	EnforceMCP        = "sys/CapEnforceMcp@1"
	EnforceCustom     = "sys/CapEnforceCustom@1"
	EnforceAllowAll   = "sys/CapAllowAll@1"
)

// DefaultWorkspace is the workspace a workspace tool works on when its
// arguments name none.
const DefaultWorkspace = "default"

// field reads a record field; absent and null are nil.

// textSet reads an option<set<text>> or option<list<text>> grant param;
// ok is false when it is absent (absent means "anything").
func textSet(v schema.Value, name string) ([]string, bool) {
	l, ok := schema.FieldPath(v, name).([]schema.Value)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(l))
	for _, e := range l {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out, true
}

func enforce(r schema.Resolver, cd *schema.DefCap, grant schema.Value, kind string, params schema.Value) error {
	switch cd.Enforcer {
	case "", EnforceAllowAll, EnforceGovernance:
		return nil
	case EnforceHTTPOut:
		return enforceHTTP(grant, params)
	case EnforceLLMBasic:
		return enforceLLM(grant, params)
	case EnforceWorkspace:
		if kind == "workspace.call" {
			return enforceWorkspaceTool(grant, params)
		}
		return enforceWorkspace(grant, kind, params)
	case EnforceScripted:
		return enforceScripted(grant, params)
	case EnforceCustom:
		return enforceCustom(grant, params)
	case EnforceMCP:
		return enforceMCP(grant, params)
	}
	return fmt.Errorf("enforcer module %s is not built in; demiurge cannot run it", cd.Enforcer)
}

// enforceHTTP checks an http.request against hosts, schemes, methods,
// ports and path_prefixes allowlists (absent or empty lists allow all).
// A host entry "*.example.com" matches subdomains of example.com.
func enforceHTTP(grant, params schema.Value) error {
	method, _ := schema.FieldPath(params, "method").(string)
	raw, _ := schema.FieldPath(params, "url").(string)
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("url %q is not an absolute URL", raw)
	}
	if err := HTTPDestinationAllowed(grant, u); err != nil {
		return err
	}
	if methods, ok := textSet(grant, "methods"); ok && len(methods) > 0 && !containsFold(methods, method) {
		return fmt.Errorf("method %q is not in the allowed methods %v", method, methods)
	}
	return nil
}

// HTTPDestinationAllowed checks an absolute URL against the params of an
// http.out grant: its host against hosts ("*.example.com" for
// subdomains), its scheme against schemes, its port (the scheme's default
// when the URL has none) against ports, and its cleaned path against
// path_prefixes. An absent or empty list allows any. It is the check of a
// request's destination, for the first request and for every redirect;
// the method is checked only on the first request.
func HTTPDestinationAllowed(grant schema.Value, u *url.URL) error {
	host := strings.ToLower(u.Hostname())
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	if hosts, ok := textSet(grant, "hosts"); ok && len(hosts) > 0 && !hostAllowed(host, hosts) {
		return fmt.Errorf("host %q is not in the allowed hosts %v", host, hosts)
	}
	if schemes, ok := textSet(grant, "schemes"); ok && len(schemes) > 0 && !containsFold(schemes, scheme) {
		return fmt.Errorf("scheme %q is not in the allowed schemes %v", scheme, schemes)
	}
	if ports, ok := schema.FieldPath(grant, "ports").([]schema.Value); ok && len(ports) > 0 {
		allowed := false
		for _, p := range ports {
			if n, ok := p.(uint64); ok && strconv.FormatUint(n, 10) == port {
				allowed = true
			}
		}
		if !allowed {
			return fmt.Errorf("port %s is not in the allowed ports %s", port, schema.String(ports))
		}
	}
	if prefixes, ok := textSet(grant, "path_prefixes"); ok && len(prefixes) > 0 {
		p := u.EscapedPath()
		if p == "" {
			p = "/"
		}
		clean := path.Clean(p)
		if strings.HasSuffix(p, "/") && clean != "/" {
			clean += "/"
		}
		allowed := false
		for _, pre := range prefixes {
			if strings.HasPrefix(clean, pre) {
				allowed = true
			}
		}
		if !allowed {
			return fmt.Errorf("path %q is not under the allowed path prefixes %v", clean, prefixes)
		}
	}
	return nil
}

// HostAllowed reports whether host matches one of the allowed host
// patterns ("example.com", or "*.example.com" for its subdomains).
func HostAllowed(host string, allowed []string) bool {
	return hostAllowed(strings.ToLower(host), allowed)
}

func hostAllowed(host string, allowed []string) bool {
	for _, a := range allowed {
		a = strings.ToLower(a)
		if a == host {
			return true
		}
		if suffix, ok := strings.CutPrefix(a, "*."); ok && strings.HasSuffix(host, "."+suffix) {
			return true
		}
	}
	return false
}

func containsFold(ss []string, s string) bool {
	for _, x := range ss {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// enforceLLM checks llm.generate against providers, models, max_tokens
// and tools_allow (a named tool_choice must be allowed).
func enforceLLM(grant, params schema.Value) error {
	provider, _ := schema.FieldPath(params, "provider").(string)
	model, _ := schema.FieldPath(params, "model").(string)
	if ps, ok := textSet(grant, "providers"); ok && len(ps) > 0 && !slices.Contains(ps, provider) {
		return fmt.Errorf("provider %q is not in the allowed providers %v", provider, ps)
	}
	if ms, ok := textSet(grant, "models"); ok && len(ms) > 0 && !slices.Contains(ms, model) {
		return fmt.Errorf("model %q is not in the allowed models %v", model, ms)
	}
	if max, ok := schema.FieldPath(grant, "max_tokens").(uint64); ok {
		if n, _ := schema.FieldPath(params, "max_tokens").(uint64); n > max {
			return fmt.Errorf("max_tokens %d is above the cap's %d", n, max)
		}
	}
	if tools, ok := textSet(grant, "tools_allow"); ok {
		if tc, ok := schema.FieldPath(params, "tool_choice").(*schema.Map); ok {
			if tag, v, _ := tc.VariantTag(); tag == "Tool" {
				name, _ := schema.FieldPath(v, "name").(string)
				if !slices.Contains(tools, name) {
					return fmt.Errorf("tool_choice names tool %q, which is not in tools_allow %v", name, tools)
				}
			}
		}
	}
	return nil
}

// enforceWorkspace checks workspace.* against workspaces, path_prefixes
// and ops (the effect kind without "workspace.").
func enforceWorkspace(grant schema.Value, kind string, params schema.Value) error {
	op := strings.TrimPrefix(kind, "workspace.")
	if ops, ok := textSet(grant, "ops"); ok && len(ops) > 0 && !slices.Contains(ops, op) {
		return fmt.Errorf("operation %q is not in the allowed ops %v", op, ops)
	}
	if ws, ok := schema.FieldPath(params, "workspace").(string); ok {
		if allowed, ok := textSet(grant, "workspaces"); ok && len(allowed) > 0 && !slices.Contains(allowed, ws) {
			return fmt.Errorf("workspace %q is not in the allowed workspaces %v", ws, allowed)
		}
	}
	// The paths the call touches. A call without one (a listing or a diff
	// of the whole tree) touches the root, which path_prefixes must allow
	// too; only resolve and empty_root touch no path.
	var paths []string
	for _, key := range []string{"path", "prefix"} {
		if p, ok := schema.FieldPath(params, key).(string); ok {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 && op != "resolve" && op != "empty_root" {
		paths = []string{""}
	}
	for _, p := range paths {
		clean, err := CleanWorkspacePath(p)
		if err != nil {
			return err
		}
		if prefixes, ok := textSet(grant, "path_prefixes"); ok && len(prefixes) > 0 {
			allowed := false
			for _, pre := range prefixes {
				pc, err := CleanWorkspacePath(pre)
				if err != nil {
					continue
				}
				if pc == "" || clean == pc || strings.HasPrefix(clean, pc+"/") {
					allowed = true
				}
			}
			if !allowed {
				if clean == "" {
					return fmt.Errorf("the whole workspace is not under the allowed path prefixes %v; name a path under one of them", prefixes)
				}
				return fmt.Errorf("path %q is not under the allowed path prefixes %v", clean, prefixes)
			}
		}
	}
	return nil
}

// enforceWorkspaceTool checks a workspace tool call ({tool, arguments_json})
// like the workspace primitives: the op is the tool name without
// "workspace_", the workspace and path come from the arguments.
func enforceWorkspaceTool(grant, params schema.Value) error {
	tool, _ := schema.FieldPath(params, "tool").(string)
	args, _ := schema.FieldPath(params, "arguments_json").(string)
	op, ok := strings.CutPrefix(tool, "workspace_")
	if !ok {
		return fmt.Errorf("%q is not a workspace tool", tool)
	}
	var a struct {
		Workspace *string `json:"workspace"`
		Path      *string `json:"path"`
		Prefix    *string `json:"prefix"`
	}
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		return fmt.Errorf("arguments of %s are not a JSON object: %v", tool, err)
	}
	ws := DefaultWorkspace
	if a.Workspace != nil {
		ws = *a.Workspace
	}
	p := schema.Record("workspace", ws)
	if a.Path != nil {
		p = p.With("path", *a.Path)
	}
	if a.Prefix != nil {
		p = p.With("prefix", *a.Prefix)
	}
	return enforceWorkspace(grant, "workspace."+op, p)
}

// enforceScripted checks scripted.run against max_timeout_ms. (The
// commands inside the script are each checked as the tool calls they are.)
func enforceScripted(grant, params schema.Value) error {
	if max, ok := schema.FieldPath(grant, "max_timeout_ms").(uint64); ok {
		if t, ok := schema.FieldPath(params, "timeout_ms").(uint64); ok && t > max {
			return fmt.Errorf("timeout_ms %d is above the cap's %d", t, max)
		}
	}
	return nil
}

// enforceMCP checks mcp.call against servers and tools_allow ("server/tool"
// or "tool" entries).
func enforceMCP(grant, params schema.Value) error {
	server, _ := schema.FieldPath(params, "server").(string)
	tool, _ := schema.FieldPath(params, "tool").(string)
	if ss, ok := textSet(grant, "servers"); ok && len(ss) > 0 && !slices.Contains(ss, server) {
		return fmt.Errorf("MCP server %q is not in the allowed servers %v", server, ss)
	}
	if ts, ok := textSet(grant, "tools_allow"); ok && len(ts) > 0 && !slices.Contains(ts, tool) && !slices.Contains(ts, server+"/"+tool) {
		return fmt.Errorf("MCP tool %s/%s is not in tools_allow %v", server, tool, ts)
	}
	return nil
}

// enforceCustom checks custom.call against tools_allow: the tools of the
// embedding program the grant lets run (absent or empty: all of them).
func enforceCustom(grant, params schema.Value) error {
	tool, _ := schema.FieldPath(params, "tool").(string)
	if ts, ok := textSet(grant, "tools_allow"); ok && len(ts) > 0 && !slices.Contains(ts, tool) {
		return fmt.Errorf("tool %s is not in tools_allow %v", tool, ts)
	}
	return nil
}

// CleanWorkspacePath normalizes a path inside a workspace: slash
// separated, relative to the workspace root, without "." or ".."
// components. A path that is absolute, escapes the root with "..", or
// holds a NUL or backslash is an error. The root itself is "".
func CleanWorkspacePath(p string) (string, error) {
	if strings.ContainsAny(p, "\x00\\") {
		return "", fmt.Errorf("path %q holds a NUL or backslash", p)
	}
	if strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q is absolute; workspace paths are relative to the workspace root", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", fmt.Errorf("path %q escapes the workspace with \"..\"", p)
		}
	}
	c := path.Clean("/" + p)
	return strings.TrimPrefix(c, "/"), nil
}
