package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/adapters/bashfx"
	"github.com/demiurge-dev/demiurge/agent/worldtools"
	"github.com/demiurge-dev/demiurge/cli/shcmd"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/mcp"
	"github.com/demiurge-dev/demiurge/world"
)

func newShCommand(a *app, getenv func(string) string) *cobra.Command {
	var (
		wf   worldFlags
		opts shcmd.Options
	)
	cmd := &cobra.Command{
		Use:   "sh [-c SCRIPT | FILE] [--manifest M] [--world W]",
		Short: "Run a bash script in the sandbox, with a world's tools as commands",
		Long: `Run a bash script in the sandbox the model's bash tool runs in: no host
process, file, environment variable or network is reachable, and the tools of
the world are commands (introspect_*, workspace_*), next to the sandbox's
utilities (echo, printf, jq, grep, sed, sort, head, ...). The script is -c
SCRIPT, the file FILE, or standard input.

With --manifest, world W (created on first use) is opened with the AIR at M
(a world that ran another AIR runs M from then on, a change recorded in its
journal and said in a note on stderr) and its tools are the commands, with
the tools of the MCP servers it declares (started for the script, stopped
after it). They run as the operator's: no cap
or policy is asked (the model's scripts, in "demiurge run", ask both for every
command).
The world's workspace ("default") is the script's file system at
/workspace, its working directory, and the workspace_* commands read and
change the same files: what the script writes, moves or removes there,
with its commands or through them, becomes one new workspace version when
it ends (a note on stderr lists the changed paths), and /tmp is scratch
space. Workspace commits the script makes, that one and those of
commands that name another workspace, are recorded in the world as
sys/WorkspaceCommit@1 events. Without --manifest the script
has no world tools, only the shell and its utilities, and an empty
in-memory workspace; a note on stderr says so. demiurge-sh (installed
beside demiurge) runs such scripts in a program of its own, which starts
about twice as fast.

The script's stdout and stderr are printed as it runs. --prompt prints the
system prompt the model sees for the bash tool instead of running anything.

` + shcmd.ExitCodes() + `, or
the usual 1 and 2 of demiurge when the world cannot be opened or the
command line is wrong.`,
		Example: `  demiurge sh -c 'echo hello | tr a-z A-Z'
  demiurge sh --manifest examples/demiurge -c 'workspace_write --path notes/a.md --content hi; workspace_list | jq -r ".entries[].path"'
  demiurge sh --manifest examples/demiurge script.sh
  demiurge sh --prompt`,
		Args: wantArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if err := wf.check(false); err != nil {
				return err
			}
			if err := opts.Check(cmd.Flags(), args); err != nil {
				return &usageError{err}
			}
			if cmd.Flags().Changed("world") && wf.manifest == "" {
				return usagef("sh: --world needs --manifest, the world's AIR")
			}
			var script string
			if !opts.Prompt {
				if script, err = opts.Script(cmd.Flags(), args, a.in); err != nil {
					return err
				}
			}
			ctx := cmd.Context()
			var w *world.World
			var ts []tools.Tool
			var mnt bashfx.Mount
			if wf.manifest != "" {
				cat, err := a.loadCatalog(wf.manifest)
				if err != nil {
					return err
				}
				s, err := a.openStore(cmd.Context(), false)
				if err != nil {
					return err
				}
				defer closeStore(s, &err)
				st, err := localStorage(s, "sh")
				if err != nil {
					return err
				}
				w, err = world.Open(ctx, world.Options{Name: wf.world, Catalog: cat, Reducers: a.registry(),
					Storage: st, Adapters: a.adapters(), Logger: a.log})
				if err != nil {
					return explainMissing(ctx, s, fmt.Errorf("open world %s: %w", wf.world, describe(err)))
				}
				defer func() {
					if cerr := w.Close(); err == nil {
						err = cerr
					}
				}()
				a.noteMove(w, wf.manifest)
				a.rememberManifest(wf.world, wf.manifest)
				wt := worldtools.WorldTools(w)
				ts = wt.Tools()
				if a.ext != nil {
					ts = append(ts, a.ext.tools...) // a program's own (WithTools)
				}
				if svc := wt.Workspace(); svc != nil {
					mnt.Workspace = svc
				}
				if len(cat.Manifest.MCPServers) > 0 {
					set, err := worldtools.StartMCP(ctx, cat, wf.manifest, mcp.Options{Store: st.CAS(), Reserved: worldtools.ReservedNames(cat),
						Getenv: lookupEnv(getenv), Logger: a.log})
					defer func() { _ = set.Close() }() // a Set is closed even when it fails to start
					if err != nil {
						return err
					}
					worldtools.ReportMCP(a.err, a.progName()+": warning: ", set.Servers())
					ts = append(ts, set.Tools()...)
				}
			} else if !opts.Prompt {
				fmt.Fprintln(a.err, "demiurge sh: no --manifest: the script has no world tools, only the shell and its utilities, and an empty in-memory workspace")
			}
			sh, err := opts.NewShell(ts)
			if err != nil {
				return err
			}
			if opts.Prompt {
				return shcmd.PrintPrompt(a.out, sh)
			}
			res := shcmd.Run(ctx, sh, script, mnt, a.out, a.err, "demiurge sh")
			if len(res.Commits) > 0 {
				if err := recordCommits(ctx, w, res.Commits); err != nil {
					return err
				}
			}
			if res.ExitCode != 0 {
				return &exitStatus{code: res.ExitCode}
			}
			return nil
		},
	}
	opts.AddFlags(cmd.Flags())
	wf.add(cmd, "the world's AIR whose tools are the commands: manifest.air, manifest.air.json or its `PATH`")
	return cmd
}

// recordCommits sends the workspace commits a script made to the world,
// as the chat reducer does for the model's. Each is applied when Send
// returns.
func recordCommits(ctx context.Context, w *world.World, commits []tools.Commit) error {
	if w == nil {
		return fmt.Errorf("sh: the script made %d workspace commits without a world to record them", len(commits))
	}
	for _, c := range commits {
		if _, err := w.Send(ctx, commitSchema, commitValue(c), c.Workspace); err != nil {
			return fmt.Errorf("sh: record commit %d of workspace %s: %w", c.Version, c.Workspace, err)
		}
	}
	return nil
}

// commitSchema is the event that records a workspace version.
const commitSchema = "sys/WorkspaceCommit@1"

// commitValue is a commit as a sys/WorkspaceCommit@1 event. expected_head
// is always set (0 for a first version), so that a commit made on a stale
// version is a conflict, never applied on top of what it did not see.
func commitValue(c tools.Commit) schema.Value {
	return schema.Record("workspace", c.Workspace, "expected_head", c.ExpectedHead,
		"meta", schema.Record("root_hash", c.Root.String(), "owner", c.Owner, "created_at", uint64(0)))
}
