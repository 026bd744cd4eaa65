package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/internal/store"
)

// proc is a demiurge process a test runs beside others.
type proc struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	err  bytes.Buffer
	done chan struct{}
}

type procWriter struct {
	p   *proc
	buf *bytes.Buffer
}

func (w procWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	return w.buf.Write(b)
}

// startDemiurge starts the demiurge command (this test binary, as
// testscript runs it) with args and env; it is killed when the test ends.
func startDemiurge(t *testing.T, name string, stdin io.Reader, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], args...)
	p.cmd.Args[0] = "demiurge"
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdin = stdin
	p.cmd.Stdout, p.cmd.Stderr = procWriter{p, &p.out}, procWriter{p, &p.err}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("%s (pid %d) stdout:\n%s\nstderr:\n%s", p.name, p.cmd.Process.Pid, p.stdout(), p.stderr())
		}
	})
	return p
}

func (p *proc) stdout() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *proc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err.String()
}

// expect waits (up to 20 s) until the process's stdout (or stderr)
// matches re.
func (p *proc) expect(stderr bool, re string) {
	p.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := p.stdout()
		if stderr {
			s = p.stderr()
		}
		if rx.MatchString(s) {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s: no output matching %q after 20 s", p.name, re)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wait waits (up to 20 s) for the process to exit and returns its code.
func (p *proc) wait() int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.t.Fatalf("%s did not exit", p.name)
	}
	return p.cmd.ProcessState.ExitCode()
}

// TestLiveFollow: trace --follow follows a chat that `demiurge run`
// holds the store for, turn by turn and within a running turn, while the
// other read commands work beside it; when the writer is killed (kill -9)
// it says so and goes on from the file, and from the next writer; Ctrl-C
// ends it with exit 0.
func TestLiveFollow(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	turn := 0
	model := llmtest.NewServerFunc(func(r llmtest.Request) llmtest.Turn {
		// Each turn: a tool call, then the answer; the second turn's
		// answer waits for the test.
		mu.Lock()
		n := r.Seq/2 + 1
		answer := r.Seq%2 == 1
		turn = n
		mu.Unlock()
		switch {
		case !answer && n == 1:
			return llmtest.Turn{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "hello"}`}}}
		case !answer:
			return llmtest.Turn{Calls: []llmtest.Call{{Name: "introspect_journal_head", Arguments: "{}"}}}
		}
		if n == 2 {
			<-release
		}
		return llmtest.Turn{Text: fmt.Sprintf("answer %d", n)}
	})
	defer model.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	dir := t.TempDir()
	storeDir := filepath.Join(dir, "store")
	env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + model.URL, storeEnv + "="}
	manifest := filepath.Join("..", "examples", "demiurge")
	must := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(os.Args[0], append([]string{"--store", storeDir}, args...)...)
		cmd.Args[0] = "demiurge"
		cmd.Env = append(os.Environ(), env...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("demiurge %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
		}
		return out.String()
	}

	// A chat at the prompt: stdin is a pipe, read a message a line.
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inW.Close()
	run := startDemiurge(t, "run", inR, env, "--store", storeDir, "run", manifest, "--model", "gpt-test")
	inR.Close()
	fmt.Fprintln(inW, "first question")
	run.expect(false, "answer 1")

	follow := startDemiurge(t, "trace --follow", nil, env, "--store", storeDir, "trace", "--follow")
	follow.expect(true, fmt.Sprintf("trace: reading store .* through process %d, which writes it", run.cmd.Process.Pid))
	follow.expect(false, `(?m)^turn 1 of chat main, .*\n  user: first question\n  model call 1: gpt-test.*\n    workspace_write \{"path": "a.md", "content": "hello"\} → ok in .*\n(      │ .*\n)*  model call 2: .*\n  assistant: answer 1\n  done: 2 rounds`)

	// A second turn, seen while it runs: its tool call, not yet its answer.
	fmt.Fprintln(inW, "second question")
	follow.expect(false, `(?m)^\nturn 2 of chat main, .*\n  user: second question\n  model call 1: gpt-test.*\n    introspect_journal_head \{\} → ok in `)
	if s := follow.stdout(); strings.Contains(s, "answer 2") || strings.Count(s, "turn cost") != 1 {
		t.Fatalf("the running turn shows more than is stable:\n%s", s)
	}
	// Read commands work beside the writer meanwhile.
	if got := must("workspace", "cat", "a.md"); got != "hello" {
		t.Errorf("workspace cat a.md = %q; want %q", got, "hello")
	}
	for _, args := range [][]string{
		{"journal", "dump", "--world", "main"},
		{"state"},
		{"workspace", "ls"},
		{"replay", "--manifest", manifest},
		{"trace", "--records"},
		{"journal", "verify"},
	} {
		must(args...)
	}
	close(release)
	follow.expect(false, `(?m)^  assistant: answer 2\n  done: 2 rounds`)
	run.expect(false, "answer 2")

	// kill -9 of the writer: the follower says so and reads the file.
	if err := run.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	run.wait()
	follow.expect(true, fmt.Sprintf("process %d stopped serving store", run.cmd.Process.Pid))
	follow.expect(true, "reading the file of store .* \\(no process writes it\\)")
	if _, err := os.Stat(filepath.Join(storeDir, store.SocketName)); err != nil {
		t.Errorf("the killed writer's socket: %v; want it left behind", err)
	}
	// The next writer: its turn shows up too.
	out := must("run", manifest, "--model", "gpt-test", "-m", "third question")
	if !strings.Contains(out, "answer 3") {
		t.Fatalf("run -m: %s", out)
	}
	follow.expect(false, `(?m)^turn 3 of chat main, .*\n  user: third question\n(.*\n)*  assistant: answer 3\n`)

	// Ctrl-C ends it, exit 0.
	if err := follow.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := follow.wait(); code != 0 {
		t.Errorf("trace --follow exited %d after Ctrl-C; want 0\n%s", code, follow.stderr())
	}
	// Every turn once, in order.
	if s := follow.stdout(); strings.Count(s, "turn 1 of") != 1 || strings.Count(s, "turn 2 of") != 1 || strings.Count(s, "turn 3 of") != 1 {
		t.Errorf("trace --follow printed:\n%s", s)
	}
	mu.Lock()
	defer mu.Unlock()
	if turn != 3 {
		t.Errorf("the model saw %d turns; want 3", turn)
	}
}

// TestLiveFollowRecords: trace --follow of a world that is not an agent
// world prints each record as it lands, starting from a world with no
// records yet.
func TestLiveFollowRecords(t *testing.T) {
	storeDir := filepath.Join(t.TempDir(), "store")
	env := []string{storeEnv + "="}
	counter := filepath.Join("..", "examples", "counter")
	send := func(value string) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "--store", storeDir, "send", "--manifest", counter, "--schema", "counter/Event@1", "--value", value, "-q")
		cmd.Args[0] = "demiurge"
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("send %s: %v\n%s", value, err, out)
		}
	}
	send(`{"Start": {"target": 2}}`)
	follow := startDemiurge(t, "trace --follow", nil, env, "--store", storeDir, "trace", "--follow", "--world", "other")
	follow.expect(true, "world other has no records yet")
	follow2 := startDemiurge(t, "trace --follow --json", nil, env, "--store", storeDir, "trace", "--follow", "--json")
	follow2.expect(false, `(?m)^\{"seq":3,`)
	send(`"Tick"`)
	follow2.expect(false, `(?m)^\{"seq":4,"kind":"DomainEvent"`)
	if err := follow2.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := follow2.wait(); code != 0 {
		t.Errorf("exit %d; want 0", code)
	}
	if err := follow.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := follow.wait(); code != 0 || follow.stdout() != "" {
		t.Errorf("trace --follow of a world without records: exit %d, printed %q", code, follow.stdout())
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestFollowPrintsTrace: trace --follow of a finished session prints what
// trace prints (without the session's total), for every recorded session
// and for a world forked from one.
func TestFollowPrintsTrace(t *testing.T) {
	sessions, err := filepath.Glob(filepath.Join("..", "testdata", "sessions", "*"))
	if err != nil || len(sessions) == 0 {
		t.Fatalf("no recorded sessions: %v", err)
	}
	for _, dir := range sessions {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			st := filepath.Join(t.TempDir(), "store")
			mustRun(t, 0, "", "--store", st, "import", dir)
			worlds := []string{"main"}
			if filepath.Base(dir) == "demo" {
				h, err := store.OpenAt(t.Context(), st, &store.Options{ReadOnly: true})
				if err != nil {
					t.Fatal(err)
				}
				head, err := h.Journal().Head(t.Context(), "main")
				h.Close()
				if err != nil {
					t.Fatal(err)
				}
				mustRun(t, 0, "", "--store", st, "fork", "--at", fmt.Sprint(head.Seq), "--world", "fr")
				worlds = append(worlds, "fr")
			}
			for _, w := range worlds {
				for _, asJSON := range []bool{false, true} {
					args := []string{"--store", st, "trace", "--world", w}
					if asJSON {
						args = append(args, "--json")
					}
					want := mustRun(t, 0, "", args...).stdout
					if i := strings.Index(want, "\nsession: "); i >= 0 && !asJSON {
						want = want[:i]
					}
					ctx, cancel := context.WithCancel(t.Context())
					var out, errOut syncBuffer
					done := make(chan int, 1)
					go func() {
						done <- execute(ctx, append(args, "--follow"), stdio{in: strings.NewReader(""), out: &out, err: &errOut}, func(string) string { return "" })
					}()
					deadline := time.Now().Add(10 * time.Second)
					for out.String() != want && time.Now().Before(deadline) {
						time.Sleep(10 * time.Millisecond)
					}
					cancel()
					if code := <-done; code != 0 {
						t.Errorf("trace --follow --world %s: exit %d: %s", w, code, errOut.String())
					}
					if got := out.String(); got != want {
						t.Errorf("trace --follow --world %s (json %v) printed:\n%s\ntrace printed:\n%s", w, asJSON, got, want)
					}
				}
			}
		})
	}
}
