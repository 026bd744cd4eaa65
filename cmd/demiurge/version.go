package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newVersionCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of demiurge and of the Go toolchain that built it",
		Long: `Print the module version of demiurge, the Go version that built it and, when
the build recorded it, the VCS revision (with "+modified" for a dirty tree).`,
		Args: wantArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			info, ok := debug.ReadBuildInfo()
			_, err := fmt.Fprint(a.out, versionText(info, ok))
			return err
		}}
}

// versionText renders what the build recorded about itself.
func versionText(info *debug.BuildInfo, ok bool) string {
	version := "(unknown)"
	goVersion := runtime.Version()
	var rev, modified string
	if ok {
		if info.Main.Version != "" {
			version = info.Main.Version
		}
		if info.GoVersion != "" {
			goVersion = info.GoVersion
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = "+modified"
				}
			}
		}
	}
	out := fmt.Sprintf("demiurge %s\n%s %s/%s\n", version, goVersion, runtime.GOOS, runtime.GOARCH)
	if rev != "" {
		out += fmt.Sprintf("revision %s%s\n", rev, modified)
	}
	return out
}
