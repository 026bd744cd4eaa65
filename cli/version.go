package cli

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newVersionCommand(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print the version of demiurge and of the Go toolchain that built it",
		Long: `Print the module version of demiurge, the Go version that built it and, when
the build recorded it, the VCS revision (with "+modified" for a dirty tree).

With --json, one JSON object:
  {"version", "go", "os", "arch", "revision" (absent if not recorded),
   "modified" (true for a dirty tree; absent, as "revision", when the build
   recorded no VCS information: built outside a git checkout, in a git
   worktree, which the go command does not read, or with -buildvcs=false)}`,
		Example: `  demiurge version
  demiurge version --json | jq -r .version`,
		Args: wantArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			v := readVersion(debug.ReadBuildInfo())
			if asJSON {
				b, err := json.Marshal(v)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(a.out, "%s\n", b)
				return err
			}
			_, err := fmt.Fprint(a.out, v.text())
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object (the shape is above)")
	return cmd
}

// versionInfo is what the build recorded about itself.
type versionInfo struct {
	Version  string `json:"version"`
	Go       string `json:"go"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	Revision string `json:"revision,omitempty"`
	// Modified is whether the tree was dirty, when the build recorded
	// it (not at all without VCS information: a test binary, a build
	// with -buildvcs=false or outside a repository).
	Modified *bool `json:"modified,omitempty"`
	// Program is the module of a program that extends the command line
	// (cli.Main), and ProgramVersion its version; then Version is that of
	// the demiurge module it was built with, and Revision the program's.
	Program        string `json:"program,omitempty"`
	ProgramVersion string `json:"program_version,omitempty"`
}

// demiurgeModule is the path of demiurge's module.
const demiurgeModule = "github.com/demiurge-dev/demiurge"

// readVersion reads what debug.ReadBuildInfo returned.
func readVersion(info *debug.BuildInfo, ok bool) versionInfo {
	v := versionInfo{Version: "(unknown)", Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if !ok {
		return v
	}
	if info.Main.Version != "" {
		v.Version = info.Main.Version
	}
	if info.Main.Path != "" && info.Main.Path != demiurgeModule {
		v.Program, v.ProgramVersion, v.Version = info.Main.Path, info.Main.Version, "(unknown)"
		for _, d := range info.Deps {
			if d.Path == demiurgeModule {
				v.Version = d.Version
				if d.Replace != nil && d.Replace.Version != "" {
					v.Version = d.Replace.Version
				}
			}
		}
	}
	if info.GoVersion != "" {
		v.Go = info.GoVersion
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			dirty := s.Value == "true"
			v.Modified = &dirty
		}
	}
	return v
}

// text renders v for people.
func (v versionInfo) text() string {
	out := fmt.Sprintf("demiurge %s\n%s %s/%s\n", v.Version, v.Go, v.OS, v.Arch)
	if v.Program != "" {
		out = fmt.Sprintf("demiurge %s, in %s %s\n%s %s/%s\n", v.Version, v.Program, v.ProgramVersion, v.Go, v.OS, v.Arch)
	}
	if v.Revision != "" {
		modified := ""
		if v.Modified != nil && *v.Modified {
			modified = "+modified"
		}
		out += fmt.Sprintf("revision %s%s\n", v.Revision, modified)
	}
	return out
}

// versionText renders what the build recorded about itself.
func versionText(info *debug.BuildInfo, ok bool) string { return readVersion(info, ok).text() }
