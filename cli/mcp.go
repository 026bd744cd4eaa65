package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/agent/worldtools"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/tools/mcp"
)

func newMCPCommand(a *app, getenv func(string) string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Look at the MCP servers of a world",
		Long: `A world's manifest may declare MCP servers (mcp_servers): stdio commands or
streamable-HTTP URLs whose tools the agent gets, named <server>_<tool> unless
the manifest gives an alias. "ls" starts them and lists what they offer.`,
		Example: `  demiurge mcp ls --manifest examples/mcp`,
		Args:    cobra.ArbitraryArgs,
		RunE:    groupRunE,
	}
	cmd.AddCommand(newMCPLsCommand(a, getenv))
	return cmd
}

func newMCPLsCommand(a *app, getenv func(string) string) *cobra.Command {
	var (
		manifest string
		timeout  time.Duration
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "ls --manifest M [--json]",
		Short: "Start a world's MCP servers and list their status and tools",
		Long: `Start the MCP servers the manifest at M declares, all at once, as "demiurge
run" does (stdio servers in the manifest's directory, secrets from the
environment variables their defsecrets name), and list each server: how it is
reached, its status, its name and version, the MCP protocol version, how long
it took to start and to list its tools, the ref of its tool list (the blob
"demiurge run" stores), and its tools as the model sees them, with the first
line of their descriptions. The servers are stopped when the listing is done;
the store is not opened.

With --json, one JSON document, an array with an object per server:
  [{"server", "kind" (stdio or http), "target", "status", "error" (if it is
   not up), "server_name", "server_version", "protocol", "connect_ms",
   "list_ms", "timeout_ms", "restarts", "tool_list" (its ref),
   "tools": [{"name", "server_tool", "description"}], "skipped"}]
A manifest without servers prints [] (a note on stderr says so).

Exit codes: 0 every server is up and its tool names are valid; 1 a server
failed to start, a secret is not available, or tool names collide (the
message names the alias that fixes it); 2 a usage error.`,
		Example: `  demiurge mcp ls --manifest examples/mcp
  demiurge mcp ls --manifest examples/mcp --json | jq -r '.[].tools[].name'`,
		Args: wantArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if manifest == "" {
				return usagef("mcp ls: --manifest is required: the path of the world's AIR (manifest.air, manifest.air.json or its folder)")
			}
			if timeout <= 0 {
				return usagef("mcp ls: --timeout must be positive, got %s", timeout)
			}
			cat, err := a.loadCatalog(manifest)
			if err != nil {
				return err
			}
			if len(cat.Manifest.MCPServers) == 0 {
				note := a.out
				if asJSON {
					note = a.err
				}
				fmt.Fprintf(note, "%s declares no MCP servers (mcp_servers)\n", manifest)
				if asJSON {
					return writeJSON(a.out, []serverJSON{})
				}
				return nil
			}
			set, cerr := worldtools.StartMCP(cmd.Context(), cat, manifest, mcp.Options{Store: cas.NewMemory(), Reserved: worldtools.ReservedNames(cat),
				Getenv: lookupEnv(getenv), Logger: a.log, ConnectTimeout: timeout})
			defer func() { _ = set.Close() }() // a Set is closed even when Connect fails
			if set == nil {
				return cerr
			}
			var down int
			if asJSON {
				down = printServersJSON(a.out, set.Servers())
			} else {
				down = printServers(a.out, set.Servers())
			}
			switch {
			case cerr != nil:
				return cerr
			case down > 0:
				return fmt.Errorf("mcp ls: %d of %d MCP servers are not up", down, len(set.Servers()))
			}
			return nil
		},
	}
	addManifestFlag(cmd, &manifest, "the world's AIR: manifest.air, manifest.air.json or its `PATH`")
	cmd.Flags().DurationVar(&timeout, "timeout", mcp.DefaultConnectTimeout, "how long a server may take to start")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document, an array of servers (the shape is above)")
	return cmd
}

// serverJSON is a server as mcp ls --json prints it.
type serverJSON struct {
	Server        string     `json:"server"`
	Kind          string     `json:"kind"`
	Target        string     `json:"target"`
	Status        string     `json:"status"`
	Error         string     `json:"error,omitempty"`
	ServerName    string     `json:"server_name,omitempty"`
	ServerVersion string     `json:"server_version,omitempty"`
	Protocol      string     `json:"protocol,omitempty"`
	ConnectMS     float64    `json:"connect_ms"`
	ListMS        float64    `json:"list_ms"`
	TimeoutMS     float64    `json:"timeout_ms"`
	Restarts      int        `json:"restarts"`
	ToolList      string     `json:"tool_list,omitempty"`
	Tools         []toolJSON `json:"tools"`
	Skipped       []string   `json:"skipped,omitempty"`
}

type toolJSON struct {
	Name        string `json:"name"`
	ServerTool  string `json:"server_tool"`
	Description string `json:"description"`
}

// printServersJSON lists servers as one JSON document (an array), and
// returns how many are not up.
func printServersJSON(w io.Writer, servers []mcp.ServerInfo) (down int) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	all := []serverJSON{}
	defer func() { _ = writeJSON(w, all) }()
	for _, si := range servers {
		if si.Status != mcp.StatusConnected {
			down++
		}
		out := serverJSON{Server: si.Name, Kind: si.Kind, Target: si.Target, Status: si.Status,
			ServerName: si.ServerName, ServerVersion: si.ServerVersion, Protocol: si.Protocol,
			ConnectMS: ms(si.Connect), ListMS: ms(si.List), TimeoutMS: ms(si.Timeout), Restarts: si.Restarts,
			Tools: []toolJSON{}, Skipped: si.Skipped}
		if si.Err != nil {
			out.Error = strings.TrimPrefix(si.Err.Error(), mcp.ErrServerDown.Error()+": ")
		}
		if si.ListRef.Valid() {
			out.ToolList = si.ListRef.String()
		}
		for j, t := range si.Tools {
			out.Tools = append(out.Tools, toolJSON{Name: t, ServerTool: si.ServerTools[j], Description: si.Descriptions[j]})
		}
		all = append(all, out)
	}
	return down
}

// printServers lists servers and their tools, and returns how many are
// not up.
func printServers(w io.Writer, servers []mcp.ServerInfo) (down int) {
	for i, si := range servers {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s: %s (%s %s)\n", si.Name, si.Status, si.Kind, si.Target)
		if si.Status != mcp.StatusConnected {
			down++
			if si.Err != nil {
				fmt.Fprintf(w, "  error: %s\n", strings.TrimPrefix(si.Err.Error(), mcp.ErrServerDown.Error()+": "))
			}
			if len(si.Tools) == 0 {
				continue
			}
		}
		fmt.Fprintf(w, "  server %s %s, protocol %s; started in %s, tools listed in %s; calls time out after %s\n",
			si.ServerName, si.ServerVersion, si.Protocol, roundDuration(si.Connect), roundDuration(si.List), si.Timeout)
		fmt.Fprintf(w, "  tool list %s (%s)\n", si.ListRef, plural(len(si.Tools), "tool"))
		width := 0
		for _, t := range si.Tools {
			width = max(width, len(t))
		}
		for j, t := range si.Tools {
			line := fmt.Sprintf("  %-*s  %s", width, t, clipLine(si.Descriptions[j], 100))
			if t != si.Name+"_"+si.ServerTools[j] {
				line += fmt.Sprintf(" (alias of %s)", si.ServerTools[j])
			}
			fmt.Fprintln(w, strings.TrimRight(line, " "))
		}
		for _, sk := range si.Skipped {
			fmt.Fprintf(w, "  not offered: %s\n", sk)
		}
	}
	return down
}
