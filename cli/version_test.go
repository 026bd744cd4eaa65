package cli

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionText(t *testing.T) {
	t.Parallel()
	platform := runtime.GOOS + "/" + runtime.GOARCH
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, "demiurge (unknown)\n" + runtime.Version() + " " + platform + "\n"},
		{"devel", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, true,
			"demiurge (devel)\ngo1.26.8 " + platform + "\n"},
		{"release with vcs", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.1.0"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "false"}}}, true,
			"demiurge v0.1.0\ngo1.26.8 " + platform + "\nrevision abc123\n"},
		{"dirty tree", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.1.1-0.20260101-abc123+dirty"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}}, true,
			"demiurge v0.1.1-0.20260101-abc123+dirty\ngo1.26.8 " + platform + "\nrevision abc123+modified\n"},
		{"a program extending the command line", &debug.BuildInfo{GoVersion: "go1.26.8",
			Main:     debug.Module{Path: "example.com/mycli", Version: "v1.2.0"},
			Deps:     []*debug.Module{{Path: "github.com/spf13/cobra", Version: "v1.9.1"}, {Path: "github.com/demiurge-dev/demiurge", Version: "v0.3.0"}},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "def456"}}}, true,
			"demiurge v0.3.0, in example.com/mycli v1.2.0\ngo1.26.8 " + platform + "\nrevision def456\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := versionText(tc.info, tc.ok); got != tc.want {
				t.Errorf("versionText = %q; want %q", got, tc.want)
			}
		})
	}
}

// TestVersionJSON: "modified" is there only when the build recorded it,
// true for a dirty tree: a build without VCS information does not claim a
// clean one.
func TestVersionJSON(t *testing.T) {
	t.Parallel()
	vcs := func(modified string) *debug.BuildInfo {
		return &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.1.0"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: modified}}}
	}
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"no vcs", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, `"version":"(devel)","go":"go1.26.8","os":"` + runtime.GOOS + `","arch":"` + runtime.GOARCH + `"}`},
		{"clean", vcs("false"), `"revision":"abc123","modified":false}`},
		{"dirty", vcs("true"), `"revision":"abc123","modified":true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(readVersion(tc.info, true))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(string(b), tc.want) {
				t.Errorf("version --json = %s; want it to end %s", b, tc.want)
			}
		})
	}
}

func TestVersionCommand(t *testing.T) {
	t.Parallel()
	r := mustRun(t, exitOK, "", "version")
	if !strings.HasPrefix(r.stdout, "demiurge ") || !strings.Contains(r.stdout, runtime.Version()) {
		t.Errorf("version printed %q", r.stdout)
	}
}
