package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/internal/store"
)

// demiurgeCmd runs the demiurge command (the test binary on PATH) and
// returns its output and exit code.
func demiurgeCmd(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	bin, err := exec.LookPath("demiurge")
	if err != nil {
		t.Fatalf("the demiurge command is not on PATH: %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var xe *exec.ExitError
	switch {
	case errors.As(err, &xe):
		code = xe.ExitCode()
	case err != nil:
		t.Fatalf("demiurge %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), code
}

// TestApproveBesideRun: demiurge approve, while a demiurge run holds the
// store and asks at its terminal about the call, sends the decision to
// that process: it stops asking, says where the decision came from, and
// goes on with the turn; the journal has the decision and replays.
func TestApproveBesideRun(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string // approve or deny, after the manifest and the call
		terminal string   // what the run's terminal says of it
		said     string   // what approve says
		model    string   // what the model's next request holds
		answer   string
	}{
		{"approve", []string{"approve"}, `✓ workspace_write approved from another process \(pid [0-9]+\)`, `^approved call call_r \(workspace_write\) of chat main in world main: process %d, which runs the world, journaled it at record [0-9]+ and goes on with the turn\n$`,
			`\"path\":\"r.md\",\"bytes\":1,\"changed\":true`, "wrote r.md"},
		{"deny", []string{"deny", "--reason", "not now"}, `✗ workspace_write denied from another process \(pid [0-9]+\): not now`, `^denied \(not now\) call call_r \(workspace_write\) of chat main in world main: process %d, which runs the world`,
			`denied by the user: not now`, "did not write it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
				{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "r.md", "content": "r"}`, CallID: "call_r"}}},
				{Text: tc.answer},
			}})
			defer srv.Close()
			dir := t.TempDir()
			manifest, _ := filepath.Abs(filepath.Join("..", "examples", "demiurge"))
			env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + srv.URL, "TERM=xterm"}
			tm := startTerminal(t, env, "--store", dir, "run", manifest, "--model", "gpt-test", "--require-approval", "workspace_write")
			m := tm.expect(0, `Type a message`)
			tm.typ("write r\r")
			m = tm.expect(m, `\? run workspace_write \{"content":"r","path":"r.md"\}\? \[y\]es`)

			out, errs, code := demiurgeCmd(t, env, "--store", dir, "approve", manifest)
			if code != 0 || out != "call_r  workspace_write {\"content\":\"r\",\"path\":\"r.md\"}\n" {
				t.Errorf("approve with no call, beside the run: exit %d, %q %s", code, out, errs)
			}
			out, errs, code = demiurgeCmd(t, env, "--store", dir, "approve", manifest, "call_nope")
			if code != exitUsage || !strings.Contains(errs, "call call_nope of chat main in world main; calls that wait: call_r (workspace_write)") {
				t.Errorf("approve of an unknown call: exit %d, %q %s", code, out, errs)
			}
			out, errs, code = demiurgeCmd(t, env, "--store", dir, "approve", manifest, "call_r", "--world", "other")
			if code != exitFailure || !strings.Contains(errs, "runs world main") || !strings.Contains(errs, "not world other") {
				t.Errorf("approve in another world: exit %d, %q %s", code, out, errs)
			}

			args := append([]string{"--store", dir, tc.args[0], manifest, "call_r"}, tc.args[1:]...)
			out, errs, code = demiurgeCmd(t, env, args...)
			if code != 0 || !regexp.MustCompile(fmt.Sprintf(tc.said, tm.cmd.Process.Pid)).MatchString(out) {
				t.Fatalf("%s beside the run: exit %d, %q %s", tc.name, code, out, errs)
			}
			m = tm.expect(m, tc.terminal)
			m = tm.expect(m, tc.answer)
			tm.expect(m, `> `)

			_, errs, code = demiurgeCmd(t, env, "--store", dir, "approve", manifest, "call_r")
			if code != exitUsage || !strings.Contains(errs, "does not wait for approval") || !strings.Contains(errs, "no call of chat main waits") {
				t.Errorf("a second decision: exit %d, %s", code, errs)
			}
			tm.typ("\x04")
			select {
			case err := <-tm.done:
				if err != nil {
					t.Fatalf("run exited with %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("run did not exit after Ctrl-D")
			}
			tm.mu.Lock()
			screen := tm.out.String()
			tm.mu.Unlock()
			if strings.Count(screen, "? run workspace_write") != 1 {
				t.Errorf("asked %d times; want once:\n%s", strings.Count(screen, "? run workspace_write"), screen)
			}
			if reqs := srv.Requests(); len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), tc.model) {
				t.Errorf("the model's requests: %d; want 2, the second with %s:\n%s", len(reqs), tc.model, reqs[len(reqs)-1].Body)
			}
			out, errs, code = demiurgeCmd(t, env, "--store", dir, "trace", "--world", "main")
			if code != 0 || !strings.Contains(out, "workspace_write") {
				t.Errorf("trace: exit %d, %s %s", code, out, errs)
			}
			out, errs, code = demiurgeCmd(t, env, "--store", dir, "replay", "--manifest", manifest, "--from-genesis")
			if code != 0 || !strings.Contains(out, "ok: world main replays") {
				t.Errorf("replay: exit %d, %s %s", code, out, errs)
			}
			out, _, code = demiurgeCmd(t, env, "--store", dir, "workspace", "cat", "r.md")
			if wrote := code == 0 && strings.TrimSpace(out) == "r"; wrote != (tc.name == "approve") {
				t.Errorf("r.md after %s: exit %d, %q", tc.name, code, out)
			}
		})
	}
}

// TestApproveBesideRunMessage: run -m at a terminal, asking about a call,
// takes the decision of another process and ends as the turn does.
func TestApproveBesideRunMessage(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "m.md", "content": "m"}`, CallID: "call_m"}}},
		{Text: "wrote m.md"},
	}})
	defer srv.Close()
	dir := t.TempDir()
	manifest, _ := filepath.Abs(filepath.Join("..", "examples", "demiurge"))
	env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + srv.URL, "TERM=xterm"}
	tm := startTerminal(t, env, "--store", dir, "run", manifest, "--model", "gpt-test", "--require-approval", "*", "-m", "write m")
	m := tm.expect(0, `\? run workspace_write`)
	tm.typ("y") // typed, not entered: the other process's decision comes first
	time.Sleep(100 * time.Millisecond)
	if out, errs, code := demiurgeCmd(t, env, "--store", dir, "approve", manifest, "call_m"); code != 0 {
		t.Fatalf("approve: exit %d, %s %s", code, out, errs)
	}
	m = tm.expect(m, `✓ workspace_write approved from another process`)
	tm.expect(m, `wrote m.md`)
	select {
	case err := <-tm.done:
		if err != nil {
			t.Fatalf("run -m exited with %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run -m did not exit")
	}
}

// TestApproveBesideOthers: beside a process that writes the store but runs
// no world that asks (demiurge sh), approve says so; beside a process
// that only reads it (holding the file's shared lock), approve cannot
// write and says why; neither changes the store.
func TestApproveBesideOthers(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "o.md", "content": "o"}`, CallID: "call_o"}}},
		{Text: "wrote o.md"},
	}})
	defer srv.Close()
	dir := t.TempDir()
	manifest, _ := filepath.Abs(filepath.Join("..", "examples", "demiurge"))
	env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + srv.URL}
	if _, errs, code := demiurgeCmd(t, env, "--store", dir, "run", manifest, "--model", "gpt-test", "--require-approval", "*", "-m", "write o"); code != 5 {
		t.Fatalf("run -m: exit %d; want 5 (waits for approval)\n%s", code, errs)
	}
	before, _, _ := demiurgeCmd(t, env, "--store", dir, "journal", "dump", "--world", "main")

	bin, _ := exec.LookPath("demiurge")
	sh := exec.Command(bin, "--store", dir, "sh", "--manifest", manifest, "-c", "sleep 30")
	sh.Env = append(os.Environ(), env...)
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = sh.Process.Kill()
		_ = sh.Wait()
	}()
	for deadline := time.Now().Add(20 * time.Second); ; {
		if _, err := os.Stat(filepath.Join(dir, store.SocketName)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("demiurge sh did not open the store")
		}
		time.Sleep(20 * time.Millisecond)
	}
	out, errs, code := demiurgeCmd(t, env, "--store", dir, "approve", manifest, "call_o")
	if code != exitFailure || !strings.Contains(errs, fmt.Sprintf("process %d writes the store but runs no world that takes decisions", sh.Process.Pid)) {
		t.Errorf("approve beside demiurge sh: exit %d, %q %s", code, out, errs)
	}
	out, errs, code = demiurgeCmd(t, env, "--store", dir, "approve", manifest)
	if code != 0 || !strings.HasPrefix(out, "call_o  workspace_write") {
		t.Errorf("approve with no call beside demiurge sh: exit %d, %q %s", code, out, errs)
	}
	_ = sh.Process.Kill()
	_ = sh.Wait()

	r, err := store.Open(dir, &store.Options{ReadOnly: true}) // a reader: the file's shared lock, no socket
	if err != nil {
		t.Fatal(err)
	}
	out, errs, code = demiurgeCmd(t, env, "--store", dir, "approve", manifest, "call_o", "--model", "gpt-test")
	if code != exitFailure || !strings.Contains(errs, "locked: ") || !strings.Contains(errs, "no process that runs the world serves store") {
		t.Errorf("approve beside a reader: exit %d, %q %s", code, out, errs)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if after, _, _ := demiurgeCmd(t, env, "--store", dir, "journal", "dump", "--world", "main"); after != before {
		t.Errorf("the journal changed:\n%s\nbefore:\n%s", after, before)
	}

	// A follower (trace --follow, like demiurge ui) holds nothing between
	// its reads: approve opens the store itself and runs the turn.
	var follow strings.Builder
	tr := exec.Command(bin, "--store", dir, "trace", "--follow")
	tr.Env = append(os.Environ(), env...)
	tr.Stdout, tr.Stderr = &follow, &follow
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = tr.Process.Kill()
		_ = tr.Wait()
	}()
	time.Sleep(300 * time.Millisecond)
	out, errs, code = demiurgeCmd(t, env, "--store", dir, "approve", manifest, "call_o", "--model", "gpt-test")
	if code != 0 || !strings.Contains(out, "wrote o.md") {
		t.Errorf("approve beside trace --follow: exit %d, %q %s", code, out, errs)
	}
}

// TestApproveBesideRunPipe: a run reading messages from a pipe leaves a
// call waiting (it cannot ask) and reads on; a decision from another
// process is taken while it waits for its next line: it journals it as
// Chat.Decide does and shows the rest of the turn; it exits as that ended.
func TestApproveBesideRunPipe(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "p.md", "content": "p"}`, CallID: "call_p"}}},
		{Text: "wrote p.md"},
	}})
	defer srv.Close()
	dir := t.TempDir()
	manifest, _ := filepath.Abs(filepath.Join("..", "examples", "demiurge"))
	env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + srv.URL}
	bin, _ := exec.LookPath("demiurge")
	run := exec.Command(bin, "--store", dir, "run", manifest, "--model", "gpt-test", "--require-approval", "*")
	run.Env = append(os.Environ(), env...)
	in, err := run.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	run.Stdout, run.Stderr = &out, &out
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = run.Process.Kill()
		_ = run.Wait()
	}()
	if _, err := in.Write([]byte("write p\n")); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s; run said:\n%s", what, out.String())
			}
		}
	}
	waitFor("call waiting", func() bool { return strings.Contains(out.String(), "waits for approval: demiurge approve") })
	said, errs, code := demiurgeCmd(t, env, "--store", dir, "approve", manifest, "call_p")
	if code != 0 || !strings.Contains(said, fmt.Sprintf("process %d, which runs the world", run.Process.Pid)) {
		t.Fatalf("approve beside run on a pipe: exit %d, %q %s", code, said, errs)
	}
	waitFor("note of the decision", func() bool {
		return strings.Contains(out.String(), "✓ workspace_write approved from another process (pid ")
	})
	waitFor("p.md written", func() bool { // read through the run, which still holds the store
		o, _, code := demiurgeCmd(t, env, "--store", dir, "workspace", "cat", "p.md")
		return code == 0 && strings.TrimSpace(o) == "p"
	})
	in.Close()
	if err := run.Wait(); err != nil || !strings.Contains(out.String(), "wrote p.md") {
		t.Errorf("run exited with %v; want 0 after the turn's answer; it said:\n%s", err, out.String())
	}
	o, errs, code := demiurgeCmd(t, env, "--store", dir, "replay", "--manifest", manifest, "--from-genesis")
	if code != 0 || !strings.Contains(o, "ok: world main replays") {
		t.Errorf("replay: exit %d, %s %s", code, o, errs)
	}
}
