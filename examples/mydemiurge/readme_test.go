package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"mvdan.cc/sh/v3/shell"
)

// TestMain lets the test binary be mydemiurge when testscript runs it
// under that name.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"mydemiurge": main})
}

// TestReadme runs the README's mydemiurge command three times in a row,
// as the built program, in one fresh copy of the files it reads: each
// run exits 0 with the recorded answer (the second and third in worlds
// main-2 and main-3, since a cassette replays its recording from a new
// world).
func TestReadme(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for line := range strings.Lines(string(readme)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "go run ./examples/mydemiurge "); ok {
			if args, err = shell.Fields(rest, func(string) string { return "" }); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if len(args) == 0 || args[0] != "run" {
		t.Fatalf("the README has no command go run ./examples/mydemiurge run …")
	}
	for i, a := range args {
		if strings.ContainsAny(a, " '\"#$") {
			args[i] = "'" + strings.ReplaceAll(a, "'", "''") + "'"
		}
	}
	run := "exec mydemiurge " + strings.Join(args, " ") + "\nstdout 'Paris: sunny, 21°C. Oslo: sunny, 21°C.'\n"
	script := run + "! stderr .\n" + run + "stderr 'this run is world main-2 '\n" + run + "stderr 'this run is world main-3 '\n" +
		"exec mydemiurge replay --world main-3 --from-genesis\nstdout '^ok: world main-3 replays'\n"
	file := filepath.Join(t.TempDir(), "readme.txtar")
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Files:               []string{file},
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			for _, d := range []string{filepath.Join("examples", "demiurge"), filepath.Join("examples", "embed", "testdata", "session")} {
				if err := os.CopyFS(filepath.Join(env.WorkDir, d), os.DirFS(filepath.Join("..", "..", d))); err != nil {
					return err
				}
			}
			return nil
		},
	})
}
