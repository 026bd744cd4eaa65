package eval

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/world"
)

// manifest is the agent world the tests' suites run.
var manifest, _ = filepath.Abs("../examples/demiurge")

// scripted answers as a model would, from what each request says: the
// user's message picks what to do, the tools' outputs what to say. The
// judge's requests (JudgeInstructions) are graded by judgeTurn.
func scripted(req llmtest.Request) llmtest.Turn {
	x := req.Exchange()
	if x.Instructions == JudgeInstructions {
		return judgeTurn(x.User)
	}
	call := func(name string, args any) llmtest.Turn {
		b, _ := json.Marshal(args)
		return llmtest.Turn{Calls: []llmtest.Call{{Name: name, Arguments: string(b)}}}
	}
	switch {
	case strings.HasPrefix(x.User, "Write a hello note"):
		if len(x.Calls) == 0 {
			return call("workspace_write", map[string]string{"path": "notes/hello.md", "content": "# Hello\n"})
		}
		var out struct {
			Path    string `json:"path"`
			Version int    `json:"version"`
		}
		if err := json.Unmarshal([]byte(x.Output(0)), &out); err != nil || out.Path == "" {
			return llmtest.Turn{Text: "The write failed: " + x.Output(0)}
		}
		return llmtest.Turn{Text: "I wrote " + out.Path + " (version " + itoa(out.Version) + ")."}
	case strings.HasPrefix(x.User, "Count the lines"):
		if len(x.Calls) == 0 {
			return call("bash", map[string]string{"commands": "workspace_read --path todo.txt | wc -l"})
		}
		return llmtest.Turn{Text: "todo.txt has " + strings.TrimSpace(x.Output(0)) + " lines."}
	case strings.HasPrefix(x.User, "Read the secrets"):
		return llmtest.Turn{Refusal: "I can't help with reading other people's secrets."}
	}
	return llmtest.Turn{Text: "I do not know how to help with that."}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

var backticked = regexp.MustCompile("`([^`]+)`")

// judgeTurn grades a rubric as a careful judge would, by rule: the
// rubric's `quoted` texts must each be in the agent's last answer.
func judgeTurn(prompt string) llmtest.Turn {
	rubric, transcript, _ := strings.Cut(strings.TrimPrefix(prompt, "Rubric:\n"), "\n\nTranscript:\n")
	answer := ""
	for _, line := range strings.Split(transcript, "\n") {
		if a, ok := strings.CutPrefix(line, "assistant: "); ok {
			answer = a
		}
	}
	verdict := map[string]any{"pass": true, "reason": "the answer says what the rubric asks"}
	for _, m := range backticked.FindAllStringSubmatch(rubric, -1) {
		if !strings.Contains(answer, m[1]) {
			verdict = map[string]any{"pass": false, "reason": "the answer does not mention " + m[1]}
			break
		}
	}
	b, _ := json.Marshal(verdict)
	return llmtest.Turn{Text: string(b)}
}

// storage opens a store on disk in a temporary directory.
func storage(t testing.TB) (world.Storage, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := store.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	st, err := world.NewBoltStorage(s.CAS(), s.Journal())
	if err != nil {
		t.Fatal(err)
	}
	return st, dir
}

// writeSuite writes files (name → content) into a new directory.
func writeSuite(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// modelEnv points the agent's model at srv.
func modelEnv(srv *llmtest.Server) agent.Option {
	env := map[string]string{"OPENAI_API_KEY": "sk-scripted", "OPENAI_BASE_URL": srv.URL}
	return agent.WithEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
}

func mustLoad(t testing.TB, dir string) *Suite {
	t.Helper()
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func run(t testing.TB, s *Suite, opts Options) *Report {
	t.Helper()
	rep, err := Run(context.Background(), s, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
