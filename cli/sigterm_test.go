package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
)

// TestRunTerminated: SIGTERM (kill, a service manager stopping it) ends
// run while its turn waits for the model: the turn is stopped as Ctrl-C
// stops it, run says so rather than "context canceled", and exits 143, as
// a shell reports a process SIGTERM ended.
func TestRunTerminated(t *testing.T) {
	t.Parallel()
	model := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Text: "never seen", Delay: llmtest.Duration(30 * time.Second)},
		{Text: "ANSWER-A"},
		{Text: "ANSWER-B"},
	}})
	defer model.Close()
	storeDir := filepath.Join(t.TempDir(), "store")
	env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + model.URL, storeEnv + "="}
	manifest := filepath.Join("..", "examples", "demiurge")
	p := startDemiurge(t, "run", nil, env, "--store", storeDir, "run", manifest, "--model", "gpt-test", "-m", "slow")
	for deadline := time.Now().Add(20 * time.Second); len(model.Requests()) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no model request after 20 s")
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(); code != exitTerminated {
		t.Errorf("exit %d; want %d", code, exitTerminated)
	}
	if got, want := p.stderr(), "demiurge: run: terminated (SIGTERM): the turn was stopped, as Ctrl-C stops it\n"; got != want {
		t.Errorf("stderr %q; want %q", got, want)
	}
	if !strings.Contains(p.stdout(), "■ turn stopped: the user stopped the turn (terminated (SIGTERM))") {
		t.Errorf("stdout:\n%s", p.stdout())
	}

	// The next run: the stopped turn's model call, in flight when run
	// ended, is sent again as the world reopens, and its answer is
	// dropped; it must not stream into the new turn, glued to its answer.
	q := startDemiurge(t, "run again", nil, env, "--store", storeDir, "run", manifest, "--model", "gpt-test", "-m", "next")
	if code := q.wait(); code != exitOK {
		t.Fatalf("the next run: exit %d\n%s\n%s", code, q.stdout(), q.stderr())
	}
	out := q.stdout()
	if a, b := strings.Contains(out, "ANSWER-A"), strings.Contains(out, "ANSWER-B"); a == b {
		t.Errorf("the next run shows ANSWER-A: %v, ANSWER-B: %v; want the one answer of its own turn:\n%s", a, b, out)
	}
}

// TestRunPipeTerminated: SIGTERM ends run while it reads messages from a
// pipe and waits for the next line (after answering one): exit 143, and
// the store is left for the next command.
func TestRunPipeTerminated(t *testing.T) {
	t.Parallel()
	model := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Text: "FIRST-ANSWER"}, {Text: "SECOND"}}})
	defer model.Close()
	storeDir := filepath.Join(t.TempDir(), "store")
	env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + model.URL, storeEnv + "="}
	pr, pw, err := os.Pipe() // a pipe the process reads itself (exec copies from other readers, and waits for them)
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	defer pr.Close()
	p := startDemiurge(t, "run", pr, env, "--store", storeDir, "run", filepath.Join("..", "examples", "demiurge"), "--model", "gpt-test")
	if _, err := io.WriteString(pw, "hello\n"); err != nil {
		t.Fatal(err)
	}
	p.expect(false, `FIRST-ANSWER[\s\S]*tokens in`)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(); code != exitTerminated {
		t.Errorf("exit %d; want %d", code, exitTerminated)
	}
	if got, want := p.stderr(), "demiurge: terminated (SIGTERM)\n"; got != want {
		t.Errorf("stderr %q; want %q", got, want)
	}
	q := startDemiurge(t, "trace", nil, env, "--store", storeDir, "trace")
	if code := q.wait(); code != exitOK || !strings.Contains(q.stdout(), "FIRST-ANSWER") {
		t.Errorf("trace after: exit %d\n%s%s", code, q.stdout(), q.stderr())
	}
}
