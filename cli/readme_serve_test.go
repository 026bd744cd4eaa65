package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"mvdan.cc/sh/v3/shell"
)

// readmeLine returns the arguments of the README's first line that
// begins with prefix (its words after the prefix).
func readmeLine(t *testing.T, prefix string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			args, err := shell.Fields(rest, func(string) string { return "" })
			if err != nil {
				t.Fatalf("README: %q: %v", line, err)
			}
			return args
		}
	}
	t.Fatalf("the README has no line %q", prefix+"…")
	return nil
}

// TestReadmeServe runs the README's "Serve it" as a newcomer does, in a
// fresh copy of the files it reads, after the quick start's first
// command: the server, then its curl (the real curl, when there is one),
// whose turn streams to its end with the recorded answer.
func TestReadmeServe(t *testing.T) {
	t.Parallel()
	serveArgs := readmeLine(t, "go run ./cmd/demiurge serve ")
	curlArgs := readmeLine(t, "curl ")
	dir := t.TempDir()
	for _, d := range []string{filepath.Join("examples", "demiurge"), filepath.Join("testdata", "sessions", "demo")} {
		if err := os.CopyFS(filepath.Join(dir, d), os.DirFS(filepath.Join("..", d))); err != nil {
			t.Fatal(err)
		}
	}
	store := filepath.Join(dir, ".demiurge")
	chdir := func(args []string) []string {
		for i, a := range args {
			if strings.HasPrefix(a, "examples/") || strings.HasPrefix(a, "cassette:testdata/") {
				args[i] = strings.Replace(strings.Replace(a, "examples/", filepath.Join(dir, "examples")+"/", 1), "cassette:testdata/", "cassette:"+filepath.Join(dir, "testdata")+"/", 1)
			}
		}
		return args
	}
	// The quick start first: world main holds its session.
	quick := chdir(readmeCommand(t, "./cmd/demiurge"))
	mustRun(t, exitOK, "", append([]string{"--store", store}, quick...)...)

	addr := freeAddr(t)
	args := append(append([]string{"--store", store, "serve"}, chdir(serveArgs)...), "--addr", addr)
	p := startServe(t, "serve", []string{storeEnv + "="}, args...)
	defer func() { _ = p.cmd.Process.Signal(syscall.SIGTERM); p.wait() }()
	for i, a := range curlArgs {
		curlArgs[i] = strings.Replace(a, "127.0.0.1:8700", addr, 1)
	}
	var out string
	if curl, err := exec.LookPath("curl"); err == nil {
		b, err := exec.Command(curl, append([]string{"-sS", "--max-time", "60"}, curlArgs...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("curl: %v\n%s", err, b)
		}
		out = string(b)
	} else {
		t.Skip("no curl on PATH")
	}
	if !strings.Contains(out, "event: turn_end") || !strings.Contains(out, `"outcome":"answer"`) || !strings.Contains(out, "I wrote notes/hello.md") {
		t.Errorf("the README's curl:\n%s\nserve's log:\n%s", out, p.stderr())
	}
	if !strings.Contains(p.stdout(), "http://"+addr+"/v1") {
		t.Errorf("serve does not say where it listens:\n%s", p.stdout())
	}
}
