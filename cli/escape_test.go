package cli

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
)

// TestREPLEscape: at the terminal, Esc stops a turn as Ctrl-C does (the
// progress line says so, and says how), an arrow key's escape sequence
// does not, and what the user types while a turn runs waits in the next
// prompt instead of landing in the answer.
func TestREPLEscape(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Text: "too late", Delay: llmtest.Duration(5 * time.Second)},
		{Text: "SECOND ANSWER", Delay: llmtest.Duration(1500 * time.Millisecond)},
		{Text: "THIRD ANSWER"},
	}})
	defer srv.Close()
	manifest, _ := filepath.Abs(filepath.Join("..", "examples", "demiurge"))
	tm := startTerminal(t, []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + srv.URL, "TERM=xterm"},
		"--store", t.TempDir(), "run", manifest, "--model", "gpt-test")
	m := tm.expect(0, `Type a message`)
	m = tm.expect(m, `> `)
	tm.typ("slow\r")
	m = tm.expect(m, `waiting for the model [0-9.]+s · Esc or Ctrl-C stops it`)
	tm.typ("\x1b")
	m = tm.expect(m, `turn stopped: the user stopped the turn \(interrupted at the terminal \(Esc\)\)`)
	m = tm.expect(m, `> `)

	// An arrow key is not Esc; what is typed meanwhile waits.
	tm.typ("again\r")
	m = tm.expect(m, `waiting for the model [0-9.]+s`)
	tm.typ("\x1b[A")
	tm.typ("next one")
	m = tm.expect(m, `SECOND ANSWER`)
	m = tm.expect(m, `> next one`)
	tm.typ("\r")
	m = tm.expect(m, `THIRD ANSWER`)
	tm.expect(m, `> `)
	reqs := srv.Requests()
	if len(reqs) != 3 || !strings.Contains(string(reqs[2].Body), "next one") {
		t.Fatalf("the model got %d requests; want 3, the last with the line typed during the second turn", len(reqs))
	}
	if strings.Contains(tm.output(), "next oneSECOND") || strings.Contains(tm.output(), "^[") {
		t.Errorf("typed keys landed in the answer:\n%s", tm.output())
	}
	tm.quit()
}

// TestRunMessageEscape: Esc stops the turn of run -m at a terminal, which
// exits 130 as it does on Ctrl-C.
func TestRunMessageEscape(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Text: "never", Delay: llmtest.Duration(10 * time.Second)}}})
	defer srv.Close()
	manifest, _ := filepath.Abs(filepath.Join("..", "examples", "demiurge"))
	tm := startTerminal(t, []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + srv.URL, "TERM=xterm"},
		"--store", t.TempDir(), "run", manifest, "--model", "gpt-test", "-m", "go")
	m := tm.expect(0, `Esc or Ctrl-C stops it`)
	tm.typ("\x1b")
	tm.expect(m, `turn stopped: the user stopped the turn \(interrupted at the terminal \(Esc\)\)`)
	select {
	case err := <-tm.done:
		var xe *exec.ExitError
		if !errors.As(err, &xe) || xe.ExitCode() != exitInterrupted {
			t.Errorf("run -m exited with %v; want %d", err, exitInterrupted)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run -m did not exit after Esc")
	}
}

// TestREPLResumedToolStatus: a turn taken up again while its tool call
// runs says so on the progress line, not "waiting for the model".
func TestREPLResumedToolStatus(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "bash", Arguments: `{"commands": "sleep 4; echo slept"}`}}},
		{Text: "done sleeping"},
	}})
	defer srv.Close()
	store := t.TempDir()
	manifest, _ := filepath.Abs(filepath.Join("..", "examples", "demiurge"))
	env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + srv.URL, "TERM=xterm"}
	tm := startTerminal(t, env, "--store", store, "run", manifest, "--model", "gpt-test")
	m := tm.expect(0, `Type a message`)
	tm.typ("sleep\r")
	tm.expect(m, `running bash [0-9.]+s`)
	if err := tm.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-tm.done
	tm = startTerminal(t, env, "--store", store, "run", manifest, "--model", "gpt-test")
	m = tm.expect(0, `resuming turn 1`)
	m = tm.expect(m, `running bash \(taken up again\) [0-9.]+s`)
	m = tm.expect(m, `done sleeping`)
	if strings.Contains(tm.output()[:m], "waiting for the model") && strings.Index(tm.output(), "waiting for the model") < strings.Index(tm.output(), "slept") {
		t.Errorf("the progress line said waiting for the model while the resumed bash ran:\n%s", tm.output())
	}
	tm.expect(m, `> `)
	tm.quit()
}

// output is what the terminal showed so far.
func (tm *terminal) output() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.out.String()
}

// TestREPLTypeAhead: a line typed, Enter included, while a turn runs is
// sent when the turn ends, as a shell takes type-ahead: the Esc watch,
// which reads the terminal during the turn, loses no key of it.
func TestREPLTypeAhead(t *testing.T) {
	hold := make(chan struct{})
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Text: "FIRST ANSWER", Hold: hold},
		{Text: "SECOND ANSWER"},
	}})
	defer srv.Close()
	manifest, _ := filepath.Abs(filepath.Join("..", "examples", "demiurge"))
	tm := startTerminal(t, []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + srv.URL, "TERM=xterm"},
		"--store", t.TempDir(), "run", manifest, "--model", "gpt-test")
	m := tm.expect(0, `Type a message`)
	m = tm.expect(m, `> `)
	tm.typ("first\r")
	// The model has the request: the turn runs, and Esc is watched.
	for deadline := time.Now().Add(30 * time.Second); len(srv.Requests()) < 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the model got no request")
		}
	}
	tm.typ("second\r")
	close(hold)
	m = tm.expect(m, `FIRST ANSWER`)
	m = tm.expect(m, `> second`)
	m = tm.expect(m, `SECOND ANSWER`)
	tm.expect(m, `> `)
	reqs := srv.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "second") {
		t.Fatalf("the model got %d requests; want 2, the last with the line typed ahead", len(reqs))
	}
	tm.quit()
}
