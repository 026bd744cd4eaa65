package mcp

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/schema"
)

// Defaults of a server's settings.
const (
	// DefaultCallTimeout bounds a call when the manifest gives no
	// timeout_ms.
	DefaultCallTimeout = 60 * time.Second
	// DefaultConnectTimeout bounds starting a server and listing its tools
	// (npx may download the server first).
	DefaultConnectTimeout = 30 * time.Second
	// DefaultTerminate is how long closing a stdio server waits, after
	// closing its stdin, before it signals the process (some servers
	// ignore the end of their input).
	DefaultTerminate = 500 * time.Millisecond
)

// Server is one MCP server to connect to: a command run over stdio, a
// streamable-HTTP URL, or (for tests and programs that embed a server) a
// Transport function. Secrets are already resolved: Env and Headers hold
// the values themselves, which are never logged, journaled or shown; the
// text the server sends back has them replaced by "[secret]".
type Server struct {
	// Name names the server; its tools are "<Name>_<tool>" for the model.
	Name string
	// Command and Args start a stdio server, in Dir (default: the current
	// directory). A relative Command with a slash is relative to Dir.
	Command string
	Args    []string
	Dir     string
	// Env is the server's environment: the host's PATH, HOME, USER,
	// LOGNAME, SHELL, TERM, TMPDIR and LANG (when set), then these. Nothing
	// else of the host's environment (API keys, say) reaches the server.
	Env map[string]string
	// URL is the endpoint of a streamable-HTTP server; Headers are sent
	// with every request.
	URL     string
	Headers map[string]string
	// Transport, if set, returns a fresh transport to the server for each
	// connection (a restart makes a new one); Command and URL are then
	// ignored.
	Transport func(ctx context.Context) (sdk.Transport, error)
	// Aliases rename tools for the model: server tool name → name.
	Aliases map[string]string
	// Timeout bounds each call (default DefaultCallTimeout); a request's
	// TimeoutMS can lower it.
	Timeout time.Duration
	// Secrets are values that must never be shown: the resolved secrets
	// of Env and Headers. They are replaced by "[secret]" in everything
	// the server returns and in every error.
	Secrets []string
}

// secretNote replaces secret values in text the server returns.
const secretNote = "[secret]"

// kind says how a server is reached, for listings.
func (s *Server) kind() string {
	switch {
	case s.Transport != nil:
		return "transport"
	case s.URL != "":
		return "http"
	}
	return "stdio"
}

// target describes where a server is, for listings and errors: the
// command line or the URL (never env or headers).
func (s *Server) target() string {
	switch s.kind() {
	case "transport":
		return "(in-process transport)"
	case "http":
		return s.URL
	}
	return strings.Join(append([]string{s.Command}, s.Args...), " ")
}

// SecretLookup returns the definition of a defsecret by name
// ("alias@version"), as schema.Catalog.Secret does.
type SecretLookup func(name string) (*schema.DefSecret, bool)

// FromManifest returns the servers a manifest declares (its mcp_servers,
// in order), with secrets resolved: a secret's defsecret must bind it to
// an environment variable ("env:VAR"), which getenv reads; a secret that
// is not declared, not bound to env:, unset, empty, not matching its
// expected_digest, or restricted to plans (allowed_plans) is an error
// naming the server and the variable, and so is a secret whose
// allowed_caps name no grant of the manifest with cap type "mcp". dir is
// where stdio servers run (the manifest's directory).
func FromManifest(cat *schema.Catalog, getenv func(string) (string, bool), dir string) ([]Server, error) {
	var out []Server
	var errs []string
	for _, sv := range cat.Manifest.MCPServers {
		s := Server{Name: sv.Name, Command: sv.Command, Args: append([]string(nil), sv.Args...), Dir: dir, URL: sv.URL}
		if sv.TimeoutMS > 0 {
			s.Timeout = time.Duration(min(sv.TimeoutMS, uint64(24*time.Hour/time.Millisecond))) * time.Millisecond
		}
		for _, a := range sv.Aliases {
			if s.Aliases == nil {
				s.Aliases = map[string]string{}
			}
			s.Aliases[a.Tool] = a.Alias
		}
		resolve := func(what string, vs []schema.MCPVar) map[string]string {
			if len(vs) == 0 {
				return nil
			}
			m := make(map[string]string, len(vs))
			for _, v := range vs {
				val, secret, err := resolveVar(cat, getenv, v.Value)
				if err != nil {
					errs = append(errs, fmt.Sprintf("MCP server %q: %s %s: %v", sv.Name, what, v.Name, err))
					continue
				}
				if secret {
					s.Secrets = append(s.Secrets, val)
				}
				m[v.Name] = val
			}
			return m
		}
		s.Env = resolve("env", sv.Env)
		s.Headers = resolve("header", sv.Headers)
		out = append(out, s)
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("mcp: %s", strings.Join(errs, "; "))
	}
	return out, nil
}

// resolveVar reads a sys/TextOrSecretRef@1 value.
func resolveVar(cat *schema.Catalog, getenv func(string) (string, bool), v schema.Value) (val string, secret bool, err error) {
	m, _ := v.(*schema.Map)
	tag, inner, ok := m.VariantTag()
	if !ok {
		return "", false, fmt.Errorf("want {\"literal\": text} or {\"secret\": {alias, version}}, got %s", schema.String(v))
	}
	if tag == "literal" {
		s, ok := inner.(string)
		if !ok {
			return "", false, fmt.Errorf("the literal is %s, not text", schema.String(inner))
		}
		return s, false, nil
	}
	rm, _ := inner.(*schema.Map)
	a, _ := rm.Get("alias")
	ver, _ := rm.Get("version")
	name := fmt.Sprintf("%v@%v", a, ver)
	def, ok := cat.Secret(name)
	if !ok {
		return "", true, fmt.Errorf("secret %s is not declared (add a defsecret named %s and list it in the manifest's secrets)", name, name)
	}
	if len(def.AllowedPlans) > 0 {
		return "", true, fmt.Errorf("secret %s may be used only by plans %s, not by an MCP server", name, strings.Join(def.AllowedPlans, ", "))
	}
	if len(def.AllowedCaps) > 0 && !mcpGrant(cat, def.AllowedCaps) {
		return "", true, fmt.Errorf("secret %s may be used only with grants %s, none of which is a grant of an mcp cap", name, strings.Join(def.AllowedCaps, ", "))
	}
	envName, ok := strings.CutPrefix(def.BindingID, "env:")
	if !ok {
		return "", true, fmt.Errorf("secret %s is bound to %q; demiurge resolves only env:VARIABLE bindings", name, def.BindingID)
	}
	val, ok = getenv(envName)
	if !ok || val == "" {
		return "", true, fmt.Errorf("secret %s is not available: environment variable %s is not set", name, envName)
	}
	if def.ExpectedDigest != "" {
		if want, perr := cas.ParseRef(def.ExpectedDigest); perr == nil && want.Algo() == cas.BLAKE3 && cas.Sum([]byte(val)) != want {
			return "", true, fmt.Errorf("secret %s from %s does not match its expected_digest", name, envName)
		}
	}
	return val, true, nil
}

// mcpGrant reports whether one of the named grants is a grant of a cap
// whose type is mcp.
func mcpGrant(cat *schema.Catalog, grants []string) bool {
	for _, g := range cat.Manifest.CapGrants {
		if !contains(grants, g.Name) {
			continue
		}
		if cd, ok := cat.Cap(g.Cap); ok && cd.CapType == "mcp" {
			return true
		}
	}
	return false
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// inherited are the host's environment variables a stdio server gets
// besides its own (what the TypeScript SDK passes by default, plus TMPDIR
// and LANG).
var inherited = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "TMPDIR", "LANG"}

// environ returns the environment of a stdio server, sorted.
func (s *Server) environ(hostenv func(string) (string, bool)) []string {
	m := map[string]string{}
	for _, k := range inherited {
		if v, ok := hostenv(k); ok {
			m[k] = v
		}
	}
	for k, v := range s.Env {
		m[k] = v
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// llmName is what an OpenAI-compatible API accepts as a function name.
var llmName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })

// ToolName returns the name the model sees for a server's tool: its
// alias, or "<server>_<tool>".
func (s *Server) ToolName(tool string) string {
	if a, ok := s.Aliases[tool]; ok {
		return a
	}
	return s.Name + "_" + tool
}
