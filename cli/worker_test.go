package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/internal/pgtest"
	"github.com/demiurge-dev/demiurge/pgstore"
)

// workerProc is a demiurge worker running in a process of its own (this
// test binary, as the demiurge command).
type workerProc struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	out bytes.Buffer
}

func (p *workerProc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *workerProc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// startWorker starts `demiurge --store url worker args…` with env added
// to the environment; it is killed when the test ends.
func startWorker(t *testing.T, url string, env []string, args ...string) *workerProc {
	t.Helper()
	p := &workerProc{}
	p.cmd = exec.Command(os.Args[0], append([]string{"--store", url, "worker"}, args...)...)
	p.cmd.Args[0] = "demiurge"
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr, p.cmd.Stdout = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		if t.Failed() {
			t.Logf("worker %d:\n%s", p.cmd.Process.Pid, p.stderr())
		}
	})
	return p
}

// The agent on a PostgreSQL store: two workers, a chat through `run`
// whose world moves to the surviving worker when its owner is killed, and
// no message lost; the session replays byte for byte.
func TestPostgresWorkerChat(t *testing.T) {
	srv := pgtest.Shared(t)
	url := pgtest.URL(t)
	s := sessions[3] // workspace-edits: two messages, tools between
	if s.name != "workspace-edits" {
		t.Fatalf("sessions[3] is %s", s.name)
	}
	model := llmtest.NewServer(llmtest.Script{Turns: s.turns})
	defer model.Close()
	env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + model.URL}
	workers := []*workerProc{startWorker(t, url, env), startWorker(t, url, env)}
	manifest := filepath.Join("..", "examples", "demiurge")

	r := run(t, nil, "", "--store", url, "run", manifest, "--model", "gpt-test", "-m", s.messages[0])
	if r.code != 0 || !strings.Contains(r.stdout, "plan.md has a three-step plan.") || !strings.Contains(r.stdout, "→ workspace_write") {
		t.Fatalf("run 1: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	srv.Scrub(t, "run's output", r.stdout+r.stderr)

	// Kill the world's owner: the other worker takes it over, and the
	// next message is answered there.
	ps, err := pgstore.Open(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	owner := ownerOf(t, ps, "main")
	var killed *workerProc
	for _, w := range workers {
		if strings.Contains(owner, "-"+itoa(w.cmd.Process.Pid)+"-") {
			killed = w
		}
	}
	if killed == nil {
		t.Fatalf("no worker process owns world main (owner %q)", owner)
	}
	if err := killed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	r = run(t, nil, "", "--store", url, "run", manifest, "--model", "gpt-test", "-m", s.messages[1])
	if r.code != 0 || !strings.Contains(r.stdout, "Step 2 now says to write tests first") {
		t.Fatalf("run 2, after the owner was killed: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("the second turn, its world taken over after a kill -9, took %v", time.Since(t0).Round(time.Millisecond))
	if now := ownerOf(t, ps, "main"); now == owner {
		t.Errorf("world main is still owned by the killed worker %s", owner)
	}
	if n := model.Remaining(); n != 0 {
		t.Errorf("the model has %d turns left; want 0", n)
	}
	r = run(t, nil, "", "--store", url, "replay", "--world", "main", "--manifest", manifest, "--from-genesis")
	if r.code != 0 || !strings.Contains(r.stdout, "replays to the same bytes") {
		t.Fatalf("replay: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, nil, "", "--store", url, "trace", "--world", "main")
	if r.code != 0 || !strings.Contains(r.stdout, "turn 2 of chat main") {
		t.Fatalf("trace: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

func ownerOf(t *testing.T, s *pgstore.Store, world string) string {
	t.Helper()
	ws, err := s.Worlds(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.World == world {
			return w.Owner
		}
	}
	t.Fatalf("world %s is not registered", world)
	return ""
}

func itoa(n int) string { return strconv.Itoa(n) }

// send on a PostgreSQL store goes through the world's inbox to its
// worker, and prints what followed from the journal.
func TestPostgresSend(t *testing.T) {
	url := pgtest.URL(t)
	counter := filepath.Join("..", "examples", "counter")
	// No worker yet: the message waits in the inbox.
	r := run(t, nil, "", "--store", url, "send", "--manifest", counter, "--world", "c1",
		"--schema", "counter/Event@1", "--value", `{"Start": {"target": 2}}`, "--wait", "300ms")
	if r.code != exitQueued || !strings.Contains(r.stdout, "no worker took world c1 yet") {
		t.Fatalf("send without a worker: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	startWorker(t, url, nil, "--llm", "cassette:"+filepath.Join("..", "testdata", "sessions", "demo"))
	r = run(t, nil, "", "--store", url, "send", "--manifest", counter, "--world", "c1",
		"--schema", "counter/Event@1", "--value", `"Tick"`)
	if r.code != 0 || !strings.Contains(r.stdout, "Tick") {
		t.Fatalf("send: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, nil, "", "--store", url, "send", "--manifest", counter, "--world", "c1",
		"--schema", "counter/Event@1", "--value", `"Tick"`, "-q")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "seq ") {
		t.Fatalf("send -q: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// The first message was journaled first: Start, then the two Ticks.
	r = run(t, nil, "", "--store", url, "state", "--world", "c1")
	if r.code != 0 || !strings.Contains(r.stdout, `"remaining": 0`) && !strings.Contains(r.stdout, `"remaining":0`) {
		t.Fatalf("state: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, nil, "", "--store", url, "send", "--manifest", counter, "--world", "c1",
		"--schema", "counter/Event@1", "--value", `{"Nope": 1}`)
	if r.code != 1 || !strings.Contains(r.stderr, "does not fit") {
		t.Fatalf("send of a bad value: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// The agent's recorded sessions on PostgreSQL: imported, each journal is
// the same bytes as on bbolt and replays byte for byte; run live again
// through a worker, each derives the same records, kind for kind, as the
// same script run on bbolt, and replays.
func TestPostgresRecordedSessions(t *testing.T) {
	manifest := filepath.Join("..", "examples", "demiurge")
	dirs, err := filepath.Glob(filepath.Join("..", "testdata", "sessions", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no recorded sessions: %v", err)
	}
	for _, dir := range dirs {
		name := filepath.Base(dir)
		t.Run("import/"+name, func(t *testing.T) {
			pg, bolt := pgtest.URL(t), filepath.Join(t.TempDir(), "store")
			for _, st := range []string{pg, bolt} {
				if r := run(t, nil, "", "--store", st, "import", dir); r.code != 0 {
					t.Fatalf("import: %s", r.stderr)
				}
			}
			want := mustRun(t, 0, "", "--store", bolt, "journal", "dump", "--world", "main", "--json").stdout
			got := mustRun(t, 0, "", "--store", pg, "journal", "dump", "--world", "main", "--json").stdout
			if got != want || !strings.Contains(got, `"hash":"blake3:`) {
				t.Fatalf("the journal on PostgreSQL differs from the journal on bbolt:\n%s\n%s", tail(got, 500), tail(want, 500))
			}
			for _, from := range []string{"--from-genesis", "--from-snapshot"} {
				args := []string{"--store", pg, "replay", "--world", "main", "--manifest", filepath.Join(dir, "air")}
				if from == "--from-genesis" {
					args = append(args, from)
				}
				r := run(t, nil, "", args...)
				if r.code != 0 || !strings.Contains(r.stdout, "replays to the same bytes") {
					t.Fatalf("replay %s on PostgreSQL: exit %d\n%s\n%s", from, r.code, r.stdout, r.stderr)
				}
			}
		})
	}
	for _, s := range sessions {
		if s.frozen || s.turns == nil {
			continue
		}
		t.Run("run/"+s.name, func(t *testing.T) {
			kinds := func(store string) []string {
				var out []string
				for _, line := range strings.Split(mustRun(t, 0, "", "--store", store, "journal", "dump", "--world", "main").stdout, "\n") {
					if f := strings.Fields(line); len(f) > 1 {
						out = append(out, f[1])
					}
				}
				return out
			}
			// On bbolt, in this process.
			bolt := filepath.Join(t.TempDir(), "store")
			m1 := llmtest.NewServer(llmtest.Script{Turns: s.turns})
			defer m1.Close()
			env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": m1.URL}
			for _, msg := range s.messages {
				if r := run(t, env, "", "--store", bolt, "run", manifest, "--model", "gpt-test", "-m", msg); r.code != 0 {
					t.Fatalf("run on bbolt: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
				}
			}
			// On PostgreSQL, through a worker.
			pg := pgtest.URL(t)
			m2 := llmtest.NewServer(llmtest.Script{Turns: s.turns})
			defer m2.Close()
			startWorker(t, pg, []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + m2.URL})
			var outs []string
			for _, msg := range s.messages {
				r := run(t, nil, "", "--store", pg, "run", manifest, "--model", "gpt-test", "-m", msg)
				if r.code != 0 {
					t.Fatalf("run on PostgreSQL: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
				}
				outs = append(outs, r.stdout)
			}
			last := s.turns[len(s.turns)-1].Text
			if !strings.Contains(strings.Join(outs, ""), last) {
				t.Errorf("the chat on PostgreSQL does not end with the model's answer %q:\n%s", last, strings.Join(outs, ""))
			}
			if want, got := kinds(bolt), kinds(pg); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("the session on PostgreSQL journaled other records than on bbolt:\n got %q\nwant %q", got, want)
			}
			r := run(t, nil, "", "--store", pg, "replay", "--world", "main", "--manifest", manifest, "--from-genesis")
			if r.code != 0 || !strings.Contains(r.stdout, "replays to the same bytes") {
				t.Fatalf("replay on PostgreSQL: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// The README's offline demo on PostgreSQL: a worker answering from the
// demo's cassette, and run with the same cassette.
func TestPostgresCassetteDemo(t *testing.T) {
	url := pgtest.URL(t)
	demo := "cassette:" + filepath.Join("..", "testdata", "sessions", "demo")
	startWorker(t, url, nil, "--llm", demo)
	r := run(t, nil, "", "--store", url, "run", filepath.Join("..", "examples", "demiurge"), "--llm", demo,
		"-m", "Write a hello note and show it to me.")
	if r.code != 0 || !strings.Contains(r.stdout, "I wrote notes/hello.md") {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, nil, "", "--store", url, "workspace", "cat", "notes/hello.md")
	if r.code != 0 || !strings.Contains(r.stdout, "# Hello") {
		t.Fatalf("workspace cat: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// run's and worker's help say who decides what about the model on a
// PostgreSQL store: the chat keeps run's --llm and --model, the worker
// brings the base URL and key. (A worker's --llm openai-chat did not
// make a chat that run began with the default --llm use Chat
// Completions, and nothing said so.)
func TestHelpSaysWhoPicksTheModel(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want []string
	}{
		{"run", []string{"On a PostgreSQL store", "The chat keeps the API (--llm) and the model (--model)", "the worker's --base-url and $OPENAI_API_KEY"}},
		{"worker", []string{"A chat's API and model are the ones its \"demiurge run\" named", "apply to a chat that names\nnone"}},
	} {
		r := mustRun(t, exitOK, "", tc.cmd, "--help")
		for _, w := range tc.want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("%s --help does not say %q", tc.cmd, w)
			}
		}
	}
}

// Two clients that send a chat a message at the same time on a
// PostgreSQL store: the one whose view of the chat was stale picked the
// request id the other's message took, and the world ignored its message
// as a retry; it then showed the other's turn as the answer to its own.
// Now it says its message was not taken.
func TestPostgresConcurrentMessages(t *testing.T) {
	srv := pgtest.Shared(t)
	url := pgtest.URL(t)
	model := llmtest.NewServerFunc(func(r llmtest.Request) llmtest.Turn { return llmtest.Turn{Text: "an answer"} })
	defer model.Close()
	startWorker(t, url, []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + model.URL})
	ps, err := pgstore.Open(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	manifest := filepath.Join("..", "examples", "demiurge")
	open := func() *agent.World {
		w, err := agent.Open(ctx, manifest, agent.WithRemote(ps), agent.WithModel(agent.Model{Name: "gpt-test"}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Close() })
		return w
	}
	a, b := open(), open() // b's view of the chat: as it was before a's message
	send := func(w *agent.World, text string) (string, error) {
		var answer string
		for ev, err := range w.Chat("main").Send(ctx, text) {
			if err != nil {
				return answer, err
			}
			if m, ok := ev.(agent.Message); ok && m.Role == "assistant" {
				answer += m.Text
			}
		}
		return answer, nil
	}
	if got, err := send(a, "from a"); err != nil || got != "an answer" {
		t.Fatalf("a's message: %q, %v", got, err)
	}
	got, err := send(b, "from b")
	if !errors.Is(err, agent.ErrRequestTaken) {
		t.Errorf("b's message, sent with a's request id: answer %q, error %v; want ErrRequestTaken", got, err)
	}
	srv.Scrub(t, "the error", fmt.Sprint(err))
}

// run says when the only worker of its world died mid-turn (the turn
// waits for another), and which worker took the world over.
func TestPostgresRunWorkerDies(t *testing.T) {
	srv := pgtest.Shared(t)
	url := pgtest.URL(t)
	var calls atomic.Int32
	release := make(chan struct{})
	model := llmtest.NewServerFunc(func(r llmtest.Request) llmtest.Turn {
		wait := 2 * time.Second // for run to see the second worker take the world
		if calls.Add(1) == 1 {
			wait = time.Minute // the first worker dies meanwhile
		}
		select {
		case <-release:
		case <-time.After(wait):
		}
		return llmtest.Turn{Text: "an answer"}
	})
	defer model.Close()
	defer close(release)
	env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + model.URL}
	first := startWorker(t, url, env)
	manifest := filepath.Join("..", "examples", "demiurge")
	r := startDemiurge(t, "run", nil, []string{storeEnv + "="}, "--store", url, "run", manifest, "--model", "gpt-test", "-m", "hello")
	for deadline := time.Now().Add(20 * time.Second); calls.Load() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the worker never called the model")
		}
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r.expect(true, `no worker holds world main of .*: the message waits in its inbox`)
	startWorker(t, url, env)
	r.expect(true, `demiurge: note: worker \S+ took world main`)
	r.expect(false, `an answer`)
	if code := r.wait(); code != 0 {
		t.Errorf("run: exit %d; want 0\nstderr:\n%s", code, r.stderr())
	}
	srv.Scrub(t, "stderr", r.stderr())
}

// On a PostgreSQL store the model's answer streams to run as it comes, as
// on bbolt: the worker calls the model streaming and publishes the text
// on the world's stream, and the client's turn yields it as TextDelta
// events while the model is still writing (the fake model holds its last
// event until the client has seen text), then the whole answer from the
// journal. run --json prints the text_delta lines. (Workers called the
// model without streaming: the chat looked frozen until the answer was
// whole.)
func TestPostgresStreams(t *testing.T) {
	pgtest.Shared(t)
	url := pgtest.URL(t)
	const answer = "one two three four five six seven"
	var mu sync.Mutex
	holds := []chan struct{}{}
	model := llmtest.NewServerFunc(func(r llmtest.Request) llmtest.Turn {
		hold := make(chan struct{})
		mu.Lock()
		holds = append(holds, hold)
		mu.Unlock()
		return llmtest.Turn{Text: answer, Hold: hold, EventDelay: llmtest.Duration(10 * time.Millisecond)}
	})
	defer model.Close()
	release := func() { // every held stream goes on
		mu.Lock()
		defer mu.Unlock()
		for _, h := range holds {
			select {
			case <-h:
			default:
				close(h)
			}
		}
	}
	defer release()
	startWorker(t, url, []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + model.URL})
	ps, err := pgstore.Open(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	manifest := filepath.Join("..", "examples", "demiurge")
	w, err := agent.Open(ctx, manifest, agent.WithRemote(ps), agent.WithModel(agent.Model{Name: "gpt-test"}))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var streamed, order []string
	var final string
	for ev, err := range w.Chat("main").Send(ctx, "count") {
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case agent.TextDelta:
			if len(streamed) == 0 {
				release() // the model's last event waited for this
			}
			streamed = append(streamed, e.Text)
			order = append(order, "delta")
		case agent.Message:
			if e.Role == "assistant" {
				final = e.Text
				order = append(order, "answer")
			}
		}
	}
	if strings.Join(streamed, "") != answer || final != answer {
		t.Errorf("streamed %q, answer %q; want %q both", streamed, final, answer)
	}
	if len(order) < 3 || order[0] != "delta" || order[len(order)-1] != "answer" {
		t.Errorf("events in the order %v; want text as it came, then the answer", order)
	}

	// run --json: text_delta lines, as on bbolt.
	go func() { // release the stream once its first words are out
		for ctx.Err() == nil {
			time.Sleep(300 * time.Millisecond)
			release()
		}
	}()
	r := run(t, map[string]string{"OPENAI_API_KEY": "sk-test"}, "", "--store", url, "run", manifest, "--model", "gpt-test", "--json", "-m", "again")
	if r.code != exitOK || !strings.Contains(r.stdout, `"type":"text_delta"`) {
		t.Errorf("run --json: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
