package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cli"
)

// TestRun: the extended command line runs the agent with get_weather
// against the embed example's recorded session (the model's answers are
// the recording's, the tool runs for real), the session replays, and the
// tool is a command of sh's scripts.
func TestRun(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		code := cli.Run(t.Context(), append([]string{"--store", store}, args...), strings.NewReader(""), &out, &errb,
			cli.WithName("mydemiurge"), cli.WithTools(getWeather), cli.WithEnv(func(string) string { return "" }))
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", strings.Join(args, " "), code, out.String(), errb.String())
		}
		return out.String()
	}
	got := run("run", "../demiurge", "--llm", "cassette:../embed/testdata/session", "-m", "What's the weather in Paris and in Oslo?")
	for _, want := range []string{"get_weather", "Oslo", "Paris: sunny, 21°C. Oslo: sunny, 21°C."} {
		if !strings.Contains(got, want) {
			t.Errorf("run printed no %q:\n%s", want, got)
		}
	}
	if got := run("replay"); !strings.Contains(got, "ok") {
		t.Errorf("replay:\n%s", got)
	}
	if got := run("sh", "--manifest", "../demiurge", "-c", "get_weather --city Rome"); !strings.Contains(got, "Rome: sunny, 21°C") {
		t.Errorf("sh: get_weather printed %q", got)
	}
}
