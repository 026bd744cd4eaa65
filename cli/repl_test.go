package cli

import (
	"bytes"
	"context"
	"errors"
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

	"github.com/creack/pty"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
)

// terminal is the demiurge binary running on a pseudo-terminal.
type terminal struct {
	t    *testing.T
	cmd  *exec.Cmd
	pty  *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	done chan error
}

func startTerminal(t *testing.T, env []string, args ...string) *terminal {
	t.Helper()
	bin, err := exec.LookPath("demiurge") // the test binary, as testscript set it up
	if err != nil {
		t.Fatalf("the demiurge command is not on PATH: %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 200})
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	tm := &terminal{t: t, cmd: cmd, pty: f, done: make(chan error, 1)}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			tm.mu.Lock()
			tm.out.Write(buf[:n])
			tm.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() { tm.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		f.Close()
	})
	return tm
}

// expect waits until the output since mark matches re, and returns the
// new mark.
func (tm *terminal) expect(mark int, re string) int {
	tm.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(slowdown * 20 * time.Second)
	for time.Now().Before(deadline) {
		tm.mu.Lock()
		s := tm.out.String()
		tm.mu.Unlock()
		if loc := rx.FindStringIndex(s[mark:]); loc != nil {
			return mark + loc[1]
		}
		time.Sleep(20 * time.Millisecond)
	}
	tm.mu.Lock()
	defer tm.mu.Unlock()
	tm.t.Fatalf("no %q in the terminal's output after %d bytes:\n%s", re, mark, tm.out.String())
	return 0
}

// quit types Ctrl-D and waits for run to exit.
func (tm *terminal) quit() {
	tm.t.Helper()
	tm.typ("\x04")
	select {
	case <-tm.done:
	case <-time.After(slowdown * 20 * time.Second):
		tm.t.Fatal("run did not exit after Ctrl-D")
	}
}

func (tm *terminal) typ(s string) {
	tm.t.Helper()
	if _, err := tm.pty.WriteString(s); err != nil {
		tm.t.Fatal(err)
	}
}

// TestREPLTerminal drives run's chat through a pseudo-terminal: line
// editing (the left arrow moves the cursor; what is journaled is the line
// as edited), slash commands that never reach the model, a progress line
// while the model thinks, Ctrl-C stopping the turn and not the program,
// and Ctrl-D quitting.
func TestREPLTerminal(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Text: "first answer"},
		{Text: "too late", Delay: llmtest.Duration(3 * time.Second)},
		{Text: "after the stop"},
	}})
	defer srv.Close()
	store := t.TempDir()
	manifest, _ := filepath.Abs(filepath.Join("..", "examples", "demiurge"))
	tm := startTerminal(t, []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + srv.URL, "TERM=xterm"},
		"--store", store, "run", manifest, "--model", "gpt-test")
	m := tm.expect(0, `Type a message`)
	m = tm.expect(m, `> `)
	tm.typ("helo\x1b[Dl\r") // left arrow, then l: "hello"
	m = tm.expect(m, `first answer`)
	m = tm.expect(m, `\[[0-9]+ tokens in`)
	tm.typ("/help\r")
	m = tm.expect(m, `/show N`)
	tm.typ("/nope\r")
	m = tm.expect(m, `unknown command /nope`)
	tm.typ("slow\r")
	m = tm.expect(m, `waiting for the model [0-9.]+s`)
	tm.typ("\x03") // Ctrl-C: SIGINT from the terminal
	m = tm.expect(m, `turn stopped: the user stopped the turn \(interrupted at the terminal \(Ctrl-C\)\)`)
	m = tm.expect(m, `\[no model call answered: tokens and cost unknown\]`)
	m = tm.expect(m, `> `)
	tm.typ("again\r")
	m = tm.expect(m, `after the stop`)
	tm.expect(m, `> `)
	tm.typ("\x04") // Ctrl-D
	select {
	case err := <-tm.done:
		if err != nil {
			t.Fatalf("run exited with %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run did not exit after Ctrl-D")
	}
	reqs := srv.Requests()
	if len(reqs) < 3 {
		t.Fatalf("the model got %d requests; want 3", len(reqs))
	}
	if !strings.Contains(string(reqs[0].Body), `hello`) || strings.Contains(string(reqs[0].Body), `\u001b`) {
		t.Errorf("the first message is not the edited line: %s", reqs[0].Body)
	}
	for _, r := range reqs {
		if strings.Contains(string(r.Body), "/help") || strings.Contains(string(r.Body), "/nope") {
			t.Errorf("a slash command reached the model: %s", r.Body)
		}
	}
	if b, err := os.ReadFile(filepath.Join(store, "history")); err != nil || !strings.Contains(string(b), "hello") {
		t.Errorf("history file: %q, %v", b, err)
	}
}

// TestRunMessageInterrupted: Ctrl-C during run -m stops the turn, says so,
// and exits 130.
func TestRunMessageInterrupted(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Text: "never", Delay: llmtest.Duration(5 * time.Second)}}})
	defer srv.Close()
	bin, err := exec.LookPath("demiurge")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(context.Background(), bin, "--store", t.TempDir(), "run", filepath.Join("..", "examples", "demiurge"), "--model", "gpt-test", "-m", "go")
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for srv.Served() == 0 && len(srv.Requests()) == 0 {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var xe *exec.ExitError
	if !errors.As(err, &xe) || xe.ExitCode() != exitInterrupted {
		t.Errorf("run -m exited with %v; want %d\n%s", err, exitInterrupted, out.String())
	}
	if !strings.Contains(out.String(), "turn stopped: the user stopped the turn") {
		t.Errorf("run -m did not say the turn stopped:\n%s", out.String())
	}
}

// TestREPLApproval: at the terminal, a call that needs approval is asked
// about; "a" approves the tool for the session, "n REASON" denies.
func TestREPLApproval(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "a"}`}}},
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "b.md", "content": "b"}`}}},
		{Text: "wrote both"},
		{Calls: []llmtest.Call{{Name: "workspace_remove", Arguments: `{"path": "a.md"}`}}},
		{Text: "left it"},
	}})
	defer srv.Close()
	manifest, _ := filepath.Abs(filepath.Join("..", "examples", "demiurge"))
	tm := startTerminal(t, []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + srv.URL, "TERM=xterm"},
		"--store", t.TempDir(), "run", manifest, "--model", "gpt-test", "--require-approval", "workspace_write", "--require-approval", "workspace_remove")
	m := tm.expect(0, `Type a message`)
	tm.typ("write two files\r")
	m = tm.expect(m, `\? run workspace_write \{"content":"a","path":"a.md"\}\? \[y\]es`)
	tm.typ("a\r")
	m = tm.expect(m, `wrote both`) // the second write was approved for the session, not asked
	tm.typ("remove a.md\r")
	m = tm.expect(m, `\? run workspace_remove`)
	tm.typ("n keep it\r")
	m = tm.expect(m, `denied by the user: keep it`)
	m = tm.expect(m, `left it`)
	tm.expect(m, `> `)
	tm.quit()
	tm.mu.Lock()
	out := tm.out.String()
	tm.mu.Unlock()
	if strings.Count(out, "? run workspace_write") != 1 {
		t.Errorf("asked %d times about workspace_write; want once (always):\n%s", strings.Count(out, "? run workspace_write"), out)
	}
}

// TestREPLApprovalInterrupted: Ctrl-C at the approval question stops the
// turn, as it does anywhere in a turn: the call is not run and the model
// is not asked again; the chat goes on.
func TestREPLApprovalInterrupted(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "a"}`}}},
		{Text: "next answer"},
	}})
	defer srv.Close()
	manifest, _ := filepath.Abs(filepath.Join("..", "examples", "demiurge"))
	tm := startTerminal(t, []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + srv.URL, "TERM=xterm"},
		"--store", t.TempDir(), "run", manifest, "--model", "gpt-test", "--require-approval", "workspace_write")
	m := tm.expect(0, `Type a message`)
	tm.typ("write a\r")
	m = tm.expect(m, `\? run workspace_write`)
	tm.typ("\x03")
	m = tm.expect(m, `turn stopped: the user stopped the turn`)
	m = tm.expect(m, `> `)
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("the model was asked %d times; want once (the stopped turn asks no more)", n)
	}
	tm.typ("again\r")
	m = tm.expect(m, `next answer`)
	tm.expect(m, `> `)
	tm.quit()
}

// TestREPLApprovalTimeout: a question nobody answers at the terminal ends
// at the call's deadline (run --approval-timeout): the call is denied as
// timed out, the model goes on, and the chat is back at its prompt.
func TestREPLApprovalTimeout(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "a"}`}}},
		{Text: "nobody answered"},
	}})
	defer srv.Close()
	manifest, _ := filepath.Abs(filepath.Join("..", "examples", "demiurge"))
	tm := startTerminal(t, []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + srv.URL, "TERM=xterm"},
		"--store", t.TempDir(), "run", manifest, "--model", "gpt-test", "--require-approval", "workspace_write", "--approval-timeout", "1s")
	m := tm.expect(0, `Type a message`)
	tm.typ("write a file\r")
	m = tm.expect(m, `\? run workspace_write \{"content":"a","path":"a.md"\}\? \(denied at [0-9:]+ unless you answer\) \[y\]es`)
	m = tm.expect(m, `workspace_write timed out, denied: no decision within 1s`)
	m = tm.expect(m, `nobody answered`)
	tm.expect(m, `> `)
	tm.quit()
}

// TestREPLStopToolRun: Ctrl-C while a tool runs stops the turn (the call
// is answered as not run), and the chat goes on.
func TestREPLStopToolRun(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "bash", Arguments: `{"commands": "sleep 20"}`}}},
		{Text: "next answer"},
	}})
	defer srv.Close()
	manifest, _ := filepath.Abs(filepath.Join("..", "examples", "demiurge"))
	tm := startTerminal(t, []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + srv.URL, "TERM=xterm"},
		"--store", t.TempDir(), "run", manifest, "--model", "gpt-test")
	m := tm.expect(0, `Type a message`)
	tm.typ("sleep\r")
	m = tm.expect(m, `running bash [0-9.]+s`)
	tm.typ("\x03")
	m = tm.expect(m, `bash not_run.*the user stopped the turn`)
	m = tm.expect(m, `turn stopped: the user stopped the turn`)
	m = tm.expect(m, `> `)
	tm.typ("again\r")
	m = tm.expect(m, `next answer`)
	tm.expect(m, `> `)
	tm.quit()
}

// TestApprovalAcrossKill: a call that waits for approval survives the
// process being killed while it asks; demiurge approve, run later,
// answers it and the turn goes on.
func TestApprovalAcrossKill(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "k.md", "content": "kept"}`, CallID: "call_k"}}},
		{Text: "wrote k.md"},
	}})
	defer srv.Close()
	store := t.TempDir()
	manifest, _ := filepath.Abs(filepath.Join("..", "examples", "demiurge"))
	env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + srv.URL, "TERM=xterm"}
	tm := startTerminal(t, env, "--store", store, "run", manifest, "--model", "gpt-test", "--require-approval", "workspace_write")
	m := tm.expect(0, `Type a message`)
	tm.typ("write k\r")
	tm.expect(m, `\? run workspace_write`)
	if err := tm.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-tm.done
	bin, _ := exec.LookPath("demiurge")
	cmd := exec.Command(bin, "--store", store, "approve", manifest, "call_k", "--model", "gpt-test")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "wrote k.md") {
		t.Fatalf("approve after the kill: %v\n%s", err, out)
	}
	cat := exec.Command(bin, "--store", store, "workspace", "cat", "k.md")
	if b, err := cat.CombinedOutput(); err != nil || strings.TrimSpace(string(b)) != "kept" {
		t.Errorf("k.md: %q, %v", b, err)
	}
}

// TestREPLTerminated: SIGTERM ends the chat at its prompt, idle or in a
// turn, with exit 143 and a word on stderr, as it ends run -m.
func TestREPLTerminated(t *testing.T) {
	for _, tc := range []struct {
		name string
		turn bool
	}{{"idle", false}, {"turn", true}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Text: "never seen", Delay: llmtest.Duration(30 * time.Second)}}})
			defer srv.Close()
			manifest, _ := filepath.Abs(filepath.Join("..", "examples", "demiurge"))
			tm := startTerminal(t, []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + srv.URL, "TERM=xterm"},
				"--store", t.TempDir(), "run", manifest, "--model", "gpt-test")
			m := tm.expect(0, `Type a message`)
			if tc.turn {
				tm.typ("slow\r")
				for deadline := time.Now().Add(20 * time.Second); len(srv.Requests()) == 0; time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("no model request after 20 s")
					}
				}
			}
			if err := tm.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-tm.done:
				var xe *exec.ExitError
				if !errors.As(err, &xe) || xe.ExitCode() != exitTerminated {
					t.Errorf("run ended with %v; want exit %d", err, exitTerminated)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("run did not end after SIGTERM")
			}
			tm.expect(m, `terminated \(SIGTERM\)`)
		})
	}
}
