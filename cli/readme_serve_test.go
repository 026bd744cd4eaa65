package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

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

// readmeRaw returns the README's first line that begins with prefix,
// whole, as a shell reads it.
func readmeRaw(t *testing.T, prefix string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(strings.TrimSpace(line), prefix) {
			return strings.TrimSpace(line)
		}
	}
	t.Fatalf("the README has no line %q", prefix+"…")
	return ""
}

// TestReadmeServe runs the README's "Serve it" as a newcomer does, in a
// fresh copy of the files it reads, after the quick start's first
// command: the server, then its curl (the real curl, when there is one),
// whose turn streams to its end with the recorded answer, then the
// OpenAI SDK's request, as it sends it, which completes with that
// answer. Each goes twice, as a user who follows the README again does:
// the store has sessions by then, and the recording still plays (a new
// world each time).
func TestReadmeServe(t *testing.T) {
	t.Parallel()
	serveArgs := readmeLine(t, "go run ./cmd/demiurge serve ")
	curlLine := readmeRaw(t, "curl ")
	sdk := regexp.MustCompile(`^r = client\.responses\.create\(model="([^"]+)", input="([^"]+)"\)$`).FindStringSubmatch(readmeRaw(t, "r = client.responses.create("))
	if sdk == nil {
		t.Fatalf("the README's SDK example has no line r = client.responses.create(model=…, input=…)")
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("no curl on PATH")
	}
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
	line := strings.Replace(strings.Replace(curlLine, "127.0.0.1:8700", addr, 1), "curl ", curl+" -sS --max-time 60 ", 1)
	for i := range 2 {
		b, err := exec.Command("sh", "-c", line).CombinedOutput()
		out := string(b)
		if err != nil || !strings.Contains(out, "event: turn_end") || !strings.Contains(out, `"outcome":"answer"`) || !strings.Contains(out, "I wrote notes/hello.md") {
			t.Errorf("the README's curl, time %d: %v\n%s\nserve's log:\n%s", i+1, err, out, p.stderr())
		}
		time.Sleep(1100 * time.Millisecond) // a new second: the README's world is named by it
	}
	if !strings.Contains(p.stdout(), "http://"+addr+"/v1") {
		t.Errorf("serve does not say where it listens:\n%s", p.stdout())
	}
	// The SDK's request: POST /v1/responses, not streamed.
	for i := range 2 {
		body, _ := json.Marshal(map[string]string{"model": sdk[1], "input": sdk[2]})
		resp, err := http.Post("http://"+addr+"/v1/responses", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Status string `json:"status"`
			Output []struct {
				Type    string `json:"type"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"output"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		text := ""
		for _, o := range r.Output {
			for _, c := range o.Content {
				text += c.Text
			}
		}
		if err != nil || resp.StatusCode != 200 || r.Status != "completed" || !strings.Contains(text, "I wrote notes/hello.md") {
			t.Errorf("the README's SDK request, time %d: %d %v %s, output %q, error %+v\nserve's log:\n%s", i+1, resp.StatusCode, err, r.Status, text, r.Error, p.stderr())
		}
	}
}
