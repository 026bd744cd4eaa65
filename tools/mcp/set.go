package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/tools"
)

// Version is the version of this package's tools, and the client version
// demiurge announces to servers.
const Version = "0.1.0"

// Options configure Connect. Zero fields take defaults.
type Options struct {
	// Store receives each server's ToolList (canonical CBOR); nil keeps
	// the lists in memory only.
	Store cas.Putter
	// Reserved are the names of the other tools the model has (the
	// built-in ones): an MCP tool named like one is an error unless the
	// manifest gives it an alias.
	Reserved []string
	// ConnectTimeout bounds a server's start (default
	// DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// Terminate is how long closing a stdio server waits before it
	// signals the process (default DefaultTerminate).
	Terminate time.Duration
	// OutputLimit bounds a tool's output (default DefaultOutputLimit);
	// ReadLimit that of a tool the server marks read-only (default
	// DefaultReadLimit).
	OutputLimit int
	ReadLimit   int
	// Getenv reads the host's environment variables that stdio servers
	// inherit (PATH, HOME, ...; see Server.Env). Default os.LookupEnv.
	Getenv func(string) (string, bool)
	// Logger receives warnings: a server that fails, dies, restarts.
	Logger *slog.Logger
}

func (o *Options) withDefaults() *Options {
	out := Options{}
	if o != nil {
		out = *o
	}
	if out.ConnectTimeout <= 0 {
		out.ConnectTimeout = DefaultConnectTimeout
	}
	if out.Terminate <= 0 {
		out.Terminate = DefaultTerminate
	}
	if out.OutputLimit <= 0 {
		out.OutputLimit = DefaultOutputLimit
	}
	if out.ReadLimit <= 0 {
		out.ReadLimit = DefaultReadLimit
	}
	if out.Getenv == nil {
		out.Getenv = os.LookupEnv
	}
	out.Logger = logger(out.Logger)
	return &out
}

// Set is the connected MCP servers of a world and their tools. It is safe
// for concurrent use. Close it when done.
type Set struct {
	opts   *Options
	conns  []*conn // in the order of the servers given
	byName map[string]*conn
	tools  []*Tool // by server, then in the order the server listed them
	byTool map[string]*Tool
}

// Connect starts every server at once, each bounded by
// Options.ConnectTimeout, lists their tools, stores each list in
// Options.Store, and makes their tools. A server that fails to start does
// not stop the others: its status says why (Servers), and it has no
// tools.
//
// Connect returns an error, besides the Set, when the configuration is
// wrong: servers without a name, a command or a URL, or named twice; an
// alias that is not a valid tool name; and tool names that collide (two
// servers', or a server's and a Reserved name) or are not valid tool
// names (letters, digits, '_' and '-', at most 64, not starting with a
// digit or '-'), each with the alias that would fix it. Nothing is
// silently shadowed: a caller should refuse to run with that error. The
// Set is never nil; the caller closes it either way.
func Connect(ctx context.Context, servers []Server, opts *Options) (*Set, error) {
	s := &Set{opts: opts.withDefaults(), byName: map[string]*conn{}, byTool: map[string]*Tool{}}
	var problems []string
	for i := range servers {
		cfg := servers[i]
		c := &conn{cfg: cfg, opts: s.opts, stderr: newTail(2048)}
		c.life, c.end = context.WithCancel(context.Background())
		switch {
		case cfg.Name == "":
			problems = append(problems, fmt.Sprintf("MCP server %d has no name", i))
			continue
		case s.byName[cfg.Name] != nil:
			problems = append(problems, fmt.Sprintf("MCP server %q is declared twice", cfg.Name))
			continue
		case cfg.Transport == nil && cfg.Command == "" && cfg.URL == "":
			problems = append(problems, fmt.Sprintf("MCP server %q needs a command (stdio) or a url (streamable HTTP)", cfg.Name))
			c.status, c.err = StatusFailed, fmt.Errorf("%w: no command or url", ErrServerDown)
		}
		for _, tool := range sortedKeys(cfg.Aliases) {
			if a := cfg.Aliases[tool]; !validToolName(a) {
				problems = append(problems, fmt.Sprintf("MCP server %q: the alias %q of tool %q is not a valid tool name (%s)", cfg.Name, a, tool, nameRule))
			}
		}
		s.conns = append(s.conns, c)
		s.byName[cfg.Name] = c
	}
	var wg sync.WaitGroup
	for _, c := range s.conns {
		if c.status == StatusFailed {
			continue
		}
		wg.Go(func() {
			c.start(ctx)
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.err != nil {
				s.opts.Logger.Warn("mcp: server failed to start", "server", c.cfg.Name, "err", c.err)
				return
			}
			if s.opts.Store != nil {
				ref, err := c.list.store(ctx, s.opts.Store)
				if err != nil {
					s.opts.Logger.Warn("mcp: store the tool list", "server", c.cfg.Name, "err", err)
				}
				c.listRef = ref
			}
		})
	}
	wg.Wait()
	problems = append(problems, s.makeTools()...)
	if len(problems) > 0 {
		return s, fmt.Errorf("mcp: %s", strings.Join(problems, "; "))
	}
	return s, nil
}

// nameRule says what a tool name may be.
const nameRule = "letters, digits, '_' and '-', at most 64 bytes, not starting with a digit or '-'"

var commandName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_]`) })

// validToolName reports whether name can be both an LLM function name and
// a command of the bash tool.
func validToolName(name string) bool {
	return llmName().MatchString(name) && commandName().MatchString(name)
}

// makeTools makes the tools of the servers that are up, and returns the
// names that are invalid or collide.
func (s *Set) makeTools() []string {
	var problems []string
	owner := map[string]string{}
	for _, r := range s.opts.Reserved {
		owner[r] = fmt.Sprintf("the built-in tool %q", r)
	}
	for _, c := range s.conns {
		c.mu.Lock()
		list := c.list
		c.mu.Unlock()
		if list == nil {
			continue
		}
		listed := map[string]bool{}
		for i, lt := range list.Tools {
			listed[lt.Name] = true
			name := lt.As
			what := fmt.Sprintf("tool %q of MCP server %q", lt.Name, c.cfg.Name)
			if !validToolName(name) {
				problems = append(problems, fmt.Sprintf("the %s would be named %q, which is not a valid tool name (%s): give it an alias in the manifest (mcp_servers, name %q, aliases {%q: \"...\"})",
					what, name, nameRule, c.cfg.Name, lt.Name))
				continue
			}
			t, err := newTool(s, c, list, i)
			if err != nil {
				// A schema the model API or the reducer would refuse: the
				// tool is left out, and said so.
				c.mu.Lock()
				c.skipped = append(c.skipped, fmt.Sprintf("%s: %v", lt.Name, err))
				c.mu.Unlock()
				s.opts.Logger.Warn("mcp: a tool is not offered", "server", c.cfg.Name, "tool", lt.Name, "err", err)
				continue
			}
			if prev, ok := owner[name]; ok {
				problems = append(problems, fmt.Sprintf("two tools would be named %q: %s and %s; give one an alias in the manifest (mcp_servers[].aliases)", name, prev, what))
				continue
			}
			owner[name] = what
			s.tools = append(s.tools, t)
			s.byTool[name] = t
		}
		for _, tool := range sortedKeys(c.cfg.Aliases) {
			if !listed[tool] {
				s.opts.Logger.Warn("mcp: an alias names a tool the server does not list", "server", c.cfg.Name, "tool", tool, "alias", c.cfg.Aliases[tool])
			}
		}
	}
	return problems
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Tools returns the MCP tools, by server (in the order the servers were
// given), then in the order each server listed them.
func (s *Set) Tools() []tools.Tool {
	out := make([]tools.Tool, len(s.tools))
	for i, t := range s.tools {
		out[i] = t
	}
	return out
}

// Specs returns the tools' specs for the model: family mcp, the server
// and the server's name of the tool, strict false (servers' schemas have
// optional properties and open objects, which strict mode refuses).
func (s *Set) Specs() []tools.SpecTool {
	out := make([]tools.SpecTool, len(s.tools))
	for i, t := range s.tools {
		out[i] = t.Spec()
	}
	return out
}

// Tool returns the tool the model knows by name.
func (s *Set) Tool(name string) (*Tool, bool) {
	t, ok := s.byTool[name]
	return t, ok
}

// Lookup returns the tool a server knows by tool.
func (s *Set) Lookup(server, tool string) (*Tool, bool) {
	for _, t := range s.tools {
		if t.conn.cfg.Name == server && t.def.Name == tool {
			return t, true
		}
	}
	return nil, false
}

// Route returns the server of a tool the model knows by name, and the
// server's name of it: the params of its mcp.call.
func (s *Set) Route(name string) (server, tool string, ok bool) {
	t, ok := s.byTool[name]
	if !ok {
		return "", "", false
	}
	return t.conn.cfg.Name, t.def.Name, true
}

// MaxTimeout is the longest per-call timeout of the servers.
func (s *Set) MaxTimeout() time.Duration {
	d := time.Duration(0)
	for _, c := range s.conns {
		d = max(d, c.timeout())
	}
	return d
}

func (c *conn) timeout() time.Duration {
	if c.cfg.Timeout > 0 {
		return c.cfg.Timeout
	}
	return DefaultCallTimeout
}

// ServerInfo describes a server: how it is reached, its status, its tools.
type ServerInfo struct {
	Name   string
	Kind   string // "stdio", "http" or "transport"
	Target string // the command line or URL
	Status string // StatusConnected, StatusDied, StatusFailed, StatusDown or StatusClosed
	// Err says why the server is not up (failed or down), secrets removed.
	Err error
	// Protocol is the negotiated MCP version; ServerName and ServerVersion
	// the server's own.
	Protocol, ServerName, ServerVersion string
	// Tools are the names the model knows the server's tools by, in the
	// server's order; ServerTools the server's names, at the same indexes.
	Tools, ServerTools []string
	// Descriptions are the first lines of the tools' descriptions.
	Descriptions []string
	// ListRef is the ref of the server's ToolList in Options.Store (zero
	// if none).
	ListRef cas.Ref
	// Connect is how long the start took (spawn and initialize), List the
	// listing of its tools.
	Connect, List time.Duration
	Restarts      int
	Timeout       time.Duration
	// Skipped are the tools the server listed that are not offered, with
	// why ("tool: its input schema does not compile: ...").
	Skipped []string
}

// Servers describes the servers, in the order they were given.
func (s *Set) Servers() []ServerInfo {
	out := make([]ServerInfo, 0, len(s.conns))
	for _, c := range s.conns {
		c.mu.Lock()
		status, err := c.status, c.err
		if status == StatusConnected {
			select {
			case <-c.died:
				status, err = StatusDied, c.failure("died", errors.New("the connection closed"))
				if c.restarts >= 1 {
					status = StatusDown
				}
			default:
			}
		}
		si := ServerInfo{Name: c.cfg.Name, Kind: c.cfg.kind(), Target: c.redact(c.cfg.target()), Status: status, Err: err,
			ListRef: c.listRef, Connect: c.connTime, List: c.listTime, Restarts: c.restarts, Timeout: c.timeout(),
			Skipped: append([]string(nil), c.skipped...)}
		if l := c.list; l != nil {
			si.Protocol, si.ServerName, si.ServerVersion = l.Protocol, l.Name, l.Version
			for _, t := range l.Tools {
				if _, ok := s.byTool[t.As]; !ok || s.byTool[t.As].conn != c {
					continue // skipped
				}
				si.Tools = append(si.Tools, t.As)
				si.ServerTools = append(si.ServerTools, t.Name)
				si.Descriptions = append(si.Descriptions, firstLine(t.Description))
			}
		}
		c.mu.Unlock()
		out = append(out, si)
	}
	return out
}

// Lists returns each connected server's tool list, by server name.
func (s *Set) Lists() map[string]*ToolList {
	out := map[string]*ToolList{}
	for _, c := range s.conns {
		c.mu.Lock()
		if c.list != nil {
			out[c.cfg.Name] = c.list
		}
		c.mu.Unlock()
	}
	return out
}

// Close closes every server (at once): a stdio server gets its stdin
// closed, then a signal after Options.Terminate. Calls after Close fail.
// It returns the errors of servers that did not close cleanly. A nil Set
// closes nothing.
func (s *Set) Close() error {
	if s == nil {
		return nil
	}
	errs := make([]error, len(s.conns))
	var wg sync.WaitGroup
	for i, c := range s.conns {
		wg.Go(func() { errs[i] = c.close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
